//! The forge port: pull requests and CI of a branch. Its error is [`ForgeError`], the git
//! port's type: the forge's calls are commands like git's (`gh`, or git for the local forge)
//! and fail the same ways, kinded once at the adapter.

use super::git::GitError;
use crate::machine::ReviewDecision;

/// Where PRs are opened and merged and CI is read.
pub trait ForgePort: Send + Sync {
    /// The PR whose head is `branch`: an open one wins over a merged one over a closed one.
    fn pr_for_branch(&self, branch: &str) -> Result<Option<Pr>, ForgeError>;
    /// The branch's CI as it stands now.
    fn ci_state(&self, branch: &str) -> Result<CiState, ForgeError>;
    /// Opens the PR of `branch`, or returns its open PR as it is (a retry never opens two).
    fn create_pr(&self, branch: &str, title: &str, body: &str) -> Result<Pr, ForgeError>;
    /// CI of commit `commit`, origin's head of `branch` as a look just read it.
    fn ci_state_of(&self, branch: &str, commit: &str) -> Result<CiState, ForgeError>;
    /// [`ForgePort::failing_checks`] for commit `commit`.
    fn failing_checks_of(&self, branch: &str, commit: &str) -> Result<String, ForgeError>;
    /// Merges exactly `commit`, the PR of `branch`'s head, with `message`, and deletes the
    /// branch; refused, changing nothing, when the head is no longer `commit`.
    fn merge_pr(&self, branch: &str, commit: &str, message: &str) -> Result<(), ForgeError>;
    /// Each failing check's name, link and the end of its log where the forge has one.
    fn failing_checks(&self, branch: &str) -> Result<String, ForgeError>;
    /// The review decision of `branch`'s open PR and its reviews and comments written at or
    /// after `since` (RFC 3339; `None`: since the branch's last push where the forge can tell
    /// it, else all), oldest first. The decision is over every review.
    fn review_state(&self, branch: &str, since: Option<&str>) -> Result<ReviewState, ForgeError>;
    /// [`ForgePort::review_state`] since the branch's last push, where an approval counts
    /// only for `commit` (the commit CI verified) on a forge whose approvals name a commit.
    /// Default: the forge's approvals name none.
    fn review_of(&self, branch: &str, commit: Option<&str>) -> Result<ReviewState, ForgeError> {
        let _ = commit;
        self.review_state(branch, None)
    }
    /// `requireChecks`: "no CI configured" does not let a branch merge.
    fn require_checks(&self) -> bool;
    /// Origin itself plays the forge (the offline `local` forge): merges race on origin's
    /// main, so the merge step brings the branch up to date first.
    fn is_local(&self) -> bool;
    /// What the forge's fields say keeps `branch`'s PR from merging before anyone asks it
    /// to (an agent's merge): `Err` of kind `Behind` (the base branch wants the branch up to
    /// date) or `Policy` (a rule); `Ok` when nothing does, or the forge has no such fields.
    fn merge_gate(&self, branch: &str) -> Result<(), ForgeError> {
        let _ = branch;
        Ok(())
    }
    /// One tree of the merge train: `merges` (each a commit CI passed on its branch and the
    /// message of its merge) merged in order onto `base` (origin's main when `None`), as the
    /// builtin merge would merge each, and CI's verdict on the last merge. Default: the forge
    /// builds no trees (only the local forge does).
    fn test_train(
        &self,
        base: Option<&str>,
        merges: &[(String, String)],
    ) -> Result<TrainTree, ForgeError> {
        let _ = (base, merges);
        Err(no_train())
    }
    /// Where `branch`'s PR stands in the base branch's merge queue (GitLab: the project's merge
    /// train), after the merge put it there (`CallFailureKind::Queued`). Default: the forge
    /// has no merge queue (an error).
    fn queue_state(&self, branch: &str) -> Result<QueueState, ForgeError> {
        let _ = branch;
        Err(GitError::Parse {
            command: "the merge queue's look".to_string(),
            detail: "this forge puts no pull request in a merge queue".to_string(),
        })
    }
    /// Whether CI in `state` lets the branch merge.
    fn ci_ok(&self, state: CiState) -> bool {
        match state {
            CiState::Passed => true,
            CiState::NoneConfigured => !self.require_checks(),
            CiState::Pending | CiState::Failed => false,
        }
    }
}

