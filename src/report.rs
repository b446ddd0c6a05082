//! What the runner tells people: one line per notice, with a severity, and the halt
//! diagnostic of docs/counters-and-bounds.md with the wasted-work report.

use crate::failure::FailureClass;
use crate::machine::{EscalationCause, HaltReason, Notice, Runner, Spend};
use crate::notify::Severity;
use crate::redact::redact;

/// What an attempt of `step` is told as: `addressReview` for monitorCI's attempt while a
/// review round is under way (`Runner::round_pending`), else the step's key. The journal and
/// the machine keep monitorCI.
pub fn step_name(step: crate::step::Step, round: bool) -> &'static str {
    if round && step == crate::step::Step::MonitorCi {
        crate::config::ADDRESS_REVIEW
    } else {
        step.key()
    }
}

/// The severity and text of a notice the machine emitted, redacted. `round`: a review round
/// is under way, so what the machine calls monitorCI's attempt is told as `addressReview`.
pub fn notice(n: &Notice, refs: &crate::config::IssueRefs, round: bool) -> (Severity, String) {
    let (severity, text) = notice_text(n, refs, round);
    (severity, redact(&text))
}

fn notice_text(n: &Notice, refs: &crate::config::IssueRefs, round: bool) -> (Severity, String) {
    match *n {
        Notice::CycleStarted { issue } => {
            (Severity::Info, format!("issue {}: cycle started", refs.issue(issue)))
        }
        Notice::Retrying { .. }
        | Notice::Bounced { .. }
        | Notice::Waiting { .. }
        | Notice::Escalated { .. } => step_notice_text(n, refs, round),
        Notice::Merged { issue } => (Severity::Info, format!("issue {}: merged", refs.issue(issue))),
        Notice::Withdrawn { issue } => (
            Severity::Warning,
            format!(
                "issue {}: withdrawn by a person during the cycle (closed, relabelled or escalated, or its branch deleted or pull request closed); dropped (the clone's branch kept, nothing merged or written to it)",
                refs.issue(issue)
            ),
        ),
        Notice::Released {
            issue,
            second,
            step,
            class,
        } => (
            Severity::Warning,
            format!(
                "issue {}: quarantine lifted: the same {class} failure at {} ended issue {} too, so it is the environment's, not the issues'",
                refs.issue(issue),
                step.key(),
                refs.issue(second)
            ),
        ),
        Notice::ReviewWanted {
            issue,
            changes_requested,
            wait_secs,
        } => (
            Severity::Warning,
            format!(
                "issue {}: CI passed; waiting for review: {} (up to {} min, then the issue waits for a person)",
                refs.issue(issue),
                if changes_requested {
                    "a reviewer asked for changes; the merge waits until they approve"
                } else {
                    "an approval is required (review.requireApproval)"
                },
                wait_secs.div_ceil(60)
            ),
        ),
        Notice::WaitingForPerson { issue } => (
            Severity::Warning,
            format!(
                "issue {}: waiting for a person: no review let its PR merge within review.approvalTimeoutMinutes; not merged, not escalated (the next run looks again)",
                refs.issue(issue)
            ),
        ),
        Notice::ClaimLost { issue } => (
            Severity::Warning,
            format!(
                "issue {} is now another runner's (this runner's claim ran out); stopping so that only one runner works on it: work saved",
                refs.issue(issue)
            ),
        ),
        Notice::TrackerReadFailed
        | Notice::FleetPause { .. }
        | Notice::NetworkWait { .. }
        | Notice::RateLimitWait { .. }
        | Notice::CiPending { .. }
        | Notice::CiStillPending { .. }
        | Notice::WaitingForMergeTurn { .. }
        | Notice::MergeRaceLost { .. }
        | Notice::MergeRacesExhausted { .. }
        | Notice::NothingToDo
        | Notice::StandingBy
        | Notice::ShuttingDown { .. } => run_notice_text(n),
    }
}

