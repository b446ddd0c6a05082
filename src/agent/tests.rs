use super::*;
use crate::cleanup;
use crate::logs::LiveCap;
use crate::process::streaming::DRAIN_AFTER_KILL;
use rustix::process::Signal;
use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;
use tempfile::TempDir;

fn script(dir: &TempDir, name: &str, body: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, Permissions::from_mode(0o755)).unwrap();
    path
}

fn agent_run(dir: &TempDir, program: PathBuf) -> AgentRun {
    AgentRun {
        program,
        args: Vec::new(),
        cwd: dir.path().to_path_buf(),
        env: Vec::new(),
        isolated_env: false,
        timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(30),
        kill_grace: Duration::from_millis(500),
        live_log: dir.path().join("step-live.log"),
        live_log_cap: LiveCap::for_budget(500 * 1024 * 1024),
        tail_bytes: 64 * 1024,
        egress: None,
    }
}

fn no_cancel() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    // Keep the sender alive for the whole test so `changed()` never errors early.
    std::mem::forget(tx);
    rx
}

async fn run_collect(run: &AgentRun) -> (AgentExit, Vec<u8>) {
    let mut seen = Vec::new();
    let exit = run_agent(run, &mut |c: &[u8]| seen.extend_from_slice(c), no_cancel())
        .await
        .unwrap();
    (exit, seen)
}

