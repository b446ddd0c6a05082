//! `sdlc-runner run`: load the config (exit 2 naming every bad key) and hand over to the driver.

use crate::cli::RunArgs;
use crate::config::Config;
use crate::driver::{self, RunOptions};

pub fn run(args: &RunArgs) -> i32 {
    let cfg = match Config::load(&args.config) {
        Ok(cfg) => cfg,
        Err(e) => {
            for line in e.lines() {
                eprintln!("{line}");
            }
            return 2;
        }
    };
    driver::run(
        cfg,
        RunOptions {
            dry_run: args.dry_run,
            issue: args.issue,
            step: args.step,
            discord_channel: args.discord_channel.clone(),
            ack_halt: args.ack_halt,
        },
    )
}