/// The text of a notice about a step of an issue: a retry, a bounce, a wait, an escalation.
fn step_notice_text(
    n: &Notice,
    refs: &crate::config::IssueRefs,
    round: bool,
) -> (Severity, String) {
    let name = |step: crate::step::Step| step_name(step, round);
    match *n {
        Notice::Retrying {
            step,
            attempt,
            class,
        } => (
            Severity::Warning,
            format!(
                "{}: attempt {} failed ({class}); retrying as attempt {attempt}",
                name(step),
                attempt.saturating_sub(1)
            ),
        ),
        Notice::Bounced {
            from,
            to,
            check,
            bounces,
        } => (
            Severity::Warning,
            format!(
                "{}: precondition `{}` failed; back to {} (bounce {bounces})",
                from.key(),
                check.name(),
                to.key()
            ),
        ),
        Notice::Waiting {
            step,
            class,
            seconds,
        } => (
            Severity::Warning,
            format!(
                "{}: {class}; waiting {seconds} s without spending an attempt",
                name(step)
            ),
        ),
        Notice::Escalated {
            issue,
            step,
            cause,
            consecutive,
        } => (
            Severity::Warning,
            format!(
                "issue {} escalated at {} ({}); {consecutive} escalation(s) in a row",
                refs.issue(issue),
                step.key(),
                cause.describe()
            ),
        ),
        // Every other notice is told by `notice_text`.
        _ => (Severity::Info, format!("{n:?}")),
    }
}

/// The text of a notice about the run rather than an issue: a wait, CI, the merge turn, the
/// tracker's failure, the run stopping.
fn run_notice_text(n: &Notice) -> (Severity, String) {
    match *n {
        Notice::TrackerReadFailed => (
            Severity::Alert,
            "sdlc-runner stopped: the issue tracker failed (no issue blamed; the session stays open, so the next run continues it once the tracker answers)".to_string(),
        ),
        Notice::FleetPause { seconds, pause } => (
            Severity::Warning,
            format!(
                "fleet pause: waiting {seconds} s for another worker's rate limit or quota (pause {pause} in a row); no attempt spent"
            ),
        ),
        Notice::NetworkWait { seconds, wait } => (
            Severity::Warning,
            format!(
                "network: waiting {seconds} s before calling again (network wait {wait} in a row); no attempt spent"
            ),
        ),
        Notice::RateLimitWait { seconds, wait } => (
            Severity::Warning,
            format!(
                "rate limit: waiting {seconds} s for it to lift before calling again (rate-limit wait {wait} in a row); no attempt spent, no issue blamed"
            ),
        ),
        Notice::CiPending { seconds, look } => (
            Severity::Info,
            format!("monitorCI: CI pending; look {look} at CI in {seconds} s"),
        ),
        Notice::CiStillPending { waited_secs } => (
            Severity::Warning,
            format!(
                "monitorCI: CI still pending after {waited_secs} s of waits (the step's timeoutMin); the attempt failed (TIMEOUT)"
            ),
        ),
        Notice::WaitingForMergeTurn { limit_ms } => (
            Severity::Info,
            format!(
                "merge: the merge turn is busy; waiting at most {} s for it, no attempt spent",
                limit_ms / 1000
            ),
        ),
        Notice::MergeRaceLost { lost, max } => (
            Severity::Warning,
            format!(
                "merge: lost a push race (origin's main moved meanwhile); refreshing main and merging again, not counted as an attempt ({lost} of {max})"
            ),
        ),
        Notice::MergeRacesExhausted { lost } => (
            Severity::Warning,
            format!("merge: lost {lost} push races in a row; this attempt counts as failed"),
        ),
        Notice::NothingToDo => (
            Severity::Info,
            "no open automatable issue: nothing to do".into(),
        ),
        Notice::StandingBy => (
            Severity::Info,
            "fleet: as many workers as --workers allows are at work; this one stands by, and the fleet starts it again when a PR joins the merge train".into(),
        ),
        Notice::ShuttingDown { signal } => (
            Severity::Warning,
            format!(
                "{}: stopping; work saved, position kept for the next run",
                signal.name()
            ),
        ),
        // Every other notice is an issue's (`notice_text`).
        _ => (Severity::Info, format!("{n:?}")),
    }
}

