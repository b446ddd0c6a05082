//! One attempt of a step: its dispatch within the budgets, a failed precondition (bounce),
//! its success or classified failure, and monitorCI's looks at a CI still pending.

use super::state::state_of;
use super::{Fx, LastFailure, Runner, State};
use crate::failure::{Disposition, FailureClass, Signature};
use crate::fleet::Contention;
use crate::machine::types::*;
use crate::step::{Check, Step};
use statig::prelude::*;

impl Runner {
    pub(super) fn dispatch(&mut self, step: Step, fx: &mut Fx) -> Outcome<State> {
        if let Some(outcome) = self.over_budget(step, fx) {
            return outcome;
        }
        if step == Step::MonitorCi && self.round_pending() {
            return self.run_round(fx);
        }
        let i = step.index();
        let repair = step.repairs()
            && self.last_class[i].is_some_and(FailureClass::code_fixable)
            && self.repairs[i] < self.limits.max_repair_iterations;
        if step == Step::MonitorCi && !repair && self.limits.train_tests_ci {
            return self.ci_left_to_train(&Usage::default(), fx);
        }
        if repair {
            self.repairs[i] += 1;
        }
        self.dispatched = true;
        self.ci_waits = 0;
        self.ci_waited_secs = 0;
        self.queue_waits = 0;
        if step == Step::MonitorCi {
            // A new attempt looks at the branch as the runner pushed it.
            self.ci_commit = None;
            self.verified = None;
        }
        self.pending_usage = Usage::default();
        self.contention = Contention::default();
        self.merge_rerun = false;
        self.lost_race = None;
        let run = Effect::RunStep {
            step,
            issue: self.current_issue(),
            attempt: self.attempts[i] + 1,
            repair,
            commit: self.merge_commit(step),
            money_left_micros: self.money_left_micros(),
        };
        self.request(state_of(step), run, fx);
        Handled
    }

    /// The budgets allow no attempt of `step`: the session halts, the issue escalates or a
    /// single step ends. `None`: the attempt may start.
    pub(super) fn over_budget(&mut self, step: Step, fx: &mut Fx) -> Option<Outcome<State>> {
        let last = self.last_usage;
        let over = |spent: u64, budget: Option<u64>, last: u64| {
            budget.is_some_and(|b| spent >= b || spent.saturating_add(last) > b)
        };
        if over(
            self.session_cost_micros,
            self.limits.per_session_budget_micros,
            last.cost_micros,
        ) {
            return Some(self.halt(HaltReason::SessionBudget, fx));
        }
        if over(
            self.day_cost_micros(),
            self.limits.per_day_budget_micros,
            last.cost_micros,
        ) {
            return Some(self.halt(HaltReason::DayBudget, fx));
        }
        if over(
            self.issue_cost_micros,
            self.limits.per_issue_budget_micros,
            last.cost_micros,
        ) || over(
            self.issue_elapsed_ms,
            self.limits.per_issue_budget_ms,
            last.elapsed_ms,
        ) {
            if self.limits.ask_on_issue_budget && !self.single_step() {
                self.budget_asked = true;
                self.ask_decision(step, fx);
                return Some(Transition(State::awaiting_decision(step)));
            }
            if !self.single_step() {
                return Some(self.escalate(step, EscalationCause::IssueBudget, fx));
            }
            return Some(self.finish(1, fx));
        }
        None
    }

    pub(super) fn bounce(&mut self, step: Step, check: Check, fx: &mut Fx) -> Outcome<State> {
        if self.single_step() {
            // A single step whose precondition fails changes nothing and exits 1.
            return self.finish(1, fx);
        }
        self.bounces += 1;
        let prev = match self.limits.prev_step(step) {
            Some(prev) if self.bounces <= self.limits.max_bounce_retries => prev,
            _ => return self.escalate(step, EscalationCause::BounceLoop, fx),
        };
        fx.push(Effect::Notify(Notice::Bounced {
            from: step,
            to: prev,
            check,
            bounces: self.bounces,
        }));
        self.enter(prev, fx)
    }

    pub(super) fn succeeded(&mut self, step: Step, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
        let i = step.index();
        self.record_usage(usage);
        self.wait_streak = 0;
        self.step_network_waits = 0;
        self.phase_failures[i] = 0;
        self.same_failure[i] = 0;
        self.last_signature[i] = None;
        self.last_class[i] = None;
        if self.limits.runner_commits {
            if step.commits_agent_work() {
                fx.push(Effect::AutoCommit(CommitKind::StepWork {
                    issue: self.current_issue(),
                    step,
                }));
            }
        } else if step == Step::Implement {
            fx.push(Effect::AutoCommit(CommitKind::Implemented {
                issue: self.current_issue(),
            }));
        }
        self.advance(step, fx)
    }

