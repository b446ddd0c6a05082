//! The agent port: one attempt of the coding agent. The production adapter starts the CLI in
//! its own process group (`agent.rs`); what its output means is read by the per-kind stream
//! reader and classifier the driver applies to what the port returns.

use super::BoxFuture;
use crate::logs::LiveCap;
use std::io;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::watch;

/// Runs one agent attempt.
pub trait AgentPort: Send + Sync {
    /// Runs `run` to its end. Every chunk of stdout goes to `on_stdout` as it arrives; it
    /// returns `false` to have the agent stopped (turn limit). `cancel` turning `true` stops
    /// the agent (a shutdown: `AgentExit::cancelled`). `on_spawn` gets the agent's process
    /// group id once it exists, before any output. `Err` only when the agent could not be
    /// run at all (binary missing, log unwritable): the environment's, not the issue's.
    fn run<'a>(
        &'a self,
        run: &'a AgentRun,
        on_stdout: &'a mut (dyn FnMut(&[u8]) -> bool + Send),
        cancel: watch::Receiver<bool>,
        on_spawn: &'a mut (dyn FnMut(i32) + Send),
    ) -> BoxFuture<'a, Result<AgentExit, AgentError>>;
}

/// What to run and under which limits. A zero `timeout` or `idle_timeout` disables that limit.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// The agent CLI to run, found on PATH when not a path.
    pub program: PathBuf,
    /// Its arguments, passed as a vector (no shell).
    pub args: Vec<String>,
    /// The working directory: the project's clone.
    pub cwd: PathBuf,
    /// Added to (not replacing) the runner's environment.
    pub env: Vec<(String, String)>,
    /// `env` is the whole environment (a sandboxed agent's): the runner's own is not
    /// inherited.
    pub isolated_env: bool,
    /// Wall-clock limit of the attempt; the agent's process group is stopped when it passes.
    pub timeout: Duration,
    /// Longest stretch without a byte on stdout or stderr.
    pub idle_timeout: Duration,
    /// Time between SIGTERM and SIGKILL to the process group.
    pub kill_grace: Duration,
    /// stdout and stderr are appended here as they arrive; truncated at start, mode 0600.
    pub live_log: PathBuf,
    /// How much of the output the live log keeps.
    pub live_log_cap: LiveCap,
    /// Bytes kept from the end of stdout and, separately, of stderr.
    pub tail_bytes: usize,
    /// The proxy to serve for the attempt (`network: "allowlist"`): the agent's only way out.
    pub egress: Option<crate::egress::Plan>,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentExit {
    /// The exit code, `None` when the process was ended by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended the process.
    pub signal: Option<i32>,
    /// The wall-clock timeout fired.
    pub timed_out: bool,
    /// The idle timeout fired.
    pub idle_timed_out: bool,
    /// A shutdown was requested through the cancel channel.
    pub cancelled: bool,
    /// The caller's stream reader asked to stop the agent (turn limit, a CLI retrying forever).
    pub stopped: bool,
    /// Last `tail_bytes` of stdout, lossy UTF-8.
    pub stdout_tail: String,
    /// Last `tail_bytes` of stderr, lossy UTF-8.
    pub stderr_tail: String,
    /// Total bytes the agent wrote to stdout.
    pub stdout_bytes: u64,
    /// Total bytes the agent wrote to stderr.
    pub stderr_bytes: u64,
    /// Wall-clock time from spawn to exit.
    pub duration: Duration,
    /// Pid of the agent, which is also its process-group id.
    pub pid: u32,
    /// The first error writing the live log, if any. The agent is not stopped for it (the
    /// caller's parser and the tails still see everything), but the log is incomplete.
    pub live_log_error: Option<String>,
    /// The hosts the proxy refused the agent (`network: "allowlist"`), each once.
    pub refused_hosts: Vec<String>,
}

impl AgentExit {
    /// The runner ended the process (timeout, idle timeout or shutdown) rather than the
    /// process ending by itself.
    pub fn killed_by_runner(&self) -> bool {
        self.timed_out || self.idle_timed_out || self.cancelled || self.stopped
    }
}

#[derive(Debug, thiserror::Error)]
/// Why an agent could not be run or waited for; each message names what to check in the config.
pub enum AgentError {
    #[error(
        "the proxy of agent.sandbox.network \"allowlist\" could not be served: {source}; check \
         the temporary directory (TMPDIR) or set the network to \"host\" or \"none\""
    )]
    /// The egress proxy could not be started.
    Egress {
        #[source]
        /// What binding its socket said.
        source: io::Error,
    },
    #[error(
        "agent command `{program}` could not be started: {source}; check `agent.command` in the \
         config and that it is installed and on PATH"
    )]
    /// The program could not be started (not installed, not on PATH, not executable).
    Spawn {
        /// The program as configured.
        program: String,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    #[error(
        "agent command `{program}` could not be started: its command line is too long for the \
         system ({bytes} bytes of arguments, the longest {longest}; Linux takes at most \
         {MAX_ARG_BYTES} bytes per argument): {source}; the prompt or the step's settings \
         carry more than a command line can hold"
    )]
    /// The kernel refused the command line (`E2BIG`): the program is there, what it was
    /// handed is too large.
    ArgumentsTooLong {
        /// The program as configured.
        program: String,
        /// Bytes of all arguments together.
        bytes: usize,
        /// Bytes of the longest argument.
        longest: usize,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    #[error(
        "agent working directory {} is not usable: {source}; check `projectPath` in the config",
        path.display()
    )]
    /// The working directory could not be used.
    WorkingDir {
        /// The directory.
        path: PathBuf,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    #[error(
        "agent live log {} could not be opened: {source}; check that the log directory \
         (`logDir`) exists and is writable",
        path.display()
    )]
    /// The live log could not be opened, so the attempt was not started.
    LiveLog {
        /// The live log's path.
        path: PathBuf,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    #[error("waiting for agent command `{program}` (pid {pid}) failed: {source}")]
    /// Waiting for the started agent failed.
    Wait {
        /// The program as configured.
        program: String,
        /// Its pid, also its process-group id.
        pid: u32,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
}

/// Linux's limit on one argument (`MAX_ARG_STRLEN`, 32 pages of 4 KiB).
pub const MAX_ARG_BYTES: usize = 128 * 1024;
