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
//! 2. **Unreachable** — the CLI's `api_error: "connection_failed"` with no HTTP status: the
//!    model could not be reached at all (DNS, a refused port, a proxy), `NETWORK`, waited out
//!    like the runner's own network failures, never the issue's.
//! 3. **Quota** — a `rate_limit_event` with `status: "rejected"` and a reset time, or the
//!    CLI's "usage limit reached" / "hit your limit … resets" message. Before rate limits,
//!    because an exhausted window is also reported as HTTP 429.
//! 4. **Rate limit / overload** — API status 429 → `RATE_LIMIT`; 529, `overloaded_error` or
//!    another 5xx → `OVERLOADED`.
//! 5. **Runner's guards** — `TIMEOUT` (wall clock, or exit 124 without a result), `IDLE`,
//!    `KILLED` (a signal we did not send, or no exit code).
//! 6. **Agent-reported** — `CONTEXT_WINDOW` (prompt too long), `MAX_TURNS`
//!    (`error_max_turns`), `PERMISSION_DENIED` (serious denials, see
//!    [`crate::agent::stream::soft_failure`]).
//! 7. **Tool-output patterns**, over the output of failed commands the agent ran (tool results
//!    with `is_error`, Bash output) plus stderr: `TYPECHECK` (tsc `error TS…`, mypy), then
//!    hard `BUILD_COMPILE` (`error[E…]`, go `[build failed]`, C/Java compiler errors,
//!    syntax errors, missing modules), then `LINT` (clippy under `-D warnings`, eslint,
//!    ruff/flake8), then `TEST_ASSERTION`, then a remaining `could not compile` (e.g. linker)
//!    as `BUILD_COMPILE`, then a missing command (`command not found`) as `TOOLING_ENV`.
//!    Missing modules (`Cannot find module`, `MODULE_NOT_FOUND`, `ModuleNotFoundError`) are
//!    `BUILD_COMPILE`, not `TOOLING_ENV`: they are usually a wrong import path or an
//!    undeclared dependency the agent fixes with one install, and `TOOLING_ENV` would halt
//!    the whole run.
//! 8. `UNKNOWN`.
//!
//! # Signatures
//!
//! `signature = FNV-1a-64(class name, "\n", normalize(relevant excerpt))`. The excerpt is the
//! evidence that decided the class (the failing tests' and errors' own lines, the API error
//! message, the denied tools), not the whole tail, so unrelated noise around a failure does
//! not change it; [`normalize()`] removes the volatile data inside it.

pub mod normalize;
mod tool_lines;

pub use normalize::normalize;

use crate::agent::stream::{soft_failure, StreamSummary};
use crate::failure::{FailureClass, Signature};
use std::path::Path;

mod excerpt;
mod facts;
mod rules;

use excerpt::{context_excerpt, headline_for, one_line, tail_chars, truncate_chars};
use facts::{contains_ci, find_line, lines_of, Facts, Verdict};
pub use rules::is_merge_conflict;
use rules::{
    agent_reported, api_pressure, environment, guards, quota, tool_output, unknown, unreachable,
};

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
        .or_else(|| unreachable(obs))
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

