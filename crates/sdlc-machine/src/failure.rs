//! The vocabulary of failure (docs/classification.md): classes, what each means for the runner, and the
//! signature type. Deciding *which* class an attempt belongs to is `classify.rs`; deciding
//! what to do about it is the machine. Both speak these types.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why an attempt failed. Serialized in SCREAMING_SNAKE_CASE as in the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FailureClass {
    /// Tests ran and an assertion failed.
    TestAssertion,
    /// The type checker rejected the code.
    Typecheck,
    /// A linter or formatter check failed.
    Lint,
    /// The build or compilation failed.
    BuildCompile,
    /// The environment cannot run the agent (binary missing, refused to run, disk full): halt.
    ToolingEnv,
    /// Killed by the runner at the step's wall-clock timeout.
    Timeout,
    /// The agent used up its turns without finishing.
    MaxTurns,
    /// The agent was refused a tool it needed.
    PermissionDenied,
    /// The API's rate limit: waited out with backoff.
    RateLimit,
    /// The API is overloaded: waited out with backoff.
    Overloaded,
    /// The plan's usage window is exhausted: wait until it resets.
    Quota,
    /// Not logged in or an invalid key: halt.
    Auth,
    /// The conversation outgrew the model's context window; another attempt cannot help.
    ContextWindow,
    /// Ended by a signal the runner did not send, or the runner died during the attempt.
    Killed,
    /// Killed by the runner after printing nothing for `idleTimeoutMin`.
    Idle,
    /// A runner-side check after the step failed (e.g. no feature branch after startIssue).
    PostCheck,
    /// None of the above could be recognized in the output.
    Unknown,
    /// A git/gh/tracker call failed for a transient network reason (connection, DNS, TLS,
    /// HTTP 5xx, time-out): waited out, never the issue's fault.
    Network,
    /// The branch does not merge into main (another change to the same lines merged first):
    /// the repair brings the branch up to date and resolves the conflicts.
    MergeConflict,
    /// The attempt reached the money it was given (what the issue's or the session's budget
    /// had left, or the per-call cap): stopped by the runner, or by the CLI's own cap. An
    /// attempt spent; a budget it exhausted escalates the issue or halts the session.
    Budget,
    /// The agent's step changed what the repository lets git run or where it pushes (a hook,
    /// a configuration entry that runs a program or redirects a remote, `info/attributes`):
    /// the runner put it back before its next git call; the agent's doing, an attempt spent.
    GitTampered,
    /// The branch weakens what CI checks (a test removed, skipped or emptied, an assertion
    /// removed, a snapshot rewritten, a CI job made unable to fail, a threshold lowered) and
    /// the issue's spec does not call for it: found before the push, handed back to the agent
    /// once with the facts; found again, the issue escalates quoting them
    /// ([`FailureClass::hands_back_once`]).
    TestsWeakened,
}

/// What the classifier said about a failed attempt beyond its class and signature: the
/// context a repair attempt and the decision file show. It rides with the `StepFailed` that
/// reports it into the machine's storage ([`crate::machine::Core::handle_reported`]) and is
/// journaled with that event, so a replay rebuilds it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub struct FailureDetail {
    /// The step whose attempt failed.
    pub step: crate::step::Step,
    /// The class the classifier gave the failure.
    pub class: FailureClass,
    /// The one-line summary, starting with the class name.
    pub summary: String,
    /// The lines of output that show the failure, handed to a repair attempt.
    pub excerpt: String,
}

/// What the machine does with a failure of a given class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Disposition {
    /// The issue's fault and worth another attempt: consume an attempt and retry.
    Retry,
    /// The issue's fault but another attempt cannot help: escalate the issue now.
    EscalateNow,
    /// Nobody's fault: wait with backoff, do not consume an attempt.
    Backoff,
    /// The network's fault (the agent could not reach its model): wait on the network's
    /// schedule as for a runner call's network failure (`maxNetworkWaits` in a row, then a
    /// halt), do not consume an attempt.
    WaitForNetwork,
    /// The plan's usage window is exhausted: wait until the reported reset time.
    WaitForQuota,
    /// The environment is broken (not logged in, binary missing, disk full): halt at once,
    /// without marking the issue.
    HaltEnvironment,
}

