//! The checks around a step that need both git and the forge: preconditions, post-step
//! checks, whether a side-effecting step's outcome already holds, and how far a branch the
//! journal does not know got. `git::repo` holds plain git facts; `forge` holds PRs and CI; this
//! module combines them (so neither depends on the other's callers).

use crate::artifacts::StateFile;
use crate::forge::{CiState, PrState};
use crate::git::repo::{leading_issue, RepoError};
use crate::ports::{ForgePort, GitPort};
use crate::step::{Check, Step};
use crate::steps::weakening::{check_once, Gate};

/// A probe reads git and the forge; either can fail, and the message is theirs unchanged
/// (the forge's error is the git port's type).
pub type ProbeError = RepoError;

/// What the runner knows about the cycle when it checks a step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepContext {
    /// The issue the cycle works on, if one is selected.
    pub issue: Option<u32>,
    /// The spec directory name recorded for the issue, if any.
    pub feature: Option<String>,
    /// The commit CI passed in this cycle, which a merge must land on origin's main.
    pub verified: Option<String>,
    /// commitPush's last attempt pushed a branch that weakens the tests (`TESTS_WEAKENED`,
    /// an agent's own push): what origin holds is not commitPush done.
    pub pushed_weakened: bool,
    /// The step is the runner's own action (`steps.<key>.run: builtin`).
    pub builtin: bool,
    /// The test-weakening check of this cycle's pushes (`None`: off, or a person approved
    /// the weakening): a pushed head it has not let through is not commitPush done (a runner
    /// killed between its agent's push and the check checks it on restart).
    pub gate: Option<Gate>,
    /// CI's verdict is the fleet's merge train's (`Limits::train_tests_ci`): the merge's
    /// precondition asks nothing of CI on the branch alone, and the merge lands only the
    /// tree CI passed in the train.
    pub ci_by_train: bool,
}

/// The branch the cycle works on: the issue's feature branch, or without a known issue the
/// checked-out branch unless it is main.
fn work_branch(repo: &dyn GitPort, ctx: &StepContext) -> Result<Option<String>, RepoError> {
    match ctx.issue {
        Some(issue) => repo.feature_branch(issue),
        None => Ok(repo.current_branch()?.filter(|b| *b != repo.main())),
    }
}

/// Checked out on the cycle's feature branch.
fn on_feature_branch(repo: &dyn GitPort, ctx: &StepContext) -> Result<Option<String>, RepoError> {
    let current = repo.current_branch()?;
    let Some(current) = current.filter(|b| *b != repo.main()) else {
        return Ok(None);
    };
    match ctx.issue {
        Some(issue) if leading_issue(&current) != Some(issue) => Ok(None),
        _ => Ok(Some(current)),
    }
}

/// The docs/lifecycle.md precondition of `step`, checks in contract order. `Ok(Err(check))` names the
/// first check that failed; `Err` means git or gh could not be asked.
pub fn precondition(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    step: Step,
    ctx: &StepContext,
) -> Result<Result<(), Check>, ProbeError> {
    for &check in Check::of(step) {
        let holds = match check {
            Check::CleanWorkingTree => repo.is_clean()?,
            Check::OnMainBranch => repo.on_main()?,
            Check::FeatureBranchExists => on_feature_branch(repo, ctx)?.is_some(),
            Check::IssueNumberKnown => ctx.issue.is_some(),
            Check::SpecFilesExist => ctx
                .issue
                .is_some_and(|i| repo.spec_files_ok(i, ctx.feature.as_deref()).is_ok()),
            Check::OnFeatureBranch => on_feature_branch(repo, ctx)?.is_some(),
            Check::CommitsExistOnBranch => match on_feature_branch(repo, ctx)? {
                Some(b) => repo.commits_ahead_of_main(&b)? > 0,
                None => false,
            },
            Check::BranchPushedToRemote => match work_branch(repo, ctx)? {
                Some(b) => {
                    repo.fetch()?;
                    repo.branch_pushed(&b)? && repo.unpushed_commits(&b)? == 0
                }
                None => false,
            },
            Check::PrExists => match work_branch(repo, ctx)? {
                Some(b) => forge
                    .pr_for_branch(&b)?
                    .is_some_and(|pr| pr.state != PrState::Closed),
                None => false,
            },
            Check::CiChecksPassing => match work_branch(repo, ctx)? {
                Some(_) if ctx.ci_by_train => true,
                Some(b) => forge.ci_ok(forge.ci_state(&b)?),
                None => false,
            },
        };
        if !holds {
            return Ok(Err(check));
        }
    }
    Ok(Ok(()))
}

