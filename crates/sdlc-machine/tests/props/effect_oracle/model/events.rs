//! The model's answer to each event in each place: `on`, and restarts and mode changes.

use super::{At, Model};
use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::WaitReason;
use sdlc_machine::machine::{
    CommitKind, DecisionOption, Effect, EscalationCause, Event, HaltReason, Mode, Notice, Usage,
};
use sdlc_machine::step::Step;

impl Model {
    pub(super) fn restart_step(&mut self, step: Step) {
        if let (true, Some(run)) = (self.dispatched, self.unsent_run) {
            // The runner died waiting for the renewal before this run: it never started.
            self.fx.push(run);
            return;
        }
        if self.dispatched {
            // What the attempt cost before the call that died (its looks at CI) counts with it.
            let usage = self.settle(&Usage::default());
            return self.failed(
                step,
                FailureClass::Killed,
                Signature::INTERRUPTED,
                &usage,
                None,
            );
        }
        self.enter(step);
    }

    /// `None`: carry on as on a plain restart.
    pub(super) fn change_mode(&mut self, mode: Mode) -> Option<()> {
        self.mode = mode;
        match (mode, self.issue) {
            (Mode::SingleIssue(n), Some(current)) if n != current => {
                self.dispatched = false;
                self.fx.extend([Effect::CheckoutMain, Effect::ResetCycle]);
                self.select_next();
                Some(())
            }
            (Mode::SingleStep(step), Some(_)) => {
                self.enter(step);
                Some(())
            }
            _ => None,
        }
    }

    pub(super) fn first_step(&self) -> Step {
        match self.mode {
            Mode::SingleStep(step) => step,
            _ => Step::StartCycle,
        }
    }

    /// The effects of `ev`, exactly.
    pub fn on(&mut self, ev: &Event) -> Vec<Effect> {
        self.fx.clear();
        if let Some(request) = self.after_renewal(ev) {
            return vec![request];
        }
        match self.at {
            At::Halted(r) => {
                if matches!(ev, Event::Start | Event::ModeChanged { .. }) {
                    self.fx.extend([Effect::Halt(r), Effect::Exit { code: 1 }]);
                }
                return std::mem::take(&mut self.fx);
            }
            At::Finished(code) => {
                if matches!(ev, Event::Start | Event::ModeChanged { .. }) {
                    self.fx.push(Effect::Exit { code });
                }
                return std::mem::take(&mut self.fx);
            }
            _ => {}
        }
        let handled = match self.at {
            At::Selecting => self.on_selecting(ev),
            At::Step(step) => self.on_step(step, ev),
            At::Backoff(step, seconds) => self.on_backoff(step, seconds, ev),
            At::Decision(step) => self.on_decision(step, ev),
            At::RecordingMerge(issue) if matches!(ev, Event::IssueStillOpen) => {
                self.on_still_open(issue);
                true
            }
            At::CloseWait(issue, seconds) => self.on_close_wait(issue, seconds, ev),
            At::RecordingMerge(issue) => self.on_tracker_write(
                ev,
                |m| m.merge_recorded(issue),
                HaltReason::TrackerWrite {
                    issue,
                    merged: true,
                },
            ),
            At::Escalating(step, cause) => {
                let issue = self.issue();
                self.on_tracker_write(
                    ev,
                    |m| m.escalation_recorded(step, cause),
                    HaltReason::TrackerWrite {
                        issue,
                        merged: false,
                    },
                )
            }
            At::Releasing(step, class) => {
                let first = self.last_escalation.map_or(0, |e| e.0);
                self.on_tracker_write(
                    ev,
                    |m| m.release_recorded(first, step, class),
                    HaltReason::TrackerWrite {
                        issue: first,
                        merged: false,
                    },
                )
            }
            At::NetworkWait(_) => self.on_network_wait(ev),
            At::CiWait(seconds) => self.on_ci_wait(seconds, ev),
            At::MergePause(millis) => self.on_merge_pause(millis, ev),
            At::QueueWait(seconds) => self.on_queue_wait(seconds, ev),
            At::Halted(_) | At::Finished(_) => true,
        };
        if !handled {
            self.on_cycle_or_session(ev);
        }
        self.renew_first();
        std::mem::take(&mut self.fx)
    }

    pub(super) fn on_tracker_write(
        &mut self,
        ev: &Event,
        recorded: impl FnOnce(&mut Self),
        failed: HaltReason,
    ) -> bool {
        match *ev {
            Event::TrackerUpdated => recorded(self),
            Event::TrackerWriteFailed => self.halt(failed),
            Event::NetworkFailed => self.network_failed(),
            Event::Start => self.ask_again(),
            Event::ModeChanged { mode } => {
                self.mode = mode;
                self.ask_again();
            }
            _ => return false,
        }
        true
    }

