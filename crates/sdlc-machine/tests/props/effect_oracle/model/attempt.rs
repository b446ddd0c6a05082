//! The model's attempt rules: budgets, dispatch and repairs, bounces, success, each
//! failure class, monitorCI's CI still pending.

use super::{At, Model};
use sdlc_machine::failure::{Disposition, FailureClass, Signature};
use sdlc_machine::machine::WaitReason;
use sdlc_machine::machine::{
    CommitKind, Effect, EscalationCause, Event, HaltReason, Notice, Spend, Usage,
};
use sdlc_machine::step::{Check, Step};

fn add(s: &mut Spend, u: &Usage) {
    s.invocations += 1;
    s.turns += u64::from(u.turns);
    s.cost_micros += u.cost_micros;
}

impl Model {
    /// A budget is spent when what was spent reaches it or one more attempt like the last
    /// one would pass it.
    pub(super) fn over(spent: u64, budget: Option<u64>, last: u64) -> bool {
        budget.is_some_and(|b| spent >= b || spent.saturating_add(last) > b)
    }

    /// Whether a budget forbids another attempt of `step` (and the session, the issue or the
    /// single step ended for it).
    pub(super) fn budget_spent(&mut self, step: Step) -> bool {
        let last = self.last_usage;
        if Self::over(
            self.session_cost,
            self.l.per_session_budget_micros,
            last.cost_micros,
        ) {
            self.halt(HaltReason::SessionBudget);
            return true;
        }
        let day = self
            .l
            .day_spent_before_micros
            .saturating_add(self.session_cost);
        if Self::over(day, self.l.per_day_budget_micros, last.cost_micros) {
            self.halt(HaltReason::DayBudget);
            return true;
        }
        if Self::over(
            self.issue_cost,
            self.l.per_issue_budget_micros,
            last.cost_micros,
        ) || Self::over(self.issue_ms, self.l.per_issue_budget_ms, last.elapsed_ms)
        {
            if self.l.ask_on_issue_budget && !self.single_step() {
                self.budget_asked = true;
                self.fx.push(self.question(step));
                self.at = At::Decision(step);
            } else if self.single_step() {
                self.finish(1);
            } else {
                self.escalate(step, EscalationCause::IssueBudget);
            }
            return true;
        }
        false
    }

    /// The issue's, the session's and the day's budgets' remainders and the per-call cap, the
    /// least.
    pub(super) fn money_left_micros(&self) -> Option<u64> {
        let mut left: Option<u64> = None;
        let mut take = |v: u64| left = Some(left.map_or(v, |l| l.min(v)));
        let pending = self.pending.cost_micros;
        if let Some(b) = self.l.per_issue_budget_micros {
            take(b.saturating_sub(self.issue_cost + pending));
        }
        if let Some(b) = self.l.per_session_budget_micros {
            take(b.saturating_sub(self.session_cost + pending));
        }
        if let Some(b) = self.l.per_day_budget_micros {
            let day = self.l.day_spent_before_micros + self.session_cost;
            take(b.saturating_sub(day + pending));
        }
        if let Some(c) = self.l.per_call_budget_micros {
            take(c);
        }
        left
    }

    pub(super) fn dispatch(&mut self, step: Step) {
        if self.budget_spent(step) {
            return;
        }
        let i = step.index();
        let repair = matches!(
            step,
            Step::Verify | Step::CommitPush | Step::MonitorCi | Step::Merge
        ) && self.last_class[i].is_some_and(FailureClass::code_fixable)
            && self.repairs[i] < self.l.max_repair_iterations;
        if repair {
            self.repairs[i] += 1;
        }
        self.dispatched = true;
        self.ci_waits = 0;
        self.ci_waited = 0;
        self.queue_waits = 0;
        self.queue_waited = 0;
        self.pending = Usage::default();
        self.races = 0;
        self.rerun = false;
        let run = Effect::RunStep {
            step,
            issue: self.issue(),
            attempt: self.attempts[i] + 1,
            repair,
            commit: None,
            money_left_micros: self.money_left_micros(),
        };
        self.ask(At::Step(step), run);
    }

    pub(super) fn bounce(&mut self, step: Step, check: Check) {
        if self.single_step() {
            return self.finish(1);
        }
        self.bounces += 1;
        match self.l.prev_step(step) {
            Some(prev) if self.bounces <= self.l.max_bounce_retries => {
                self.fx.push(Effect::Notify(Notice::Bounced {
                    from: step,
                    to: prev,
                    check,
                    bounces: self.bounces,
                }));
                self.enter(prev);
            }
            _ => self.escalate(step, EscalationCause::BounceLoop),
        }
    }

