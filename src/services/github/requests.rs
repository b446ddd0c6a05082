//! How many GitHub requests each of the runner's calls makes at most, named once: the forge
//! and the tracker make their calls as these say, and `process_bounds::GITHUB_REQUESTS` adds
//! them up per effect, from which `bounds` prints the worst case per issue. A list counts one
//! page (100 entries); each further page is one request more. A 304 (an unchanged answer to
//! a conditional read) does not count against GitHub's rate limit, but every read counts
//! here: the worst case assumes each answer changed.

/// `GET /user`: the runner's own login, read once per run.
pub const USER: u64 = 1;

/// `GET …/issues/N`: the issue's state (a person's decision, a withdrawal, a merge's close).
pub const ISSUE: u64 = 1;

/// The issue's text for a prompt: `GET …/issues/N` and a page of its comments.
pub const ISSUE_TEXT: u64 = 2;

/// A selection: the labelled open issues, the open milestones and a milestone's issues (only
/// when a candidate has one), the selected issue's label events, the labeller's permission
/// (once per login), GraphQL's last edit of its description and the editor's permission. An
/// issue's dependency outside the candidates and its milestone is one request more.
pub const SELECT: u64 = 7;

/// The branch's pull requests: `GET …/pulls?head=<owner>:<branch>`.
pub const PR_LIST: u64 = 1;

/// A commit's CI: its check runs (a page) and its combined status.
pub const CI: u64 = 2;

/// The failing checks whose job log is read for a repair (`gh run view --job J
/// --log-failed`): at most this many, the first in GitHub's order.
pub const MAX_FAILED_JOB_LOGS: usize = 3;

/// One failed job's log through `gh run view`: the job, its run and the log.
pub const JOB_LOG: u64 = 3;

/// A failing CI's checks for the repair prompt: the commit's CI again and the job logs.
pub const FAILING_CHECKS: u64 = CI + MAX_FAILED_JOB_LOGS as u64 * JOB_LOG;

/// Opening the pull request: `POST …/pulls`, and on GitHub's 422 for a head that has one the
/// branch's pull requests (`forge::github::create_pr`).
pub const CREATE_PR: u64 = 1 + PR_LIST;

/// GraphQL's review decision of a pull request (and whether its base has a merge queue).
pub const REVIEW_DECISION: u64 = 1;

/// The merge queue: a look (GraphQL) and the enqueue (GraphQL).
pub const ENQUEUE: u64 = 2;

/// One merge run (`forge::github::merge_pr`): the branch's pull requests, the pull request's
/// fields and a blocked one's review decision, the `PUT …/merge`, and after a refusal the
/// fields and the decision again, then the merge queue's enqueue.
pub const MERGE_RUN: u64 = PR_LIST + 2 * (1 + REVIEW_DECISION) + 1 + ENQUEUE;

/// A look at the review (`forge::github::review_state`): the branch's pull requests, the
/// runner's login, a page of reviews, the review decision, the pull request, a page of its
/// line comments and of its conversation.
pub const REVIEW_LOOK: u64 = PR_LIST + USER + 1 + REVIEW_DECISION + 1 + 1 + 1;

/// A comment on an issue.
pub const COMMENT: u64 = 1;

/// A label added to an issue: the label read, created when missing, then added.
pub const ADD_LABEL: u64 = 3;

/// A merged issue's close: the issue read back, and when GitHub left it open a comment and
/// the close.
pub const CLOSE: u64 = ISSUE + COMMENT + 1;

/// An issue quarantined: its escalated label and the comment.
pub const ESCALATE: u64 = ADD_LABEL + COMMENT;

/// A quarantine lifted: the label removed and the comment.
pub const UNQUARANTINE: u64 = 1 + COMMENT;

/// A claim or the merge turn in the tracker: the claims' comments read, one written, read
/// back, and the issue assigned to the runner's account.
pub const CLAIM: u64 = 4;

/// A claim's lease renewed, or the merge turn released: its comment edited.
pub const CLAIM_NOTE: u64 = 1;