/// What the runner checks after a step exited successfully (docs/lifecycle.md). `Ok(Err(text))` says
/// what is wrong, for the failure record. implement's auto-commit is the caller's (it needs
/// the commit message), so implement has no check here.
pub fn post_check(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    step: Step,
    ctx: &StepContext,
) -> Result<Result<(), String>, ProbeError> {
    match step {
        Step::StartIssue => {
            let current = repo.current_branch()?;
            let ok = on_feature_branch(repo, ctx)?.is_some_and(|b| leading_issue(&b).is_some());
            if ok {
                return Ok(Ok(()));
            }
            let on = current.unwrap_or_else(|| "a detached HEAD".to_string());
            let expected = match ctx.issue {
                Some(i) => format!("{i}-<slug>"),
                None => "<issue>-<slug>".to_string(),
            };
            Ok(Err(format!(
                "no feature branch checked out after startIssue: HEAD is on {on}, expected {expected}"
            )))
        }
        Step::WriteSpecs => {
            let Some(issue) = ctx.issue else {
                return Ok(Err(
                    "no issue number known, so no spec directory to check".into()
                ));
            };
            Ok(repo
                .spec_files_ok(issue, ctx.feature.as_deref())
                .map_err(|missing| {
                    format!(
                        "spec files missing or empty for issue #{issue} under specs/: {}",
                        missing.join(", ")
                    )
                }))
        }
        Step::CommitPush => pushed(repo, ctx),
        Step::MonitorCi => {
            let Some(branch) = work_branch(repo, ctx)? else {
                return Ok(Err("no feature branch to check CI for".into()));
            };
            let state = forge.ci_state(&branch)?;
            if forge.ci_ok(state) {
                return Ok(Ok(()));
            }
            Ok(Err(match state {
                CiState::Failed => format!("CI checks failing on {branch}"),
                CiState::Pending => format!("CI checks still pending on {branch}"),
                // Passed always satisfies ci_ok; only "none configured" under requireChecks is left.
                CiState::NoneConfigured | CiState::Passed => {
                    format!("no CI checks reported for {branch} and requireChecks is set")
                }
            }))
        }
        // A merge is recorded only when the commit CI passed reached origin's main: an agent
        // that reports a merge it did not make, or merged another head, is caught here.
        Step::Merge => landed(repo, ctx),
        _ => Ok(Ok(())),
    }
}

/// commitPush's check: the work is committed and all of it on origin.
fn pushed(repo: &dyn GitPort, ctx: &StepContext) -> Result<Result<(), String>, ProbeError> {
    let Some(branch) = work_branch(repo, ctx)? else {
        return Ok(Err("no feature branch to push".into()));
    };
    repo.fetch()?;
    if !repo.is_clean()? {
        return Ok(Err("uncommitted changes remain after commitPush".into()));
    }
    if !repo.branch_pushed(&branch)? {
        return Ok(Err(format!("branch {branch} is not on origin")));
    }
    let unpushed = repo.unpushed_commits(&branch)?;
    if unpushed > 0 {
        return Ok(Err(format!(
            "{unpushed} commit(s) on {branch} are not pushed to origin"
        )));
    }
    Ok(Ok(()))
}

/// merge's check: the commit CI passed is on origin's main.
fn landed(repo: &dyn GitPort, ctx: &StepContext) -> Result<Result<(), String>, ProbeError> {
    let Some(commit) = ctx.verified.as_deref() else {
        return Ok(Ok(()));
    };
    repo.fetch()?;
    let main = repo.main();
    let landed = match repo.origin_main()? {
        Some(tip) => repo.contains_commit(&tip, commit)?,
        None => false,
    };
    if landed {
        return Ok(Ok(()));
    }
    Ok(Err(format!(
        "merge reported success, but {} (the commit CI passed) is not on origin's {main}",
        crate::steps::builtin::short(commit)
    )))
}

/// Whether the outcome of a side-effecting step already holds, so the runner records it done
/// without running it again (docs/interfaces.md): commitPush when the work is committed and all on origin,
/// createPR when a PR exists, merge when it is merged. The builtin createPR is not asked: its
/// own action keeps the branch's PR rather than opening a second (`ForgePort::create_pr`),
/// and a read of the branch's PRs before GitHub's `POST …/pulls` would be a counted request
/// whose answer the PR changes.
pub fn already_done(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    step: Step,
    ctx: &StepContext,
) -> Result<bool, ProbeError> {
    if !matches!(step, Step::CommitPush | Step::CreatePr | Step::Merge)
        || (step == Step::CreatePr && ctx.builtin)
    {
        return Ok(false);
    }
    let Some(branch) = work_branch(repo, ctx)? else {
        return Ok(false);
    };
    match step {
        Step::CommitPush => {
            if ctx.pushed_weakened {
                return Ok(false);
            }
            repo.fetch()?;
            // A branch with nothing of its own (e.g. created on origin by `gh issue develop`)
            // is pushed but holds no work yet.
            Ok(repo.is_clean()?
                && repo.branch_pushed(&branch)?
                && repo.unpushed_commits(&branch)? == 0
                && repo.commits_ahead_of_main(&branch)? > 0
                && let_through(repo, &branch, ctx)?)
        }
        Step::CreatePr => Ok(forge
            .pr_for_branch(&branch)?
            .is_some_and(|pr| pr.state != PrState::Closed)),
        _ => Ok(forge
            .pr_for_branch(&branch)?
            .is_some_and(|pr| pr.state == PrState::Merged)),
    }
}

