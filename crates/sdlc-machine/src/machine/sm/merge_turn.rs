//! The merge step's turn (docs/scaling.md, "Merges"): taking it before the merge run,
//! waiting while another merger holds it, merging again after a lost push race, giving it
//! back.

use super::{Fx, Runner, State};
use crate::failure::{FailureClass, Signature};
use crate::fleet::{AfterLostRace, Contention, LeaseWait};
use crate::machine::types::*;
use crate::step::Step;
use statig::prelude::*;

impl Runner {
    /// The merge step's preconditions hold: within the budgets, wait for the merge turn (a
    /// new wait) and merge.
    pub(super) fn merge_ready(&mut self, fx: &mut Fx) -> Outcome<State> {
        if let Some(outcome) = self.over_budget(Step::Merge, fx) {
            return outcome;
        }
        self.merge_wait = LeaseWait::new(self.limits.merge_turn_wait_ms.unwrap_or(0));
        self.paused_for_turn = false;
        self.take_merge_turn(fx)
    }

    /// Ask for the merge turn (the holder's ask renews it), or merge at once when there is no
    /// turn to take.
    pub(super) fn take_merge_turn(&mut self, fx: &mut Fx) -> Outcome<State> {
        if self.limits.merge_turn_wait_ms.is_none() {
            return self.merge_turn_taken(fx);
        }
        let take = Effect::TakeMergeTurn {
            issue: self.current_issue(),
        };
        self.request(State::merge(), take, fx);
        Transition(State::merge())
    }

    /// The runner holds the merge turn (or needs none): the attempt, or the same attempt's
    /// merge again after a lost race.
    pub(super) fn merge_in_turn(&mut self, fx: &mut Fx) -> Outcome<State> {
        if !self.merge_rerun {
            return match self.dispatch(Step::Merge, fx) {
                Handled => Transition(State::merge()),
                other => other,
            };
        }
        self.merge_rerun = false;
        self.dispatched = true;
        let run = Effect::RunStep {
            step: Step::Merge,
            issue: self.current_issue(),
            attempt: self.attempts[Step::Merge.index()] + 1,
            // The last failure was the race, not the branch's: nothing to repair.
            repair: false,
            commit: self.merge_commit(Step::Merge),
            money_left_micros: self.money_left_micros(),
        };
        self.request(State::merge(), run, fx);
        Transition(State::merge())
    }

    /// The merge turn is this runner's (or there is none to take). Straight after the merge's
    /// checks it merges; after a pause it checks again first (holding the turn), because a
    /// person may have closed or relabelled the issue, or the branch changed, while it waited.
    pub(super) fn merge_turn_taken(&mut self, fx: &mut Fx) -> Outcome<State> {
        if !self.paused_for_turn {
            return self.merge_in_turn(fx);
        }
        self.paused_for_turn = false;
        self.turn_held = true;
        let check = Effect::CheckPreconditions { step: Step::Merge };
        self.request(State::merge(), check, fx);
        Transition(State::merge())
    }

    /// The merge's checks, run again with the turn held, did not clear the merge: the turn
    /// goes back before anything else happens.
    pub(super) fn give_turn_back(&mut self, step: Step, fx: &mut Fx) {
        if step == Step::Merge && self.turn_held {
            self.turn_held = false;
            self.release_merge_turn(fx);
        }
    }

    /// The checks after a lost race's pause failed: the attempt that lost the race ends as
    /// its failure, counted like any other, instead of being merged again for free (a bounce
    /// now would leave the attempt uncounted, and its free runs again with it). The same after
    /// a restart during those checks, when the turn is no longer held. `None` when no race is
    /// pending.
    pub(super) fn checks_failed_after_race(
        &mut self,
        step: Step,
        fx: &mut Fx,
    ) -> Option<Outcome<State>> {
        if step != Step::Merge || !self.merge_rerun {
            return None;
        }
        let (class, signature) = self.lost_race.take()?;
        self.turn_held = false;
        self.merge_rerun = false;
        self.release_merge_turn(fx);
        let usage = self.with_pending(&Usage::default());
        Some(self.failed(Step::Merge, class, signature, &usage, None, fx))
    }

    /// Another merger holds the turn: pause on the `LeaseWait` schedule and ask again, or,
    /// past the wait's limit, halt naming the holder (the last words): no issue is blamed.
    pub(super) fn merge_turn_busy(&mut self, fx: &mut Fx) -> Outcome<State> {
        let first = self.merge_wait.waited_ms() == 0;
        match self.merge_wait.busy() {
            Some(millis) => {
                if first {
                    fx.push(Effect::Notify(Notice::WaitingForMergeTurn {
                        limit_ms: self.limits.merge_turn_wait_ms.unwrap_or(0),
                    }));
                }
                self.paused_for_turn = true;
                fx.push(Effect::Pause {
                    millis,
                    waits_for: PauseFor::MergeTurn,
                });
                Transition(State::waiting_to_merge(millis))
            }
            None => self.halt(
                HaltReason::MergeTurnHeld {
                    waited_ms: self.merge_wait.waited_ms(),
                },
                fx,
            ),
        }
    }

    /// The merge run lost a push race: not an attempt. Pause, take the turn again (renewing
    /// it) and merge on the new main, as `Contention` allows; past that the race is the
    /// attempt's failure.
    pub(super) fn merge_race_lost(
        &mut self,
        class: FailureClass,
        signature: Signature,
        usage: &Usage,
        fx: &mut Fx,
    ) -> Outcome<State> {
        match self.contention.lost_race() {
            AfterLostRace::Retry { pause_ms } => {
                self.lost_race = Some((class, signature));
                self.pending_usage = self.with_pending(usage);
                self.dispatched = false;
                self.merge_rerun = true;
                self.merge_wait = LeaseWait::new(self.limits.merge_turn_wait_ms.unwrap_or(0));
                fx.push(Effect::Notify(Notice::MergeRaceLost {
                    lost: self.contention.lost(),
                    max: Contention::MAX_LOST_RACES,
                }));
                self.paused_for_turn = true;
                fx.push(Effect::Pause {
                    millis: pause_ms,
                    waits_for: PauseFor::MergeTurn,
                });
                Transition(State::waiting_to_merge(pause_ms))
            }
            AfterLostRace::GiveUp => {
                self.release_merge_turn(fx);
                fx.push(Effect::Notify(Notice::MergeRacesExhausted {
                    lost: Contention::MAX_LOST_RACES + 1,
                }));
                let usage = self.with_pending(usage);
                self.failed(Step::Merge, class, signature, &usage, None, fx)
            }
        }
    }

    /// Whether `step`'s state asked for the merge turn and has no answer yet: the only time
    /// an answer about the turn means anything.
    pub(super) fn turn_asked(&self, step: Step) -> bool {
        step == Step::Merge
            && !self.dispatched
            && matches!(self.outstanding, Some((_, Effect::TakeMergeTurn { .. })))
    }

    /// The merge run ended (merged or not): the turn goes back, where there is one.
    pub(super) fn release_merge_turn(&mut self, fx: &mut Fx) {
        if self.limits.merge_turn_wait_ms.is_some() {
            fx.push(Effect::ReleaseMergeTurn);
        }
    }
}