    pub(super) fn record(&mut self, u: &Usage) {
        self.issue_cost += u.cost_micros;
        self.issue_ms += u.elapsed_ms;
        self.session_cost += u.cost_micros;
        self.last_usage = *u;
        add(&mut self.total, u);
        add(&mut self.since_merge, u);
    }

    pub(super) fn succeeded(&mut self, step: Step, u: &Usage) {
        let i = step.index();
        self.record(u);
        self.waits = 0;
        self.step_net_waits = 0;
        self.phase[i] = 0;
        self.same[i] = 0;
        self.last_sig[i] = None;
        self.last_class[i] = None;
        if step == Step::Implement {
            self.fx.push(Effect::AutoCommit(CommitKind::Implemented {
                issue: self.issue(),
            }));
        }
        self.advance(step);
    }

    pub(super) fn failed(
        &mut self,
        step: Step,
        class: FailureClass,
        sig: Signature,
        u: &Usage,
        hint: Option<u64>,
    ) {
        let i = step.index();
        self.record(u);
        add(&mut self.failed_by_class[class.index()], u);
        self.last_failure = Some((step, class, sig));
        if class == FailureClass::Budget && self.budget_spent(step) {
            return;
        }
        match class.disposition() {
            Disposition::HaltEnvironment => {
                return self.halt(HaltReason::Environment { class, step });
            }
            Disposition::Backoff | Disposition::WaitForQuota => {
                self.waits += 1;
                if self.waits > self.l.max_rate_limit_waits {
                    return self.halt(HaltReason::WaitsExhausted { class, step });
                }
                let seconds = if class.disposition() == Disposition::WaitForQuota {
                    let s = hint.unwrap_or(u64::from(self.l.backoff_max_secs));
                    if s > self.l.max_quota_wait_secs {
                        return self.halt(HaltReason::QuotaTooLong { step });
                    }
                    s
                } else {
                    u64::from(self.l.backoff_secs(self.waits))
                };
                self.dispatched = false;
                self.fx.push(Effect::Notify(Notice::Waiting {
                    step,
                    class,
                    seconds,
                }));
                self.fx.push(Effect::Wait {
                    seconds,
                    reason: Some(WaitReason::Backoff(Some(class))),
                });
                self.at = At::Backoff(step, seconds);
                return;
            }
            Disposition::WaitForNetwork => {
                if self.step_net_waits >= self.l.max_network_waits {
                    return self.halt(HaltReason::Network);
                }
                self.step_net_waits += 1;
                let seconds = u64::from(self.l.network_backoff_secs(self.step_net_waits));
                self.dispatched = false;
                self.fx.push(Effect::Notify(Notice::NetworkWait {
                    seconds,
                    wait: self.step_net_waits,
                }));
                self.fx.push(Effect::Wait {
                    seconds,
                    reason: Some(WaitReason::Network),
                });
                self.at = At::Backoff(step, seconds);
                return;
            }
            Disposition::Retry | Disposition::EscalateNow => {}
        }
        self.waits = 0;
        self.step_net_waits = 0;
        self.attempts[i] += 1;
        self.phase[i] += 1;
        if self.last_sig[i] == Some(sig) {
            self.same[i] += 1;
        } else {
            self.same[i] = 1;
            self.last_sig[i] = Some(sig);
        }
        self.last_class[i] = Some(class);
        self.failed_how[i].push((class, sig));
        let limit = self.l.max_consecutive_failures[i];
        if limit > 0 && self.phase[i] >= limit {
            return self.halt(HaltReason::MaxConsecutiveFailures { step, limit });
        }
        if self.single_step() {
            return self.finish(1);
        }
        let same_limit = self.l.max_consecutive_same_failure;
        let spent = self.attempts[i] >= self.l.max_retries_per_step
            || (same_limit > 0 && self.same[i] >= same_limit);
        if class == FailureClass::Killed && spent {
            return self.halt(HaltReason::RepeatedKills {
                step,
                kills: self.same[i],
            });
        }
        if class.disposition() == Disposition::EscalateNow {
            return self.escalate(step, EscalationCause::NonRetryable);
        }
        if self.attempts[i] >= self.l.max_retries_per_step {
            return self.give_up(step, EscalationCause::RetriesExhausted);
        }
        if same_limit > 0 && self.same[i] >= same_limit {
            return self.give_up(step, EscalationCause::SameFailureRepeated);
        }
        self.fx.push(Effect::Notify(Notice::Retrying {
            step,
            attempt: self.attempts[i] + 1,
            class,
        }));
        self.enter(step);
    }

