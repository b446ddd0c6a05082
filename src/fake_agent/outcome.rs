//! The outcomes a script can ask for, and how each one is acted out.

use super::events::Emitter;
use super::git;
use super::Context;
use crate::config::AgentKind;
use serde_json::json;
use std::io;
use std::time::Duration;

/// One scripted behaviour of an agent invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The step's real git work, then a successful result.
    Ok,
    /// A failing cargo test; `Some(k)` names a different test per k.
    FailTest(Option<u32>),
    SoftMaxTurns,
    SoftIsError,
    SoftPermission,
    BenignPermission,
    /// Replays of recorded real-CLI outputs (fixtures under `src/agent/fake_cli/`).
    Recorded(Recording),
    /// Reads the README (one tool call, one turn), then works silently for ever.
    Hang,
    SilentHang,
    IgnoreTerm,
    /// Megabytes of assistant output, then the ok work and result.
    Flood(u64),
    Exit(i32),
    /// A failure whose output carries credentials (and the value of `SDLC_FAKE_LEAK`, when
    /// set), as a confused agent or tool printing its environment would.
    LeakSecrets,
    /// A successful result without the git work (startIssue: no branch).
    NoBranch,
    /// The plan's usage window is exhausted and resets in this many seconds: a
    /// `rate_limit_event` with `status: "rejected"`, then the CLI's error result.
    Quota(i64),
    /// A successful result after checking out main: the next step's precondition
    /// `on feature branch` fails (a bounce).
    CheckoutMain,
    /// `checkout-main` the first time this issue's step is invoked in a project, `ok` after:
    /// one bounce that the step's next run repairs (remembered in a marker file beside the
    /// invocation log, so that it holds across runner restarts).
    CheckoutMainOnce,
    /// `git clean -fdx` (as a step prompt asking for a clean tree may lead an agent to do),
    /// then the step's ok work.
    GitClean,
    /// Leaves two daemons holding its stdout, each in a session of its own (`setsid sleep`),
    /// one of them with an empty environment, then does the ok work: an agent that forgot
    /// a server it started. Then waits this many milliseconds (`daemon:<ms>`; none for
    /// `daemon`): the runner can be killed while they run.
    Daemon(u64),
    /// Starts a child process (`sleep`) in its own process group, waits this many
    /// milliseconds, then does the ok work: an agent with work in flight, for kill tests.
    Slow(u64),
    /// Tool calls (Read, Edit, Bash) spread over this many milliseconds, one assistant turn
    /// each, then the ok work: an agent at work, for the live progress line.
    Busy(u64),
    /// Commits and pushes a file `ci-fixed` on the current branch: a CI repair.
    FixCi,
    /// Commits `ci-fixed` on the current branch and leaves the push to the runner.
    FixCiUnpushed,
    /// The recorded overload the first time this issue's step is invoked, the ok work after
    /// (a wait does not spend an attempt, so the attempt-indexed script cannot say "once").
    OverloadedOnce,
    /// The ok work plus `shared.txt` saying which issue wrote it: two such branches conflict.
    WriteShared,
    /// Merges origin's main into the feature branch, keeping the branch's side of every
    /// conflict, and pushes the branch: a merge-conflict repair.
    ResolveConflict,
    /// merge, the first time for this issue: the merge is made on main, but before its push
    /// someone else pushes a commit to origin's main, so the push is rejected (a lost push
    /// race); the ok work after.
    LoseRaceOnce,
    /// The ok work plus `shared.txt`, and a teammate pushes another `shared.txt` to origin's
    /// main meanwhile: the branch conflicts with main at merge time. The first time for the
    /// issue only (remembered beside the invocation log, across runs); the ok work after.
    WriteSharedRaced,
    /// Starts merging origin's main into the branch, leaves the conflict unfinished
    /// (`MERGE_HEAD`, conflict markers in the tree) and fails: a repair given up half-way.
    LeaveConflict,
    /// Tool calls for ever, a few per second: a model that never stops (Codex and Gemini
    /// have no turn limit the runner can pass).
    ToolLoop,
    /// The recorded rate limit the first time this issue's step is invoked, the ok work after.
    RateLimitOnce,
    /// Runs the program `$SDLC_FAKE_AGENT_TOOL` names (no arguments, in the working
    /// directory), says what it printed, then does the ok work whatever it exited with: an
    /// agent's shell command, for the sandbox's tests.
    Tool,
    /// Tries a TCP connection to this port on the loopback address, says whether it got one,
    /// then does the ok work: an agent reaching the network.
    Connect(u16),
    /// Asks `http://<address>/` (through the proxy variables it has), says what came back,
    /// then does the ok work: an agent reaching a host under the allowlist.
    Fetch(std::net::SocketAddrV4),
    /// Calls its CLI's model API at its base URL with its key variable, says what came back
    /// and the key it held, then does the ok work.
    Model,
    /// Claude tool calls for ever, one every this many milliseconds, each model request
    /// reporting 200 000 input tokens: a tool loop spending money fast, whose CLI's own cap
    /// does not fire (a proxied model). Only the runner's meter stops it.
    Spend(u64),
    /// The CLI cannot reach its model (no DNS, a refused port, a proxy in the way), as each
    /// real CLI reports it (`reach.rs`).
    Unreachable,
    /// The model is reachable only through the gateway the CLI's base-URL variable names
    /// (`ANTHROPIC_BASE_URL`, …): the ok work when it is set, [`Outcome::Unreachable`] when not.
    ViaGateway,
    /// The real CLI's `--max-budget-usd` stop (`error_max_budget_usd`, exit 1), replayed;
    /// refused (exit 3) when the runner did not pass `--max-budget-usd`.
    MaxBudget,
}

