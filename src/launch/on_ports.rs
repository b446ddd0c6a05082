//! The driver on given ports, in this process (the in-memory driver tests): `run_on_ports`.

use super::startup::start_on;
use super::Started;
use crate::config::Config;
use crate::driver::RunOptions;
use std::path::PathBuf;

/// How a run on given ports ended (`run_on_ports`).
#[derive(Debug)]
pub struct PortsRun {
    /// The process exit code `run` would have returned (docs/interfaces.md).
    pub code: i32,
    /// The run's journal file, under the runner directory the git port named.
    pub journal: PathBuf,
}

impl PortsRun {
    /// The journal's lines, for a test to read what the machine was told and decided.
    pub fn journal_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.journal)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// Runs the lifecycle of one runner on `ports` in this process: the driver and the machine
/// as `run` has them, every outside call through the ports. With the fakes of
/// `crate::ports::fake` no process is started and no wait sleeps; the runner's own files
/// (journal, lock, state file, logs) are real files under the config's project and log
/// directories and the directory the git port names.
pub(crate) fn run_on_ports(cfg: Config, opts: RunOptions, ports: crate::ports::Ports) -> PortsRun {
    // The orchestration log is written by the logging layer: a caller that installed none
    // would get a run without its record.
    crate::logging::init(0);
    let journal = match ports.git.runner_dir() {
        Ok(dir) => dir.journal(),
        Err(e) => {
            say!("error: {e}");
            return PortsRun {
                code: 2,
                journal: PathBuf::new(),
            };
        }
    };
    let code = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => {
            let program = PathBuf::from(&cfg.agent.command);
            let started = start_on(cfg, opts, program, ports);
            match started {
                Ok(Started::Ready(driver)) => runtime.block_on(driver.drive()),
                Ok(Started::Exit(code)) => code,
                Err(msg) => {
                    say!("error: {msg}");
                    2
                }
            }
        }
        Err(e) => {
            say!("error: cannot start the async runtime: {e}");
            2
        }
    };
    PortsRun { code, journal }
}
