//! Deterministic failure classification and signatures (docs/classification.md). No model calls, no IO:
//! [`classify`] turns what was observed of one attempt into a [`FailureClass`], a stable
//! [`Signature`], a one-line summary, a wait hint for quota exhaustion and an excerpt for
//! repair prompts.
//!
//! # Precedence
//!
//! The first rule that matches wins:
//!
//! 1. **Environment** — `TOOLING_ENV` (the CLI refusing to run as root with
//!    `--dangerously-skip-permissions`, the agent binary missing or not executable, disk full)
//!    then `AUTH` (not logged in, invalid or expired key, 401/403, no credit). These halt the
//!    run, so they are looked for only where the CLI itself speaks: its stderr, its `result`
//!    text, its synthetic API-error messages and its structured fields. Never in tool output,
//!    where an agent reading code that *mentions* "Invalid API key" would otherwise halt
//!    everything (a defect of the older runner, docs/design-notes.md). Disk full is the exception: an
//!    `ENOSPC` in a failed command's output is as certain as one on stderr.
//! 2. **Quota** — a `rate_limit_event` with `status: "rejected"` and a reset time, or the
//!    CLI's "usage limit reached" / "hit your limit … resets" message. Before rate limits,
//!    because an exhausted window is also reported as HTTP 429.
//! 3. **Rate limit / overload** — API status 429 → `RATE_LIMIT`; 529, `overloaded_error` or
//!    another 5xx → `OVERLOADED`.
//! 4. **Runner's guards** — `TIMEOUT` (wall clock, or exit 124 without a result), `IDLE`,
//!    `KILLED` (a signal we did not send, or no exit code).
//! 5. **Agent-reported** — `CONTEXT_WINDOW` (prompt too long), `MAX_TURNS`
//!    (`error_max_turns`), `PERMISSION_DENIED` (serious denials, see
//!    [`crate::stream::soft_failure`]).
//! 6. **Tool-output patterns**, over the output of failed commands the agent ran (tool results
//!    with `is_error`, Bash output) plus stderr: `TYPECHECK` (tsc `error TS…`, mypy), then
//!    hard `BUILD_COMPILE` (`error[E…]`, go `[build failed]`, C/Java compiler errors,
//!    syntax errors, missing modules), then `LINT` (clippy under `-D warnings`, eslint,
//!    ruff/flake8), then `TEST_ASSERTION`, then a remaining `could not compile` (e.g. linker)
//!    as `BUILD_COMPILE`, then a missing command (`command not found`) as `TOOLING_ENV`.
//!    Missing modules (`Cannot find module`, `MODULE_NOT_FOUND`, `ModuleNotFoundError`) are
//!    `BUILD_COMPILE`, not `TOOLING_ENV`: they are usually a wrong import path or an
//!    undeclared dependency the agent fixes with one install, and `TOOLING_ENV` would halt
//!    the whole run.
//! 7. `UNKNOWN`.
//!
//! # Signatures
//!
//! `signature = FNV-1a-64(class name, "\n", normalize(relevant excerpt))`. The excerpt is the
//! evidence that decided the class (the failing tests' and errors' own lines, the API error
//! message, the denied tools), not the whole tail, so unrelated noise around a failure does
//! not change it; [`normalize`] removes the volatile data inside it.

pub mod normalize;
mod tool_lines;

use tool_lines::{
    is_hard_build_line, is_lint_line, is_soft_build_line, is_test_line, is_typecheck_line,
};

pub use normalize::normalize;

use crate::failure::{FailureClass, Signature};
use crate::stream::{soft_failure, SoftFailure, StreamSummary};
use serde_json::Value;
use std::path::Path;

/// Longest summary line.
pub const MAX_SUMMARY_CHARS: usize = 200;
/// Longest excerpt for repair prompts.
pub const MAX_EXCERPT_CHARS: usize = 2000;
/// Evidence lines kept for a signature: enough to tell failures apart, few enough that a
/// flood of identical errors does not make every attempt look new.
const MAX_EVIDENCE_LINES: usize = 20;

