//! The pure core of sdlc-runner: the hierarchical lifecycle machine (`machine`), the ten
//! steps and their precondition checks (`step`), and the failure classes with what each means
//! for the machine (`failure`).
//!
//! It is a crate of its own so that the compiler, not a convention, keeps it sans-IO: its
//! only dependencies are `statig` and `serde`, so it cannot spawn a process, read a file or a
//! clock. It also compiles in seconds, which is what lets a mutation run
//! (`cargo mutants`, see ARCHITECTURE.md) try every mutant of the machine.
#![warn(missing_docs)]

pub mod failure;
pub mod fleet;
#[allow(missing_docs)] // Documentation owed (issue 21, item 6).
pub mod machine;
pub mod severity;
pub mod step;