/// The program the `tool` outcome runs.
pub const TOOL_ENV: &str = "SDLC_FAKE_AGENT_TOOL";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recording {
    NotLoggedIn,
    RateLimit,
    Overloaded,
    Auth,
}

impl Recording {
    /// Recorded stdout, exit code and last stderr line of the real CLI of `kind`.
    fn replay(self, kind: AgentKind) -> (&'static str, i32, &'static str) {
        match (kind, self) {
            (AgentKind::Claude, _) => {
                let (stdout, rc) = self.stdout_and_rc();
                (stdout, rc.trim().parse().unwrap_or(1), "")
            }
            (AgentKind::Codex, Recording::RateLimit) => (include_str!("codex-rate-limit.jsonl"), 1, ""),
            (AgentKind::Codex, Recording::Overloaded) => (include_str!("codex-overloaded.jsonl"), 1, ""),
            (AgentKind::Codex, Recording::Auth) => (include_str!("codex-auth.jsonl"), 1, ""),
            // Acted out as it happens, by `codex_offline`.
            (AgentKind::Codex, Recording::NotLoggedIn) => ("", 124, ""),
            (AgentKind::Gemini, Recording::RateLimit) => (include_str!("gemini-rate-limit.jsonl"), 173, ""),
            (AgentKind::Gemini, Recording::Overloaded) => (include_str!("gemini-overloaded.jsonl"), 247, ""),
            (AgentKind::Gemini, Recording::Auth) => (include_str!("gemini-auth.jsonl"), 144, ""),
            (AgentKind::Gemini, Recording::NotLoggedIn) => (
                "",
                41,
                "Please set an Auth method in your settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA",
            ),
        }
    }

    fn stdout_and_rc(self) -> (&'static str, &'static str) {
        match self {
            Recording::NotLoggedIn => (
                include_str!("not-logged-in.jsonl"),
                include_str!("not-logged-in.rc"),
            ),
            Recording::RateLimit => (
                include_str!("rate-limit.jsonl"),
                include_str!("rate-limit.rc"),
            ),
            Recording::Overloaded => (
                include_str!("overloaded.jsonl"),
                include_str!("overloaded.rc"),
            ),
            Recording::Auth => (include_str!("auth.jsonl"), include_str!("auth.rc")),
        }
    }
}

