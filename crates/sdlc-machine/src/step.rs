//! The ten lifecycle steps of docs/lifecycle.md. Numbering is part of the contract (`--step N`, the
//! state file, log names), so it lives here once and everything else derives from it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One step of the lifecycle, in execution order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Step {
    /// 1: the runner makes sure the clone is clean and on an up-to-date main.
    StartCycle,
    /// 2: the issue's feature branch is created.
    StartIssue,
    /// 3: the specs for the issue are written.
    WriteSpecs,
    /// 4: the code is written.
    Implement,
    /// 5: the change is simplified.
    Simplify,
    /// 6: the change is verified against the specs and the tests.
    Verify,
    /// 7: the work is committed and pushed.
    CommitPush,
    /// 8: the pull request is opened.
    CreatePr,
    /// 9: CI is watched and its failures repaired.
    MonitorCi,
    /// 10: the pull request is merged.
    Merge,
}

impl Step {
    /// How many steps the lifecycle has.
    pub const COUNT: usize = 10;
    /// Every step in execution order; a step's number is its position plus one.
    pub const ALL: [Step; Self::COUNT] = [
        Step::StartCycle,
        Step::StartIssue,
        Step::WriteSpecs,
        Step::Implement,
        Step::Simplify,
        Step::Verify,
        Step::CommitPush,
        Step::CreatePr,
        Step::MonitorCi,
        Step::Merge,
    ];

    /// 1-based number used on the command line, in the state file and in messages.
    pub const fn number(self) -> u8 {
        self as u8 + 1
    }

    /// 0-based index, for per-step arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The camelCase key used in the config (`steps.<key>`) and in log file names.
    pub const fn key(self) -> &'static str {
        match self {
            Step::StartCycle => "startCycle",
            Step::StartIssue => "startIssue",
            Step::WriteSpecs => "writeSpecs",
            Step::Implement => "implement",
            Step::Simplify => "simplify",
            Step::Verify => "verify",
            Step::CommitPush => "commitPush",
            Step::CreatePr => "createPR",
            Step::MonitorCi => "monitorCI",
            Step::Merge => "merge",
        }
    }

    /// The step numbered `n` (1 to 10); `None` outside that range.
    pub fn from_number(n: u8) -> Option<Step> {
        Step::ALL.get((n as usize).checked_sub(1)?).copied()
    }

    /// The step whose config key is `key` (`writeSpecs`, `monitorCI`, …).
    pub fn from_key(key: &str) -> Option<Step> {
        Step::ALL.iter().copied().find(|s| s.key() == key)
    }

    /// Accepts either a number 1..=10 or a step key, as `--step` does.
    pub fn parse(text: &str) -> Option<Step> {
        match text.trim().parse::<u8>() {
            Ok(n) => Step::from_number(n),
            Err(_) => Step::from_key(text.trim()),
        }
    }

    /// The step after this one; `None` after merge.
    pub fn next(self) -> Option<Step> {
        Step::from_number(self.number() + 1)
    }

    /// The step before this one; `None` before startCycle.
    pub fn prev(self) -> Option<Step> {
        Step::from_number(self.number().checked_sub(1)?)
    }

    /// Whether a failure of this step that the code can fix (a test, a lint, a conflict, a
    /// hook's refusal of the commit or push) gets a repair attempt: the next attempt is handed
    /// the failure to fix first, within `maxRepairIterations` (docs/lifecycle.md).
    pub const fn repairs(self) -> bool {
        matches!(
            self,
            Step::Verify | Step::CommitPush | Step::MonitorCi | Step::Merge
        )
    }

    /// Whether the runner checks an artifact before this step may start (docs/lifecycle.md).
    pub const fn has_precondition(self) -> bool {
        !matches!(self, Step::StartCycle | Step::Simplify | Step::CommitPush)
    }

    /// The steps the runner can do itself, without an agent (`steps.<key>.run: "builtin"`).
    pub const BUILTIN: [Step; 6] = [
        Step::StartCycle,
        Step::StartIssue,
        Step::CommitPush,
        Step::CreatePr,
        Step::MonitorCi,
        Step::Merge,
    ];

    /// Whether the runner can do this step without an agent.
    pub fn can_be_builtin(self) -> bool {
        Step::BUILTIN.contains(&self)
    }

    /// The conventional-commit type of the runner's commit of this step's work
    /// (`CommitKind::StepWork`): specs are docs, the rest features.
    pub const fn commit_type(self) -> &'static str {
        match self {
            Step::WriteSpecs => "docs",
            Step::Simplify => "refactor",
            Step::Verify => "fix",
            _ => "feat",
        }
    }

    /// Whether the work of this step is the agent's alone, committed by the runner after it
    /// succeeds (`Limits::runner_commits`): the steps that can never be builtin.
    pub fn commits_agent_work(self) -> bool {
        !self.can_be_builtin()
    }

    /// Steps that only the `simplify` switch may turn off; every other step is mandatory.
    pub const fn can_be_disabled(self) -> bool {
        matches!(self, Step::Simplify)
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.number(), self.key())
    }
}