fn first_pid(stdout: &[u8]) -> i32 {
    String::from_utf8_lossy(stdout)
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The agent was stopped within seconds and nothing of its process group is left.
fn stopped_promptly_leaving_nothing(exit: &AgentExit) {
    assert!(
        exit.duration < Duration::from_secs(5),
        "{:?}",
        exit.duration
    );
    assert!(!cleanup::group_alive(exit.pid as i32));
}

#[tokio::test]
async fn streams_stdout_and_stderr_to_the_callback_the_log_and_the_tails() {
    let dir = TempDir::new().unwrap();
    let program = script(
        &dir,
        "agent.sh",
        "echo \"step=$SDLC_STEP arg=$1\"; echo oops >&2; pwd; exit 3",
    );
    let mut run = agent_run(&dir, program);
    run.args = vec!["first arg; $(not a shell)".into()];
    run.env = vec![("SDLC_STEP".into(), "implement".into())];
    std::fs::write(&run.live_log, "stale content from an older attempt\n").unwrap();
    std::fs::set_permissions(&run.live_log, Permissions::from_mode(0o644)).unwrap();

    let (exit, seen) = run_collect(&run).await;
    let cwd = dir.path().canonicalize().unwrap();
    let expected_stdout = format!(
        "step=implement arg=first arg; $(not a shell)\n{}\n",
        cwd.display()
    );
    assert_eq!(String::from_utf8(seen).unwrap(), expected_stdout);
    assert_eq!(exit.stdout_tail, expected_stdout);
    assert_eq!(exit.stderr_tail, "oops\n");
    assert_eq!(exit.stdout_bytes, expected_stdout.len() as u64);
    assert_eq!(exit.stderr_bytes, 5);
    assert_eq!(exit.exit_code, Some(3));
    assert_eq!(exit.signal, None);
    assert!(!exit.killed_by_runner());
    assert!(exit.pid > 0);
    assert_eq!(exit.live_log_error, None);

    let log = std::fs::read_to_string(&run.live_log).unwrap();
    assert!(!log.contains("stale"), "live log truncated at start: {log}");
    assert!(log.contains("step=implement") && log.contains("oops\n"));
    assert_eq!(log.len(), expected_stdout.len() + 5);
    let mode = std::fs::metadata(&run.live_log)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn reports_the_signal_that_ended_the_agent() {
    let dir = TempDir::new().unwrap();
    let run = agent_run(&dir, script(&dir, "agent.sh", "kill -KILL $$"));
    let (exit, _) = run_collect(&run).await;
    assert_eq!(exit.exit_code, None);
    assert_eq!(exit.signal, Some(Signal::KILL.as_raw()));
    assert!(!exit.killed_by_runner());
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error_naming_it() {
    let dir = TempDir::new().unwrap();
    let run = agent_run(&dir, PathBuf::from("claude-definitely-not-installed"));
    let err = run_agent(&run, &mut |_: &[u8]| {}, no_cancel())
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::Spawn { .. }));
    let message = err.to_string();
    assert!(
        message.starts_with(
            "agent command `claude-definitely-not-installed` could not be started: \
             No such file or directory"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn a_command_line_too_long_for_the_system_is_not_a_missing_program() {
    let dir = TempDir::new().unwrap();
    let mut run = agent_run(&dir, script(&dir, "agent.sh", "exit 0"));
    run.args = vec!["-p".into(), "x".repeat(MAX_ARG_BYTES + 1)];
    let err = run_agent(&run, &mut |_: &[u8]| {}, no_cancel())
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentError::ArgumentsTooLong { longest, .. } if longest == MAX_ARG_BYTES + 1),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(!message.contains("installed"), "{message}");
    assert!(message.contains("too long"), "{message}");
}

#[tokio::test]
async fn a_child_that_left_the_group_and_holds_the_pipes_ends_with_the_attempt() {
    let dir = TempDir::new().unwrap();
    // setsid: its own session and group, out of reach of a group kill; the pipes held.
    let agent = script(
        &dir,
        "agent.sh",
        "setsid sleep 300 & echo $!; sleep 0.3; exit 0",
    );
    let mut run = agent_run(&dir, agent);
    run.kill_grace = Duration::from_millis(300);
    let (exit, seen) = run_collect(&run).await;
    assert_eq!(exit.exit_code, Some(0));
    let escaped = first_pid(&seen);
    assert!(
        !cleanup::process_alive(escaped),
        "{escaped} outlived the attempt"
    );
    // Its pipes were let go of at once, not after the wait for stragglers.
    assert!(exit.duration < DRAIN_AFTER_KILL, "{:?}", exit.duration);
}

#[tokio::test]
async fn a_missing_working_directory_is_not_blamed_on_the_program() {
    let dir = TempDir::new().unwrap();
    let mut run = agent_run(&dir, script(&dir, "agent.sh", "exit 0"));
    run.cwd = dir.path().join("gone");
    let err = run_agent(&run, &mut |_: &[u8]| {}, no_cancel())
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::WorkingDir { .. }), "{err}");
    assert!(err.to_string().contains("projectPath"));
}

#[tokio::test]
async fn wall_clock_timeout_terminates_the_agent() {
    let dir = TempDir::new().unwrap();
    let mut run = agent_run(
        &dir,
        script(&dir, "agent.sh", "echo started; exec sleep 30"),
    );
    run.timeout = Duration::from_millis(300);
    let (exit, seen) = run_collect(&run).await;
    assert!(exit.timed_out && !exit.idle_timed_out && !exit.cancelled);
    assert_eq!(exit.signal, Some(Signal::TERM.as_raw()));
    assert_eq!(seen, b"started\n");
    stopped_promptly_leaving_nothing(&exit);
}

#[tokio::test]
async fn idle_timeout_fires_only_when_output_stops() {
    let dir = TempDir::new().unwrap();
    let chatty = script(
        &dir,
        "chatty.sh",
        "for i in 1 2 3 4 5 6 7 8; do echo tick; sleep 0.1; done",
    );
    let mut run = agent_run(&dir, chatty);
    run.idle_timeout = Duration::from_millis(600);
    let (exit, _) = run_collect(&run).await;
    assert!(!exit.idle_timed_out, "steady output is not idle");
    assert_eq!(exit.exit_code, Some(0));

    let hung = script(
        &dir,
        "hung.sh",
        "echo thinking; echo warn >&2; exec sleep 30",
    );
    let mut run = agent_run(&dir, hung);
    run.idle_timeout = Duration::from_millis(400);
    let (exit, _) = run_collect(&run).await;
    assert!(exit.idle_timed_out && !exit.timed_out);
    assert!(exit.duration < Duration::from_secs(5));
    assert_eq!(exit.stderr_tail, "warn\n");
}

#[tokio::test]
async fn an_agent_ignoring_sigterm_is_killed_after_the_grace_period() {
    let dir = TempDir::new().unwrap();
    let program = script(
        &dir,
        "agent.sh",
        "trap '' TERM; echo ready; sleep 30; sleep 30",
    );
    let mut run = agent_run(&dir, program);
    run.timeout = Duration::from_millis(300);
    run.kill_grace = Duration::from_millis(400);
    let (exit, _) = run_collect(&run).await;
    assert!(exit.timed_out);
    assert_eq!(exit.signal, Some(Signal::KILL.as_raw()));
    assert!(exit.duration >= Duration::from_millis(700));
    stopped_promptly_leaving_nothing(&exit);
}

#[tokio::test]
async fn grandchildren_do_not_outlive_the_agent() {
    let dir = TempDir::new().unwrap();
    // Detached from the pipes: the agent's EOF does not wait for it.
    let detached = script(
        &dir,
        "detached.sh",
        "sleep 300 >/dev/null 2>&1 </dev/null & echo $!; exit 0",
    );
    let (exit, seen) = run_collect(&agent_run(&dir, detached)).await;
    assert_eq!(exit.exit_code, Some(0));
    let grandchild = first_pid(&seen);
    assert!(
        !cleanup::process_alive(grandchild),
        "orphan {grandchild} killed"
    );

    // Holding the pipes open and ignoring SIGTERM: without the group kill this would
    // block for 300 s.
    let stubborn = script(
        &dir,
        "stubborn.sh",
        "(trap '' TERM; exec sleep 300) & echo $!; exit 0",
    );
    let mut run = agent_run(&dir, stubborn);
    run.kill_grace = Duration::from_millis(300);
    let (exit, seen) = run_collect(&run).await;
    assert_eq!(exit.exit_code, Some(0));
    assert!(!exit.killed_by_runner(), "the agent itself exited normally");
    let grandchild = first_pid(&seen);
    assert!(
        !cleanup::process_alive(grandchild),
        "orphan {grandchild} killed"
    );
    stopped_promptly_leaving_nothing(&exit);
}

#[tokio::test]
async fn cancel_stops_the_agent_and_its_children() {
    let dir = TempDir::new().unwrap();
    let program = script(&dir, "agent.sh", "sleep 300 & echo $!; wait");
    let run = agent_run(&dir, program);
    let (tx, rx) = watch::channel(false);
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        tx.send(true).unwrap();
        tx
    });
    let mut seen = Vec::new();
    let exit = run_agent(&run, &mut |c: &[u8]| seen.extend_from_slice(c), rx)
        .await
        .unwrap();
    let _tx = canceller.await.unwrap();
    assert!(exit.cancelled && !exit.timed_out && !exit.idle_timed_out);
    assert!(exit.duration < Duration::from_secs(5));
    assert!(!cleanup::process_alive(first_pid(&seen)));

    // A shutdown requested before the start still stops the agent at once.
    let (_tx, rx) = watch::channel(true);
    let exit = run_agent(&run, &mut |_: &[u8]| {}, rx).await.unwrap();
    assert!(exit.cancelled);
    assert!(exit.duration < Duration::from_secs(5));
}

