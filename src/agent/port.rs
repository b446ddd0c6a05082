//! The production [`AgentPort`]: the agent CLI as a child process.

use super::{AgentError, AgentExit, AgentRun};
use crate::ports::{AgentPort, BoxFuture};
use tokio::sync::watch;

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
        Box::pin(super::run_agent_stoppable(run, on_stdout, cancel, on_spawn))
    }
}