/// The precondition checks of docs/lifecycle.md, by their `failedCheck` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Check {
    /// The work tree has no uncommitted changes.
    CleanWorkingTree,
    /// The default branch is checked out.
    OnMainBranch,
    /// The issue's feature branch exists.
    FeatureBranchExists,
    /// The cycle knows which issue it works on.
    IssueNumberKnown,
    /// The issue's spec files exist.
    SpecFilesExist,
    /// The issue's feature branch is checked out.
    OnFeatureBranch,
    /// The feature branch has commits that main does not.
    CommitsExistOnBranch,
    /// The feature branch is pushed to origin.
    BranchPushedToRemote,
    /// The issue's pull request exists.
    PrExists,
    /// The pull request's CI checks pass.
    CiChecksPassing,
}

impl Check {
    /// The exact `failedCheck` string of the contract.
    pub const fn name(self) -> &'static str {
        match self {
            Check::CleanWorkingTree => "clean working tree",
            Check::OnMainBranch => "on main branch",
            Check::FeatureBranchExists => "feature branch exists",
            Check::IssueNumberKnown => "issue number known",
            Check::SpecFilesExist => "spec files exist",
            Check::OnFeatureBranch => "on feature branch",
            Check::CommitsExistOnBranch => "commits exist on branch",
            Check::BranchPushedToRemote => "branch pushed to remote",
            Check::PrExists => "PR exists",
            Check::CiChecksPassing => "CI checks passing",
        }
    }

    /// The step whose precondition this check is.
    pub const fn step(self) -> Step {
        match self {
            Check::CleanWorkingTree | Check::OnMainBranch => Step::StartIssue,
            Check::FeatureBranchExists | Check::IssueNumberKnown => Step::WriteSpecs,
            Check::SpecFilesExist => Step::Implement,
            Check::OnFeatureBranch | Check::CommitsExistOnBranch => Step::Verify,
            Check::BranchPushedToRemote => Step::CreatePr,
            Check::PrExists => Step::MonitorCi,
            Check::CiChecksPassing => Step::Merge,
        }
    }

    /// The checks of one step, in the order they are evaluated.
    pub fn of(step: Step) -> &'static [Check] {
        match step {
            Step::StartIssue => &[Check::CleanWorkingTree, Check::OnMainBranch],
            Step::WriteSpecs => &[Check::FeatureBranchExists, Check::IssueNumberKnown],
            Step::Implement => &[Check::SpecFilesExist],
            Step::Verify => &[Check::OnFeatureBranch, Check::CommitsExistOnBranch],
            Step::CreatePr => &[Check::BranchPushedToRemote],
            Step::MonitorCi => &[Check::PrExists],
            Step::Merge => &[Check::CiChecksPassing],
            _ => &[],
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_and_keys_round_trip() {
        for (i, s) in Step::ALL.iter().enumerate() {
            assert_eq!(s.number() as usize, i + 1);
            assert_eq!(Step::from_number(s.number()), Some(*s));
            assert_eq!(Step::from_key(s.key()), Some(*s));
            assert_eq!(Step::parse(&s.number().to_string()), Some(*s));
        }
        assert_eq!(Step::from_number(0), None);
        assert_eq!(Step::from_number(11), None);
        assert_eq!(Step::parse("4abc"), None);
        assert_eq!(Step::parse(""), None);
    }

    #[test]
    fn only_the_steps_that_need_no_model_are_builtin() {
        assert!(Step::Merge.can_be_builtin() && Step::MonitorCi.can_be_builtin());
        assert!(!Step::Implement.can_be_builtin() && !Step::WriteSpecs.can_be_builtin());
    }

    #[test]
    fn checks_belong_to_steps_with_preconditions() {
        for s in Step::ALL {
            assert_eq!(s.has_precondition(), !Check::of(s).is_empty(), "{s}");
            for c in Check::of(s) {
                assert_eq!(c.step(), s);
            }
        }
    }
}