    /// The outcome's usage plus what the attempt's earlier looks at CI cost.
    pub(super) fn settle(&mut self, u: &Usage) -> Usage {
        let p = std::mem::take(&mut self.pending);
        Usage {
            cost_micros: p.cost_micros + u.cost_micros,
            elapsed_ms: p.elapsed_ms + u.elapsed_ms,
            turns: p.turns + u.turns,
        }
    }

    /// CI pending: the next pause is `initial · 2^waits`, capped, at least a second; when it
    /// would take the attempt's waits past the step's time limit, the attempt fails.
    pub(super) fn ci_pending(&mut self, u: &Usage) {
        self.pending = self.settle(u);
        let factor = 1u64 << self.ci_waits.min(30);
        let pause = (u64::from(self.l.ci_poll_initial_secs) * factor)
            .min(u64::from(self.l.ci_poll_max_secs))
            .max(1);
        if self.ci_waited + pause > self.l.ci_timeout_secs {
            self.fx.push(Effect::Notify(Notice::CiStillPending {
                waited_secs: self.ci_waited,
            }));
            let u = self.settle(&Usage::default());
            return self.failed(
                Step::MonitorCi,
                FailureClass::Timeout,
                Signature::CI_STILL_PENDING,
                &u,
                None,
            );
        }
        self.ci_waits += 1;
        self.ci_waited += pause;
        self.pending.elapsed_ms += pause * 1000;
        self.fx.push(Effect::Notify(Notice::CiPending {
            seconds: pause,
            look: self.ci_waits + 1,
        }));
        self.fx.push(Effect::Wait {
            seconds: pause,
            reason: Some(WaitReason::Ci),
        });
        self.at = At::CiWait(pause);
    }

    pub(super) fn on_ci_wait(&mut self, seconds: u64, ev: &Event) -> bool {
        match *ev {
            Event::WaitOver => {
                self.dispatched = true;
                let look = Effect::LookAtCi {
                    issue: self.issue(),
                    look: self.ci_waits + 1,
                    commit: None,
                };
                self.ask(At::Step(Step::MonitorCi), look);
            }
            Event::Start => self.fx.push(Effect::Wait {
                seconds,
                reason: Some(WaitReason::Ci),
            }),
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.fx.push(Effect::Wait {
                        seconds,
                        reason: Some(WaitReason::Ci),
                    });
                }
            }
            _ => return false,
        }
        true
    }

    /// The merge put the PR in the forge's merge queue (or a look found it still there): a
    /// wait of monitorCI's schedule (the queue's CI is CI), then the merge's run again, which
    /// looks at the queue; past the schedule's time limit the merge attempt fails (TIMEOUT),
    /// its turn given back.
    pub(super) fn merge_queued(&mut self, u: &Usage) {
        self.pending = self.settle(u);
        let factor = 1u64 << self.queue_waits.min(30);
        let pause = (u64::from(self.l.ci_poll_initial_secs) * factor)
            .min(u64::from(self.l.ci_poll_max_secs))
            .max(1);
        if self.queue_waited + pause > self.l.ci_timeout_secs {
            self.queue_waits = 0;
            self.queue_waited = 0;
            self.release_turn();
            let u = self.settle(&Usage::default());
            return self.failed(
                Step::Merge,
                FailureClass::Timeout,
                Signature::QUEUE_STILL_PENDING,
                &u,
                None,
            );
        }
        self.queue_waits += 1;
        self.queue_waited += pause;
        self.pending.elapsed_ms += pause * 1000;
        self.fx.push(Effect::Wait {
            seconds: pause,
            reason: Some(WaitReason::MergeQueue),
        });
        self.at = At::QueueWait(pause);
    }

    pub(super) fn on_queue_wait(&mut self, seconds: u64, ev: &Event) -> bool {
        let wait = Effect::Wait {
            seconds,
            reason: Some(WaitReason::MergeQueue),
        };
        match *ev {
            // The merge's run again, its answer awaited (also after a shutdown's restart).
            Event::WaitOver => {
                self.dispatched = true;
                self.ask_again();
            }
            Event::Start => self.fx.push(wait),
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.fx.push(wait);
                }
            }
            _ => return false,
        }
        true
    }
}