/// Everything observed of one finished attempt.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    /// The agent's exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// Killed by the runner's wall-clock step timeout.
    pub timed_out: bool,
    /// Killed by the runner's idle timeout (no output for `idleTimeoutMin`).
    pub idle_timed_out: bool,
    /// Ended by a signal the runner did not send.
    pub killed: bool,
    /// What the agent's stream-json output said (result event, API errors, retries).
    pub summary: &'a StreamSummary,
    /// The last bytes of the agent's stderr, where CLIs print auth and network errors.
    pub stderr_tail: &'a str,
    /// The last bytes of stdout (stream-json lines, or plain text from other agents).
    pub output_tail: &'a str,
    /// The current time in Unix seconds, to tell whether a quota reset is still ahead.
    pub now_epoch_secs: i64,
    /// The temporary directory, whose path is normalized out of signatures.
    pub temp_dir: &'a Path,
}

/// A classified failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// What kind of failure it was; decides retry, backoff, escalation or halt.
    pub class: FailureClass,
    /// The normalized text that tells this failure apart from others of its class.
    pub signature: Signature,
    /// One line, at most [`MAX_SUMMARY_CHARS`] characters, starting with the class name.
    pub summary: String,
    /// For `QUOTA`: seconds until the reported reset (0 if already past).
    pub wait_hint_secs: Option<u64>,
    /// The relevant part of the output, at most [`MAX_EXCERPT_CHARS`] characters.
    pub excerpt: String,
}

/// Classify one attempt. `None` means it succeeded: exit 0, not killed, no soft failure.
/// (A post-step check can still fail it: see [`classify_post_check`].)
pub fn classify(obs: &Observation) -> Option<Classified> {
    let result = obs.summary.result.as_ref();
    let soft = result.and_then(|r| soft_failure(r, obs.temp_dir));
    let guarded = obs.timed_out || obs.idle_timed_out || obs.killed;
    if obs.exit_code == Some(0) && !guarded && soft.is_none() {
        return None;
    }
    let facts = Facts::gather(obs);
    let verdict = environment(obs, &facts)
        .or_else(|| quota(obs, &facts))
        .or_else(|| api_pressure(obs, &facts))
        .or_else(|| guards(obs))
        .or_else(|| agent_reported(obs, &facts, soft.as_ref()))
        .or_else(|| tool_output(&facts))
        .unwrap_or_else(|| unknown(obs, &facts));
    Some(verdict.finish())
}

/// A failed runner-side check after a step (docs/lifecycle.md), e.g. `("startIssue", "no feature
/// branch checked out")`.
pub fn classify_post_check(step_key: &str, what: &str) -> Classified {
    let line = one_line(what);
    Verdict {
        class: FailureClass::PostCheck,
        evidence: format!("{step_key}: {line}"),
        headline: format!("{step_key}: {line}"),
        excerpt: what.to_string(),
        wait_hint_secs: None,
    }
    .finish()
}

/// A builtin step whose call was stopped at the step's `timeoutMin` (its process group
/// killed): TIMEOUT, as for an agent that ran out of time.
pub fn classify_builtin_timeout(step_key: &str, what: &str) -> Classified {
    let mut verdict = Verdict::new(
        FailureClass::Timeout,
        format!("{step_key}: step timeout"),
        what.to_string(),
    );
    verdict.headline = format!("{step_key}: ran past its timeoutMin and was stopped");
    verdict.finish()
}

/// A runner call that failed on the network after the agent ran in the same attempt: the
/// attempt cannot be issued again as it was (the agent would run twice), so it fails as
/// NETWORK, which the machine waits out without spending an attempt.
pub fn classify_network(step_key: &str, what: &str) -> Classified {
    Verdict {
        class: FailureClass::Network,
        evidence: format!("{step_key}: network"),
        headline: format!("{step_key}: {}", one_line(what)),
        excerpt: what.to_string(),
        wait_hint_secs: None,
    }
    .finish()
}

