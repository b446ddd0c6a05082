//! A program that gives its place to one child: the sandbox's entry (`egress-relay`, the
//! relay to the runner's proxy) starts the agent with its own stdin, stdout and stderr, in
//! its own process group (so a stop reaches both), and exits as the agent did.

use std::io;
use std::process::ExitStatus;

use super::ChildSpec;

/// Runs `spec` with this process's stdin, stdout and stderr and waits for it; the child is
/// killed if the wait is dropped.
pub(crate) async fn run_in_place(spec: ChildSpec) -> io::Result<ExitStatus> {
    let mut cmd = tokio::process::Command::from(spec.cmd);
    cmd.kill_on_drop(true);
    let mut child = cmd.spawn()?;
    super::children::child_started();
    child.wait().await
}