fn dollars(micros: u64) -> String {
    format!("${:.2}", micros as f64 / 1e6)
}

fn spend(s: &Spend) -> String {
    format!(
        "{} step attempt(s), {} turn(s), {}",
        s.invocations,
        s.turns,
        dollars(s.cost_micros)
    )
}

/// The wasted-work report: spend since the last merge, in total and by failure class.
pub fn wasted_work(r: &Runner) -> String {
    let mut out = format!(
        "spent since the last merge: {}",
        spend(&r.stats.since_merge)
    );
    for class in FailureClass::ALL {
        let s = &r.stats.failed_by_class[class.index()];
        if s.invocations > 0 {
            out.push_str(&format!("\n  failed with {class}: {}", spend(s)));
        }
    }
    out
}

/// What the session knows about the failures so far: escalations, the last failure, wasted
/// work, the agent's last words (redacted) and where the logs are.
/// How much of the agent's last output a diagnostic quotes.
const EXCERPT_CHARS: usize = 500;

/// The end of `text`, at most `max` characters, starting at a line boundary so that no
/// reader has to guess what a cut first line said. Only a last line longer than `max` is
/// quoted from the middle (there is no boundary to start at).
fn excerpt_from_line_start(text: &str, max: usize) -> &str {
    let Some((cut, _)) = text.char_indices().rev().nth(max.saturating_sub(1)) else {
        return text;
    };
    if cut == 0 || text[..cut].ends_with('\n') {
        return &text[cut..];
    }
    match text[cut..].find('\n') {
        Some(nl) if cut + nl + 1 < text.len() => &text[cut + nl + 1..],
        _ => &text[cut..],
    }
}

fn evidence(r: &Runner, output_tail: &str, logs: &str) -> String {
    let issues: Vec<String> = r.escalated.iter().map(|n| format!("#{n}")).collect();
    let mut out = format!(
        "\nescalated issues this session: {}",
        if issues.is_empty() {
            "none".into()
        } else {
            issues.join(", ")
        }
    );
    out.push_str(&format!(
        "\nconsecutive escalations: {} (limit {})",
        r.consecutive_escalations, r.limits.max_consecutive_escalations
    ));
    match r.last_failure {
        Some(f) => out.push_str(&format!(
            "\nlast failure: {} at {}, signature {}",
            f.class,
            f.step.key(),
            f.signature
        )),
        None => out.push_str("\nlast failure: none recorded"),
    }
    out.push('\n');
    out.push_str(&wasted_work(r));
    let tail = redact(output_tail);
    out.push_str(&format!(
        "\nlast agent output (secrets redacted):\n{}",
        excerpt_from_line_start(&tail, EXCERPT_CHARS)
    ));
    out.push_str(&format!("\nlogs: {logs}"));
    out
}

/// The comment left on an escalated issue (durable quarantine); the tracker redacts it.
pub fn escalation_diagnostic(issue: u32, r: &Runner, output_tail: &str, logs: &str) -> String {
    let mut out = format!("sdlc-runner escalated issue #{issue}");
    if let Some(f) = r.last_failure {
        let i = f.step.index();
        out.push_str(&format!(
            " at step {} after {} failed attempt(s) and {} bounce(s)",
            f.step.key(),
            r.attempts[i],
            r.bounces
        ));
    }
    out.push('.');
    let conflict = r
        .last_failure
        .is_some_and(|f| f.class == crate::failure::FailureClass::MergeConflict);
    if conflict && !r.conflict_paths.is_empty() {
        out.push_str(&format!(
            "\nthe branch still conflicts with main in: {}",
            r.conflict_paths.join(", ")
        ));
    }
    if !r.review_unresolved.is_empty() {
        out.push_str(&format!(
            "\nreviewers still ask for changes after {} review round(s); not yet addressed:\n{}",
            r.review_rounds,
            crate::prompt::quote_feedback(&r.review_unresolved)
        ));
    }
    out.push_str(&evidence(r, output_tail, logs));
    out
}