/// A builtin step's failure (docs/classification.md): its output is read like an agent's, so
/// a lost login, a full disk or a missing binary halt as they would for an agent. What
/// nothing recognizes is a `POST_CHECK` failure of the step, except failing CI
/// (`ci_failed`), which is the code's to fix (`TEST_ASSERTION` unless its log names a more
/// precise class), so that a repair attempt gets it.
pub fn classify_builtin(step_key: &str, what: &str, ci_failed: bool) -> Classified {
    if is_merge_conflict(what) {
        return Verdict {
            class: FailureClass::MergeConflict,
            evidence: format!("{step_key}: {what}"),
            headline: format!("{step_key}: {}", one_line(what)),
            excerpt: what.to_string(),
            wait_hint_secs: None,
        }
        .finish();
    }
    let summary = StreamSummary::default();
    let obs = Observation {
        exit_code: Some(1),
        timed_out: false,
        idle_timed_out: false,
        killed: false,
        summary: &summary,
        stderr_tail: "",
        output_tail: what,
        now_epoch_secs: 0,
        temp_dir: Path::new("/"),
    };
    let found = classify(&obs).filter(|c| c.class != FailureClass::Unknown);
    match found {
        Some(c) if !ci_failed || c.class.code_fixable() => c,
        Some(c) if c.class.disposition() != crate::failure::Disposition::Retry => c,
        _ if ci_failed => Verdict {
            class: FailureClass::TestAssertion,
            // The failing checks and their logs, not only the first line: a different
            // failure must get a different signature.
            evidence: format!("{step_key}: {what}"),
            headline: format!("{step_key}: {}", one_line(what)),
            excerpt: what.to_string(),
            wait_hint_secs: None,
        }
        .finish(),
        _ => classify_post_check(step_key, what),
    }
}

/// A failure decided outside the rules here (an agent adapter's own reading of its CLI):
/// `evidence` feeds the signature, `headline` the summary, `excerpt` the repair prompt.
pub fn decided(
    class: FailureClass,
    evidence: &str,
    headline: &str,
    excerpt: &str,
    wait_hint_secs: Option<u64>,
) -> Classified {
    Verdict {
        class,
        evidence: evidence.to_string(),
        headline: one_line(headline),
        excerpt: excerpt.to_string(),
        wait_hint_secs,
    }
    .finish()
}

/// Stable signature of a class and normalized text: FNV-1a 64 (std's `DefaultHasher` may
/// change between Rust releases, and signatures are stored in journals).
pub fn signature(class: FailureClass, normalized: &str) -> Signature {
    use std::hash::Hasher;
    // `write`, not `Hash::hash`: the bytes alone, without the terminator `str` hashing adds.
    let mut hash = fnv::FnvHasher::default();
    hash.write(class.name().as_bytes());
    hash.write(b"\n");
    hash.write(normalized.as_bytes());
    Signature(hash.finish())
}

// ---------------------------------------------------------------------------------------

/// A decision before it is turned into a [`Classified`].
struct Verdict {
    class: FailureClass,
    /// Signature input, before normalization.
    evidence: String,
    headline: String,
    excerpt: String,
    wait_hint_secs: Option<u64>,
}

impl Verdict {
    fn new(class: FailureClass, evidence: impl Into<String>, excerpt: impl Into<String>) -> Self {
        let evidence = evidence.into();
        Verdict {
            class,
            headline: one_line(&evidence),
            evidence,
            excerpt: excerpt.into(),
            wait_hint_secs: None,
        }
    }

    fn finish(self) -> Classified {
        let headline = self.headline.trim();
        let summary = if headline.is_empty() {
            self.class.name().to_string()
        } else {
            format!("{}: {headline}", self.class.name())
        };
        Classified {
            class: self.class,
            signature: signature(self.class, &normalize(&self.evidence)),
            summary: truncate_chars(&summary, MAX_SUMMARY_CHARS),
            wait_hint_secs: self.wait_hint_secs,
            excerpt: truncate_chars(self.excerpt.trim(), MAX_EXCERPT_CHARS),
        }
    }
}

/// Texts the rules look at, extracted once.
struct Facts {
    /// What the CLI itself said: stderr, result text, synthetic API-error message.
    cli_lines: Vec<String>,
    /// Output of commands the agent ran (failed ones and Bash), plain-text output, stderr.
    tool_lines: Vec<String>,
    /// The part of `tool_lines` that certainly reports a failure: tool results with
    /// `is_error`, plain-text output, stderr. Rules that halt the run (disk full, a missing
    /// command) look only here, so a `grep ENOSPC` over source code cannot halt anything.
    failed_tool_lines: Vec<String>,
}

