//! The agent port's adapter. This module runs one attempt of any agent CLI as a child
//! process; `stream` reads Claude Code's stream-json and `classify` judges an attempt; `cli`
//! holds what differs per CLI (invocation, stream reader, classification, doctor checks);
//! `tokens` prices what a CLI reports in tokens. (The scripted stand-in CLI of the demo and the
//! end-to-end tests is not here: it lives in `fake_agent`, which the run path never names.)
//!
//! One agent attempt as a child process (docs/interfaces.md "Agent invocation",
//! docs/persistence.md signals), run by the process runner's streaming child
//! (`process::streaming`: its own process group, a wall-clock and an idle timeout, the run's
//! stop, its whole process group gone when [`run_agent`] returns, only the last `tail_bytes`
//! of each stream kept); this module adds the agent's environment, its live log and the
//! caller's parser on top.
//!
//! Memory stays flat whatever the agent prints. Disk use is flat too: the live log keeps a head and a rolling tail
//! ([`LiveCap`](crate::logs::LiveCap)).

pub mod classify;
pub mod cli;
mod port;
pub mod sandbox;
pub mod stream;
pub mod tokens;

pub use port::ProcessAgent;

use std::io;
use std::os::unix::process::ExitStatusExt;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::logs::LiveLog;
use crate::process::streaming::{
    run_streaming, StopReason, Stream, StreamError, StreamLimits, Streamed,
};
use crate::process::ChildSpec;

pub use crate::ports::agent::{AgentError, AgentExit, AgentRun, MAX_ARG_BYTES};

impl AgentError {
    /// The agent could not be started: `E2BIG` is a command line too long, never a program
    /// missing.
    fn spawn(program: &str, args: &[String], source: io::Error) -> AgentError {
        if source.raw_os_error() == Some(rustix::io::Errno::TOOBIG.raw_os_error()) {
            return AgentError::ArgumentsTooLong {
                program: program.to_string(),
                bytes: args.iter().map(String::len).sum(),
                longest: args.iter().map(String::len).max().unwrap_or(0),
                source,
            };
        }
        AgentError::Spawn {
            program: program.to_string(),
            source,
        }
    }
}

/// Runs one agent attempt to completion. Every stdout chunk goes to `on_stdout` (in order) and,
/// with stderr, to the live log. When this returns `Ok`, the agent's process group has no
/// live member left: the agent is reaped and its children were sent SIGTERM and then SIGKILL.
pub async fn run_agent(
    run: &AgentRun,
    on_stdout: &mut (dyn FnMut(&[u8]) + Send),
    cancel: watch::Receiver<bool>,
) -> Result<AgentExit, AgentError> {
    run_agent_with(run, on_stdout, cancel, &mut |_| {}).await
}

/// [`run_agent`], calling `on_spawn(pgid)` as soon as the agent's process group exists, before
/// any of its output is read: the caller records the group so that a runner killed later can
/// have its successor stop what is left of it.
pub async fn run_agent_with(
    run: &AgentRun,
    on_stdout: &mut (dyn FnMut(&[u8]) + Send),
    cancel: watch::Receiver<bool>,
    on_spawn: &mut (dyn FnMut(i32) + Send),
) -> Result<AgentExit, AgentError> {
    let mut keep_going = |chunk: &[u8]| {
        on_stdout(chunk);
        true
    };
    run_agent_stoppable(run, &mut keep_going, cancel, on_spawn).await
}

