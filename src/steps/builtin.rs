//! Zero-token steps: the lifecycle steps that need no model, done by the runner itself with
//! git and the forge (docs/lifecycle.md, "Builtin steps"). Each returns what it did, or what
//! went wrong as text that is classified like an agent's failure; preconditions, post-checks
//! and counters are the same as for an agent-run step. monitorCI's polling lives in the
//! driver (it waits); this module holds its one look at the checks.

use crate::call_failure::CallFailureKind;
use crate::forge::CiState;
use crate::ports::{ForgePort, GitPort};
use std::path::Path;

mod look;
use look::pr_closed;
pub use look::{ci_settled, look, CiLook, Head, Look};

pub use super::failed::Failed;

/// What a builtin step needs to know of the issue.
#[derive(Debug, Clone)]
pub struct IssueFacts<'a> {
    /// The issue's number.
    pub number: u32,
    /// The issue's title.
    pub title: &'a str,
    /// The feature branch (`<number>-<slug>`), once startIssue made it.
    pub branch: Option<&'a str>,
    /// The spec directory name recorded for the issue.
    pub feature: Option<&'a str>,
    /// How the tracker names the issue (`#12`, `ENG-12`) in titles and descriptions.
    pub refs: &'a crate::config::IssueRefs,
    /// The test-weakening check a push runs first; `None`: none (`tests.weakening: "allow"`,
    /// or approved by a person in this cycle).
    pub gate: Option<&'a super::weakening::Gate>,
}

impl IssueFacts<'_> {
    pub(super) fn branch(&self) -> Result<&str, Failed> {
        self.branch.ok_or_else(|| {
            Failed::other(format!(
                "no feature branch is known for issue #{}",
                self.number
            ))
        })
    }
}

/// startCycle: main checked out and fast-forwarded to origin; where another worktree has main
/// checked out (the project is a linked worktree), a detached HEAD at origin's main instead,
/// since main must never be needed here. A tree with changes that are not the runner's is
/// refused: they are someone's work, and checking out over them could lose it.
pub fn start_cycle(repo: &dyn GitPort) -> Result<String, Failed> {
    let foreign = repo.foreign_changes()?;
    if !foreign.is_empty() {
        return Err(Failed::other(format!(
            "the working tree has changes that are not the runner's; commit or stash them:\n{}",
            foreign.join("\n")
        )));
    }
    repo.fetch()?;
    repo.checkout_main()?;
    Ok(format!("on {} as origin has it", repo.main()))
}

/// startIssue: the issue's feature branch (`<N>-<slug of the title>`, `ENG-<N>-…` on Linear)
/// created from main as startCycle left it and checked out; a branch of the issue that is
/// already there (a restarted cycle, a branch adopted from origin) is checked out as it is.
/// A branch of that name only origin has (pushed before this cycle: a person's start, or a
/// runner's on another clone whose journal this one does not have) is the starting point:
/// made from origin's and said, so that its commits are built on, never pushed over or taken
/// for a person's rewrite later. The agent makes no branch: its git directory is read-only in
/// a sandbox.
pub fn start_issue(repo: &dyn GitPort, issue: &IssueFacts) -> Result<String, Failed> {
    let branch = match issue.branch {
        Some(b) => b.to_string(),
        None => format!(
            "{}{}",
            issue.refs.branch_prefix(issue.number),
            crate::tracker::slug(issue.title)
        ),
    };
    Ok(match repo.start_branch(&branch)? {
        Some(head) => format!(
            "on {branch}: origin already had the branch {branch} at {}, pushed before this cycle (a person's start, or a runner's on another clone); its commits are the starting point and are kept",
            short(&head)
        ),
        None => format!("on {branch}, started from {}", repo.main()),
    })
}

/// The feature branch is checked out: what is committed lands on it, not elsewhere.
pub(super) fn on_branch(repo: &dyn GitPort, branch: &str) -> Result<(), Failed> {
    let current = repo.current_branch()?;
    if current.as_deref() != Some(branch) {
        return Err(Failed::other(format!(
            "HEAD is on {}, not on the feature branch {branch}",
            current.as_deref().unwrap_or("a detached HEAD")
        )));
    }
    Ok(())
}