impl Facts {
    fn gather(obs: &Observation) -> Facts {
        let mut cli_lines: Vec<String> = lines_of(obs.stderr_tail);
        if let Some(text) = obs
            .summary
            .result
            .as_ref()
            .and_then(|r| r.result_text.as_ref())
        {
            cli_lines.extend(lines_of(text));
        }
        if let Some(text) = &obs.summary.api_error_message {
            cli_lines.extend(lines_of(text));
        }
        let (mut tool_lines, mut failed_tool_lines) = readable_tool_output(obs.output_tail);
        tool_lines.extend(lines_of(obs.stderr_tail));
        failed_tool_lines.extend(lines_of(obs.stderr_tail));
        Facts {
            cli_lines,
            tool_lines,
            failed_tool_lines,
        }
    }

    fn cli_text_has(&self, needles: &[&str]) -> Option<&str> {
        find_line(&self.cli_lines, needles)
    }
}

fn lines_of(text: &str) -> Vec<String> {
    normalize::strip_ansi(text)
        .split(['\n', '\r'])
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// The first line containing any of `needles` (ASCII case-insensitive).
fn find_line<'a>(lines: &'a [String], needles: &[&str]) -> Option<&'a str> {
    lines
        .iter()
        .find(|line| needles.iter().any(|n| contains_ci(line, n)))
        .map(String::as_str)
}

fn contains_ci(haystack: &str, needle: &str) -> bool {
    let needle = needle.as_bytes();
    haystack
        .as_bytes()
        .windows(needle.len().max(1))
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// From a stream-json tail: the output of failed tool calls, Bash output (an agent often pipes
/// a failing test run through `tail`, which hides the failure from `is_error`), and the
/// result text. Output of tools that read files is left out: a failing test *mentioned* in a
/// source file is not a failing test. Lines that are not JSON are plain output (agents other
/// than Claude, or a test harness) unless they look like a cut JSON line.
/// Returns (all of that, the part from failed tool calls and plain text).
fn readable_tool_output(tail: &str) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut failed = Vec::new();
    for raw in tail.split('\n') {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('{') {
            if let Ok(event) = serde_json::from_str::<Value>(line) {
                collect_event_text(&event, &mut out, &mut failed);
                continue;
            }
        }
        if line.contains("\"type\":\"") || line.contains("\",\"") {
            continue;
        }
        out.extend(lines_of(raw));
        failed.extend(lines_of(raw));
    }
    (out, failed)
}

fn collect_event_text(event: &Value, out: &mut Vec<String>, failed_out: &mut Vec<String>) {
    match event.get("type").and_then(Value::as_str) {
        Some("user") => {
            let bash_output = event
                .get("tool_use_result")
                .is_some_and(|r| r.get("stdout").is_some() || r.get("stderr").is_some());
            let blocks = event
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(Value::as_array);
            for block in blocks.into_iter().flatten() {
                if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                    continue;
                }
                let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
                if failed || bash_output {
                    let lines = lines_of(&block_text(block.get("content")));
                    if failed {
                        failed_out.extend(lines.iter().cloned());
                    }
                    out.extend(lines);
                }
            }
        }
        Some("result") => {
            if let Some(text) = event.get("result").and_then(Value::as_str) {
                out.extend(lines_of(text));
            }
        }
        _ => {}
    }
}

fn block_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

// ---------------------------------------------------------------------------------------
// Rules, in precedence order.

const ROOT_REFUSAL: &[&str] = &["cannot be used with root/sudo privileges"];
const DISK_FULL: &[&str] = &["No space left on device", "ENOSPC", "Disk quota exceeded"];
const MISSING_BINARY: &[&str] = &[
    "command not found",
    "No such file or directory",
    "is not recognized as an internal or external command",
    "Permission denied",
    "cannot execute",
];
const AUTH_TEXT: &[&str] = &[
    "Not logged in",
    "Please run /login",
    "Invalid API key",
    "invalid x-api-key",
    "authentication_error",
    "OAuth token has expired",
    "OAuth token revoked",
    "Credit balance is too low",
];
const AUTH_ERRORS: &[&str] = &[
    "authentication_failed",
    "oauth_org_not_allowed",
    "billing_error",
    "permission_error",
];

