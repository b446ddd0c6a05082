//! Every captured Codex and Gemini CLI run in `tests/fixtures/codex-cli/` and
//! `tests/fixtures/gemini-cli/`, read by its adapter's stream reader (in small chunks, as a
//! pipe delivers them) and classified, each landing in the class its README names
//! (docs/agents.md). A caller's `timeout` (exit 124) in a capture is the runner's own step
//! timeout here.

use sdlc_runner::agent::classify::{Classified, Observation};
use sdlc_runner::agent::cli;
use sdlc_runner::agent::stream::StreamSummary;
use sdlc_runner::config::AgentKind;
use sdlc_runner::failure::FailureClass::{self, *};
use std::path::{Path, PathBuf};

const NOW: i64 = 1_778_560_000;
const MAX_TURNS: u32 = 20;

fn fixture(dir: &str, name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn dir(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Codex => "codex-cli",
        AgentKind::Gemini => "gemini-cli",
        AgentKind::Claude => "claude-cli",
    }
}

/// What the runner saw of one captured case.
struct Seen {
    summary: StreamSummary,
    /// The reader asked to stop the agent.
    stopped: bool,
    classified: Option<Classified>,
}

fn case(kind: AgentKind, name: &str, max_turns: u32) -> Seen {
    let stdout = fixture(dir(kind), &format!("{name}.jsonl"));
    let stderr = String::from_utf8(fixture(dir(kind), &format!("{name}.stderr"))).unwrap();
    let rc: i32 = String::from_utf8(fixture(dir(kind), &format!("{name}.rc")))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut reader = cli::Reader::new(kind, max_turns);
    let mut stopped = false;
    let mut fed = 0;
    for chunk in stdout.chunks(97) {
        fed += chunk.len();
        if !reader.feed(chunk) {
            stopped = true;
            break;
        }
    }
    let summary = reader.finish();
    let tail = String::from_utf8_lossy(&stdout[..fed]).to_string();
    // The runner's own timeout ended the capture's 124 cases; a stopped agent exits by SIGTERM.
    let timed_out = rc == 124 && !stopped;
    let exit = if stopped || timed_out { None } else { Some(rc) };
    let classified = cli::classify(
        kind,
        &Observation {
            exit_code: exit,
            timed_out,
            idle_timed_out: false,
            killed: false,
            summary: &summary,
            stderr_tail: &stderr,
            output_tail: &tail,
            now_epoch_secs: NOW,
            temp_dir: Path::new("/tmp"),
        },
    );
    Seen {
        summary,
        stopped,
        classified,
    }
}

fn class(kind: AgentKind, name: &str) -> Option<FailureClass> {
    case(kind, name, MAX_TURNS).classified.map(|c| c.class)
}