/// Whom a failure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// The issue's work is at fault: it counts against the issue.
    Issue,
    /// The environment is at fault (API, network, login): the issue is not charged.
    Environment,
}

impl FailureClass {
    /// Every class, in declaration order (`index` is the position here).
    pub const ALL: [FailureClass; 22] = [
        FailureClass::TestAssertion,
        FailureClass::Typecheck,
        FailureClass::Lint,
        FailureClass::BuildCompile,
        FailureClass::ToolingEnv,
        FailureClass::Timeout,
        FailureClass::MaxTurns,
        FailureClass::PermissionDenied,
        FailureClass::RateLimit,
        FailureClass::Overloaded,
        FailureClass::Quota,
        FailureClass::Auth,
        FailureClass::ContextWindow,
        FailureClass::Killed,
        FailureClass::Idle,
        FailureClass::PostCheck,
        FailureClass::Unknown,
        FailureClass::Network,
        FailureClass::MergeConflict,
        FailureClass::Budget,
        FailureClass::GitTampered,
        FailureClass::TestsWeakened,
    ];
    /// How many classes there are.
    pub const COUNT: usize = Self::ALL.len();

    /// The class's position in [`FailureClass::ALL`], for per-class counters.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// What the machine does with a failure of this class (docs/classification.md).
    pub const fn disposition(self) -> Disposition {
        use FailureClass::*;
        match self {
            TestAssertion | Typecheck | Lint | BuildCompile | Timeout | MaxTurns
            | PermissionDenied | Killed | Idle | PostCheck | Unknown | MergeConflict | Budget
            | GitTampered | TestsWeakened => Disposition::Retry,
            ContextWindow => Disposition::EscalateNow,
            RateLimit | Overloaded => Disposition::Backoff,
            Network => Disposition::WaitForNetwork,
            Quota => Disposition::WaitForQuota,
            ToolingEnv | Auth => Disposition::HaltEnvironment,
        }
    }

    /// Whether a later attempt may succeed without anything changing (retry or a wait).
    pub const fn retryable(self) -> bool {
        matches!(
            self.disposition(),
            Disposition::Retry
                | Disposition::Backoff
                | Disposition::WaitForNetwork
                | Disposition::WaitForQuota
        )
    }

    /// Whom a failure of this class belongs to, from its disposition.
    pub const fn scope(self) -> Scope {
        match self.disposition() {
            Disposition::Retry | Disposition::EscalateNow => Scope::Issue,
            Disposition::Backoff
            | Disposition::WaitForNetwork
            | Disposition::WaitForQuota
            | Disposition::HaltEnvironment => Scope::Environment,
        }
    }

    /// Failures the agent can repair from a description of them (the repair loop).
    pub const fn code_fixable(self) -> bool {
        use FailureClass::*;
        matches!(
            self,
            TestAssertion | Typecheck | Lint | BuildCompile | MergeConflict | TestsWeakened
        )
    }

    /// Failures handed back to the agent once: the same class again in the step's next
    /// attempt escalates the issue (`EscalationCause::TestsWeakened`) instead of spending the
    /// step's other attempts on it.
    pub const fn hands_back_once(self) -> bool {
        matches!(self, FailureClass::TestsWeakened)
    }