fn environment(obs: &Observation, facts: &Facts) -> Option<Verdict> {
    let summary = obs.summary;
    if let Some(line) = facts.cli_text_has(ROOT_REFUSAL) {
        return Some(Verdict::new(
            FailureClass::ToolingEnv,
            line,
            obs.stderr_tail,
        ));
    }
    if let Some(line) = facts
        .cli_text_has(DISK_FULL)
        .or_else(|| find_line(&facts.failed_tool_lines, DISK_FULL))
    {
        return Some(Verdict::new(FailureClass::ToolingEnv, line, line));
    }
    // The agent never started: nothing on stdout, and the shell or the loader said why.
    let never_started = summary.lines == 0 && summary.result.is_none();
    if never_started {
        let missing = find_line(&lines_of(obs.stderr_tail), MISSING_BINARY).map(str::to_string);
        if matches!(obs.exit_code, Some(126) | Some(127)) || missing.is_some() {
            let line = missing.unwrap_or_else(|| {
                format!(
                    "agent exited {} without output: binary missing or not executable",
                    obs.exit_code.unwrap_or_default()
                )
            });
            return Some(Verdict::new(
                FailureClass::ToolingEnv,
                line,
                obs.stderr_tail,
            ));
        }
    }

    let result = summary.result.as_ref();
    let status = result
        .and_then(|r| r.api_error_status)
        .or(summary.api_error_status);
    let retry = if result.is_none() {
        summary.last_api_retry.as_ref()
    } else {
        None
    };
    let auth_status = matches!(status, Some(401) | Some(403))
        || retry.is_some_and(|r| matches!(r.error_status, Some(401) | Some(403)));
    let auth_error = summary
        .assistant_errors
        .iter()
        .chain(retry.and_then(|r| r.error.as_ref()))
        .find(|e| AUTH_ERRORS.contains(&e.as_str()));
    let auth_type = result
        .and_then(|r| r.api_error_type.as_deref())
        .is_some_and(|t| t == "authentication_error" || t == "permission_error");
    let auth_line = facts.cli_text_has(AUTH_TEXT);
    if auth_status || auth_error.is_some() || auth_type || auth_line.is_some() {
        let message = auth_line
            .map(str::to_string)
            .or_else(|| api_message(obs))
            .or_else(|| auth_error.cloned())
            .unwrap_or_else(|| format!("API status {}", status.unwrap_or_default()));
        return Some(Verdict::new(FailureClass::Auth, message.clone(), message));
    }
    None
}

/// The CLI's own description of an API failure.
fn api_message(obs: &Observation) -> Option<String> {
    obs.summary
        .result
        .as_ref()
        .and_then(|r| r.result_text.clone())
        .or_else(|| obs.summary.api_error_message.clone())
        .filter(|t| !t.trim().is_empty())
}

const QUOTA_TEXT: &[&str] = &[
    "usage limit reached",
    "hit your limit",
    "out of extra usage",
    "limit will reset",
];

fn quota(obs: &Observation, facts: &Facts) -> Option<Verdict> {
    let text_line = facts
        .cli_text_has(QUOTA_TEXT)
        .or_else(|| {
            facts
                .cli_lines
                .iter()
                .find(|l| contains_ci(l, "limit reached") && contains_ci(l, "reset"))
                .map(String::as_str)
        })
        .map(str::to_string);
    let resets_at = obs.summary.quota_resets_at.or_else(|| {
        text_line.as_deref().and_then(|line| {
            // Older CLIs: "Claude AI usage limit reached|1700000000".
            let (_, epoch) = line.rsplit_once('|')?;
            epoch.trim().parse::<i64>().ok()
        })
    });
    if resets_at.is_none() && text_line.is_none() {
        return None;
    }
    let message = text_line
        .or_else(|| api_message(obs))
        .unwrap_or_else(|| "usage window exhausted".to_string());
    let mut verdict = Verdict::new(
        FailureClass::Quota,
        "usage window exhausted",
        message.clone(),
    );
    verdict.headline = match resets_at {
        Some(at) => format!("{} (resets at epoch {at})", one_line(&message)),
        None => one_line(&message),
    };
    verdict.wait_hint_secs =
        resets_at.map(|at| u64::try_from(at.saturating_sub(obs.now_epoch_secs)).unwrap_or(0));
    Some(verdict)
}