/// What an escalation says of the work the runner aborted rather than commit (an unfinished
/// merge or rebase with its conflict markers): the refs that keep it. Empty when there is none.
pub fn rescued(refs: &[String]) -> String {
    if refs.is_empty() {
        return String::new();
    }
    format!(
        "\n\nUnfinished work the runner aborted rather than commit (a merge or rebase left half done) is kept on {}; `git log -p <ref>` shows it, `git checkout -b <branch> <ref>` takes it up.",
        refs.join(", ")
    )
}

/// What an escalation says of a last failure the runner itself observed rather than the agent
/// printed: for `GIT_TAMPERED`, each change the agent made to the repository's git setup, for
/// `TESTS_WEAKENED` each weakening of the tests, file and line (the failure's own excerpt),
/// which the agent's last words do not show. Empty otherwise.
pub fn observed(detail: Option<&crate::failure::FailureDetail>) -> String {
    match detail {
        Some(d)
            if matches!(
                d.class,
                FailureClass::GitTampered | FailureClass::TestsWeakened
            ) =>
        {
            format!("\n\n{}", redact(&d.excerpt))
        }
        _ => String::new(),
    }
}

/// The note left on an issue whose quarantine the runner lifts (`Effect::Unquarantine`): the
/// failure that escalated it ended the next issue too.
pub fn release_note(issue: u32, r: &Runner) -> String {
    let second = r
        .issue
        .map(|n| format!("issue #{n}"))
        .unwrap_or_else(|| "the next issue".into());
    let how = match r.last_escalation {
        Some((_, f)) => format!(
            "the same failure ({} at {}, signature {})",
            f.class,
            f.step.key(),
            f.signature
        ),
        None => "the same failure".into(),
    };
    format!(
        "sdlc-runner lifted the quarantine it had put on issue #{issue}: {how} that escalated it ended {second} too, so its cause is the environment's (a hook, the tree, a service), not this issue's. The run halted for a person to fix that cause; this issue will be selected again afterwards."
    )
}

/// The first issue of a same-failure pair and whether its quarantine was lifted.
fn pair(r: &Runner) -> (String, bool) {
    match r.last_escalation {
        Some((first, _)) => (format!("#{first}"), !r.escalated.contains(&first)),
        None => ("the previous issue".into(), false),
    }
}

