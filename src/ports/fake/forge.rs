//! A forge as data: PRs by branch, CI scripted; a merge lands on origin's main of the world.

use super::world::World;
use crate::call_failure::CallFailureKind;
use crate::ports::forge::{CiState, Pr, PrState, QueueState, ReviewState};
use crate::ports::forge::{ForgeError, ForgePort};
use crate::ports::git::CallEnd;

/// The fake forge port. It plays the local forge (origin is the forge), so merges race on
/// origin's main.
#[derive(Debug, Clone)]
pub struct FakeForge {
    world: World,
}

impl FakeForge {
    /// The forge of `world`.
    pub fn new(world: World) -> FakeForge {
        FakeForge { world }
    }

    /// A scripted network failure, if one is due.
    fn network(&self, command: &str) -> Result<(), ForgeError> {
        if !super::world::due(
            &mut self
                .world
                .lock_for_blocking_call()
                .script
                .forge_network_failures,
        ) {
            return Ok(());
        }
        Err(ForgeError::Command {
            command: command.to_string(),
            ended: CallEnd::Exit(1),
            stderr: super::world::NETWORK_DOWN.to_string(),
            hint: "a fake network failure",
            kind: CallFailureKind::Network,
        })
    }
}

impl ForgePort for FakeForge {
    fn pr_for_branch(&self, branch: &str) -> Result<Option<Pr>, ForgeError> {
        self.network("gh pr list")?;
        Ok(self.world.lock_for_blocking_call().prs.get(branch).cloned())
    }
    fn ci_state(&self, _branch: &str) -> Result<CiState, ForgeError> {
        self.network("gh pr checks")?;
        Ok(self
            .world
            .lock_for_blocking_call()
            .script
            .ci
            .unwrap_or(CiState::Passed))
    }
    fn ci_state_of(&self, branch: &str, _commit: &str) -> Result<CiState, ForgeError> {
        self.ci_state(branch)
    }
    fn failing_checks_of(&self, branch: &str, _commit: &str) -> Result<String, ForgeError> {
        self.failing_checks(branch)
    }
    fn create_pr(&self, branch: &str, _title: &str, _body: &str) -> Result<Pr, ForgeError> {
        self.network("gh pr create")?;
        let mut w = self.world.lock_for_blocking_call();
        let pr = w.prs.entry(branch.to_string()).or_insert_with(|| Pr {
            number: 0,
            url: format!("fake://pulls/{branch}"),
            state: PrState::Open,
        });
        Ok(pr.clone())
    }
    fn merge_pr(&self, branch: &str, commit: &str, _message: &str) -> Result<(), ForgeError> {
        self.network("gh pr merge")?;
        let mut w = self.world.lock_for_blocking_call();
        let head = w
            .branches
            .get(branch)
            .filter(|b| b.on_origin)
            .map(|b| super::git::fake_commit(branch, b.pushed));
        if head.as_deref() != Some(commit) {
            return Err(ForgeError::Command {
                command: "gh pr merge --match-head-commit".to_string(),
                ended: CallEnd::Exit(1),
                stderr: format!("head branch {branch} was modified: {commit} is not its head"),
                hint: "a fake forge failure",
                kind: CallFailureKind::Other,
            });
        }
        if super::world::due(&mut w.script.lost_races) {
            // Another merger's commit lands first; this push is refused.
            w.origin_main += 1;
            let closing = w.script.close_on_lost_race.take();
            if let Some(issue) = closing.and_then(|n| w.issues.get_mut(&n)) {
                issue.state_open = false;
            }
            return Err(super::git::git_failed(
                "git push origin main",
                "! [rejected] main -> main (fetch first)",
                CallFailureKind::LostRace,
            ));
        }
        let Some(issue) = crate::ports::git::leading_issue(branch) else {
            return Err(ForgeError::Parse {
                command: "gh pr merge".to_string(),
                detail: format!("{branch} is no issue branch"),
            });
        };
        match w.prs.get_mut(branch) {
            Some(pr) => pr.state = PrState::Merged,
            None => {
                return Err(ForgeError::Command {
                    command: "gh pr merge".to_string(),
                    ended: CallEnd::Exit(1),
                    stderr: format!("no pull request found for branch {branch}"),
                    hint: "a fake forge failure",
                    kind: CallFailureKind::NotFound,
                })
            }
        }
        if let Some(b) = w.branches.get_mut(branch) {
            b.merged = true;
        }
        w.origin_main += 1;
        w.merges.push(issue);
        Ok(())
    }
    fn failing_checks(&self, branch: &str) -> Result<String, ForgeError> {
        Ok(format!("test (fake): failing on {branch}"))
    }
    fn review_state(&self, branch: &str, since: Option<&str>) -> Result<ReviewState, ForgeError> {
        self.network("gh pr view --json reviewDecision,reviews,comments")?;
        let w = self.world.lock_for_blocking_call();
        let all = w.reviews.get(branch).cloned().unwrap_or_default();
        Ok(ReviewState::of(all, since))
    }
    fn require_checks(&self) -> bool {
        false
    }
    fn is_local(&self) -> bool {
        true
    }
    fn queue_state(&self, branch: &str) -> Result<QueueState, ForgeError> {
        self.network("gh pr view --json mergeQueueEntry")?;
        let mut w = self.world.lock_for_blocking_call();
        match w.queued.get(branch).copied() {
            None => Err(ForgeError::Parse {
                command: "gh pr view --json mergeQueueEntry".to_string(),
                detail: format!("{branch} is in no merge queue"),
            }),
            Some(0) => {
                w.queued.remove(branch);
                let issue = crate::ports::git::leading_issue(branch).unwrap_or_default();
                w.merge(issue, branch);
                Ok(QueueState::Merged)
            }
            Some(looks) => {
                w.queued.insert(branch.to_string(), looks - 1);
                Ok(QueueState::Queued)
            }
        }
    }
}