/// An agent step that changed the repository's hooks or the configuration that runs programs
/// or redirects a remote (`changes`, one line each, already put back by the runner).
pub fn classify_git_tampering(step_key: &str, changes: &[String]) -> Classified {
    let first = changes.first().map(String::as_str).unwrap_or_default();
    let more = match changes.len() {
        0 | 1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Verdict {
        class: FailureClass::GitTampered,
        evidence: format!("{step_key}: git tampered: {}", changes.join("; ")),
        headline: format!(
            "{step_key}: the agent changed the repository's git setup: {}{more}; put back",
            one_line(first)
        ),
        excerpt: format!(
            "The runner put back what the agent changed in the clone's git directory (its hooks \
             and the configuration that runs programs or names the remote): these are the \
             operator's, and the runner's own git calls never use the agent's.\n{}",
            changes
                .iter()
                .map(|c| format!("- {c}"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        wait_hint_secs: None,
    }
    .finish()
}

/// A branch that weakens the tests (`facts`, each naming file, line and what changed) where
/// the spec does not call for it: `TESTS_WEAKENED`, the facts the repair's context.
/// `pushed`: the agent pushed it itself (its own commitPush); else the runner refused to push.
pub fn classify_weakening(
    step_key: &str,
    facts: &[crate::weakening::Fact],
    pushed: bool,
) -> Classified {
    let first = facts.first().map(ToString::to_string).unwrap_or_default();
    let more = match facts.len() {
        0 | 1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    let (done, opening) = if pushed {
        (
            "the runner goes no further with it",
            "The branch you pushed weakens what CI checks, and the issue's spec does not call \
             for it: the runner opens, watches and merges nothing of it.",
        )
    } else {
        (
            "nothing was pushed",
            "The runner did not push the branch: it weakens what CI checks, and the issue's spec \
             does not call for it.",
        )
    };
    Verdict {
        class: FailureClass::TestsWeakened,
        evidence: format!(
            "{step_key}: tests weakened: {}",
            facts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
        headline: format!(
            "{step_key}: the branch weakens the tests: {}{more}; {done}",
            one_line(&first)
        ),
        excerpt: format!(
            "{opening} Make CI pass by fixing the code, not the tests: put back what \
             is listed below. A removal the issue really needs belongs in the spec's `Removes:` \
             section (one test, CI job or file per line). Found again, the issue escalates.\n{}",
            crate::weakening::describe(facts)
        ),
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

/// A builtin step's failure (docs/classification.md). The kind its adapter gave the failed
/// call decides first: the runner's own environment (the remote unreachable, credentials
/// refused, a lock, a branch checked out in another worktree, a full disk, permissions) is
/// never the issue's, so it halts naming the cause and the fix (`AUTH` for credentials,
/// `TOOLING_ENV` for the rest). Then the output is read like an agent's, so a lost login, a
/// full disk or a missing binary halt as they would for an agent. What nothing recognizes is
/// a `POST_CHECK` failure of the step, except failing CI (`ci_failed`), which is the code's to
/// fix (`TEST_ASSERTION` unless its log names a more precise class), so that a repair attempt
/// gets it.
pub fn classify_builtin(
    step_key: &str,
    what: &str,
    kind: crate::call_failure::CallFailureKind,
    ci_failed: bool,
) -> Classified {
    if let Some(refused) = refused_by_environment(step_key, what, kind) {
        return refused;
    }
    if is_merge_conflict(what) {
        return Verdict {
            class: FailureClass::MergeConflict,
            evidence: format!("{step_key}: {}", without_pr_numbers(what)),
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
    if kind == crate::call_failure::CallFailureKind::HookRejected {
        // The project's own check refused the commits: the code's to fix, so the
        // step's repair attempt hands the agent the hook's words (a lint unless they name a
        // more precise class). The same refusal on the next issue too is the environment's.
        let class = found
            .as_ref()
            .map(|c| c.class)
            .filter(|c| c.code_fixable())
            .unwrap_or(FailureClass::Lint);
        return Verdict {
            class,
            evidence: format!("{step_key}: a git hook refused: {what}"),
            headline: format!("{step_key}: a git hook refused: {}", one_line(what)),
            excerpt: what.to_string(),
            wait_hint_secs: None,
        }
        .finish();
    }
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

/// A builtin step refused by what surrounds the issue, not by its code: the base branch's
/// rules, or the runner's own git (a lost login, a locked index, a full disk…).
fn refused_by_environment(
    step_key: &str,
    what: &str,
    kind: crate::call_failure::CallFailureKind,
) -> Option<Classified> {
    if kind == crate::call_failure::CallFailureKind::Policy {
        return Some(Verdict {
            class: FailureClass::ToolingEnv,
            // The rule, never the PR's number or branch: the same rule refusing every issue's
            // merge has one signature.
            evidence: format!("{step_key}: the base branch's rules refuse the merge"),
            headline: format!(
                "{step_key}: the base branch's rules refuse the merge (not the issue's): {}; fix: a person approves the PR, marks it ready or lets the required checks pass, or changes the branch protection",
                without_pr_numbers(&one_line(words_of(what)))
            ),
            excerpt: without_pr_numbers(what),
            wait_hint_secs: None,
        }
        .finish());
    }
    if let Some((cause, fix)) = kind.cause_and_fix() {
        let class = if kind == crate::call_failure::CallFailureKind::Auth {
            FailureClass::Auth
        } else {
            FailureClass::ToolingEnv
        };
        let said = what
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
            .map_or_else(|| one_line(what), str::to_string);
        return Some(
            Verdict {
                class,
                // The cause, not the paths and names in git's words: the same environment
                // failure on every issue has one signature.
                evidence: format!("{step_key}: the runner's own git: {cause}"),
                headline: format!(
                    "{step_key}: {cause} (not the issue's); fix: {fix}; git said: {said}"
                ),
                excerpt: what.to_string(),
                wait_hint_secs: None,
            }
            .finish(),
        );
    }
    None
}

/// What a failed command said, without the command line before it (`` `cmd` failed (exit
/// N): said ``, or `` `cmd` failed: said `` when no exit tells how it ended), which names the
/// branch and the commit.
fn words_of(what: &str) -> &str {
    let Some((_, after)) = what.strip_prefix('`').and_then(|rest| rest.split_once('`')) else {
        return what;
    };
    if let Some(said) = after.strip_prefix(" failed: ") {
        return said;
    }
    after.split_once("): ").map_or(after, |(_, said)| said)
}

/// `text` with every `#<number>` (a PR's or an issue's, which differ from issue to issue)
/// written `#N`.
fn without_pr_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '#' && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push('N');
        }
    }
    out
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

#[cfg(test)]
mod tests;