/// What the halt means, where its headline alone does not say: whom it blames and not.
fn halt_explanation(reason: &HaltReason, r: &Runner) -> Option<String> {
    Some(match *reason {
        HaltReason::TrackerWrite { issue, merged: true } => format!(
            "issue #{issue} was merged, but the tracker could not be told: it stays merged for this session and is never selected again. Make the tracker writable (see the error below), close issue #{issue} there by hand if it is still open, then run again with --ack-halt."
        ),
        HaltReason::TrackerWrite {
            issue,
            merged: false,
        } if r.issue.is_some_and(|n| n != issue) => {
            let second = r.issue.map(|n| format!("#{n}")).unwrap_or_default();
            format!(
                "the same failure ended issue #{issue} and then issue {second} in a row: the environment's, not theirs, so {second} was not quarantined; but the tracker refused to lift #{issue}'s quarantine. Make the tracker writable (see the error below), then release #{issue} as below."
            )
        }
        HaltReason::TrackerWrite { issue, merged: false } => format!(
            "issue #{issue} gave up, but the tracker could not record its escalation. Make the tracker writable (see the error below), then run again with --ack-halt."
        ),
        HaltReason::RateLimit { wait_secs } => format!(
            "the service's API rate limit (the call and the service are named below) refused the same call {} times in a row (maxNetworkWaits), each time waited out until it said the limit lifts; the last refusal says it lifts in {wait_secs} s. No issue was blamed and no attempt spent. Run again with --ack-halt once it has lifted (on GitHub, `gh api rate_limit` shows what is left); if it keeps happening, let fewer runners share the token, or give the runner a token of its own.",
            r.limits.max_network_waits + 1
        ),
        HaltReason::ClaimRefused { issue } => format!(
            "this runner could not claim issue #{issue} (see the error below), so it did not start it: a runner works only on issues it holds. Make the claims writable (the local tracker's .claims directory, or the GitHub token's right to comment), then run again with --ack-halt."
        ),
        HaltReason::TrackerStale { issue } => format!(
            "the tracker offered issue #{issue} again, which this session already merged or a person withdrew: it still shows it open. Close it in the tracker (or fix what keeps it open), then run again with --ack-halt."
        ),
        HaltReason::Workspace { .. } => {
            "a fact the runner owns is wrong (below, with the fix); no issue was blamed or quarantined.".to_string()
        }
        HaltReason::SameFailureAcrossIssues { step, class } => {
            let (first, released) = pair(r);
            let second = r
                .issue
                .map(|n| format!("#{n}"))
                .unwrap_or_else(|| "the next issue".into());
            let first_fate = if released {
                format!("{first}'s quarantine was lifted in the tracker (released: its step had failed no other way)")
            } else {
                format!("{first} stays quarantined (its step had also failed another way, which may be its own) — release it once the cause is fixed")
            };
            format!(
                "the same {class} failure at {} ended two different issues in a row, {first} and then {second}: its cause is common to both (the environment, a hook, the tree), not theirs. {second} was not quarantined; {first_fate}.",
                step.key()
            )
        }
        HaltReason::RepeatedKills { step, kills } => format!(
            "{kills} attempt(s) of {} in a row were cut short by the runner's own death (killed, crashed, machine restarted): not the issue's failure, so it was not quarantined. Find what kills the runner (OOM killer? a supervisor's time limit?).",
            step.key()
        ),
        HaltReason::MergeTurnHeld { waited_ms } => format!(
            "the merge turn could not be had after {} s of waiting: another worker or runner kept it (or the tracker's merge lease could not be written; below). No issue was blamed: see to the holder, then run again with --ack-halt.",
            waited_ms / 1000
        ),
        HaltReason::BranchMoved {
            issue,
            ours,
            head,
            on_top: false,
        } => format!(
            "a person moved issue #{issue}'s branch on origin: its head {} does not hold {}, the runner's last commit for it (the one CI checked, or the one a review round or a conflict's repair was about to push), so nothing was pushed over it. Nothing was merged and no issue was blamed. Decide what the branch should be (bring {} onto their head and push, push {} over it if their commits are not wanted, or keep theirs and let CI check it), then run again with --ack-halt.",
            head.short(),
            ours.short(),
            ours.short(),
            ours.short()
        ),
        HaltReason::BranchMoved {
            issue, ours, head, ..
        } => format!(
            "commits kept being pushed on top of issue #{issue}'s branch on origin while the runner waited for CI (now at {}, after {}): more times than monitorCI's CI schedule has waits. Nothing was merged and no issue was blamed; run again with --ack-halt once the branch is settled.",
            head.short(),
            ours.short()
        ),
        HaltReason::MainKeptMoving { issue } => format!(
            "the base branch's protection requires issue #{issue}'s branch to be up to date with the base branch before its merge, and the base branch moved again each time the runner brought the branch up to date and CI passed it: more times than monitorCI's CI schedule has waits. Nothing was merged and no issue was blamed; run again with --ack-halt when the base branch is quieter, or relax the rule that branches be up to date."
        ),
        _ => return None,
    })
}

