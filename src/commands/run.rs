//! `sdlc-runner run`: load the config (exit 2 naming every bad key) and hand over to `launch::run`.

use crate::cli::RunArgs;
use crate::driver::RunOptions;
use crate::launch;

pub fn run(args: &RunArgs) -> i32 {
    use std::io::IsTerminal as _;
    let terminal = std::io::stderr().is_terminal();
    crate::console::set_style(crate::console::Style {
        format: args.log_format,
        quiet: args.quiet,
        stamp: !terminal,
        live: terminal && args.log_format == crate::console::LogFormat::Text && !args.quiet,
    });
    // Orphans of the run's descendants (a daemon an agent or a hook detached) come to the
    // runner rather than to init, so that none outlives its step or the run (dropped last).
    let _descendants = crate::process::reaper::adopt_orphans();
    let cfg = match super::load_config(&args.config) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    // Serves until the run is over; dropping it ends every client's stream after the last
    // records.
    let _server = match crate::http::start_for(args.http.as_deref(), &cfg, super::status::json) {
        Ok(server) => server,
        Err(code) => return code,
    };
    launch::run(
        cfg,
        RunOptions {
            dry_run: args.dry_run,
            issue: args.issue,
            step: args.step,
            discord_channel: args.discord_channel.clone(),
            ack_halt: args.ack_halt,
            worker_id: args.worker_id.clone(),
            workers: args.workers,
            spent_today_micros: None,
        },
    )
}
