//! The runner's own requests (git, gh, the tracker): issuing one, waiting out a network
//! failure of its call and issuing it again, and the answer to a tracker write.

use super::{Fx, Runner, State};
use crate::machine::types::*;
use statig::prelude::*;

impl Runner {
    /// Issue a request the runner answers with a call of its own (git, gh, the tracker): a
    /// network failure of that call is waited out and the same request issued again.
    pub(super) fn request(&mut self, state: State, effect: Effect, fx: &mut Fx) {
        self.network_waits = 0;
        self.rate_limit_waits = 0;
        self.fleet_pauses = 0;
        self.outstanding = Some((state, effect));
        fx.push(effect);
    }

    /// The outstanding request's call failed on the network: wait on the network's own
    /// schedule and call again, or halt once `max_network_waits` waits in a row did not help.
    /// No attempt is spent and no issue blamed.
    pub(super) fn network_failed(&mut self, fx: &mut Fx) -> Outcome<State> {
        if self.outstanding.is_none() {
            return Handled;
        }
        if self.network_waits >= self.limits.max_network_waits {
            return self.halt(HaltReason::Network, fx);
        }
        self.network_waits += 1;
        let seconds = u64::from(self.limits.network_backoff_secs(self.network_waits));
        fx.push(Effect::Notify(Notice::NetworkWait {
            seconds,
            wait: self.network_waits,
        }));
        fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::Network),
        });
        Transition(State::waiting_for_network(seconds))
    }

    /// GitHub's rate limit refused the outstanding request's call: wait until it lifts (at
    /// most `Limits::MAX_RATE_LIMIT_WAIT_SECS`) and call again; `max_network_waits` such waits
    /// in a row on one request halt, naming the limit and how long it still lasts. No attempt
    /// is spent and no issue blamed.
    pub(super) fn rate_limited(&mut self, wait_secs: u64, fx: &mut Fx) -> Outcome<State> {
        if self.outstanding.is_none() {
            return Handled;
        }
        if self.rate_limit_waits >= self.limits.max_network_waits {
            return self.halt(HaltReason::RateLimit { wait_secs }, fx);
        }
        self.rate_limit_waits += 1;
        let seconds = Limits::rate_limit_wait_secs(wait_secs);
        fx.push(Effect::Notify(Notice::RateLimitWait {
            seconds,
            wait: self.rate_limit_waits,
        }));
        fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::RateLimit),
        });
        Transition(State::waiting_for_network(seconds))
    }

    /// The answer to a tracker write, the same for a merge, an escalation and a release:
    /// `recorded` goes on; a refusal halts naming the issue; the network is waited out; a
    /// restart writes again.
    pub(super) fn on_tracker_write(
        &mut self,
        event: &Event,
        refused: HaltReason,
        fx: &mut Fx,
        recorded: impl FnOnce(&mut Self, &mut Fx) -> Outcome<State>,
    ) -> Outcome<State> {
        match *event {
            Event::TrackerUpdated => recorded(self, fx),
            Event::TrackerWriteFailed => self.halt(refused, fx),
            Event::NetworkFailed => self.network_failed(fx),
            Event::RateLimited { wait_secs } => self.rate_limited(wait_secs, fx),
            Event::Start | Event::ModeChanged { .. } => {
                if let Event::ModeChanged { mode } = *event {
                    self.mode = mode;
                }
                self.reissue(fx)
            }
            _ => Super,
        }
    }

    /// A wait interrupted by a restart (or a mode change that keeps the run going) is waited
    /// again in full; any other event goes to the superstate.
    /// The fleet paused every worker before the outstanding request (another worker's rate
    /// limit or quota): wait, then issue it again. The provider's limit is everyone's, so more
    /// pauses in a row on one request than a runner alone would wait out halt the session
    /// (`WaitsExhausted`, a rate limit), no attempt spent and no issue blamed.
    pub(super) fn fleet_paused(&mut self, seconds: u64, fx: &mut Fx) -> Outcome<State> {
        let Some((state, _)) = self.outstanding else {
            return Handled;
        };
        if self.fleet_pauses > self.limits.max_rate_limit_waits {
            let step = state.step().unwrap_or(crate::step::Step::StartCycle);
            let class = crate::failure::FailureClass::RateLimit;
            return self.halt(HaltReason::WaitsExhausted { class, step }, fx);
        }
        self.fleet_pauses += 1;
        fx.push(Effect::Notify(Notice::FleetPause {
            seconds,
            pause: self.fleet_pauses,
        }));
        fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::FleetPause),
        });
        Transition(State::waiting_for_fleet(seconds))
    }

    /// A wait before the outstanding request is issued again (the network's, the fleet's):
    /// over, the request goes out; a restart waits again.
    pub(super) fn before_reissue(
        &mut self,
        seconds: u64,
        reason: WaitReason,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        match *event {
            Event::WaitOver => self.reissue(context),
            // The request waiting here is issued again after a restart exactly as it was
            // (the restart waits again, then reissues it), so it stays dispatched: its
            // answer is then taken, not dropped as a stale one.
            Event::ShutdownRequested { signal, usage } => {
                self.shut_down(signal, &usage, context);
                Handled
            }
            _ => self.wait_again(seconds, reason, event, context),
        }
    }

    /// What a signal asks wherever the session is: the stopped call's money counted (it was
    /// spent all the same), the cleanup, the issue's work committed, a word, the exit.
    pub(super) fn shut_down(&mut self, signal: Signal, usage: &Usage, fx: &mut Fx) {
        if !usage.is_zero() {
            self.record_usage(usage);
        }
        fx.push(Effect::Cleanup);
        if self.issue.is_some() {
            fx.push(Effect::AutoCommit(CommitKind::OnSignal(signal)));
        }
        fx.push(Effect::Notify(Notice::ShuttingDown { signal }));
        fx.push(Effect::Exit { code: 0 });
    }

    pub(super) fn wait_again(
        &mut self,
        seconds: u64,
        reason: WaitReason,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        let outcome = match *event {
            Event::Start => None,
            Event::ModeChanged { mode } => self.change_mode(mode, context),
            _ => return Super,
        };
        outcome.unwrap_or_else(|| {
            context.push(Effect::Wait {
                seconds,
                reason: Some(reason),
            });
            Handled
        })
    }

    /// The outstanding request again, from the state that issued it (after a network wait or
    /// a restart); the network-wait count stays.
    pub(super) fn reissue(&mut self, fx: &mut Fx) -> Outcome<State> {
        match self.outstanding {
            Some((state, effect)) => {
                fx.push(effect);
                Transition(state)
            }
            None => self.select_next(fx),
        }
    }
}
