//! The looks at origin's copy of an issue's branch before the runner acts on it (one fetch):
//! where it stands against the commit expected, a person's move, the runner's own push cut
//! off; and monitorCI's look at CI of its head.

use super::{short, Failed, IssueFacts};
use crate::forge::CiState;
use crate::ports::{ForgePort, GitPort};

/// Where origin's branch stands against the commit a step expects, read with one fetch before
/// a look at CI or the merge: a person's move is seen before the runner acts on the branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// Origin's head is the commit expected (with none expected: the one the runner pushed,
    /// the local head).
    At(String),
    /// A person moved the branch: `head` holds `ours` (commits on top) or not (rewritten, or
    /// pushed onto while `ours` was not yet pushed).
    Moved {
        /// The commit expected.
        ours: String,
        /// Origin's head now.
        head: String,
        /// Whether `head` holds `ours`.
        on_top: bool,
        /// Whether `head` holds the last commit this clone pushed (a person pushed onto the
        /// branch while `ours` waited to be pushed, rather than rewriting it).
        onto_our_push: bool,
    },
    /// A person merged it: the commit expected is in origin's main.
    Merged,
    /// A person closed the PR or deleted the branch (what they did).
    Gone(&'static str),
}

/// One look at the branch: [`Head`], and origin's main as the same fetch saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Look {
    /// Where the branch stands.
    pub head: Head,
    /// Origin's main.
    pub main: Option<String>,
}

/// Looks at origin's copy of the issue's branch (one fetch) against `expected`, the commit
/// the machine carries (none: the branch's local head, which the runner pushed).
pub fn look(
    git: &dyn GitPort,
    forge: &dyn ForgePort,
    issue: &IssueFacts,
    expected: Option<&str>,
) -> Result<Look, Failed> {
    match seen_on_origin(git, forge, issue, expected)? {
        Seen::Look(look) => Ok(look),
        Seen::Unpushed(what) => Err(Failed::other(what)),
    }
}

/// What one look at origin's branch found: a [`Look`], or the runner's own push cut off.
enum Seen {
    Look(Look),
    /// The local branch is ahead of origin's, which it contains, no commit was expected, and
    /// this clone never pushed its head: the runner's push after its agent's work never
    /// happened (a kill between the two).
    Unpushed(String),
}

fn seen_on_origin(
    git: &dyn GitPort,
    forge: &dyn ForgePort,
    issue: &IssueFacts,
    expected: Option<&str>,
) -> Result<Seen, Failed> {
    let branch = issue.branch()?;
    let seen = git.branch_on_origin(branch)?;
    let main = seen.main.clone();
    let looked = |head| {
        Ok(Seen::Look(Look {
            head,
            main: main.clone(),
        }))
    };
    let ours = match (expected, seen.local.as_deref(), seen.head.as_deref()) {
        (Some(c), _, _) => c.to_string(),
        (None, Some(local), _) => local.to_string(),
        // No local branch (a run on another clone's branch): origin's head is the one.
        (None, None, Some(head)) => head.to_string(),
        (None, None, None) => {
            return Err(Failed::other(format!(
                "the branch {branch} exists neither here nor on origin"
            )))
        }
    };
    if let Some(main) = seen.main.as_deref() {
        if git.contains_commit(main, &ours)? {
            return looked(Head::Merged);
        }
    }
    let Some(head) = seen.head else {
        return looked(Head::Gone("deleted the branch on origin"));
    };
    if pr_closed(forge, branch)? {
        return looked(Head::Gone("closed the pull request"));
    }
    if head == ours {
        return looked(Head::At(head));
    }
    if expected.is_none() && git.contains_commit(&ours, &head)? {
        // Origin lacks commits the local branch has: the runner's own push is missing, or a
        // person set origin back past commits the runner pushed (never pushed again).
        let what = format!(
            "origin's {branch} ({}) lacks commits of the local branch ({}): push the branch (commitPush)",
            short(&head),
            short(&ours)
        );
        if git.pushed_from_here(branch, &ours)? {
            return Err(Failed::other(what));
        }
        return Ok(Seen::Unpushed(what));
    }
    let on_top = git.contains_commit(&head, &ours)?;
    looked(Head::Moved {
        ours,
        head,
        on_top,
        onto_our_push: false,
    })
}

/// What one look at CI found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CiLook {
    /// CI has not settled on this commit.
    Pending(String),
    /// CI lets this commit merge.
    Passed(String),
    /// CI's verdict on this commit is failure (the forge's `CiState::Failed`): the issue's
    /// code to repair. `checks` names the failing checks, their links and log ends.
    Failed {
        /// The commit CI failed.
        commit: String,
        /// What failed, for the repair and the diagnostic.
        checks: String,
    },
    /// A person moved, merged or withdrew the branch (never [`Head::At`]).
    Person(Head),
    /// The local branch holds the runner's own work that origin lacks (its push after an
    /// agent's repair was cut off): pushed next, as the repair's own push, then looked at.
    Unpushed,
}

/// monitorCI, one look: origin's branch looked at first, then CI of its head when it is the
/// commit expected; failing checks are the look's answer ([`CiLook::Failed`]), not an error.
pub fn ci_settled(
    git: &dyn GitPort,
    forge: &dyn ForgePort,
    issue: &IssueFacts,
    expected: Option<&str>,
) -> Result<CiLook, Failed> {
    let branch = issue.branch()?;
    let commit = match seen_on_origin(git, forge, issue, expected)? {
        Seen::Look(Look {
            head: Head::At(commit),
            ..
        }) => commit,
        Seen::Look(look) => return Ok(CiLook::Person(look.head)),
        Seen::Unpushed(_) => return Ok(CiLook::Unpushed),
    };
    let state = forge.ci_state_of(branch, &commit)?;
    match state {
        CiState::Pending => Ok(CiLook::Pending(commit)),
        CiState::Failed => {
            let details = forge.failing_checks_of(branch, &commit).unwrap_or_default();
            Ok(CiLook::Failed {
                commit,
                checks: format!("CI checks failing on {branch}\n{details}"),
            })
        }
        CiState::Passed | CiState::NoneConfigured if forge.ci_ok(state) => {
            Ok(CiLook::Passed(commit))
        }
        _ => Err(Failed::other(format!(
            "no CI checks reported for {branch} and requireChecks is set"
        ))),
    }
}

/// Whether the forge says a person closed the branch's pull request (never on the local
/// forge, which has none).
pub(super) fn pr_closed(forge: &dyn ForgePort, branch: &str) -> Result<bool, Failed> {
    Ok(!forge.is_local()
        && forge
            .pr_for_branch(branch)?
            .is_some_and(|pr| pr.state == crate::forge::PrState::Closed))
}