fn api_pressure(obs: &Observation, facts: &Facts) -> Option<Verdict> {
    let summary = obs.summary;
    let result = summary.result.as_ref();
    let retry = if result.is_none() {
        summary.last_api_retry.as_ref()
    } else {
        None
    };
    let status = result
        .and_then(|r| r.api_error_status)
        .or(summary.api_error_status)
        .or(retry.and_then(|r| r.error_status));
    let error_type = result
        .and_then(|r| r.api_error_type.as_deref())
        .unwrap_or("");
    let errors = |name: &str| {
        summary.assistant_errors.iter().any(|e| e == name)
            || retry.and_then(|r| r.error.as_deref()) == Some(name)
    };
    let class = if status == Some(429) || error_type == "rate_limit_error" || errors("rate_limit") {
        FailureClass::RateLimit
    } else if status == Some(529)
        || error_type == "overloaded_error"
        || errors("overloaded")
        || status.is_some_and(|s| (500..600).contains(&s))
        || facts.cli_text_has(&["overloaded_error"]).is_some()
    {
        FailureClass::Overloaded
    } else {
        return None;
    };
    let message = api_message(obs).unwrap_or_else(|| format!("API status {status:?}"));
    let evidence = match status {
        Some(s) => format!("api status {s}"),
        None => "api error".to_string(),
    };
    let mut verdict = Verdict::new(class, evidence, message.clone());
    verdict.headline = one_line(&message);
    Some(verdict)
}

fn guards(obs: &Observation) -> Option<Verdict> {
    let no_result = obs.summary.result.is_none();
    let tail = tail_chars(obs.output_tail, MAX_EXCERPT_CHARS);
    if obs.timed_out || (obs.exit_code == Some(124) && no_result) {
        return Some(Verdict::new(FailureClass::Timeout, "step timeout", tail));
    }
    if obs.idle_timed_out {
        return Some(Verdict::new(
            FailureClass::Idle,
            "no output within the idle timeout",
            tail,
        ));
    }
    if obs.killed
        || obs.exit_code.is_none()
        || (matches!(obs.exit_code, Some(137) | Some(143)) && no_result)
    {
        let how = match obs.exit_code {
            Some(code) => format!("killed by a signal (exit {code})"),
            None => "killed by a signal".to_string(),
        };
        let mut verdict = Verdict::new(FailureClass::Killed, "killed by a signal", tail);
        verdict.headline = how;
        return Some(verdict);
    }
    None
}

const CONTEXT_TEXT: &[&str] = &[
    "prompt is too long",
    "prompt too long",
    "context_length_exceeded",
    "context window",
    "context_window_exceeded",
    "exceed context limit",
    "maximum context length",
];

fn agent_reported(obs: &Observation, facts: &Facts, soft: Option<&SoftFailure>) -> Option<Verdict> {
    let result = obs.summary.result.as_ref()?;
    let reason = result.terminal_reason.as_deref().unwrap_or("");
    let context_line = facts.cli_text_has(CONTEXT_TEXT);
    if context_line.is_some()
        || reason.contains("prompt_too_long")
        || reason.contains("context")
        || result.api_error_status == Some(413)
    {
        let message = context_line
            .map(str::to_string)
            .or_else(|| api_message(obs))
            .unwrap_or_else(|| reason.to_string());
        let mut verdict = Verdict::new(
            FailureClass::ContextWindow,
            "context window",
            message.clone(),
        );
        verdict.headline = one_line(&message);
        return Some(verdict);
    }
    if result.subtype == "error_max_turns" || reason == "max_turns" {
        let turns = result
            .num_turns
            .map(|n| format!(" after {n} turns"))
            .unwrap_or_default();
        let mut verdict = Verdict::new(
            FailureClass::MaxTurns,
            "error_max_turns",
            result.result_text.clone().unwrap_or_default(),
        );
        verdict.headline = format!("hit --max-turns{turns}");
        return Some(verdict);
    }
    let denied = match soft {
        Some(SoftFailure::PermissionDenied(tools)) => Some(tools.clone()),
        // A failed attempt can carry serious denials too; they explain it better than a guess.
        _ => match soft_failure(
            &crate::stream::ResultEvent {
                subtype: String::new(),
                is_error: false,
                ..result.clone()
            },
            obs.temp_dir,
        ) {
            Some(SoftFailure::PermissionDenied(tools)) => Some(tools),
            _ => None,
        },
    };
    if let Some(mut tools) = denied {
        tools.sort();
        tools.dedup();
        let paths: Vec<&str> = result
            .permission_denials
            .iter()
            .filter(|d| tools.contains(&d.tool_name))
            .filter_map(|d| d.path.as_deref())
            .collect();
        let evidence = format!("denied: {} {}", tools.join(", "), paths.join(" "));
        let mut verdict = Verdict::new(FailureClass::PermissionDenied, evidence, "");
        verdict.headline = format!("permission denied for {}", tools.join(", "));
        verdict.excerpt = format!(
            "The agent was denied: {}{}",
            tools.join(", "),
            if paths.is_empty() {
                String::new()
            } else {
                format!(" ({})", paths.join(", "))
            }
        );
        return Some(verdict);
    }
    None
}