/// [`run_agent_with`] whose stdout callback may stop the agent: when it returns `false`, the
/// agent's group is stopped as for a timeout and the exit says `stopped`. A CLI without a
/// turn limit of its own is bounded this way.
pub async fn run_agent_stoppable(
    run: &AgentRun,
    on_stdout: &mut (dyn FnMut(&[u8]) -> bool + Send),
    cancel: watch::Receiver<bool>,
    on_spawn: &mut (dyn FnMut(i32) + Send),
) -> Result<AgentExit, AgentError> {
    let program_name = run.program.display().to_string();
    working_dir(run)?;
    let mut live_log =
        LiveLog::create(&run.live_log, run.live_log_cap).map_err(|source| AgentError::LiveLog {
            path: run.live_log.clone(),
            source,
        })?;

    let started = Instant::now();
    // Every process the agent starts carries the attempt's mark, whatever group or session
    // it moves to: what is left of them is stopped when the attempt ends.
    let attempt = crate::process::reaper::begin();
    let spec = child_spec(run);
    let mut live_log_error: Option<String> = None;
    let mut on_output = |stream: Stream, chunk: &[u8]| {
        let keep_going = stream == Stream::Stderr || on_stdout(chunk);
        write_live(&mut live_log, chunk, &mut live_log_error);
        keep_going
    };
    let mut spawned = |pgid: i32| {
        crate::stats::agent_spawned();
        tracing::debug!(program = %program_name, pid = pgid, cwd = %run.cwd.display(), "agent started");
        on_spawn(pgid);
    };
    // The agent gets SIGKILL when the runner dies, however it dies: an unattended agent must
    // never go on working a tree that its runner no longer watches. Its own children are
    // stopped through the process group (by this runner, or by the next one from the
    // journal's record of the group).
    // The agent's one way out under `network: "allowlist"`, served for this attempt only.
    let proxy = run
        .egress
        .as_ref()
        .map(crate::egress::proxy::Proxy::serve)
        .transpose()
        .map_err(|source| AgentError::Egress { source })?;
    let stats_started = crate::stats::agent_starting();
    let streamed = run_streaming(
        spec,
        attempt.mark(),
        StreamLimits {
            timeout: run.timeout,
            idle_timeout: run.idle_timeout,
            kill_grace: run.kill_grace,
            tail_bytes: run.tail_bytes,
        },
        &mut on_output,
        cancel,
        &mut spawned,
    )
    .await
    .map_err(|e| match e {
        StreamError::Spawn(source) => AgentError::spawn(&program_name, &run.args, source),
        StreamError::Wait { pid, source } => AgentError::Wait {
            program: program_name.clone(),
            pid,
            source,
        },
    })?;
    let grace = run.kill_grace;
    let _ = tokio::task::spawn_blocking(move || attempt.end(grace)).await;
    let refused_hosts = match proxy {
        Some(proxy) => proxy.stop().await,
        None => Vec::new(),
    };
    crate::stats::agent_finished(stats_started);

    if live_log_error.is_none() {
        if let Err(err) = live_log.finish() {
            live_log_error = Some(err.to_string());
        }
    }

    Ok(exit_of(streamed, started, live_log_error, refused_hosts))
}

/// The agent's working directory must be one: a clear error, not a failed spawn.
fn working_dir(run: &AgentRun) -> Result<(), AgentError> {
    std::fs::metadata(&run.cwd)
        .and_then(|m| {
            if m.is_dir() {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "not a directory",
                ))
            }
        })
        .map_err(|source| AgentError::WorkingDir {
            path: run.cwd.clone(),
            source,
        })
}

/// The agent's process: its program, arguments, directory and environment, without the
/// runner's own API tokens.
fn child_spec(run: &AgentRun) -> ChildSpec {
    let mut spec = ChildSpec::new(&run.program);
    if run.isolated_env {
        spec.env_clear();
    }
    spec.args(&run.args)
        .current_dir(&run.cwd)
        .envs(run.env.iter().map(|(k, v)| (k, v)));
    // The runner's own API tokens (`tokenEnv`) are its, not the agent's, even when configured
    // into the agent's `env` by mistake.
    for var in crate::api_client::withheld_vars() {
        spec.env_remove(var);
    }
    spec
}

/// How the agent's process ended, as the attempt reports it.
fn exit_of(
    streamed: Streamed,
    started: Instant,
    live_log_error: Option<String>,
    refused_hosts: Vec<String>,
) -> AgentExit {
    let status = streamed.status;
    let stop = streamed.stop;
    AgentExit {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out: stop == Some(StopReason::Timeout),
        idle_timed_out: stop == Some(StopReason::Idle),
        cancelled: stop == Some(StopReason::Cancel),
        stopped: stop == Some(StopReason::Stream),
        stdout_tail: streamed.stdout_tail,
        stderr_tail: streamed.stderr_tail,
        stdout_bytes: streamed.stdout_bytes,
        stderr_bytes: streamed.stderr_bytes,
        duration: started.elapsed(),
        pid: streamed.pid,
        live_log_error,
        refused_hosts,
    }
}

/// Writes synchronously: a write lands in the page cache in microseconds, and the occasional
/// cut-back of the tail is bounded by the cap; handing each chunk to a blocking thread would
/// cost more than it saves and complicate the cut.
fn write_live(log: &mut LiveLog, chunk: &[u8], error: &mut Option<String>) {
    if error.is_some() {
        return;
    }
    if let Err(err) = log.write(chunk) {
        *error = Some(err.to_string());
    }
}

#[cfg(test)]
mod tests;