#[tokio::test]
async fn the_stream_callback_can_stop_the_agent() {
    let dir = TempDir::new().unwrap();
    let program = script(
        &dir,
        "agent.sh",
        "sleep 300 & echo $!; while true; do echo tool; sleep 0.05; done",
    );
    let run = agent_run(&dir, program);
    let mut seen = Vec::new();
    let mut lines = 0;
    let exit = run_agent_stoppable(
        &run,
        &mut |c: &[u8]| {
            seen.extend_from_slice(c);
            lines += c.iter().filter(|b| **b == b'\n').count();
            lines < 5
        },
        no_cancel(),
        &mut |_| {},
    )
    .await
    .unwrap();
    assert!(exit.stopped && exit.killed_by_runner());
    assert!(!exit.timed_out && !exit.idle_timed_out && !exit.cancelled);
    assert!(!cleanup::process_alive(first_pid(&seen)));
    stopped_promptly_leaving_nothing(&exit);
}

#[tokio::test]
async fn a_dropped_cancel_sender_is_not_a_cancel() {
    let dir = TempDir::new().unwrap();
    let run = agent_run(&dir, script(&dir, "agent.sh", "sleep 0.3; echo done"));
    let (tx, rx) = watch::channel(false);
    drop(tx);
    let exit = run_agent(&run, &mut |_: &[u8]| {}, rx).await.unwrap();
    assert!(!exit.cancelled);
    assert_eq!(exit.stdout_tail, "done\n");
}

#[tokio::test]
async fn dropping_the_future_kills_the_agent_group() {
    let dir = TempDir::new().unwrap();
    let program = script(&dir, "agent.sh", "sleep 300 & echo $!; wait");
    let run = agent_run(&dir, program);
    let mut seen = Vec::new();
    let outcome = tokio::time::timeout(
        Duration::from_millis(500),
        run_agent(&run, &mut |c: &[u8]| seen.extend_from_slice(c), no_cancel()),
    )
    .await;
    assert!(outcome.is_err(), "the agent was still running");
    let grandchild = first_pid(&seen);
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        !cleanup::process_alive(grandchild)
    });
    assert!(
        gone,
        "grandchild {grandchild} killed when the attempt was abandoned"
    );
}

