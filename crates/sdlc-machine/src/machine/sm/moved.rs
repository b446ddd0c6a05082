//! A person's move seen by the look before monitorCI's look at CI or the merge (one fetch):
//! the branch moved on origin (commits on top: CI again on the new head; rewritten: the
//! session stops, nothing merged, no issue blamed), merged or withdrawn by hand. And the
//! commit a merge request carries: only the one CI passed in this cycle.

use super::state::state_of;
use super::{Fx, Runner, State};
use crate::failure::{Disposition, FailureClass, Signature};
use crate::machine::types::*;
use crate::step::Step;
use statig::prelude::*;

impl Runner {
    /// The commit a run of `step` carries: for merge, the one CI passed in this cycle.
    pub(super) fn merge_commit(&self, step: Step) -> Option<Commit> {
        if step == Step::Merge {
            self.verified
        } else {
            None
        }
    }

    /// Whether `step`'s outstanding request looked at the branch on origin first: monitorCI's
    /// looks at CI, the merge's checks and run, and the builtin commitPush's push. Only their
    /// answers can tell of a person's move.
    pub(super) fn looks_at_the_branch(&self, step: Step) -> bool {
        match step {
            Step::MonitorCi => self.dispatched,
            Step::CommitPush => self.dispatched && self.limits.builtin_commit_push,
            Step::Merge => matches!(
                self.outstanding,
                Some((
                    _,
                    Effect::CheckPreconditions { .. }
                        | Effect::RunStep { .. }
                        | Effect::UpdateBranch { .. }
                ))
            ),
            _ => false,
        }
    }

    /// A person's move ends the merge's hold on the turn: a merge run under way, or the
    /// checks run again with the turn held.
    pub(super) fn let_go_of_turn(&mut self, step: Step, fx: &mut Fx) {
        if step != Step::Merge {
            return;
        }
        if self.dispatched {
            self.release_merge_turn(fx);
        } else {
            self.give_turn_back(step, fx);
        }
        self.turn_held = false;
        self.merge_rerun = false;
        self.lost_race = None;
    }

    /// Origin's head of the branch is not `ours`. On top of it: the verdict on `ours` no
    /// longer says what would be merged, so CI looks again at `head` after a wait of
    /// monitorCI's CI schedule (from the merge too: back in monitorCI's attempt, its schedule
    /// from the start); more moves in a cycle than the schedule has waits, or a rewrite, stop
    /// the session naming both commits. No attempt is
    /// spent and no issue blamed either way: the move was a person's.
    pub(super) fn branch_moved(
        &mut self,
        step: Step,
        ours: Commit,
        head: Commit,
        on_top: bool,
        fx: &mut Fx,
    ) -> Outcome<State> {
        self.let_go_of_turn(step, fx);
        self.verified = None;
        if step == Step::Merge {
            // Back to CI from the merge: the new head's CI gets the schedule from its start.
            self.ci_waits = 0;
            self.ci_waited_secs = 0;
        }
        let polls = self.limits.ci_polls();
        let moves_left = (self.head_moves as usize) < polls.len();
        let waits_left = polls.get(self.ci_waits as usize).is_some();
        // Work only origin has at commitPush is never CI's to look at: the runner's push would
        // go over it.
        if !on_top || step == Step::CommitPush || !moves_left || !waits_left {
            self.dispatched = false;
            let issue = self.current_issue();
            return self.halt(
                HaltReason::BranchMoved {
                    issue,
                    ours,
                    head,
                    on_top,
                },
                fx,
            );
        }
        if step == Step::Merge && matches!(self.outstanding, Some((_, Effect::UpdateBranch { .. })))
        {
            // The person's head holds the agent's repair: once CI passes it, the merge is a
            // plain one again, as after the runner's own update.
            self.last_class[Step::Merge.index()] = None;
        }
        self.head_moves += 1;
        self.ci_commit = Some(head);
        self.dispatched = true;
        self.ci_pending(&Usage::default(), fx)
    }

    /// The agent repaired the merge's conflict: the runner's own half of the repair attempt
    /// follows as a request of its own (`UpdateBranch`), so that a network failure or a rate
    /// limit of the runner's call asks for that call again, never for the agent's repair.
    pub(super) fn update_branch(&mut self, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
        self.pending_usage = self.with_pending(usage);
        let update = Effect::UpdateBranch {
            issue: self.current_issue(),
            commit: self.verified,
        };
        self.request(state_of(Step::Merge), update, fx);
        Handled
    }

    /// The branch conflicts with main: a failed merge attempt like any (class MERGE_CONFLICT,
    /// the same files twice being the same failure), so its next attempt repairs those files
    /// while `max_repair_iterations` and the attempts allow, and past that the issue
    /// escalates naming them. The paths stay for the repair and the diagnostic.
    pub(super) fn merge_conflict(
        &mut self,
        paths: &[String],
        usage: &Usage,
        fx: &mut Fx,
    ) -> Outcome<State> {
        self.conflict_paths = paths.to_vec();
        let signature = Signature::of_conflict(paths);
        self.failed(
            Step::Merge,
            FailureClass::MergeConflict,
            signature,
            usage,
            None,
            fx,
        )
    }