/// commitPush: what the agents left is committed on the feature branch and the branch is
/// pushed, leased on origin's head as one look (one fetch) found it. That head is pushed over
/// only when it is this clone's own work (the local branch holds it, or had it: the runner's
/// or its agent's earlier push); a head with work only origin has (a teammate's commit on the
/// branch, a force-push) is reported as a person's move and nothing is pushed over it.
pub fn commit_push(repo: &dyn GitPort, issue: &IssueFacts) -> Result<Result<String, Head>, Failed> {
    let branch = issue.branch()?;
    on_branch(repo, branch)?;
    let committed = repo.auto_commit(&format!(
        "feat: {} (#{})",
        one_line(issue.title),
        issue.number
    ))?;
    let before = repo.branch_on_origin(branch)?;
    if let Some(head) = work_only_origin_has(repo, branch, &before)? {
        return Ok(Err(head));
    }
    let allowed = gate_before_push(repo, issue)?;
    let lease = before.head.as_deref();
    if let Err(e) = repo.push_branch(branch, lease) {
        let after = repo.branch_on_origin(branch)?;
        if after.head != before.head {
            if let Some(head) = work_only_origin_has(repo, branch, &after)? {
                return Ok(Err(head));
            }
        }
        return Err(e.into());
    }
    Ok(Ok(if committed {
        format!("committed the remaining changes and pushed {branch}{allowed}")
    } else {
        format!("pushed {branch}{allowed}")
    }))
}

/// The test-weakening check of the branch before its push (`steps::weakening`), when the
/// issue's facts carry a gate: `Err` (`TESTS_WEAKENED`) for a weakening the spec does not
/// call for; else the words for the removals it does (empty when none, or when the check let
/// this head through before).
pub fn gate_before_push(repo: &dyn GitPort, issue: &IssueFacts) -> Result<String, Failed> {
    let Some(gate) = issue.gate else {
        return Ok(String::new());
    };
    if gate.approved {
        return Ok(String::new());
    }
    let (branch, of) = (issue.branch()?, (issue.number, issue.feature));
    let Some(found) = super::weakening::check_once(repo, branch, of, gate)? else {
        return Ok(String::new());
    };
    if !found.weakened.is_empty() {
        return Err(Failed::weakened(found.weakened));
    }
    Ok(if found.allowed.is_empty() {
        String::new()
    } else {
        format!(
            "; the removals the spec lists:\n{}",
            crate::weakening::describe(&found.allowed)
        )
    })
}

/// Origin's head of `branch`, as `seen`, when it holds work that did not leave from this
/// clone: the local branch does not hold it and no push from here carried it. A push over it
/// would lose that work.
fn work_only_origin_has(
    repo: &dyn GitPort,
    branch: &str,
    seen: &crate::git::repo::BranchOnOrigin,
) -> Result<Option<Head>, Failed> {
    let (Some(head), Some(local)) = (seen.head.as_deref(), seen.local.as_deref()) else {
        return Ok(None);
    };
    if own_work(repo, branch, local, head)? {
        return Ok(None);
    }
    Ok(Some(Head::Moved {
        ours: local.to_string(),
        head: head.to_string(),
        on_top: false,
        onto_our_push: onto_our_push(repo, branch, head)?,
    }))
}

/// Whether origin's `head` of `branch` is this clone's own work: the `local` branch holds it,
/// or a push from here carried it (the agent may rewrite the branch's pushed history). A head
/// the local branch only held after a fetch (reset onto a teammate's push, then away) is not.
fn own_work(repo: &dyn GitPort, branch: &str, local: &str, head: &str) -> Result<bool, Failed> {
    Ok(repo.contains_commit(local, head)? || repo.pushed_from_here(branch, head)?)
}

/// Whether origin's `head` of `branch` holds the last commit this clone pushed there: a
/// person pushed commits onto the branch, rather than rewriting it.
fn onto_our_push(repo: &dyn GitPort, branch: &str, head: &str) -> Result<bool, Failed> {
    Ok(match repo.last_pushed(branch)? {
        Some(pushed) => repo.contains_commit(head, &pushed)?,
        None => false,
    })
}

/// createPR: title from the issue, body from the spec's requirements, `Closes #N` so that
/// the forge closes the issue on merge.
pub fn create_pr(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    issue: &IssueFacts,
) -> Result<String, Failed> {
    let branch = issue.branch()?;
    let title = format!(
        "{} ({})",
        one_line(issue.title),
        issue.refs.issue(issue.number)
    );
    let spec = repo.spec_dir(issue.number, issue.feature);
    let mut body = pr_body(issue.refs, issue.number, spec.as_deref());
    if let Some(gate) = issue.gate {
        let found = super::weakening::findings(repo, branch, (issue.number, issue.feature), gate)?;
        body.push_str(&super::weakening::pr_section(&found, gate.approved));
    }
    let pr = forge.create_pr(branch, &title, &body)?;
    Ok(format!("pull request {} is open for {branch}", pr.url))
}

