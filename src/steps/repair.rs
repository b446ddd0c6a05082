//! The runner's half of an agent's repair on the feature branch (a review round, a fix of
//! failing CI): what the agent changed in the work tree committed by the runner and pushed,
//! never over a person's push. The agent writes no git (in a sandbox its git directory is
//! read-only).

use super::builtin::{
    gate_before_push, on_branch, persons_move_since, short, Failed, Head, IssueFacts,
};
use crate::ports::{ForgePort, GitPort};

/// After an `addressReview` round: what the agent left is committed on the feature branch
/// (nothing to commit is no failure: the agent may have disagreed) and the branch is pushed,
/// a new head for CI (`push_agent_work`: leased, never over a person's push).
pub fn push_review_round(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    issue: &IssueFacts,
) -> Result<Round, Failed> {
    let message = format!("fix: address review feedback (#{})", issue.number);
    push_agent_work(repo, forge, issue, &message, "round")
}

/// After the agent's repair of failing CI (a builtin monitorCI's repair attempt): what it
/// changed in the work tree is committed by the runner and the branch pushed, the new head
/// CI is looked at next (`push_agent_work`: leased, never over a person's push).
pub fn push_ci_repair(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    issue: &IssueFacts,
) -> Result<Round, Failed> {
    let message = format!("fix: make CI pass (#{}, monitorCI)", issue.number);
    push_agent_work(repo, forge, issue, &message, "CI repair")
}

/// What an agent left after a repair (`work` names it in the words returned) committed on
/// the feature branch with `message` (nothing to commit is no failure) and the branch pushed.
/// The push is leased on origin's head as one look found it after the agent, and only when
/// that head is this clone's own work (the local branch holds it, or it was pushed from
/// here): a person's push during the agent's work (a rewrite, or commits the work lacks) is
/// reported as their move, never pushed over, and never counted as the repair's failure.
fn push_agent_work(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    issue: &IssueFacts,
    message: &str,
    work: &str,
) -> Result<Round, Failed> {
    let branch = issue.branch()?;
    on_branch(repo, branch)?;
    let committed = repo.auto_commit(message)?;
    let before = repo.branch_on_origin(branch)?;
    if let Some(head) = persons_move_since(repo, forge, branch, "", &before)? {
        return Ok(Round::Person(head));
    }
    gate_before_push(repo, issue)?;
    if let (false, Some(local)) = (committed, &before.local) {
        if before.head.as_ref() == Some(local) {
            // Nothing new to push: saying "pushed" would tell of work not done.
            return Ok(Round::Pushed(format!(
                "the {work} changed nothing: {branch} stays at {} on origin",
                short(local)
            )));
        }
    }
    let lease = before.head.as_deref();
    if let Err(e) = repo.push_branch(branch, lease) {
        let after = repo.branch_on_origin(branch)?;
        if after.head != before.head {
            if let Some(head) = persons_move_since(repo, forge, branch, "", &after)? {
                return Ok(Round::Person(head));
            }
        }
        return Err(e.into());
    }
    Ok(Round::Pushed(if committed {
        format!("committed the {work}'s changes and pushed {branch}")
    } else {
        format!("pushed {branch}")
    }))
}

/// What the runner's half of a review round or a CI repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Round {
    /// The round's work is on origin: what was done, in words.
    Pushed(String),
    /// A person moved the branch during the round; nothing was pushed over it.
    Person(Head),
}