/// Everything a person needs after a halt (docs/counters-and-bounds.md), first line = the headline.
///
/// `quarantined` are the issues the halt leaves escalated (this session's and, for "all issues
/// escalated", the tracker's); `config` is the config file the recovery commands name.
pub fn halt_diagnostic(
    reason: &HaltReason,
    r: &Runner,
    output_tail: &str,
    logs: &str,
    quarantined: &[u32],
    config: &std::path::Path,
) -> String {
    let loop_type = match reason {
        HaltReason::ConsecutiveEscalations {
            cause: EscalationCause::BounceLoop,
            ..
        } => "bounce loop",
        HaltReason::ConsecutiveEscalations { .. } => "consecutive escalations",
        HaltReason::AllIssuesEscalated => "all issues escalated",
        HaltReason::AllIssuesBlocked => "all issues blocked",
        HaltReason::MaxConsecutiveFailures { .. } => "max_consecutive_failures",
        HaltReason::Environment { .. }
        | HaltReason::WaitsExhausted { .. }
        | HaltReason::QuotaTooLong { .. }
        | HaltReason::RunnerStateLost
        | HaltReason::Network
        | HaltReason::RateLimit { .. }
        | HaltReason::TrackerWrite { .. }
        | HaltReason::TrackerStale { .. }
        | HaltReason::ClaimRefused { .. }
        | HaltReason::Workspace { .. }
        | HaltReason::SameFailureAcrossIssues { .. }
        | HaltReason::RepeatedKills { .. }
        | HaltReason::MergeTurnHeld { .. } => "environment",
        HaltReason::BranchMoved { .. } => "a person's move",
        HaltReason::MainKeptMoving { .. } => "main kept moving",
        HaltReason::SessionBudget => "session budget",
        HaltReason::DayBudget => "daily budget",
        HaltReason::Operator => "operator decision",
        HaltReason::DecisionTimeout => "decision timeout",
    };
    let step = match reason {
        HaltReason::ConsecutiveEscalations { step, .. }
        | HaltReason::MaxConsecutiveFailures { step, .. }
        | HaltReason::Environment { step, .. }
        | HaltReason::WaitsExhausted { step, .. }
        | HaltReason::QuotaTooLong { step }
        | HaltReason::Workspace { step }
        | HaltReason::SameFailureAcrossIssues { step, .. }
        | HaltReason::RepeatedKills { step, .. } => Some(*step),
        _ => r.last_failure.map(|f| f.step),
    };
    let mut out = reason.headline();
    out.push_str(&format!("\nloop type: {loop_type}"));
    if let Some(why) = halt_explanation(reason, r) {
        out.push_str(&format!("\n{why}"));
    }
    if let Some(issue) = r.issue {
        out.push_str(&format!("\ncurrent issue: #{issue}"));
    }
    if let Some(step) = step {
        out.push_str(&format!("\nstep: {} ({})", step.key(), step.number()));
    }
    out.push_str(&evidence(r, output_tail, logs));
    if matches!(reason, HaltReason::AllIssuesEscalated) && !quarantined.is_empty() {
        let list: Vec<String> = quarantined.iter().map(|n| format!("#{n}")).collect();
        out.push_str(&format!(
            "\nquarantined in the tracker: {}",
            list.join(", ")
        ));
    }
    out.push_str("\nnothing was reset, committed or checked out.");
    out.push_str(&recovery(quarantined, config, ""));
    // The headline and evidence quote failure details too, not only the agent's output.
    redact(&out)
}