/// Why the forge could not answer. Its calls are commands like git's (`gh`, or git itself for
/// the local forge) and fail the same ways — a command that could not start, failed (its
/// kind decided from what it printed), was stopped by the runner, or printed what cannot be
/// read — so it is the same type as the git port's error: one definition, classified once.
/// The messages name the command and what to check.
pub type ForgeError = GitError;

/// The answer of a forge that builds no merge train's trees.
pub fn no_train() -> ForgeError {
    GitError::Parse {
        command: "the merge train's tree".to_string(),
        detail: "only the local forge builds and tests the trees of a merge train".to_string(),
    }
}

/// Where a PR put in the base branch's merge queue (GitHub) or merge train (GitLab) stands
/// ([`ForgePort::queue_state`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueState {
    /// Still in the queue: its CI on the queue's merge group (the train's pipeline) has not
    /// decided yet.
    Queued,
    /// The queue merged it: main holds the tree the queue's CI passed.
    Merged,
    /// The queue took it out because its CI failed on the merge group (main, the PRs ahead
    /// of it and this one): the forge's words.
    ChecksFailed(String),
    /// Taken out of the queue, or closed, by a person: what they did.
    Removed(&'static str),
}

/// What building and testing one tree of the merge train found ([`ForgePort::test_train`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrainTree {
    /// The tree: main as `base` with each merge; `merge` is its last commit (none when the
    /// merges conflict, which does not pass), `passed` CI's verdict on it.
    Tested {
        /// The main the tree was built on.
        base: String,
        /// The tree's commit, when it could be built.
        merge: Option<String>,
        /// Whether CI passed it.
        passed: bool,
    },
    /// Origin's main is neither `base` nor one of the tree's merges: someone other than the
    /// train moved it.
    MainMoved {
        /// Origin's main now.
        main: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// The checks of a pull request's head commit, as the merge gate sees them.
pub enum CiState {
    /// No checks are configured for the commit; mergeable unless `requireChecks` is set.
    NoneConfigured,
    /// At least one check is still running or queued.
    Pending,
    /// At least one check failed (or was cancelled).
    Failed,
    /// Every check finished and passed.
    Passed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// Where a pull request is.
pub enum PrState {
    /// Open: can be merged.
    Open,
    /// Merged into the default branch.
    Merged,
    /// Closed without merging.
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// A pull request as the forge reports it.
pub struct Pr {
    /// 0 for the local forge, which has no numbers.
    pub number: u32,
    /// Its web address; the local forge writes `local:<branch>#<number>`.
    pub url: String,
    /// Open, merged or closed.
    pub state: PrState,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
/// One review or comment on an open PR.
pub struct Feedback {
    /// The forge's id; the runner remembers ids it handed to the agent.
    pub id: String,
    /// Who wrote it (a login, or the local user).
    pub author: String,
    /// When, RFC 3339.
    pub time: String,
    /// What it says (may be empty for a bare approval).
    pub body: String,
    /// An approval, a request for changes or a comment.
    pub kind: ReviewKind,
    /// The file a line comment is on, where the forge has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The line a line comment is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
/// What an open PR's reviewers say: the decision over all reviews, and the reviews and
/// comments written since the time asked for, oldest first.
pub struct ReviewState {
    /// Approved, changes requested or neither.
    pub decision: ReviewDecision,
    /// Reviews and comments since the time asked for.
    pub feedback: Vec<Feedback>,
    /// The authors whose request for changes holds the merge (GitLab: who opened an
    /// unresolved thread); empty when the forge's decision names nobody.
    pub requested_by: Vec<String>,
    /// Whether an approval that counts was given, requests for changes aside.
    pub approved: bool,
    /// Who approved (each author's latest verdict an approval); `review.ignoreAuthors` leaves
    /// theirs out ([`ReviewState::decision_without`]).
    pub approved_by: Vec<String>,
    /// The authors whose words were left out for want of authority, with why (GitHub and
    /// GitLab; the log names each once per run).
    pub left_out: Vec<(String, String)>,
}

/// What a local review says (`sdlc-runner review N --approve | --request-changes | --comment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReviewKind {
    /// The reviewer approves.
    Approve,
    /// The reviewer asks for changes; it stands until they approve.
    RequestChanges,
    /// A comment, deciding nothing.
    Comment,
}
