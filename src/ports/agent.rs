//! The agent port: one attempt of the coding agent. The production adapter starts the CLI in
//! its own process group (`agent.rs`); what its output means is read by the per-kind stream
//! reader and classifier the driver applies to what the port returns.

use super::BoxFuture;
pub use crate::agent::AgentError;
use crate::agent::{AgentExit, AgentRun};
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

/// The production agent: a child process per attempt (`agent::run_agent_stoppable`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessAgent;

impl AgentPort for ProcessAgent {
    fn run<'a>(
        &'a self,
        run: &'a AgentRun,
        on_stdout: &'a mut (dyn FnMut(&[u8]) -> bool + Send),
        cancel: watch::Receiver<bool>,
        on_spawn: &'a mut (dyn FnMut(i32) + Send),
    ) -> BoxFuture<'a, Result<AgentExit, AgentError>> {
        Box::pin(crate::agent::run_agent_stoppable(
            run, on_stdout, cancel, on_spawn,
        ))
    }
}
