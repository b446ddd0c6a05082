//! The machine's property, exhaustive and oracle tests: one binary, so a change links once.
//! Each module was its own test binary before; `cargo test -p sdlc-machine --test props
//! <module>::` runs one of them. Proptest keeps the seeds of past failures in
//! `../proptest-regressions/<module>.txt` (commit them).

mod common;
mod exhaustive;
#[path = "machine_props/strategies.rs"]
mod strategies;

mod bounds_exhaustive;
mod effect_oracle;
mod fleet_props;
mod machine_props;
mod merge_turn_and_fleet;
mod money_left;
mod rate_limits;
mod review_props;
mod runner_actions;
mod train_ci_props;
mod train_props;
mod train_record_props;
