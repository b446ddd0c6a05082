//! The run put together: startup (the checks that exit 2, the production ports from the
//! composition root, the runner directory, the journal's session) hands a ready driver to its
//! loop, or starts a fleet of them (`run --workers N`). It sits above the driver, which names
//! neither it nor the composition root (`tests/it/layering.rs`).

mod fleet;
mod startup;

pub(crate) use fleet::halt_file as fleet_halt_file;
pub(crate) use startup::settle_tracker;

use crate::config::Config;
use crate::driver::{Driver, RunOptions};
use startup::start;

/// What startup made: a driver ready to drive, or the exit code of a run that ends before.
enum Started {
    Ready(Box<Driver>),
    Exit(i32),
}

/// Run the lifecycle; returns the process exit code (docs/interfaces.md).
pub fn run(cfg: Config, opts: RunOptions) -> i32 {
    let workers = opts.workers.unwrap_or(cfg.workers);
    if workers > 1 {
        crate::console::disable_live();
        return fleet::run(cfg, opts, workers);
    }
    let runtime = match crate::runtime::build(None) {
        Ok(rt) => rt,
        Err(e) => {
            say!("error: cannot start the async runtime: {e}");
            return 2;
        }
    };
    // Startup is synchronous and may block (the tracker, git): it runs before the runtime
    // drives anything, outside its context.
    let started = start(cfg, opts);
    match started {
        Ok(Started::Ready(driver)) => runtime.block_on(driver.drive()),
        Ok(Started::Exit(code)) => code,
        Err(msg) => {
            say!("error: {msg}");
            2
        }
    }
}

// Last: tests/it/sizes.rs reads a file up to its first `#[cfg(test)]` module.
#[cfg(test)]
mod on_ports;
#[cfg(test)]
pub(crate) use on_ports::{run_on_ports, PortsRun};
