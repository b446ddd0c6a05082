//! The refusals of a run limited to one issue or one step (`--issue N`, `--step K`): said,
//! with what to do, before any session starts; each returns the exit code to stop with.

use crate::artifacts::StateFile;
use crate::machine::Mode;
use crate::ports::{Ports, TrackerPort};
use crate::step::Step;
use crate::steps::checks;
use crate::tracker;

/// `--issue N` on an issue the tracker marks escalated, or on one already closed: the exit
/// code to stop with, after saying why.
pub(super) fn single_issue_refusal(
    tracker: &dyn TrackerPort,
    n: u32,
    config: &std::path::Path,
) -> Option<i32> {
    match tracker.get(n) {
        Ok(issue) if issue.escalated => {
            say!(
                "issue #{n} is marked escalated in the tracker (quarantined): the runner does not work on it. Release it with `{}`, then run again.",
                tracker.release_hint(n, config)
            );
            Some(1)
        }
        Ok(issue) if !issue.state_open => {
            say!("issue #{n} is already closed: nothing to do");
            Some(0)
        }
        Err(e @ tracker::TrackerError::NotFound { .. }) => {
            say!("error: --issue {n}: {e}; pass the number of an open issue (`sdlc-runner issue list --config {}` for the local tracker)", config.display());
            Some(2)
        }
        _ => None,
    }
}

/// `--step K` whose precondition does not hold (docs/lifecycle.md): a usage error, said with
/// the check that failed and the command that makes it hold, before any session starts. A
/// session resumed from its journal goes on where it was, whatever the flags say.
pub(super) fn single_step_refusal(
    mode: Mode,
    resuming: bool,
    ports: &Ports,
    state: &StateFile,
    config: &std::path::Path,
) -> Option<i32> {
    let Mode::SingleStep(step) = mode else {
        return None;
    };
    if resuming {
        return None;
    }
    let (repo, forge) = (&*ports.git, &*ports.forge);
    let issue = state.current_issue.or_else(|| {
        repo.current_branch()
            .ok()
            .flatten()
            .and_then(|b| crate::git::repo::leading_issue(&b))
    });
    let ctx = checks::StepContext {
        issue,
        feature: state.feature_name.clone(),
        verified: None,
        pushed_weakened: false,
        builtin: false,
        gate: None,
        ci_by_train: false,
    };
    let check = match checks::precondition(repo, forge, step, &ctx) {
        Ok(Err(check)) => check,
        // Holds, or git/the forge cannot be asked now: the run itself reports that.
        _ => return None,
    };
    use crate::step::Check;
    let config = config.display();
    let earlier = |s: Step| {
        format!(
            "run the step that makes it hold first: `sdlc-runner run --config {config} --step {}`",
            s.key()
        )
    };
    let what = match check {
        Check::CleanWorkingTree => "commit or stash the changes `git status` shows".to_string(),
        Check::OnMainBranch => format!("check out {} (`git checkout {0}`)", repo.main()),
        Check::FeatureBranchExists | Check::OnFeatureBranch | Check::IssueNumberKnown => format!(
            "no issue branch is checked out: {} (or work a whole issue: `run --issue N`)",
            earlier(Step::StartIssue)
        ),
        Check::SpecFilesExist => earlier(Step::WriteSpecs),
        Check::CommitsExistOnBranch => earlier(Step::Implement),
        Check::BranchPushedToRemote => earlier(Step::CommitPush),
        Check::PrExists => earlier(Step::CreatePr),
        Check::CiChecksPassing => format!("wait for CI to pass, or {}", earlier(Step::MonitorCi)),
    };
    say!(
        "error: --step {}: cannot run now: its precondition \"{}\" does not hold{}; {what}",
        step.key(),
        check.name(),
        match issue {
            Some(n) => format!(" (issue #{n})"),
            None => String::new(),
        }
    );
    Some(2)
}