impl Outcome {
    pub fn parse(name: &str) -> Option<Outcome> {
        let outcome = match name {
            "ok" => Outcome::Ok,
            "fail-test" => Outcome::FailTest(None),
            "soft-max-turns" => Outcome::SoftMaxTurns,
            "soft-is-error" => Outcome::SoftIsError,
            "soft-permission" => Outcome::SoftPermission,
            "benign-permission" => Outcome::BenignPermission,
            "not-logged-in" => Outcome::Recorded(Recording::NotLoggedIn),
            "rate-limit" => Outcome::Recorded(Recording::RateLimit),
            "overloaded" => Outcome::Recorded(Recording::Overloaded),
            "auth" => Outcome::Recorded(Recording::Auth),
            "hang" => Outcome::Hang,
            "fix-ci" => Outcome::FixCi,
            "fix-ci-unpushed" => Outcome::FixCiUnpushed,
            "overloaded-once" => Outcome::OverloadedOnce,
            "write-shared" => Outcome::WriteShared,
            "resolve-conflict" => Outcome::ResolveConflict,
            "lose-race-once" => Outcome::LoseRaceOnce,
            "write-shared-raced" => Outcome::WriteSharedRaced,
            "leave-conflict" => Outcome::LeaveConflict,
            "silent-hang" => Outcome::SilentHang,
            "ignore-term" => Outcome::IgnoreTerm,
            "no-branch" => Outcome::NoBranch,
            "checkout-main" => Outcome::CheckoutMain,
            "git-clean" => Outcome::GitClean,
            "daemon" => Outcome::Daemon(0),
            "checkout-main-once" => Outcome::CheckoutMainOnce,
            "leak-secrets" => Outcome::LeakSecrets,
            "tool-loop" => Outcome::ToolLoop,
            "rate-limit-once" => Outcome::RateLimitOnce,
            "tool" => Outcome::Tool,
            "max-budget" => Outcome::MaxBudget,
            "unreachable" => Outcome::Unreachable,
            "via-gateway" => Outcome::ViaGateway,
            "model" => Outcome::Model,
            _ => {
                if let Some(k) = name.strip_prefix("fail-test-") {
                    Outcome::FailTest(Some(k.parse().ok()?))
                } else if let Some(mb) = name.strip_prefix("flood:") {
                    Outcome::Flood(mb.parse().ok()?)
                } else if let Some(secs) = name.strip_prefix("quota:") {
                    Outcome::Quota(secs.parse().ok()?)
                } else if let Some(ms) = name.strip_prefix("daemon:") {
                    Outcome::Daemon(ms.parse().ok()?)
                } else if let Some(ms) = name.strip_prefix("slow:") {
                    Outcome::Slow(ms.parse().ok()?)
                } else if let Some(ms) = name.strip_prefix("spend:") {
                    Outcome::Spend(ms.parse().ok()?)
                } else if let Some(ms) = name.strip_prefix("busy:") {
                    Outcome::Busy(ms.parse().ok()?)
                } else if let Some(url) = name.strip_prefix("fetch:") {
                    Outcome::Fetch(url.parse().ok()?)
                } else if let Some(port) = name.strip_prefix("connect:") {
                    Outcome::Connect(port.parse().ok()?)
                } else if let Some(code) = name.strip_prefix("exit:") {
                    Outcome::Exit(code.parse().ok()?)
                } else {
                    return None;
                }
            }
        };
        Some(outcome)
    }

