//! The base branch's merge queue (GitHub) or merge train (GitLab) from the merge's side:
//! the look at a PR waiting in it, and the look after an agent's merge that queued the PR
//! rather than merging it. Each is one call and one answer; the waits between looks are the
//! machine's (`MergeQueued`, on monitorCI's CI schedule).

use super::builtin_step::{persons_move, usage_since, Looked};
use super::merge::look_raw;
use super::network;
use super::step_run::StepRun;
use crate::call_failure::CallFailureKind;
use crate::machine::Event;
use crate::narration as say;
use crate::ports::forge::QueueState;
use crate::step::Step;
use crate::steps::builtin::{Failed, Head, Look};

impl StepRun<'_> {
    /// The merge's run again while its PR waits in the base branch's merge queue: one look at
    /// the queue (no fetch, no merge). Merged by the queue: the merge's success, through the
    /// same post-step check; still queued: `MergeQueued`; taken out because the queue's CI
    /// failed on main with the PR: monitorCI's failure (`CiFailedTogether`), in words that say
    /// so; taken out or closed by a person: a person's move (`IssueWithdrawn`).
    pub(super) async fn look_at_queue(&mut self, issue: u32) -> Event {
        let step = Step::Merge;
        let started = self.shell.clock.instant();
        let branch = self.cycle.issue.branch.clone();
        let looked = self
            .patiently(&say::looking_at_merge_queue(issue), move |w| {
                let found = w.git.feature_branch(issue).ok().flatten();
                match found.or(branch) {
                    Some(branch) => w.forge.queue_state(&branch).map_err(Failed::from),
                    None => Err(Failed::other(say::no_branch_for_queue(issue))),
                }
            })
            .await;
        let usage = usage_since(&*self.shell.clock, started);
        let result = match looked {
            network::Patient::Done(Ok(QueueState::Merged)) => {
                Ok(Looked::Done(say::merged_by_queue(issue, &self.run.main)))
            }
            network::Patient::Done(Ok(QueueState::Queued)) => Err(Failed {
                kind: CallFailureKind::Queued,
                ..Failed::other(say::still_in_queue(issue))
            }),
            network::Patient::Done(Ok(QueueState::ChecksFailed(why))) => Err(Failed {
                kind: CallFailureKind::CiFailedTogether,
                ..Failed::other(say::queue_ci_failed(issue, &self.run.main, &why))
            }),
            network::Patient::Done(Ok(QueueState::Removed(what))) => {
                // The forge takes a PR out when its head changes: a person's push is the
                // branch moving, told by one look at the branch against the verified commit.
                let verified = self.core.runner().verified;
                let (calls, cycle, voice) = self.calls();
                let head = match look_raw(calls, cycle, voice, verified).await {
                    network::Patient::Done(Ok(Look {
                        head: moved @ Head::Moved { .. },
                        ..
                    })) => moved,
                    _ => Head::Gone(what),
                };
                return persons_move(&mut self.voice, &self.cycle.issue, &self.run.main, head);
            }
            network::Patient::Done(Err(failed)) => Err(failed),
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => return ev,
        };
        self.builtin_outcome(step, issue, result, usage).await
    }

    /// Whether an agent's merge that did not land put the PR in the base branch's merge queue
    /// instead (as `gh pr merge` does where the base branch requires the queue): one look at
    /// the queue; an unanswered look is a no, and the attempt's failure stands. Queued, it is
    /// said, and the queue is waited for as after the builtin merge: what the queue merges is
    /// taken only with the commit CI passed on main (the merge's post-check).
    pub(super) async fn agent_queued(&mut self, issue: u32) -> bool {
        let branch = self.cycle.issue.branch.clone();
        let looked = self
            .shell
            .io
            .call(move |w| {
                let found = w.git.feature_branch(issue).ok().flatten();
                found.or(branch).map(|b| w.forge.queue_state(&b))
            })
            .await;
        if !matches!(looked, Some(Ok(QueueState::Queued))) {
            return false;
        }
        let words = say::agent_queued(issue, &self.run.main);
        self.voice.log(&say::of_step(Step::Merge.key(), &words));
        self.voice.say(words);
        true
    }
}