/// A builtin merge that failed because the branch does not merge cleanly into main: the local
/// forge names the conflicting files, GitHub says the pull request is not mergeable.
pub fn is_merge_conflict(what: &str) -> bool {
    let lower = what.to_ascii_lowercase();
    lower.contains("merge conflict in:")
        || lower.contains("is not mergeable")
        || lower.contains("merge commit cannot be cleanly created")
}

/// Evidence lines of a class decided from tool output.
fn tool_output(facts: &Facts) -> Option<Verdict> {
    let lines = &facts.tool_lines;
    let clippy_run = lines.iter().any(|l| {
        l.contains("clippy::")
            || l.contains("implied by `-D warnings`")
            || l.contains("rust-clippy")
    });
    type Rule<'a> = (FailureClass, &'a dyn Fn(&str) -> bool);
    let lint = |l: &str| is_lint_line(l, clippy_run);
    // Halts the run, so only from output that certainly reports a failure.
    let command_missing = |l: &str| {
        (l.contains("command not found")
            || l.contains("is not recognized as an internal or external command")
            || l.contains("is not installed"))
            && facts.failed_tool_lines.iter().any(|f| f.ends_with(l))
    };
    let rules: [Rule; 6] = [
        (FailureClass::Typecheck, &is_typecheck_line),
        (FailureClass::BuildCompile, &is_hard_build_line),
        (FailureClass::Lint, &lint),
        (FailureClass::TestAssertion, &is_test_line),
        (FailureClass::BuildCompile, &is_soft_build_line),
        (FailureClass::ToolingEnv, &command_missing),
    ];
    let bare: Vec<&str> = lines
        .iter()
        .map(|l| normalize::strip_timestamp_prefix(l))
        .collect();
    for (class, matches) in rules {
        let hits: Vec<usize> = (0..lines.len()).filter(|&i| matches(bare[i])).collect();
        if hits.is_empty() {
            continue;
        }
        let mut evidence: Vec<&str> = Vec::new();
        for &i in &hits {
            let line = bare[i].trim();
            if !evidence.contains(&line) && evidence.len() < MAX_EVIDENCE_LINES {
                evidence.push(line);
            }
        }
        let mut verdict = Verdict::new(class, evidence.join("\n"), context_excerpt(lines, &hits));
        verdict.headline = headline_for(class, &bare, &hits);
        return Some(verdict);
    }
    None
}

/// The most telling line for the summary: for tests, the failing test rather than the tally.
fn headline_for(class: FailureClass, lines: &[&str], hits: &[usize]) -> String {
    let pick = |pred: &dyn Fn(&str) -> bool| {
        hits.iter()
            .map(|&i| lines[i].trim())
            .find(|l| pred(l))
            .map(str::to_string)
    };
    let chosen = if class == FailureClass::TestAssertion {
        pick(&|l: &str| {
            l.starts_with("---- ")
                || l.starts_with("--- FAIL:")
                || l.starts_with("FAILED ")
                || l.starts_with('●')
                || l.starts_with('✕')
                || l.ends_with("... FAILED")
        })
    } else {
        None
    };
    chosen.unwrap_or_else(|| lines[hits[0]].trim().to_string())
}