    pub(super) fn on_network_wait(&mut self, ev: &Event) -> bool {
        match *ev {
            Event::WaitOver => self.ask_again(),
            Event::Start => {
                if let At::NetworkWait(seconds) = self.at {
                    self.fx.push(Effect::Wait {
                        seconds,
                        reason: Some(WaitReason::Network),
                    });
                }
            }
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    if let At::NetworkWait(seconds) = self.at {
                        self.fx.push(Effect::Wait {
                            seconds,
                            reason: Some(WaitReason::Network),
                        });
                    }
                }
            }
            _ => return false,
        }
        true
    }

    pub(super) fn on_selecting(&mut self, ev: &Event) -> bool {
        match *ev {
            Event::Start => self.ask(At::Selecting, Effect::SelectIssue),
            Event::ModeChanged { mode } => {
                self.mode = mode;
                self.ask(At::Selecting, Effect::SelectIssue);
            }
            Event::NetworkFailed => self.network_failed(),
            Event::TrackerReadFailed
                if matches!(self.outstanding, Some((_, Effect::SelectIssue))) =>
            {
                self.fx.extend([
                    Effect::Notify(Notice::TrackerReadFailed),
                    Effect::Exit { code: 1 },
                ]);
            }
            Event::IssueSelected { issue } => self.offered(issue),
            Event::ClaimTaken { .. } | Event::ClaimHeld { .. } | Event::TrackerWriteFailed => {
                return self.on_claim_answer(ev)
            }
            Event::Resume { issue, next } => {
                if self.escalated.contains(&issue)
                    || self.merged.contains(&issue)
                    || self.withdrawn.contains(&issue)
                {
                    // An escalated, merged or withdrawn issue's branch is not continued.
                    self.fx.push(Effect::CheckoutMain);
                    self.ask(At::Selecting, Effect::SelectIssue);
                } else {
                    let first = match self.mode {
                        Mode::SingleStep(step) => step,
                        _ => next,
                    };
                    self.start_cycle(issue, first);
                }
            }
            Event::AlreadyMerged { issue } => self.merged(issue),
            Event::NoIssues => {
                self.fx.push(Effect::Notify(Notice::NothingToDo));
                self.finish(0);
            }
            // A fleet worker with no room to take an issue ends; the fleet starts it again.
            Event::StandBy => {
                self.fx.push(Effect::Notify(Notice::StandingBy));
                self.finish(0);
            }
            // Issues held elsewhere (told by the selection, or found held by a claim since the
            // last cycle began) are someone's work: nothing to do, no halt.
            Event::AllEscalated { others_hold } | Event::AllBlocked { others_hold }
                if others_hold || !self.held.is_empty() =>
            {
                self.fx.push(Effect::Notify(Notice::NothingToDo));
                self.finish(0);
            }
            Event::AllEscalated { .. } => self.halt(HaltReason::AllIssuesEscalated),
            Event::AllBlocked { .. } => self.halt(HaltReason::AllIssuesBlocked),
            _ => return false,
        }
        true
    }

    pub(super) fn on_step(&mut self, step: Step, ev: &Event) -> bool {
        match *ev {
            Event::Start => self.restart_step(step),
            Event::ModeChanged {
                mode: mode @ Mode::SingleStep(s),
            } if s == step && self.dispatched => {
                self.mode = mode;
                self.restart_step(step);
            }
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.restart_step(step);
                }
            }
            Event::PreconditionsOk { step: s } if s == step && !self.dispatched => {
                if self.holding_turn {
                    self.holding_turn = false;
                    self.merge_now()
                } else if step == Step::Merge {
                    self.merge_ready()
                } else {
                    self.dispatch(step)
                }
            }
            Event::AlreadyDone { step: s } if s == step && !self.dispatched => {
                self.drop_held_turn();
                self.advance(step)
            }
            Event::PreconditionFailed { step: s, .. }
                if s == step && step == Step::Merge && !self.dispatched && self.rerun =>
            {
                // The attempt that lost the race ends as its failure: counted, not bounced,
                // whether the turn is still held or a restart gave it back.
                self.holding_turn = false;
                self.rerun = false;
                self.release_turn();
                let (class, sig) = self
                    .race_failure
                    .take()
                    .unwrap_or((FailureClass::Unknown, Signature(0)));
                let u = self.settle(&Usage::default());
                self.failed(Step::Merge, class, sig, &u, None);
            }
            Event::PreconditionFailed { step: s, check } if s == step && !self.dispatched => {
                self.drop_held_turn();
                self.bounce(step, check)
            }
            Event::StepSucceeded { step: s, usage } if s == step && self.dispatched => {
                if step == Step::Merge {
                    self.release_turn();
                }
                let u = self.settle(&usage);
                self.succeeded(step, &u)
            }
            Event::CiPending { usage, .. } if step == Step::MonitorCi && self.dispatched => {
                self.ci_pending(&usage)
            }
            Event::StepFailed {
                step: s,
                class,
                signature,
                usage,
                wait_hint_secs,
            } if s == step && self.dispatched => {
                if step == Step::Merge {
                    self.release_turn();
                }
                let u = self.settle(&usage);
                self.failed(step, class, signature, &u, wait_hint_secs)
            }
            Event::MergeTurnTaken if self.turn_asked(step) => self.turn_taken(),
            Event::MergeTurnBusy if self.turn_asked(step) => self.turn_busy(),
            Event::TrackerWriteFailed if self.turn_asked(step) => {
                self.halt(HaltReason::MergeTurnHeld {
                    waited_ms: self.turn_waited,
                })
            }
            Event::MergeRaceLost {
                class,
                signature,
                usage,
            } if step == Step::Merge && self.dispatched => self.race_lost(class, signature, &usage),
            Event::MergeQueued { usage } if step == Step::Merge && self.dispatched => {
                self.merge_queued(&usage)
            }
            Event::NetworkFailed => self.network_failed(),
            Event::IssueWithdrawn { issue } if Some(issue) == self.issue && !self.dispatched => {
                self.drop_held_turn();
                self.withdraw(issue)
            }
            // The look before monitorCI's look at CI and before the merge (its checks, its
            // run) sees a person's move: a closed PR or deleted branch drops the cycle, a
            // merge by hand is recorded; a merge run under way gives its turn back.
            Event::IssueWithdrawn { issue }
                if Some(issue) == self.issue && self.looks_at_the_branch(step) =>
            {
                self.let_go_of_turn(step);
                self.withdraw(issue)
            }
            Event::AlreadyMerged { issue }
                if Some(issue) == self.issue && self.looks_at_the_branch(step) =>
            {
                self.let_go_of_turn(step);
                self.merged(issue)
            }
            Event::WorkspaceUnfit { step: s } if s == step => {
                self.halt(HaltReason::Workspace { step })
            }
            _ => return false,
        }
        true
    }

    pub(super) fn on_backoff(&mut self, step: Step, seconds: u64, ev: &Event) -> bool {
        match *ev {
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.fx.push(Effect::Wait {
                        seconds,
                        reason: Some(WaitReason::Backoff(None)),
                    });
                }
            }
            Event::Start => self.fx.push(Effect::Wait {
                seconds,
                reason: Some(WaitReason::Backoff(None)),
            }),
            Event::WaitOver => self.enter(step),
            _ => return false,
        }
        true
    }

    pub(super) fn on_decision(&mut self, step: Step, ev: &Event) -> bool {
        let ask = self.question(step);
        match *ev {
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.fx.push(ask);
                }
            }
            Event::Start => self.fx.push(ask),
            Event::Decided {
                option: DecisionOption::Retry,
            } if self.budget_asked => {
                self.budget_asked = false;
                self.issue_cost = 0;
                self.issue_ms = 0;
                self.last_usage.cost_micros = 0;
                self.last_usage.elapsed_ms = 0;
                self.enter(step);
            }
            Event::Decided {
                option: DecisionOption::Retry,
            } => {
                let i = step.index();
                self.attempts[i] = self.attempts[i].saturating_sub(1);
                self.same[i] = 0;
                self.last_sig[i] = None;
                self.enter(step);
            }
            Event::Decided {
                option: DecisionOption::Skip,
            } => {
                self.budget_asked = false;
                self.escalate(step, EscalationCause::OperatorSkipped);
            }
            Event::Decided {
                option: DecisionOption::Halt,
            } => self.halt(HaltReason::Operator),
            Event::DecisionTimedOut => self.halt(HaltReason::DecisionTimeout),
            _ => return false,
        }
        true
    }

    pub(super) fn on_cycle_or_session(&mut self, ev: &Event) {
        let in_cycle = matches!(
            self.at,
            At::Step(_)
                | At::Backoff(..)
                | At::Decision(_)
                | At::CiWait(_)
                | At::MergePause(_)
                | At::QueueWait(_)
        );
        match *ev {
            Event::Resume { issue, next } if in_cycle && Some(issue) == self.issue => {
                self.enter(next)
            }
            Event::ShutdownRequested { signal, .. } => {
                self.fx.push(Effect::Cleanup);
                if self.issue.is_some() {
                    self.fx
                        .push(Effect::AutoCommit(CommitKind::OnSignal(signal)));
                }
                self.fx
                    .push(Effect::Notify(Notice::ShuttingDown { signal }));
                self.fx.push(Effect::Exit { code: 0 });
                // A request waiting out the network or a rate limit is issued again as it
                // was after the restart, so it stays dispatched; any other attempt under way
                // ends with the session.
                if !matches!(self.at, At::NetworkWait(_)) {
                    self.dispatched = false;
                }
            }
            Event::ClaimLost { issue } => self.claim_lost(issue),
            Event::NetworkUnavailable => self.halt(HaltReason::Network),
            _ => {}
        }
    }

    pub fn terminal(&self) -> bool {
        matches!(self.at, At::Halted(_) | At::Finished(_))
    }
}