    /// The class's contract name (`TEST_ASSERTION` style), as journaled and printed.
    pub const fn name(self) -> &'static str {
        use FailureClass::*;
        match self {
            TestAssertion => "TEST_ASSERTION",
            Typecheck => "TYPECHECK",
            Lint => "LINT",
            BuildCompile => "BUILD_COMPILE",
            ToolingEnv => "TOOLING_ENV",
            Timeout => "TIMEOUT",
            MaxTurns => "MAX_TURNS",
            PermissionDenied => "PERMISSION_DENIED",
            RateLimit => "RATE_LIMIT",
            Overloaded => "OVERLOADED",
            Quota => "QUOTA",
            Auth => "AUTH",
            ContextWindow => "CONTEXT_WINDOW",
            Killed => "KILLED",
            Idle => "IDLE",
            PostCheck => "POST_CHECK",
            Unknown => "UNKNOWN",
            Network => "NETWORK",
            MergeConflict => "MERGE_CONFLICT",
            Budget => "BUDGET",
            GitTampered => "GIT_TAMPERED",
            TestsWeakened => "TESTS_WEAKENED",
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A stable hash of the class plus the normalized output (docs/classification.md). Two attempts with the
/// same signature failed the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Signature(pub u64);

impl Signature {
    /// The signature of an attempt the runner itself did not survive (killed, crashed, power
    /// lost): recorded as dispatched, never as finished. Fixed, so that the same step
    /// interrupted twice in a row counts as the same failure.
    pub const INTERRUPTED: Signature = Signature(0x696e_7465_7272_7570);
    /// The signature of a monitorCI attempt whose CI stayed pending through the step's time
    /// limit (decided by the machine, so fixed: the same wait twice is the same failure).
    pub const CI_STILL_PENDING: Signature = Signature(0x6369_5f70_656e_6469);
    /// The signature of a merge whose PR stayed in the forge's merge queue through monitorCI's
    /// CI schedule (decided by the machine, so fixed).
    pub const QUEUE_STILL_PENDING: Signature = Signature(0x7175_6575_5f70_656e);

    /// The signature of a conflict with main in `paths` (in any order): the same files
    /// conflicting again after a repair are the same failure. FNV-1a, fixed across builds
    /// and platforms, as a journal replayed elsewhere needs.
    pub fn of_conflict(paths: &[String]) -> Signature {
        let mut sorted: Vec<&str> = paths.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in "MERGE_CONFLICT".bytes().chain(
            sorted
                .iter()
                .flat_map(|p| std::iter::once(0).chain(p.bytes())),
        ) {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        Signature(h)
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_tampering_is_the_issues_failure_counted_like_any_attempt() {
        let c = FailureClass::GitTampered;
        assert_eq!(c.disposition(), Disposition::Retry);
        assert_eq!(c.scope(), Scope::Issue);
        assert!(!c.code_fixable());
        assert_eq!(c.name(), "GIT_TAMPERED");
        assert_eq!(FailureClass::ALL[c.index()], c);
    }

    #[test]
    fn weakened_tests_are_the_issues_failure_handed_back_once_with_a_repair() {
        let c = FailureClass::TestsWeakened;
        assert_eq!(c.disposition(), Disposition::Retry);
        assert_eq!(c.scope(), Scope::Issue);
        assert!(c.code_fixable());
        assert!(c.hands_back_once());
        assert_eq!(c.name(), "TESTS_WEAKENED");
        assert_eq!(FailureClass::ALL[c.index()], c);
        assert_eq!(
            FailureClass::ALL
                .iter()
                .filter(|c| c.hands_back_once())
                .count(),
            1
        );
    }

    #[test]
    fn environment_classes_are_not_the_issues_fault() {
        assert_eq!(FailureClass::Auth.scope(), Scope::Environment);
        assert_eq!(
            FailureClass::ToolingEnv.disposition(),
            Disposition::HaltEnvironment
        );
        assert!(!FailureClass::Auth.retryable());
        assert_eq!(FailureClass::TestAssertion.scope(), Scope::Issue);
        assert!(FailureClass::TestAssertion.code_fixable());
        assert!(!FailureClass::Timeout.code_fixable());
    }

    #[test]
    fn names_match_serde() {
        for c in FailureClass::ALL {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.name()));
            assert_eq!(FailureClass::ALL[c.index()], c);
        }
    }
}