    /// Acts the outcome out on `out` and returns the exit code (never returns for hangs).
    pub fn perform(self, ctx: &Context, out: &mut Emitter) -> io::Result<i32> {
        match self {
            Outcome::Ok => {
                out.init()?;
                ok_work_and_result(ctx, out)
            }
            Outcome::Quota(secs) if out.kind() != AgentKind::Claude => {
                out.init()?;
                let text = if out.kind() == AgentKind::Codex {
                    // The local wall-clock time of the reset, as Codex words it.
                    let at = chrono::Local::now() + chrono::Duration::seconds(secs + 59);
                    format!(
                        "You’ve hit your usage limit. Upgrade to Pro, visit the usage settings to purchase more credits or try again at {}.",
                        at.format("%-I:%M %p")
                    )
                } else {
                    "[API Error: You have exhausted your daily quota on this model.]".to_string()
                };
                out.result(json!({"is_error": true, "result": text}))?;
                Ok(if out.kind() == AgentKind::Gemini {
                    173
                } else {
                    1
                })
            }
            Outcome::ToolLoop => {
                out.init()?;
                let mut n: u64 = 0;
                loop {
                    out.tool_call("Bash", json!({"command": format!("true # {n}")}))?;
                    n += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            Outcome::RateLimitOnce => once_then_ok(ctx, out, Recording::RateLimit),
            Outcome::Tool => {
                out.init()?;
                let tool = std::env::var_os(TOOL_ENV).unwrap_or_default();
                let said = match std::process::Command::new(&tool)
                    .current_dir(&ctx.cwd)
                    .output()
                {
                    Ok(o) => format!(
                        "{} exited {:?}: {}{}",
                        tool.to_string_lossy(),
                        o.status.code(),
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    ),
                    Err(e) => format!("{} could not run: {e}", tool.to_string_lossy()),
                };
                out.assistant_text(&said)?;
                ok_work_and_result(ctx, out)
            }
            Outcome::Connect(port) => {
                out.init()?;
                let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                let said =
                    match std::net::TcpStream::connect_timeout(&address, Duration::from_secs(5)) {
                        Ok(_) => format!("connected to {address}"),
                        Err(e) => format!("no connection to {address}: {e}"),
                    };
                out.assistant_text(&said)?;
                ok_work_and_result(ctx, out)
            }
            Outcome::Fetch(url) => {
                out.init()?;
                out.assistant_text(&super::net::fetch(&format!("http://{url}/")))?;
                ok_work_and_result(ctx, out)
            }
            Outcome::Model => {
                out.init()?;
                out.assistant_text(&super::net::call_model(out.kind()))?;
                ok_work_and_result(ctx, out)
            }
            Outcome::Spend(ms) => {
                if let Some(cap) = out.max_budget_usd() {
                    say_cap(cap);
                }
                out.set_input_tokens(200_000);
                out.init()?;
                let mut n: u64 = 0;
                loop {
                    out.tool_call("Bash", json!({"command": format!("true # {n}")}))?;
                    super::log_spent();
                    n += 1;
                    std::thread::sleep(Duration::from_millis(ms));
                }
            }
            Outcome::MaxBudget => {
                let Some(cap) = out.max_budget_usd() else {
                    eprintln!(
                        "fake-agent: max-budget needs --max-budget-usd, and the runner passed none"
                    );
                    return Ok(super::SCRIPT_ERROR_EXIT);
                };
                say_cap(cap);
                out.raw(include_str!("max-budget.jsonl"))?;
                Ok(1)
            }
            Outcome::Quota(secs) => {
                out.init()?;
                let resets_at = chrono::Utc::now().timestamp() + secs;
                let event = json!({
                    "type": "rate_limit_event",
                    "rate_limit_info": {"status": "rejected", "resetsAt": resets_at, "rateLimitType": "five_hour"},
                });
                out.raw(&format!("{event}\n"))?;
                let text = format!("Claude AI usage limit reached|{resets_at}");
                out.assistant_text(&text)?;
                out.result(json!({"is_error": true, "result": text}))?;
                Ok(1)
            }
            Outcome::CheckoutMainOnce => {
                out.init()?;
                let marker = super::once_marker(ctx);
                if marker.as_ref().is_some_and(|m| m.exists()) {
                    return ok_work_and_result(ctx, out);
                }
                super::git::checkout_main(ctx)?;
                if let Some(m) = marker {
                    std::fs::write(m, b"done\n")?;
                }
                out.assistant_text("Checked out main.")?;
                out.result(json!({"result": "Checked out main."}))?;
                Ok(0)
            }
            Outcome::Daemon(ms) => {
                out.init()?;
                for cleared in [false, true] {
                    let mut cmd =
                        std::process::Command::new(if cleared { "env" } else { "setsid" });
                    if cleared {
                        cmd.args(["-i", "setsid"]);
                    }
                    let child = cmd.args(["sleep", "300"]).spawn()?;
                    super::log_child(child.id());
                    // Left running on purpose: it escaped the agent's process group.
                    std::mem::forget(child);
                }
                std::thread::sleep(Duration::from_millis(ms));
                ok_work_and_result(ctx, out)
            }
            Outcome::GitClean => {
                out.init()?;
                super::git::clean_everything(ctx)?;
                ok_work_and_result(ctx, out)
            }
            Outcome::Slow(ms) => {
                out.init()?;
                let child = std::process::Command::new("sleep").arg("600").spawn()?;
                super::log_child(child.id());
                // The child is left running on purpose: the runner reaps the whole group.
                std::mem::forget(child);
                std::thread::sleep(Duration::from_millis(ms));
                ok_work_and_result(ctx, out)
            }
            Outcome::WriteShared => {
                out.init()?;
                super::git::write_shared(ctx)?;
                ok_work_and_result(ctx, out)
            }
            Outcome::WriteSharedRaced => {
                out.init()?;
                let marker = super::once_marker(ctx);
                if marker.as_ref().is_none_or(|m| !m.exists()) {
                    super::git::write_shared(ctx)?;
                    super::git::teammate_writes_shared(ctx)
                        .map_err(|e| io::Error::other(e.to_string()))?;
                    if let Some(m) = marker {
                        std::fs::write(m, b"done\n")?;
                    }
                }
                ok_work_and_result(ctx, out)
            }
            Outcome::LeaveConflict => {
                out.init()?;
                let text =
                    super::git::leave_conflict(ctx).map_err(|e| io::Error::other(e.to_string()))?;
                out.assistant_text(&text)?;
                out.result(json!({"is_error": true, "result": text}))?;
                Ok(1)
            }
            Outcome::LoseRaceOnce => {
                out.init()?;
                let marker = super::once_marker(ctx);
                if marker.as_ref().is_none_or(|m| m.exists()) {
                    return ok_work_and_result(ctx, out);
                }
                if let Some(m) = marker {
                    std::fs::write(m, b"done\n")?;
                }
                let text = match git::merge_losing_race(ctx) {
                    Ok(()) => "The push of main unexpectedly succeeded.".to_string(),
                    Err(e) => format!("The step's git work failed: {e}"),
                };
                eprintln!("fake-agent: {text}");
                out.assistant_text(&text)?;
                out.result(json!({"is_error": true, "result": text}))?;
                Ok(1)
            }
            Outcome::ResolveConflict => {
                out.init()?;
                let summary = super::git::resolve_conflict(ctx)?;
                out.assistant_text(&summary)?;
                out.result(json!({"result": summary}))?;
                Ok(0)
            }
            Outcome::FixCi | Outcome::FixCiUnpushed => {
                out.init()?;
                let summary = super::git::fix_ci(ctx, self == Outcome::FixCi)?;
                out.assistant_text(&summary)?;
                out.result(json!({"result": summary}))?;
                Ok(0)
            }
            Outcome::Busy(ms) => {
                out.init()?;
                let tools = ["Read", "Edit", "Bash"];
                for (i, tool) in tools.iter().enumerate() {
                    out.tool_call(tool, json!({"step": i}))?;
                    std::thread::sleep(Duration::from_millis(ms / tools.len() as u64));
                }
                ok_work_and_result(ctx, out)
            }
            Outcome::CheckoutMain => {
                out.init()?;
                super::git::checkout_main(ctx)?;
                out.assistant_text("Checked out main.")?;
                out.result(json!({"result": "Checked out main."}))?;
                Ok(0)
            }
            Outcome::NoBranch => {
                out.init()?;
                out.assistant_text("Done.")?;
                out.result(json!({"result": "Done."}))?;
                Ok(0)
            }
            Outcome::Exit(code) => {
                out.init()?;
                out.assistant_text("Done.")?;
                out.result(json!({"result": "Done."}))?;
                Ok(code)
            }
            Outcome::FailTest(k) => {
                out.init()?;
                let text = cargo_test_failure(ctx.issue.unwrap_or(0), k);
                out.failed_command("cargo test", &text)?;
                out.assistant_text(&text)?;
                out.result(json!({"is_error": true, "result": text}))?;
                Ok(1)
            }
            Outcome::LeakSecrets => {
                out.init()?;
                let extra = std::env::var("SDLC_FAKE_LEAK").unwrap_or_default();
                let text = format!(
                    "error: request failed with ANTHROPIC_API_KEY=sk-ant-api03-LeakedLeaked01 \
                     and token ghp_LeakedLeakedLeaked0123 {extra}"
                );
                out.assistant_text(&text)?;
                out.result(json!({"is_error": true, "result": text}))?;
                Ok(1)
            }
            Outcome::SoftMaxTurns => {
                out.init()?;
                out.assistant_text("Still working on it.")?;
                out.result(json!({
                    "subtype": "error_max_turns",
                    "is_error": true,
                    "terminal_reason": "max_turns",
                    "stop_reason": "tool_use",
                    "errors": ["Reached maximum number of turns (3)"],
                    "result": null,
                }))?;
                Ok(0)
            }
            Outcome::SoftIsError => {
                out.init()?;
                let text = "I could not complete this step.";
                out.assistant_text(text)?;
                out.result(json!({"is_error": true, "result": text}))?;
                Ok(0)
            }
            Outcome::SoftPermission => {
                out.init()?;
                out.permission_denied("Bash", json!({"command": "rm -rf /"}))?;
                out.assistant_text("I was not allowed to run that command.")?;
                out.result(json!({}))?;
                Ok(0)
            }
            Outcome::BenignPermission => {
                out.init()?;
                let question = json!({"questions": [{"question": "Which branch name?"}]});
                out.permission_denied("AskUserQuestion", question)?;
                ok_work_and_result(ctx, out)
            }
            Outcome::OverloadedOnce => once_then_ok(ctx, out, Recording::Overloaded),
            Outcome::Recorded(Recording::NotLoggedIn) if out.kind() == AgentKind::Codex => {
                super::reach::codex_refused_then_offline(out)
            }
            Outcome::Unreachable => super::reach::unreachable(out),
            Outcome::ViaGateway if !super::reach::gateway_known(out.kind()) => {
                super::reach::unreachable(out)
            }
            Outcome::ViaGateway => {
                out.init()?;
                ok_work_and_result(ctx, out)
            }
            Outcome::Recorded(recording) => {
                let (stdout, rc, stderr) = recording.replay(out.kind());
                out.raw(stdout)?;
                if !stderr.is_empty() {
                    eprintln!("{stderr}");
                }
                Ok(rc)
            }
            Outcome::Hang => {
                out.init()?;
                out.tool_call("Read", json!({"file_path": "README.md"}))?;
                sleep_forever()
            }
            Outcome::SilentHang => sleep_forever(),
            Outcome::IgnoreTerm => {
                // A handler that only sets a flag nobody reads: SIGTERM no longer ends us.
                signal_hook::flag::register(
                    signal_hook::consts::SIGTERM,
                    std::sync::Arc::default(),
                )?;
                out.init()?;
                sleep_forever()
            }
            Outcome::Flood(mb) => {
                out.init()?;
                out.flood(mb.saturating_mul(1024 * 1024))?;
                ok_work_and_result(ctx, out)
            }
        }
    }
}

/// The step's git work, then a success result, or an error result when git refuses.
/// `recording` the first time this attempt's marker is missing (the marker is then written),
/// the usual work and result every time after.
fn once_then_ok(ctx: &Context, out: &mut Emitter, recording: Recording) -> io::Result<i32> {
    let marker = super::once_marker(ctx);
    if marker.as_ref().is_some_and(|m| m.exists()) {
        out.init()?;
        return ok_work_and_result(ctx, out);
    }
    if let Some(m) = marker {
        std::fs::write(m, b"done\n")?;
    }
    Outcome::Recorded(recording).perform(ctx, out)
}

/// Tells stderr the cap the runner passed, in one write: the runner's live log interleaves
/// stdout and stderr, and a test reads the line whole.
fn say_cap(cap: &str) {
    use std::io::Write;
    let line = format!("fake-agent: --max-budget-usd {cap}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

fn ok_work_and_result(ctx: &Context, out: &mut Emitter) -> io::Result<i32> {
    match git::do_step_work(ctx) {
        Ok(summary) => {
            out.assistant_text(&summary)?;
            out.result(json!({"result": summary}))?;
            Ok(0)
        }
        Err(e) => {
            let text = format!("The step's git work failed: {e}");
            eprintln!("fake-agent: {text}");
            out.assistant_text(&text)?;
            out.result(json!({"is_error": true, "result": text}))?;
            Ok(1)
        }
    }
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Test names per `fail-test-<k>`: distinct words, so signatures differ even if a
/// normalizer erases numbers.
const CASES: [&str; 8] = [
    "parses", "renders", "saves", "loads", "sorts", "merges", "counts", "closes",
];

/// Output shaped like `cargo test` with one failing assertion, with the noise a real run has
/// (time, pid, temp paths, durations) so signatures must normalize it to stay stable.
fn cargo_test_failure(issue: u32, k: Option<u32>) -> String {
    let (name, left, right) = match k {
        None => (format!("tests::issue_{issue}_works"), 1, 2),
        Some(k) => {
            let word = CASES[k as usize % CASES.len()];
            (
                format!("tests::issue_{issue}_{word}_case_{k}"),
                k.saturating_add(1),
                k.saturating_add(2),
            )
        }
    };
    let now = chrono::Utc::now();
    let pid = std::process::id();
    let nanos = now.timestamp_subsec_nanos();
    let tmp = std::env::temp_dir().join(format!(".tmp{nanos:08x}"));
    let tmp = tmp.display();
    let millis = nanos % 1000;
    format!(
        "[{now}] cargo test (pid {pid})\n\
         \x20  Compiling project v0.1.0 ({tmp})\n\
         \x20   Finished `test` profile [unoptimized + debuginfo] target(s) in 1.{millis:03}s\n\
         \x20    Running unittests src/lib.rs ({tmp}/target/debug/deps/project-{nanos:016x})\n\n\
         running 1 test\n\
         test {name} ... FAILED\n\n\
         failures:\n\n\
         ---- {name} stdout ----\n\n\
         thread '{name}' panicked at src/issue_{issue}.rs:12:5:\n\
         assertion `left == right` failed\n\
         \x20 left: {left}\n\
         \x20right: {right}\n\
         note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\
         failures:\n\
         \x20   {name}\n\n\
         test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{millis:03}s\n\n\
         error: test failed, to rerun pass `--lib`\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_documented_outcome_and_rejects_others() {
        for (name, outcome) in [
            ("ok", Outcome::Ok),
            ("fail-test", Outcome::FailTest(None)),
            ("fail-test-3", Outcome::FailTest(Some(3))),
            ("flood:5", Outcome::Flood(5)),
            ("exit:7", Outcome::Exit(7)),
            ("not-logged-in", Outcome::Recorded(Recording::NotLoggedIn)),
            ("ignore-term", Outcome::IgnoreTerm),
            ("tool", Outcome::Tool),
            ("connect:8080", Outcome::Connect(8080)),
            (
                "fetch:127.0.0.2:80",
                Outcome::Fetch(std::net::SocketAddrV4::new([127, 0, 0, 2].into(), 80)),
            ),
            ("model", Outcome::Model),
        ] {
            assert_eq!(Outcome::parse(name), Some(outcome), "{name}");
        }
        for name in [
            "",
            "OK",
            "fail-test-x",
            "flood:",
            "flood:-1",
            "exit:x",
            "connect:70000",
            "hang ",
        ] {
            assert_eq!(Outcome::parse(name), None, "{name:?}");
        }
    }

    #[test]
    fn failures_differ_by_case_and_carry_the_assertion() {
        let plain = cargo_test_failure(7, None);
        assert!(plain.contains("test tests::issue_7_works ... FAILED"));
        assert!(plain.contains("  left: 1\n right: 2\n"));
        let one = cargo_test_failure(7, Some(1));
        let two = cargo_test_failure(7, Some(2));
        assert!(one.contains("tests::issue_7_renders_case_1"));
        assert!(two.contains("tests::issue_7_saves_case_2"));
    }
}