/// The evidence lines with two lines of context before and four after, in order.
fn context_excerpt(lines: &[String], hits: &[usize]) -> String {
    let mut keep = vec![false; lines.len()];
    for &i in hits {
        let end = (i + 5).min(lines.len());
        keep[i.saturating_sub(2)..end].fill(true);
    }
    let mut out = String::new();
    let mut last_kept = None;
    for (i, line) in lines.iter().enumerate() {
        if !keep[i] {
            continue;
        }
        if last_kept.is_some_and(|l: usize| l + 1 != i) {
            out.push_str("...\n");
        }
        out.push_str(line);
        out.push('\n');
        last_kept = Some(i);
        if out.len() > MAX_EXCERPT_CHARS * 2 {
            break;
        }
    }
    out
}

fn unknown(obs: &Observation, facts: &Facts) -> Verdict {
    // The CLI's last words, else the last lines of output: what a person would read first.
    let source: Vec<&String> = if facts.cli_lines.is_empty() {
        facts.tool_lines.iter().collect()
    } else {
        facts.cli_lines.iter().collect()
    };
    let last: Vec<&str> = source
        .iter()
        .rev()
        .take(10)
        .rev()
        .map(|l| l.trim())
        .collect();
    let exit = match obs.exit_code {
        Some(code) => format!("exit {code}"),
        None => "no exit code".to_string(),
    };
    let soft = obs
        .summary
        .result
        .as_ref()
        .and_then(|r| soft_failure(r, obs.temp_dir))
        .map(|s| match s {
            SoftFailure::ErrorSubtype(subtype) => format!(" ({subtype})"),
            SoftFailure::IsError => " (is_error)".to_string(),
            SoftFailure::PermissionDenied(_) => String::new(),
        })
        .unwrap_or_default();
    let mut verdict = Verdict::new(
        FailureClass::Unknown,
        format!("{exit}{soft}\n{}", last.join("\n")),
        last.join("\n"),
    );
    verdict.headline = match last.last() {
        Some(line) => format!("{exit}{soft}: {line}"),
        None => format!("{exit}{soft}"),
    };
    verdict
}

// ---------------------------------------------------------------------------------------

fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text.to_string(),
    }
}

fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}

#[cfg(test)]
mod tests {
    use super::tool_lines::*;
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_vectors() {
        use std::hash::Hasher;
        // FNV-1a 64 of "" and of "a", as published with the algorithm.
        assert_eq!(fnv::FnvHasher::default().finish(), 0xcbf2_9ce4_8422_2325);
        let mut hash = fnv::FnvHasher::default();
        hash.write(b"a");
        assert_eq!(hash.finish(), 0xaf63_dc4c_8601_ec8c);
        // The signature of a fixed input never changes across releases: journals store them.
        assert_eq!(
            signature(FailureClass::TestAssertion, "x").to_string(),
            "59e21b9ff83257f0"
        );
        assert_eq!(
            signature(FailureClass::TestAssertion, "x").to_string(),
            format!("{:016x}", signature(FailureClass::TestAssertion, "x").0)
        );
        assert_ne!(
            signature(FailureClass::TestAssertion, "x"),
            signature(FailureClass::Lint, "x")
        );
    }

    #[test]
    fn post_check_is_its_own_class() {
        let a = classify_post_check("startIssue", "no feature branch checked out");
        assert_eq!(a.class, FailureClass::PostCheck);
        assert!(a.summary.starts_with("POST_CHECK: startIssue"));
        let b = classify_post_check("writeSpecs", "no feature branch checked out");
        assert_ne!(a.signature, b.signature);
    }

    #[test]
    fn patterns() {
        assert!(is_typecheck_line("src/a.ts(3,7): error TS2322: Type"));
        assert!(is_typecheck_line("src/a.ts:3:7 - error TS2322: Type"));
        assert!(eslint_row("3:7  error  'x' is unused  no-unused-vars"));
        assert!(!eslint_row("3:7  warning  'x' is unused  no-unused-vars"));
        assert!(flake8_row("a.py:1:1: F401 'os' imported but unused"));
        assert!(go_compile_line("./x.go:10:2: undefined: foo"));
        assert!(c_compile_error("main.c:3:5: error: expected ';'"));
        assert!(is_rust_error_code("error[E0308]: mismatched types"));
    }
}