/// What to do after a halt, as commands to run exactly as printed. `run_args`: what the
/// halted `run` had beyond `--config` that the next one needs too (` --workers N`).
pub(crate) fn recovery(quarantined: &[u32], config: &std::path::Path, run_args: &str) -> String {
    let config = config.display();
    if quarantined.is_empty() {
        return format!(
            " Inspect, fix the cause, then acknowledge the halt and go on: `sdlc-runner run --config {config}{run_args} --ack-halt`"
        );
    }
    let numbers: Vec<String> = quarantined.iter().map(u32::to_string).collect();
    format!(
        " Inspect, fix the cause, then release the escalated issues (lifts their quarantine and acknowledges this halt) and run again:\n  sdlc-runner release {} --config {config}\n  sdlc-runner run --config {config}{run_args}\nor keep them quarantined and go on with the others: `sdlc-runner run --config {config}{run_args} --ack-halt`",
        numbers.join(" ")
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_escalation_quotes_the_git_changes_it_observed_and_nothing_for_other_classes() {
        let detail = |class| crate::failure::FailureDetail {
            step: crate::step::Step::Implement,
            class,
            summary: "s".into(),
            excerpt: "- hook pre-push added\n- git config core.fsmonitor = \"/x\" added".into(),
        };
        let quoted = observed(Some(&detail(FailureClass::GitTampered)));
        assert!(quoted.contains("- hook pre-push added"), "{quoted}");
        assert!(quoted.contains("core.fsmonitor"), "{quoted}");
        assert_eq!(observed(Some(&detail(FailureClass::TestAssertion))), "");
        assert_eq!(observed(None), "");
    }

    #[test]
    fn an_escalation_quotes_the_tests_the_branch_weakened() {
        let detail = crate::failure::FailureDetail {
            step: crate::step::Step::CommitPush,
            class: FailureClass::TestsWeakened,
            summary: "s".into(),
            excerpt: "- you skipped `parses_empty_input` (#[ignore]) in tests/parse.rs:41".into(),
        };
        let quoted = observed(Some(&detail));
        assert!(quoted.contains("tests/parse.rs:41"), "{quoted}");
    }
    use super::*;
    use crate::failure::Signature;

    #[test]
    fn the_output_excerpt_starts_at_a_line_boundary() {
        let text = format!("{}\nsecond line\nthird line\n", "x".repeat(600));
        assert_eq!(
            excerpt_from_line_start(&text, 500),
            "second line\nthird line\n"
        );
        assert_eq!(excerpt_from_line_start("short\ntext", 500), "short\ntext");
        // The cut falls exactly after a newline: nothing is dropped.
        let exact = format!("{}\n{}", "a".repeat(10), "b".repeat(20));
        assert_eq!(excerpt_from_line_start(&exact, 20), "b".repeat(20));
        // One long last line: its end, as much as fits.
        let long = "y".repeat(900);
        assert_eq!(excerpt_from_line_start(&long, 500).len(), 500);
        // Multi-byte characters are never split.
        let wide = format!("{}\nünï\n", "é".repeat(700));
        assert_eq!(excerpt_from_line_start(&wide, 500), "ünï\n");
    }
    use crate::machine::{LastFailure, Limits, Mode};
    use crate::step::Step;

    #[test]
    fn escalation_comment_carries_the_evidence_but_no_halt_advice() {
        let mut r = Runner::new(Limits::default(), Mode::Continuous);
        r.attempts[Step::Verify.index()] = 2;
        r.last_failure = Some(LastFailure {
            step: Step::Verify,
            class: FailureClass::Lint,
            signature: Signature(7),
        });
        let d = escalation_diagnostic(4, &r, "warning: unused variable", "/logs");
        assert!(
            d.starts_with(
                "sdlc-runner escalated issue #4 at step verify after 2 failed attempt(s)"
            ),
            "{d}"
        );
        assert!(
            d.contains("LINT") && d.contains("unused variable") && d.contains("/logs"),
            "{d}"
        );
        assert!(!d.contains("--ack-halt"), "{d}");
    }

    #[test]
    fn diagnostic_names_everything_and_redacts() {
        let mut r = Runner::new(Limits::default(), Mode::Continuous);
        r.escalated.extend([3, 5]);
        r.consecutive_escalations = 2;
        r.last_failure = Some(LastFailure {
            step: Step::Verify,
            class: FailureClass::TestAssertion,
            signature: Signature(0xabc),
        });
        let reason = HaltReason::ConsecutiveEscalations {
            cause: EscalationCause::RetriesExhausted,
            step: Step::Verify,
        };
        let tail = format!(
            "{}token=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
            "x".repeat(900)
        );
        let d = halt_diagnostic(
            &reason,
            &r,
            &tail,
            "/tmp/logs",
            &[3, 5],
            std::path::Path::new("c.json"),
        );
        assert!(
            d.starts_with("FAILURE LOOP DETECTED: consecutive escalations\n"),
            "{d}"
        );
        for needle in [
            "#3, #5",
            "step: verify",
            "consecutive escalations: 2 (limit 2)",
            "TEST_ASSERTION",
            "/tmp/logs",
            "--ack-halt",
            "sdlc-runner release 3 5 --config c.json",
        ] {
            assert!(d.contains(needle), "missing {needle}: {d}");
        }
        assert!(
            !d.contains("abcdefghijklmnopqrstuvwxyz0123456789"),
            "secret leaked: {d}"
        );
        let output = d.split("secrets redacted):\n").nth(1).unwrap_or_default();
        assert!(output.lines().next().unwrap_or_default().chars().count() <= 500);
    }
}