/// Whether the test-weakening check lets `branch`'s head through: checked now unless it was
/// before (`check_once`); always when the cycle's pushes are not checked.
fn let_through(repo: &dyn GitPort, branch: &str, ctx: &StepContext) -> Result<bool, RepoError> {
    let Some(gate) = ctx.gate.as_ref().filter(|g| !g.approved) else {
        return Ok(true);
    };
    let Some(number) = ctx.issue.or_else(|| leading_issue(branch)) else {
        return Ok(true);
    };
    let found = check_once(repo, branch, (number, ctx.feature.as_deref()), gate)?;
    Ok(found.is_none_or(|f| f.weakened.is_empty()))
}

/// How far the checked-out feature branch got (docs/persistence.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// The issue whose branch is checked out.
    pub issue: u32,
    /// The checked-out branch's name.
    pub branch: String,
    /// The first step not yet done.
    pub next: Step,
    /// The branch's PR is merged: check out main and start a fresh cycle.
    pub merged: bool,
    /// The spec directory found for the issue.
    pub feature: Option<String>,
}

/// Probes git and the forge for the progress of the checked-out `<N>-<slug>` branch. The
/// ladder is chained (no later signal lifts it past a failed earlier one): branch ⇒ startIssue
/// done; spec files ⇒ writeSpecs; commits ahead of main ⇒ implement (simplify is not
/// observable). verify is done only when the state file of the same issue says so; a pushed
/// branch or an open PR alone never counts (it may be a signal-shutdown
/// WIP push, or created by `gh issue develop`). Then all pushed, and its head let through by
/// the test-weakening check `gate` (checked now unless it was before) ⇒ commitPush; PR ⇒ createPR;
/// CI passing ⇒ monitorCI. After a signal shutdown the state file's `lastCompletedStep` caps
/// the result. simplify counts as done only on the same evidence as verify, or when the state
/// file records it. `None` when HEAD is not on an issue branch.
pub fn detect_progress(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    state_hint: Option<&StateFile>,
    gate: Option<&Gate>,
) -> Result<Option<Detected>, ProbeError> {
    let Some(branch) = repo.current_branch()? else {
        return Ok(None);
    };
    let Some(issue) = leading_issue(&branch) else {
        return Ok(None);
    };
    if branch == repo.main() {
        return Ok(None);
    }
    repo.fetch()?;
    // A state file about another issue tells nothing about this one.
    let hint = state_hint.filter(|s| s.current_issue == Some(issue));
    let recorded_feature = hint.and_then(|s| s.feature_name.as_deref());
    let feature = repo
        .spec_dir(issue, recorded_feature)
        .and_then(|d| d.file_name().and_then(|n| n.to_str()).map(str::to_string));
    let pr = forge.pr_for_branch(&branch)?;
    if pr.as_ref().is_some_and(|p| p.state == PrState::Merged) {
        return Ok(Some(Detected {
            issue,
            branch,
            next: Step::StartCycle,
            merged: true,
            feature,
        }));
    }
    let pr_open = pr.as_ref().is_some_and(|p| p.state == PrState::Open);
    let ctx = StepContext {
        issue: Some(issue),
        feature: feature.clone(),
        verified: None,
        pushed_weakened: false,
        builtin: false,
        gate: gate.cloned(),
        ci_by_train: false,
    };

    // Only the state file can vouch for verify: with the local forge an open PR is nothing
    // more than a pushed branch.
    let verified = hint.is_some_and(|s| s.last_completed_step >= Step::Verify.number());
    let simplified =
        verified || hint.is_some_and(|s| s.last_completed_step >= Step::Simplify.number());
    let mut done = Step::StartIssue;
    let mut advance = |step: Step, holds: bool| -> bool {
        if holds && done.next() == Some(step) {
            done = step;
        }
        done == step
    };
    let _ = advance(
        Step::WriteSpecs,
        repo.spec_files_ok(issue, feature.as_deref()).is_ok(),
    ) && advance(Step::Implement, repo.commits_ahead_of_main(&branch)? > 0)
        && advance(Step::Simplify, simplified)
        && advance(Step::Verify, verified)
        && advance(
            Step::CommitPush,
            already_done(repo, forge, Step::CommitPush, &ctx)?,
        )
        && advance(Step::CreatePr, pr_open)
        && advance(Step::MonitorCi, forge.ci_ok(forge.ci_state(&branch)?));

    if let Some(s) = hint.filter(|s| s.signal_shutdown.is_some()) {
        let cap = Step::from_number(s.last_completed_step).unwrap_or(Step::StartIssue);
        done = done.min(cap.max(Step::StartIssue));
    }
    Ok(Some(Detected {
        issue,
        branch,
        next: done.next().unwrap_or(Step::Merge),
        merged: false,
        feature,
    }))
}