fn peak_rss_kib() -> u64 {
    crate::stats::peak_rss_kib().expect("VmHWM in /proc/self/status")
}

/// Set in the process the test below re-runs itself in.
const ALONE: &str = "SDLC_TEST_MEMORY_ALONE";

/// The process's peak memory is the test's measure, and tests running beside it in the same
/// process (the harness runs several at once) would raise it: the test runs itself again in a
/// process of its own, where it is the only test, and that process measures.
#[test]
fn hundreds_of_megabytes_of_output_keep_memory_flat() {
    if std::env::var_os(ALONE).is_some() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        return runtime.block_on(flood_keeps_memory_flat());
    }
    let mut alone = std::process::Command::new(std::env::current_exe().unwrap());
    alone
        .args([
            "--exact",
            "agent::tests::hundreds_of_megabytes_of_output_keep_memory_flat",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ALONE, "1");
    let out = alone.output().unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{}: {all}", out.status);
    assert!(
        all.contains("1 passed"),
        "the measuring run ran the test: {all}"
    );
}

async fn flood_keeps_memory_flat() {
    const TOTAL: u64 = 300_000_000;
    let dir = TempDir::new().unwrap();
    let program = script(
        &dir,
        "flood.sh",
        &format!(
            "head -c {TOTAL} /dev/zero | tr '\\0' 'x'; head -c 100000 /dev/zero | tr '\\0' 'e' >&2"
        ),
    );
    let mut run = agent_run(&dir, program);
    run.tail_bytes = 64 * 1024;
    run.live_log_cap = LiveCap::for_budget(50 * 1024 * 1024);
    let peak_before = peak_rss_kib();
    let mut counted = 0u64;
    let exit = run_agent(&run, &mut |c: &[u8]| counted += c.len() as u64, no_cancel())
        .await
        .unwrap();
    let grown_kib = peak_rss_kib().saturating_sub(peak_before);

    assert_eq!(exit.exit_code, Some(0));
    assert_eq!(exit.stdout_bytes, TOTAL);
    assert_eq!(counted, TOTAL);
    assert_eq!(exit.stdout_tail.len(), 64 * 1024);
    assert!(exit.stdout_tail.bytes().all(|b| b == b'x'));
    assert_eq!(exit.stderr_tail.len(), 64 * 1024);
    // The live log is capped: its head, a marker, and the stderr that came last.
    let cap = run.live_log_cap;
    let live = std::fs::read(&run.live_log).unwrap();
    assert!(
        live.len() as u64 <= cap.at_rest() && live.len() as u64 > cap.head + cap.tail,
        "{} bytes",
        live.len()
    );
    assert!(live[..cap.head as usize].iter().all(|b| *b == b'x'));
    assert!(live.ends_with(&[b'e'; 100_000]));
    let dropped = format!("{} bytes dropped", TOTAL + 100_000 - cap.head - cap.tail);
    assert!(
        String::from_utf8_lossy(&live).contains(&dropped),
        "{dropped}"
    );
    assert!(grown_kib < 64 * 1024, "peak RSS grew by {grown_kib} KiB");
    assert!(
        exit.duration < Duration::from_secs(20),
        "{:?}",
        exit.duration
    );
}

#[tokio::test]
async fn a_variable_holding_the_runners_api_token_never_reaches_the_agent() {
    let dir = TempDir::new().unwrap();
    let program = script(
        &dir,
        "agent",
        "echo \"token=${SDLC_TEST_WITHHELD_TOKEN:-absent} other=${SDLC_TEST_OTHER:-absent}\"",
    );
    // Reading a token (here: one that is not set) marks its variable as the runner's own.
    let _ = crate::api_client::read_token(
        "SDLC_TEST_WITHHELD_TOKEN",
        "gitlab.tokenEnv",
        std::path::Path::new("c.json"),
    );
    let mut run = agent_run(&dir, program);
    // Even configured into the agent's own environment, it is dropped.
    run.env = vec![
        ("SDLC_TEST_WITHHELD_TOKEN".into(), "glpat-secret".into()),
        ("SDLC_TEST_OTHER".into(), "kept".into()),
    ];
    let (_, out) = run_collect(&run).await;
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains("token=absent other=kept"), "{out}");
}