#[test]
fn every_codex_case_lands_in_its_class() {
    let table: &[(&str, Option<FailureClass>)] = &[
        ("success", None),
        ("bash-then-done", None),
        // The CLI says success; the step's post-check judges the repository (docs/agents.md).
        ("bash-then-done.workspace-write", None),
        ("bash-then-done.workspace-write.items-missing", None),
        ("bash-then-done.workspace-write-gitdir", None),
        ("tool-loop", Some(MaxTurns)),
        ("rate-limit", Some(RateLimit)),
        ("stream-rate-limit", Some(RateLimit)),
        ("rate-limit.default-retries", Some(RateLimit)),
        ("usage-limit", Some(Quota)),
        ("quota", Some(Auth)),
        ("auth", Some(Auth)),
        ("auth.default-retries", Some(Auth)),
        ("not-logged-in", Some(Auth)),
        ("not-logged-in-base-url", Some(Auth)),
        ("server-error", Some(Overloaded)),
        ("server-error.default-retries", Some(Overloaded)),
        ("overloaded", Some(Overloaded)),
        ("overloaded.default-retries", Some(Overloaded)),
        ("context", Some(ContextWindow)),
        ("context-http", Some(ContextWindow)),
        ("stall", Some(Overloaded)),
        ("slow", Some(Timeout)),
        // `waiting for network` from the first request, no HTTP answer before: the model
        // unreachable, the network's (not-logged-in above was refused by a proxy first).
        ("network-unreachable", Some(Network)),
        ("connection-refused", Some(Network)),
    ];
    let mut wrong = Vec::new();
    for (name, want) in table {
        let got = class(AgentKind::Codex, name);
        if got != *want {
            wrong.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Every captured case is in the table.
    assert_eq!(cases_in("codex-cli"), sorted(table.iter().map(|(n, _)| *n)));
}

#[test]
fn every_gemini_case_lands_in_its_class() {
    let table: &[(&str, Option<FailureClass>)] = &[
        ("success", None),
        ("bash-then-done", None),
        ("bash-then-done.yolo-flag", None),
        ("rate-limit.recovers", None),
        ("bash-then-done.no-yolo", Some(PermissionDenied)),
        ("bash-then-done.untrusted", Some(ToolingEnv)),
        ("tool-loop", Some(MaxTurns)),
        ("tool-loop.loop-detected", Some(MaxTurns)),
        // More tool calls than maxTurns (20) before the capture's timeout: the runner stops it.
        ("tool-loop.varied", Some(MaxTurns)),
        ("rate-limit", Some(RateLimit)),
        ("rate-limit.pinned-model", Some(RateLimit)),
        ("rate-limit.default-retries", Some(RateLimit)),
        ("quota-daily", Some(Quota)),
        ("auth", Some(Auth)),
        ("auth-403", Some(Auth)),
        ("server-error", Some(Overloaded)),
        ("overloaded", Some(Overloaded)),
        ("overloaded.default-retries", Some(Overloaded)),
        ("context", Some(ContextWindow)),
        ("not-logged-in", Some(Auth)),
        ("base-url-only", Some(Auth)),
        ("slow", Some(Timeout)),
        // `fetch failed` and no HTTP status: the model unreachable, the network's.
        ("network-unreachable", Some(Network)),
        ("connection-refused", Some(Network)),
    ];
    let mut wrong = Vec::new();
    for (name, want) in table {
        let got = class(AgentKind::Gemini, name);
        if got != *want {
            wrong.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(
        cases_in("gemini-cli"),
        sorted(table.iter().map(|(n, _)| *n))
    );
}

fn cases_in(dir: &str) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let names = std::fs::read_dir(path).unwrap().filter_map(|e| {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        name.strip_suffix(".jsonl").map(str::to_string)
    });
    sorted(names)
}

fn sorted<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Vec<String> {
    let mut v: Vec<String> = items.into_iter().map(Into::into).collect();
    v.sort();
    v
}

#[test]
fn a_codex_tool_loop_is_stopped_at_max_turns_not_by_the_timeout() {
    let seen = case(AgentKind::Codex, "tool-loop", 5);
    assert!(seen.stopped, "the reader asks to stop the agent");
    assert_eq!(seen.summary.tool_calls, 6);
    assert_eq!(seen.summary.turn_limit, Some(5));
    let c = seen.classified.unwrap();
    assert_eq!(c.class, MaxTurns);
    assert!(c.summary.contains("maxTurns 5"), "{}", c.summary);
}

#[test]
fn a_gemini_run_of_varied_tool_calls_is_stopped_at_max_turns() {
    let seen = case(AgentKind::Gemini, "tool-loop.varied", 5);
    assert!(seen.stopped);
    assert_eq!(seen.summary.tool_calls, 6);
    assert_eq!(seen.classified.unwrap().class, MaxTurns);
    // Under a generous limit the step timeout ends it, as it ended the capture.
    let seen = case(AgentKind::Gemini, "tool-loop.varied", 1000);
    assert!(!seen.stopped);
    assert_eq!(seen.classified.unwrap().class, Timeout);
}

#[test]
fn codex_reconnecting_without_network_is_stopped_at_the_first_sign() {
    let seen = case(AgentKind::Codex, "not-logged-in", MAX_TURNS);
    assert!(seen.stopped, "not left to the idle timeout");
    let c = seen.classified.unwrap();
    assert_eq!(c.class, Auth);
    assert!(c.summary.contains("kept reconnecting"), "{}", c.summary);
    // Ordinary retries of a 429 or 401 are not mistaken for it.
    for name in ["rate-limit", "auth", "server-error"] {
        assert!(!case(AgentKind::Codex, name, MAX_TURNS).stopped, "{name}");
    }
}

#[test]
fn codex_usage_limit_waits_until_the_time_the_message_names() {
    let c = case(AgentKind::Codex, "usage-limit", MAX_TURNS)
        .classified
        .unwrap();
    assert_eq!(c.class, Quota);
    let wait = c.wait_hint_secs.expect("a reset time");
    assert!(wait > 0 && wait <= 24 * 3600, "{wait}");
    assert_eq!(
        Some(wait),
        cli::reset_wait_secs("try again at 3:20 PM.", NOW)
    );
}

#[test]
fn the_readers_report_session_turns_tokens_and_outcome() {
    let codex = case(AgentKind::Codex, "bash-then-done", MAX_TURNS).summary;
    assert!(codex.session_id.is_some());
    assert_eq!(codex.tool_calls, 1, "started and completed count once");
    let result = codex.result.unwrap();
    assert!(!result.is_error);
    assert_eq!(result.num_turns, Some(2));
    assert_eq!(result.result_text.as_deref(), Some("done"));
    assert_eq!(codex.tokens.len(), 1);
    assert_eq!((codex.tokens[0].input, codex.tokens[0].output), (2000, 103));

    let gemini = case(AgentKind::Gemini, "bash-then-done", MAX_TURNS).summary;
    assert!(gemini.session_id.is_some());
    assert_eq!(gemini.tool_calls, 1);
    assert_eq!(gemini.last_tool.as_deref(), Some("run_shell_command"));
    let models: Vec<&str> = gemini.tokens.iter().map(|t| t.model.as_str()).collect();
    assert_eq!(models, ["gemini-3.5-flash-lite", "gemini-3.8-flash"]);
    assert_eq!(gemini.tokens[1].input, 2000);
    assert!(!gemini.result.unwrap().is_error);
}

#[test]
fn unknown_events_and_junk_are_tolerated_and_memory_stays_flat() {
    for kind in [AgentKind::Codex, AgentKind::Gemini] {
        let mut reader = cli::Reader::new(kind, MAX_TURNS);
        reader.feed(b"{\"type\":\"something.new\",\"x\":[1,2]}\nnot json\n\xff\xfe\n");
        let long = vec![b'a'; 6 * 1024 * 1024];
        reader.feed(&long);
        reader.feed(b"\n");
        let success = fixture(dir(kind), "success.jsonl");
        assert!(reader.feed(&success));
        let summary = reader.finish();
        assert_eq!(summary.malformed_lines, 3, "{kind}");
        assert!(summary.result.is_some_and(|r| !r.is_error), "{kind}");
    }
    let mut codex = cli::codex::Reader::new(MAX_TURNS);
    let mut gemini = cli::gemini::Reader::new(MAX_TURNS);
    for _ in 0..20 {
        let chunk = vec![b'{'; 1024 * 1024];
        codex.feed(&chunk);
        gemini.feed(&chunk);
    }
    assert!(codex.buffered_bytes() <= 5 * 1024 * 1024);
    assert!(gemini.buffered_bytes() <= 5 * 1024 * 1024);
}

/// The real CLI's tool loop, metered: each model request's `usage` is priced as it streams,
/// and the reader asks to stop the agent at the message whose cost reaches the money given,
/// classified `BUDGET` with what was spent.
#[test]
fn a_claude_run_is_stopped_at_the_message_whose_cost_reaches_its_money() {
    let stdout = fixture("claude-cli", "tool-loop.jsonl");
    let mut pricing = sdlc_runner::config::shipped_pricing();
    // Each assistant message of the capture reports 100 input and 1 output tokens:
    // 100 × $4/M + 1 × $20/M = $0.00042.
    pricing.insert(
        "claude-opus-5-5".into(),
        sdlc_runner::config::Price {
            input: 4.0,
            cached_input: 0.4,
            output: 20.0,
            cache_write: 5.0,
        },
    );
    let mut reader = cli::Reader::new(AgentKind::Claude, MAX_TURNS).metered(pricing, "opus", 800);
    let mut fed = 0;
    for line in stdout.split_inclusive(|b| *b == b'\n') {
        fed += 1;
        if !reader.feed(line) {
            break;
        }
    }
    let summary = reader.finish();
    let money = summary.money_reached.expect("stopped at its money");
    assert_eq!(money.spent_micros, 840, "two messages: {summary:?}");
    assert_eq!(money.limit_micros, 800);
    assert_eq!(
        summary.turns, 2,
        "stopped at the second message, line {fed}"
    );
    let classified = cli::classify(
        AgentKind::Claude,
        &Observation {
            exit_code: None,
            timed_out: false,
            idle_timed_out: false,
            killed: false,
            summary: &summary,
            stderr_tail: "",
            output_tail: "",
            now_epoch_secs: NOW,
            temp_dir: Path::new("/tmp"),
        },
    )
    .expect("a failure");
    assert_eq!(classified.class, Budget);
    assert!(
        classified.summary.contains("$0.00"),
        "{}",
        classified.summary
    );
}

/// Without a price for the model, the meter never stops the agent (the CLI's own cap and
/// the step's limits do), rather than stopping it at a cost it cannot know.
#[test]
fn an_unpriced_model_is_not_metered() {
    let stdout = fixture("claude-cli", "tool-loop.jsonl");
    let mut reader = cli::Reader::new(AgentKind::Claude, MAX_TURNS).metered(
        sdlc_runner::config::Pricing::new(),
        "opus",
        1,
    );
    assert!(reader.feed(&stdout));
    assert_eq!(reader.finish().money_reached, None);
}