/// The PR body: the closing keyword first (in the tracker's form), then the requirements as
/// written for the issue.
pub fn pr_body(refs: &crate::config::IssueRefs, issue: u32, spec_dir: Option<&Path>) -> String {
    let mut body = format!("{}\n", refs.closes(issue));
    let requirements = spec_dir
        .map(|d| d.join("requirements.md"))
        .and_then(|p| crate::safe_fs::read_no_follow(&p).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    if let Some(text) = requirements {
        body.push('\n');
        for (kept, line) in text.lines().enumerate() {
            if kept == MAX_BODY_LINES {
                body.push_str("\n(requirements truncated; see the spec directory)\n");
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
    }
    body.push_str("\nOpened by sdlc-runner.\n");
    body
}

const MAX_BODY_LINES: usize = 80;

/// merge: exactly `commit` (origin's head of the branch, as the look before found it) merged
/// with a merge commit and the branch deleted; refused when the branch moved since. Without
/// a verdict of this cycle (`verified` false) CI must let `commit` merge first; on the local
/// forge its merge asks CI about the very tree main will hold (the merge train's verdict, when
/// a fleet's train tested it), never about the branch alone. Closing the issue is the
/// runner's `RecordMerged` effect, as for an agent-run merge.
pub fn merge(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    issue: &IssueFacts,
    commit: &str,
    verified: bool,
) -> Result<String, Failed> {
    let branch = issue.branch()?;
    if !verified && !forge.is_local() && !forge.ci_ok(forge.ci_state_of(branch, commit)?) {
        return Err(Failed::other(format!(
            "CI has not passed on {} ({branch}): only a commit CI passed is merged",
            short(commit)
        )));
    }
    main_unmoved_since_ci(repo, forge, branch, commit)?;
    let message = merge_message(issue.number, issue.title);
    forge.merge_pr(branch, commit, &message)?;
    Ok(format!(
        "merged {branch} at {} into {}",
        short(commit),
        repo.main()
    ))
}

/// The message of the runner's merge of issue `number` (`Merge issue #N: title`): the merge
/// train builds its trees with the same, so that a landing builds the very commit it tested.
pub fn merge_message(number: u32, title: &str) -> String {
    format!(
        "{}{}: {}",
        crate::git::repo::MERGE_SUBJECT,
        number,
        one_line(title)
    )
}

/// On a remote forge, main holds after the merge a tree CI passed only when origin's main (as
/// the look before the merge fetched it) is in `commit`: the merge's tree is then `commit`'s.
/// When main moved since, with work the branch lacks, the answer is `Behind`: the machine has
/// the branch brought up to date (`UpdateBranch`), CI runs on that new head, and the merge
/// names it. A project without CI has no verdict to keep and merges as it is. (The local forge
/// builds the commit main will hold and runs CI on it itself.)
fn main_unmoved_since_ci(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    branch: &str,
    commit: &str,
) -> Result<(), Failed> {
    if forge.is_local() {
        return Ok(());
    }
    let Some(main) = repo.origin_main()? else {
        return Ok(());
    };
    if repo.contains_commit(commit, &main)?
        || forge.ci_state_of(branch, commit)? == CiState::NoneConfigured
    {
        return Ok(());
    }
    Err(Failed {
        what: format!(
            "{} moved to {} since CI passed {branch} at {}: CI has not seen the two together, so the branch is brought up to date with {} and CI runs on its new head before the merge",
            repo.main(),
            short(&main),
            short(commit),
            repo.main()
        ),
        kind: CallFailureKind::Behind,
        paths: Vec::new(),
        weakened: Vec::new(),
    })
}

/// `UpdateBranch` after the merge's conflict repair: the branch brought up to date with
/// origin's main (the agent's repair normally did it; what it left half done is aborted and
/// kept on a rescue ref, markers are refused, a conflict is the merge's), checked for weakened
/// tests (`gate_before_push`, when `issue` carries the gate), pushed, as the agent
/// may not have, and origin's head of it then, which must be the local branch's: the commit
/// CI looks at before any merge. `verified` names the commit CI passed before, in the words.
pub fn update_branch(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    issue: &IssueFacts,
    verified: &str,
) -> Result<Update, Failed> {
    let branch = issue.branch()?;
    let before = repo.branch_on_origin(branch)?;
    if let Some(head) = persons_move_since(repo, forge, branch, verified, &before)? {
        return Ok(Update::Person(head));
    }
    // Leased on what the look found: a person's push after it (the update's own fetch
    // would otherwise make it the lease) refuses the push, and is then what is reported.
    let lease = before.head.as_deref();
    let updated = repo.bring_up_to_date(branch, lease);
    // The agent's conflict repair is a repair round like any other: what it changed is
    // checked for weakened tests before it reaches origin (main's own work, now in the
    // branch's base, is not the branch's).
    if updated.is_ok() {
        gate_before_push(repo, issue)?;
    }
    if let Err(e) = updated.and_then(|_| repo.push_branch(branch, lease)) {
        let after = repo.branch_on_origin(branch)?;
        if after.head != before.head {
            if let Some(head) = persons_move_since(repo, forge, branch, verified, &after)? {
                return Ok(Update::Person(head));
            }
        }
        return Err(e.into());
    }
    let seen = repo.branch_on_origin(branch)?;
    if let (Some(local), Some(head)) = (seen.local.as_deref(), seen.head.as_deref()) {
        if local == head {
            return Ok(Update::Pushed(head.to_string()));
        }
    }
    // A person moved the branch right after the runner's push (the runner, not the agent,
    // pushes the concluded repair): theirs, not a push that did not take.
    if let Some(head) = persons_move_since(repo, forge, branch, verified, &seen)? {
        return Ok(Update::Person(head));
    }
    let (local, head) = (seen.local.as_deref(), seen.head.as_deref());
    Err(Failed::other(format!(
            "after the conflict's repair origin's {branch} is at {} and the local branch at {} (CI passed {}): the push did not take",
            head.map(short).unwrap_or("nothing"),
            local.map(short).unwrap_or("nothing"),
            if verified.is_empty() { "no commit yet" } else { short(verified) }
        )))
}

/// What the update after a conflict's repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// The branch, up to date with main, is on origin at this commit.
    Pushed(String),
    /// A person moved the branch during the repair; nothing was pushed over it.
    Person(Head),
}

/// A person's move of `branch` while the agent worked on it (a conflict's repair, a review
/// round), as `seen` on origin: merged into main (its head or `verified`), deleted or its
/// pull request closed, or a head that is neither `verified` (the commit whose merge
/// conflicted) nor one the local branch holds nor one pushed from this clone (the agent pushed
/// its work itself, or rewrote the branch's own history). `None`: only the runner and its agent moved it.
pub(super) fn persons_move_since(
    repo: &dyn GitPort,
    forge: &dyn ForgePort,
    branch: &str,
    verified: &str,
    seen: &crate::git::repo::BranchOnOrigin,
) -> Result<Option<Head>, Failed> {
    let Some(local) = seen.local.as_deref() else {
        return Err(Failed::other(format!(
            "the branch {branch} is gone from this clone after the agent worked on it"
        )));
    };
    // Merged by a person: main holds the commit CI passed, or origin's head of the branch
    // (a round has no verified commit: the one reviewed is that head).
    if let Some(main) = seen.main.as_deref() {
        for merged in [Some(verified), seen.head.as_deref()].into_iter().flatten() {
            if !merged.is_empty() && repo.contains_commit(main, merged)? {
                return Ok(Some(Head::Merged));
            }
        }
    }
    let Some(head) = seen.head.as_deref() else {
        return Ok(Some(Head::Gone("deleted the branch on origin")));
    };
    if pr_closed(forge, branch)? {
        return Ok(Some(Head::Gone("closed the pull request")));
    }
    if head == verified || own_work(repo, branch, local, head)? {
        return Ok(None);
    }
    Ok(Some(Head::Moved {
        ours: local.to_string(),
        head: head.to_string(),
        on_top: repo.contains_commit(head, local)?,
        onto_our_push: onto_our_push(repo, branch, head)?,
    }))
}

/// A commit id as a person reads it: its first 12 hex digits.
pub fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn one_line(text: &str) -> String {
    crate::sanitize::subject(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pr_body_closes_the_issue_and_carries_the_requirements() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("requirements.md"), "# Req\n\n- It works.\n")
            .expect("write");
        let body = pr_body(&Default::default(), 7, Some(dir.path()));
        assert!(body.starts_with("Closes #7\n"), "{body}");
        assert!(body.contains("- It works."), "{body}");
        let bare = pr_body(&Default::default(), 7, None);
        assert!(bare.starts_with("Closes #7\n") && !bare.contains("Req"));
    }

    #[test]
    fn a_long_requirements_file_is_cut() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text: String = (0..500).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("requirements.md"), text).expect("write");
        let body = pr_body(&Default::default(), 1, Some(dir.path()));
        assert!(body.contains("line 79\n") && !body.contains("line 80\n"));
        assert!(body.contains("truncated"));
    }
}