    pub(super) fn failed(
        &mut self,
        step: Step,
        class: FailureClass,
        signature: Signature,
        usage: &Usage,
        wait_hint_secs: Option<u64>,
        fx: &mut Fx,
    ) -> Outcome<State> {
        self.record_usage(usage);
        self.stats.failed_by_class[class.index()].add(usage);
        self.last_failure = Some(LastFailure {
            step,
            class,
            signature,
        });
        if class == FailureClass::Budget {
            // The call was stopped at the money it was given: when that was a budget's last
            // dollar, the budget decides now (escalate, halt), not a retry it cannot pay for.
            if let Some(outcome) = self.over_budget(step, fx) {
                return outcome;
            }
        }
        match class.disposition() {
            Disposition::HaltEnvironment => {
                return self.halt(HaltReason::Environment { class, step }, fx);
            }
            Disposition::Backoff | Disposition::WaitForQuota => {
                return self.back_off(step, class, wait_hint_secs, fx);
            }
            Disposition::WaitForNetwork => return self.step_network_wait(step, fx),
            Disposition::Retry | Disposition::EscalateNow => {}
        }
        let again = self.count_failure(step, class, signature);
        self.retry_or_stop(step, class, again, fx)
    }

    /// A rate limit, overload or quota window: waited out (the length the agent's answer
    /// hinted for a quota, the backoff schedule otherwise), then the step entered again; too
    /// many waits in a row, or a quota window past the longest wait allowed, halt.
    fn back_off(
        &mut self,
        step: Step,
        class: FailureClass,
        wait_hint_secs: Option<u64>,
        fx: &mut Fx,
    ) -> Outcome<State> {
        self.wait_streak += 1;
        if self.wait_streak > self.limits.max_rate_limit_waits {
            return self.halt(HaltReason::WaitsExhausted { class, step }, fx);
        }
        let seconds = if class.disposition() == Disposition::WaitForQuota {
            let hint = wait_hint_secs.unwrap_or(u64::from(self.limits.backoff_max_secs));
            if hint > self.limits.max_quota_wait_secs {
                return self.halt(HaltReason::QuotaTooLong { step }, fx);
            }
            hint
        } else {
            u64::from(self.limits.backoff_secs(self.wait_streak))
        };
        self.dispatched = false;
        fx.push(Effect::Notify(Notice::Waiting {
            step,
            class,
            seconds,
        }));
        fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::Backoff(Some(class))),
        });
        Transition(State::backing_off(step, seconds))
    }

    /// Counts a failure the step answers for: its attempts, its failures in a row, the same
    /// failure in a row, its class. True when the class hands back once and was also the
    /// step's last: the hand-back did not help.
    fn count_failure(&mut self, step: Step, class: FailureClass, signature: Signature) -> bool {
        let i = step.index();
        self.wait_streak = 0;
        self.step_network_waits = 0;
        // Handed back once: the same class right after the hand-back escalates.
        let again = class.hands_back_once() && self.last_class[i] == Some(class);
        self.attempts[i] += 1;
        self.phase_failures[i] += 1;
        if self.last_signature[i] == Some(signature) {
            self.same_failure[i] += 1;
        } else {
            self.same_failure[i] = 1;
            self.last_signature[i] = Some(signature);
        }
        self.last_class[i] = Some(class);
        self.failures_seen[i] = self.failures_seen[i].and(class, signature);
        again
    }

    /// After a counted failure: halt, finish a single step, escalate, ask a person, give up,
    /// or retry, as the limits say.
    fn retry_or_stop(
        &mut self,
        step: Step,
        class: FailureClass,
        again: bool,
        fx: &mut Fx,
    ) -> Outcome<State> {
        let i = step.index();
        let phase_limit = self.limits.max_consecutive_failures[i];
        if phase_limit > 0 && self.phase_failures[i] >= phase_limit {
            return self.halt(
                HaltReason::MaxConsecutiveFailures {
                    step,
                    limit: phase_limit,
                },
                fx,
            );
        }
        if self.single_step() {
            return self.finish(1, fx);
        }
        let same_limit = self.limits.max_consecutive_same_failure;
        if class == FailureClass::Killed
            && (self.attempts[i] >= self.limits.max_retries_per_step
                || (same_limit > 0 && self.same_failure[i] >= same_limit))
        {
            // The runner's own deaths, not the issue's failures: stop and say so rather than
            // quarantine the issue.
            return self.halt(
                HaltReason::RepeatedKills {
                    step,
                    kills: self.same_failure[i],
                },
                fx,
            );
        }
        if class.disposition() == Disposition::EscalateNow {
            return self.escalate(step, EscalationCause::NonRetryable, fx);
        }
        if class == FailureClass::TestsWeakened && self.limits.ask_on_weakening {
            // A person decides whether the weakening stands (`retry` approves it).
            self.weakening_asked = true;
            self.ask_decision(step, fx);
            return Transition(State::awaiting_decision(step));
        }
        if again {
            return self.escalate(step, EscalationCause::TestsWeakened, fx);
        }
        if self.attempts[i] >= self.limits.max_retries_per_step {
            return self.give_up(step, EscalationCause::RetriesExhausted, fx);
        }
        if same_limit > 0 && self.same_failure[i] >= same_limit {
            return self.give_up(step, EscalationCause::SameFailureRepeated, fx);
        }
        fx.push(Effect::Notify(Notice::Retrying {
            step,
            attempt: self.attempts[i] + 1,
            class,
        }));
        self.enter(step, fx)
    }

    /// The step failed as `NETWORK` (its agent could not reach its model, or a call after the
    /// agent ran failed on the network): waited out like a runner call's network failure, on
    /// the network's schedule, then the step entered again; once `max_network_waits` waits in
    /// a row did not help, the session halts as the network's. No attempt is spent and no
    /// issue blamed, so a second issue never meets the same outage.
    fn step_network_wait(&mut self, step: Step, fx: &mut Fx) -> Outcome<State> {
        if self.step_network_waits >= self.limits.max_network_waits {
            return self.halt(HaltReason::Network, fx);
        }
        self.step_network_waits += 1;
        let seconds = u64::from(self.limits.network_backoff_secs(self.step_network_waits));
        self.dispatched = false;
        fx.push(Effect::Notify(Notice::NetworkWait {
            seconds,
            wait: self.step_network_waits,
        }));
        fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::Network),
        });
        Transition(State::backing_off(step, seconds))
    }

    /// The attempt's outcome with what it cost before it (see `pending_usage`).
    pub(super) fn with_pending(&mut self, usage: &Usage) -> Usage {
        let before = std::mem::take(&mut self.pending_usage);
        Usage {
            cost_micros: before.cost_micros.saturating_add(usage.cost_micros),
            elapsed_ms: before.elapsed_ms.saturating_add(usage.elapsed_ms),
            turns: before.turns.saturating_add(usage.turns),
        }
    }

    /// monitorCI looked at CI and it has not settled: wait on the CI schedule and look again,
    /// or, when the next wait would pass the step's time limit, fail the attempt (TIMEOUT).
    /// The fleet's train tests the PR as the tree main would hold (`Limits::train_tests_ci`):
    /// monitorCI's look at CI on the branch alone is left out, the step counts as passed
    /// without a verdict (`verified` stays empty, so the merge carries none and lands only
    /// the tree CI passed in the train), and the cycle goes on to the merge. A failure of the
    /// PR's tree comes back from the merge as `CiFailedTogether`, monitorCI's failure: each
    /// such round costs one of monitorCI's attempts, so the loop is bounded by them.
    pub(super) fn ci_left_to_train(&mut self, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
        self.dispatched = false;
        self.ci_commit = None;
        self.verified = None;
        self.ci_waits = 0;
        self.ci_waited_secs = 0;
        self.pending_usage = Usage::default();
        self.succeeded(Step::MonitorCi, usage, fx)
    }

    pub(super) fn ci_pending(&mut self, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
        self.pending_usage = self.with_pending(usage);
        let pauses = self.limits.ci_polls();
        let Some(&seconds) = pauses.get(self.ci_waits as usize) else {
            fx.push(Effect::Notify(Notice::CiStillPending {
                waited_secs: self.ci_waited_secs,
            }));
            let usage = self.with_pending(&Usage::default());
            return self.failed(
                Step::MonitorCi,
                FailureClass::Timeout,
                Signature::CI_STILL_PENDING,
                &usage,
                None,
                fx,
            );
        };
        self.ci_waits += 1;
        self.ci_waited_secs += seconds;
        // The wait is part of the attempt's time, as the issue's time budget sees it.
        self.pending_usage.elapsed_ms = self
            .pending_usage
            .elapsed_ms
            .saturating_add(seconds.saturating_mul(1000));
        fx.push(Effect::Notify(Notice::CiPending {
            seconds,
            look: self.ci_waits + 1,
        }));
        fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::Ci),
        });
        Transition(State::waiting_for_ci(seconds))
    }
}

impl Runner {
    /// The merge put the PR in the forge's merge queue, or a look found it still there: wait
    /// on monitorCI's CI schedule (the queue runs CI on what main will hold) and look again
    /// (the merge's run issued again), or, past the schedule's last wait, fail the merge
    /// attempt (TIMEOUT). The merge turn stays held: the queue is the merge under way.
    pub(super) fn merge_queued(&mut self, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
        self.pending_usage = self.with_pending(usage);
        let pauses = self.limits.ci_polls();
        let Some(&seconds) = pauses.get(self.queue_waits as usize) else {
            self.queue_waits = 0;
            self.release_merge_turn(fx);
            let usage = self.with_pending(&Usage::default());
            return self.failed(
                Step::Merge,
                FailureClass::Timeout,
                Signature::QUEUE_STILL_PENDING,
                &usage,
                None,
                fx,
            );
        };
        self.queue_waits += 1;
        self.pending_usage.elapsed_ms = self
            .pending_usage
            .elapsed_ms
            .saturating_add(seconds.saturating_mul(1000));
        fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::MergeQueue),
        });
        Transition(State::waiting_for_queue(seconds))
    }
}