    /// CI failed on the commit main would hold (the verified commit merged onto a main that
    /// moved since): monitorCI's failure, not the merge's. The turn is given back, the verdict
    /// on the branch no longer lets it merge, and monitorCI's attempt is counted like any CI
    /// failure's, so its repair (within `max_repair_iterations` and the attempts) or the
    /// escalation follows, and the loop back through the merge is bounded by monitorCI's
    /// attempts.
    pub(super) fn ci_failed_together(
        &mut self,
        class: FailureClass,
        signature: Signature,
        usage: &Usage,
        fx: &mut Fx,
    ) -> Outcome<State> {
        self.release_merge_turn(fx);
        self.verified = None;
        self.ci_commit = None;
        let usage = self.with_pending(usage);
        self.failed(Step::MonitorCi, class, signature, &usage, None, fx)
    }

    /// The agent fixed what failed CI and pushed: the runner's look at CI for the head it
    /// pushed is a request of its own (`LookAtCi`, the attempt's first look), so a network
    /// failure or rate limit of the look asks for the look again, never for the agent's fix.
    /// After a review round the round is answered: the next attempt of monitorCI is its own.
    /// When the fleet's train tests CI (`Limits::train_tests_ci`) there is no look: the
    /// repaired head goes back to the merge, and the train tests it as the tree main would
    /// hold.
    pub(super) fn ci_repaired(&mut self, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
        self.review_handout.clear();
        self.pending_usage = self.with_pending(usage);
        self.ci_commit = None;
        self.verified = None;
        if self.limits.train_tests_ci {
            // The train tests the repaired head as the tree main would hold.
            let usage = self.with_pending(&Usage::default());
            return self.ci_left_to_train(&usage, fx);
        }
        let look = Effect::LookAtCi {
            issue: self.current_issue(),
            look: self.ci_waits + 1,
            commit: None,
        };
        self.request(state_of(Step::MonitorCi), look, fx);
        Handled
    }

    /// Whether a failure of the agent's repair of the builtin commitPush leaves the verdict to
    /// the runner's commit and push: a failure by the code (the agent's own push refused by
    /// the same hook, say) does, and the hook's refusal, as in the attempt before, is then what
    /// the attempt fails by; a wait, a halt or an escalation does not.
    pub(super) fn push_decides_the_repair(&self, step: Step, class: FailureClass) -> bool {
        step == Step::CommitPush
            && self.limits.builtin_commit_push
            && class.disposition() == Disposition::Retry
            && matches!(
                self.outstanding,
                Some((_, Effect::RunStep { repair: true, .. }))
            )
    }

    /// The agent repaired what refused commitPush's push (a hook's words): the runner's own
    /// commit and push follow as a run of their own in the same attempt (`RunStep` without
    /// `repair`), so that a network failure or a rate limit of the push asks for the push
    /// again, never for the agent's repair. The repair's cost is counted with the attempt's
    /// outcome.
    pub(super) fn push_repaired(&mut self, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
        self.pending_usage = self.with_pending(usage);
        let step = Step::CommitPush;
        let push = Effect::RunStep {
            step,
            issue: self.current_issue(),
            attempt: self.attempts[step.index()] + 1,
            repair: false,
            commit: None,
            money_left_micros: self.money_left_micros(),
        };
        self.request(state_of(step), push, fx);
        Handled
    }

    /// The base branch's protection wants the branch up to date with main, which moved since CI
    /// passed it: the branch is updated (`UpdateBranch`) and its new head goes through CI, as
    /// for a person's push on top. Counted with those moves: more in a cycle than monitorCI's
    /// schedule has waits halt (`MainKeptMoving`). No attempt is spent and no issue blamed.
    pub(super) fn branch_behind(&mut self, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
        self.let_go_of_turn(Step::Merge, fx);
        let issue = self.current_issue();
        if self.head_moves as usize >= self.limits.ci_polls().len() {
            self.dispatched = false;
            return self.halt(HaltReason::MainKeptMoving { issue }, fx);
        }
        self.head_moves += 1;
        self.update_branch(usage, fx)
    }

    /// The runner brought the branch up to date with main after the repair and pushed it:
    /// its head is new to CI, so the merge waits for CI's verdict on it (monitorCI's schedule
    /// from its start), and the next merge is a plain one again, not another repair. Bounded:
    /// each repair is counted against `max_repair_iterations`, and each conflict that follows
    /// is a failed merge attempt.
    pub(super) fn merge_repaired(
        &mut self,
        head: Commit,
        usage: &Usage,
        fx: &mut Fx,
    ) -> Outcome<State> {
        self.let_go_of_turn(Step::Merge, fx);
        self.last_class[Step::Merge.index()] = None;
        self.verified = None;
        self.ci_waits = 0;
        self.ci_waited_secs = 0;
        self.ci_commit = Some(head);
        self.dispatched = true;
        self.ci_pending(usage, fx)
    }
}
