//! The model's merge turn: taking it, a busy turn, a lost push race, giving it back.

use super::{At, Model};
use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::{Effect, Event, HaltReason, Notice, PauseFor, Usage};
use sdlc_machine::step::Step;

impl Model {
    /// Merge's preconditions hold: within the budgets, a new wait for the merge turn.
    pub(super) fn merge_ready(&mut self) {
        if self.budget_spent(Step::Merge) {
            return;
        }
        self.turn_waited = 0;
        self.turn_next = 200;
        self.paused_since_checks = 0;
        self.take_turn();
    }

    /// Ask for the merge turn; without one (a runner alone) merge at once.
    pub(super) fn take_turn(&mut self) {
        match self.l.merge_turn_wait_ms {
            None => self.turn_taken(),
            Some(_) => self.ask(
                At::Step(Step::Merge),
                Effect::TakeMergeTurn {
                    issue: self.issue(),
                },
            ),
        }
    }

    /// The attempt, or after a lost race the same attempt's merge again (no repair).
    pub(super) fn merge_now(&mut self) {
        if !self.rerun {
            return self.dispatch(Step::Merge);
        }
        self.rerun = false;
        self.dispatched = true;
        let run = Effect::RunStep {
            step: Step::Merge,
            issue: self.issue(),
            attempt: self.attempts[Step::Merge.index()] + 1,
            repair: false,
            commit: None,
            money_left_micros: self.money_left_micros(),
        };
        self.ask(At::Step(Step::Merge), run);
    }

    /// Busy: pauses of 200 ms doubling to 2 s, the last one cut at the limit; at the limit
    /// the session halts (nobody's issue is blamed).
    pub(super) fn turn_busy(&mut self) {
        let limit = self.l.merge_turn_wait_ms.unwrap_or(0);
        if self.turn_waited >= limit {
            return self.halt(HaltReason::MergeTurnHeld {
                waited_ms: self.turn_waited,
            });
        }
        if self.turn_waited == 0 {
            self.fx.push(Effect::Notify(Notice::WaitingForMergeTurn {
                limit_ms: limit,
            }));
        }
        let pause = self.turn_next.min(limit - self.turn_waited).max(1);
        self.turn_waited += pause;
        self.turn_next = (self.turn_next * 2).min(2_000);
        self.paused_since_checks += pause;
        self.fx.push(Effect::Pause {
            millis: pause,
            waits_for: PauseFor::MergeTurn,
        });
        self.at = At::MergePause(pause);
    }

    /// An answer about the merge turn counts only while the turn was asked for.
    pub(super) fn turn_asked(&self, step: Step) -> bool {
        step == Step::Merge
            && !self.dispatched
            && matches!(self.outstanding, Some((_, Effect::TakeMergeTurn { .. })))
    }

    /// The turn is ours (or none is needed): after any pause since the merge's checks, they
    /// run again first, the turn held; otherwise the merge runs.
    pub(super) fn turn_taken(&mut self) {
        if self.paused_since_checks == 0 {
            return self.merge_now();
        }
        self.paused_since_checks = 0;
        self.holding_turn = true;
        self.ask(
            At::Step(Step::Merge),
            Effect::CheckPreconditions { step: Step::Merge },
        );
    }

    /// Checks run again with the turn held and the merge did not follow: the turn goes back.
    pub(super) fn drop_held_turn(&mut self) {
        if self.holding_turn {
            self.holding_turn = false;
            self.release_turn();
        }
    }

    /// Whether the request under way at `step` looked at the branch on origin first.
    pub(super) fn looks_at_the_branch(&self, step: Step) -> bool {
        match step {
            Step::MonitorCi => self.dispatched,
            Step::Merge => matches!(
                self.outstanding,
                Some((
                    _,
                    Effect::CheckPreconditions { .. } | Effect::RunStep { .. }
                ))
            ),
            _ => false,
        }
    }

    /// A person's move ends the merge's hold on the turn (a run under way, or the checks
    /// with the turn held).
    pub(super) fn let_go_of_turn(&mut self, step: Step) {
        if step != Step::Merge {
            return;
        }
        if self.dispatched {
            self.release_turn();
        } else {
            self.drop_held_turn();
        }
        self.holding_turn = false;
        self.rerun = false;
        self.race_failure = None;
    }

    pub(super) fn release_turn(&mut self) {
        if self.l.merge_turn_wait_ms.is_some() {
            self.fx.push(Effect::ReleaseMergeTurn);
        }
    }

    /// A lost race: three are merged again for free (pauses of 250 ms per race), the
    /// fourth is the attempt's failure.
    pub(super) fn race_lost(&mut self, class: FailureClass, sig: Signature, u: &Usage) {
        if self.races < 3 {
            self.races += 1;
            self.race_failure = Some((class, sig));
            self.pending = self.settle(u);
            self.dispatched = false;
            self.rerun = true;
            self.turn_waited = 0;
            self.turn_next = 200;
            self.fx.push(Effect::Notify(Notice::MergeRaceLost {
                lost: self.races,
                max: 3,
            }));
            let millis = 250 * u64::from(self.races);
            self.paused_since_checks += millis;
            self.fx.push(Effect::Pause {
                millis,
                waits_for: PauseFor::MergeTurn,
            });
            self.at = At::MergePause(millis);
            return;
        }
        self.release_turn();
        self.fx
            .push(Effect::Notify(Notice::MergeRacesExhausted { lost: 4 }));
        let u = self.settle(u);
        self.failed(Step::Merge, class, sig, &u, None);
    }

    pub(super) fn on_merge_pause(&mut self, millis: u64, ev: &Event) -> bool {
        match *ev {
            Event::WaitOver => self.take_turn(),
            Event::Start => self.fx.push(Effect::Pause {
                millis,
                waits_for: PauseFor::MergeTurn,
            }),
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.fx.push(Effect::Pause {
                        millis,
                        waits_for: PauseFor::MergeTurn,
                    });
                }
            }
            _ => return false,
        }
        true
    }
}
