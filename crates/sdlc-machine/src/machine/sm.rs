//! The statig machine: one state per step, grouped under `Cycle` → `Specify` / `Build` /
//! `Deliver`, plus `Selecting`, `BackingOff`, `AwaitingDecision`, `Halted` and `Finished`.
//!
//! Rules this module keeps (see docs/design-notes.md):
//! - handlers decide and push effects; there are no entry/exit actions, so replaying events
//!   can never double-count anything;
//! - counters change only at the transition sites below, never anywhere else;
//! - no IO, no clock, no randomness: the same events always give the same effects.

use super::types::*;
use crate::failure::{Disposition, FailureClass, Signature};
use crate::fleet::{AfterLostRace, Contention, LeaseWait};
use crate::step::{Check, Step};
use serde::{Deserialize, Serialize};
use statig::prelude::*;
use std::collections::BTreeSet;

/// Work spent, for the wasted-work report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Spend {
    pub invocations: u64,
    pub turns: u64,
    pub cost_micros: u64,
}

impl Spend {
    fn add(&mut self, usage: &Usage) {
        self.invocations += 1;
        self.turns += u64::from(usage.turns);
        self.cost_micros += usage.cost_micros;
    }
}

/// Statistics that never influence a decision (projected out when exploring the graph).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stats {
    pub merges: u64,
    pub total: Spend,
    pub since_merge: Spend,
    /// Spend of failed attempts since the last merge, by `FailureClass::index`.
    pub failed_by_class: [Spend; FailureClass::COUNT],
}

/// The last failure seen, for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LastFailure {
    pub step: Step,
    pub class: FailureClass,
    pub signature: Signature,
}

/// How the failed attempts of one step in the cycle failed: whether a quarantine rests on one
/// failure alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FailuresSeen {
    /// The step has not failed in this cycle.
    #[default]
    None,
    /// Every failed attempt failed this way.
    Only(FailureClass, Signature),
    /// At least two different ways.
    Several,
}

impl FailuresSeen {
    fn and(self, class: FailureClass, signature: Signature) -> FailuresSeen {
        match self {
            FailuresSeen::None => FailuresSeen::Only(class, signature),
            FailuresSeen::Only(c, s) if (c, s) == (class, signature) => self,
            _ => FailuresSeen::Several,
        }
    }
}

/// Shared storage of the machine: every counter of docs/counters-and-bounds.md.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Runner {
    pub limits: Limits,
    pub mode: Mode,
    /// Issue of the current cycle.
    pub issue: Option<u32>,
    /// Whether the current step's attempt was dispatched (vs. waiting for its preconditions).
    pub dispatched: bool,
    // -- cycle scope: reset by `begin_cycle` --
    pub attempts: [u32; Step::COUNT],
    pub bounces: u32,
    pub same_failure: [u32; Step::COUNT],
    pub last_signature: [Option<Signature>; Step::COUNT],
    pub last_class: [Option<FailureClass>; Step::COUNT],
    pub repairs: [u32; Step::COUNT],
    /// How each step's failed attempts failed in this cycle (waits aside).
    pub failures_seen: [FailuresSeen; Step::COUNT],
    pub issue_cost_micros: u64,
    pub issue_elapsed_ms: u64,
    // -- session scope --
    pub consecutive_escalations: u32,
    pub escalated: BTreeSet<u32>,
    pub phase_failures: [u32; Step::COUNT],
    pub wait_streak: u32,
    pub session_cost_micros: u64,
    pub last_usage: Usage,
    pub last_failure: Option<LastFailure>,
    pub stats: Stats,
    /// Issues merged this session: final, whether or not the tracker could be told, so no
    /// selection offers them again.
    pub merged: BTreeSet<u32>,
    /// Issues a person took back during the session (closed, relabelled, escalated).
    pub withdrawn: BTreeSet<u32>,
    /// The request the runner is answering now and the state that issued it: what a network
    /// wait calls again.
    pub outstanding: Option<(State, Effect)>,
    /// Network waits in a row on the outstanding request.
    pub network_waits: u32,
    /// The issue and failure of the last escalation, to tell an environment's failure (the
    /// same on two issues in a row) from the issues'.
    pub last_escalation: Option<(u32, LastFailure)>,
    /// Whether that failure was the only way the escalating step failed in its cycle: then
    /// the quarantine rests on it alone, and the same failure on the next issue releases it.
    pub last_escalation_alone: bool,
    // -- attempt scope: reset by `dispatch` --
    /// Waits between looks at CI in the monitorCI attempt under way, and their seconds.
    pub ci_waits: u32,
    pub ci_waited_secs: u64,
    /// What the attempt under way cost before its outcome (its looks at CI that found CI
    /// pending, and their waits): added to the outcome's usage, so an attempt is counted once.
    pub pending_usage: Usage,
    // -- merge scope (docs/scaling.md, "Merges") --
    /// The wait for the merge turn under way: its pauses so far, on the `LeaseWait` schedule.
    pub merge_wait: LeaseWait,
    /// The push races the merge attempt under way lost (reset by `dispatch`).
    pub contention: Contention,
    /// A lost race asked for the merge again: the next merge run is the same attempt's.
    pub merge_rerun: bool,
    /// The runner paused while waiting for the merge turn: the world may have changed (a
    /// person closed the issue, another merger merged it), so the turn, once taken, is
    /// followed by the merge's checks again before the merge runs.
    pub paused_for_turn: bool,
    /// The merge turn is held while the merge's checks run again: their answer merges, or
    /// gives the turn back.
    pub turn_held: bool,
}

type Fx = Vec<Effect>;

impl Runner {
    pub fn new(limits: Limits, mode: Mode) -> Self {
        Runner {
            limits,
            mode,
            issue: None,
            dispatched: false,
            attempts: [0; Step::COUNT],
            bounces: 0,
            same_failure: [0; Step::COUNT],
            last_signature: [None; Step::COUNT],
            last_class: [None; Step::COUNT],
            repairs: [0; Step::COUNT],
            failures_seen: [FailuresSeen::None; Step::COUNT],
            issue_cost_micros: 0,
            issue_elapsed_ms: 0,
            consecutive_escalations: 0,
            escalated: BTreeSet::new(),
            phase_failures: [0; Step::COUNT],
            wait_streak: 0,
            session_cost_micros: 0,
            last_usage: Usage::default(),
            last_failure: None,
            stats: Stats::default(),
            merged: BTreeSet::new(),
            withdrawn: BTreeSet::new(),
            outstanding: None,
            network_waits: 0,
            last_escalation: None,
            last_escalation_alone: false,
            ci_waits: 0,
            ci_waited_secs: 0,
            pending_usage: Usage::default(),
            merge_wait: LeaseWait::new(0),
            contention: Contention::default(),
            merge_rerun: false,
            paused_for_turn: false,
            turn_held: false,
        }
    }

    fn begin_cycle(&mut self, issue: u32) {
        self.issue = Some(issue);
        self.dispatched = false;
        self.attempts = [0; Step::COUNT];
        self.bounces = 0;
        self.same_failure = [0; Step::COUNT];
        self.last_signature = [None; Step::COUNT];
        self.last_class = [None; Step::COUNT];
        self.repairs = [0; Step::COUNT];
        self.failures_seen = [FailuresSeen::None; Step::COUNT];
        self.issue_cost_micros = 0;
        self.issue_elapsed_ms = 0;
        self.merge_rerun = false;
    }

    fn current_issue(&self) -> u32 {
        self.issue.unwrap_or(0)
    }

    fn single_step(&self) -> bool {
        matches!(self.mode, Mode::SingleStep(_))
    }

    fn record_usage(&mut self, usage: &Usage) {
        self.issue_cost_micros += usage.cost_micros;
        self.issue_elapsed_ms += usage.elapsed_ms;
        self.session_cost_micros += usage.cost_micros;
        self.last_usage = *usage;
        self.stats.total.add(usage);
        self.stats.since_merge.add(usage);
    }

    /// Issue a request the runner answers with a call of its own (git, gh, the tracker): a
    /// network failure of that call is waited out and the same request issued again.
    fn request(&mut self, state: State, effect: Effect, fx: &mut Fx) {
        self.network_waits = 0;
        self.outstanding = Some((state, effect));
        fx.push(effect);
    }

    /// The outstanding request's call failed on the network: wait on the network's own
    /// schedule and call again, or halt once `max_network_waits` waits in a row did not help.
    /// No attempt is spent and no issue blamed.
    fn network_failed(&mut self, fx: &mut Fx) -> Outcome<State> {
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
        fx.push(Effect::Wait { seconds });
        Transition(State::waiting_for_network(seconds))
    }

    /// The answer to a tracker write, the same for a merge, an escalation and a release:
    /// `recorded` goes on; a refusal halts naming the issue; the network is waited out; a
    /// restart writes again.
    fn on_tracker_write(
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
    fn wait_again(&mut self, seconds: u64, event: &Event, context: &mut Fx) -> Outcome<State> {
        let outcome = match *event {
            Event::Start => None,
            Event::ModeChanged { mode } => self.change_mode(mode, context),
            _ => return Super,
        };
        outcome.unwrap_or_else(|| {
            context.push(Effect::Wait { seconds });
            Handled
        })
    }

    /// The outstanding request again, from the state that issued it (after a network wait or
    /// a restart); the network-wait count stays.
    fn reissue(&mut self, fx: &mut Fx) -> Outcome<State> {
        match self.outstanding {
            Some((state, effect)) => {
                fx.push(effect);
                Transition(state)
            }
            None => self.select_next(fx),
        }
    }

    /// Enter a step: ask for its preconditions.
    fn enter(&mut self, step: Step, fx: &mut Fx) -> Outcome<State> {
        self.dispatched = false;
        // A turn is never held across a new entry: a restart or a bounce lost or gave it.
        self.paused_for_turn = false;
        self.turn_held = false;
        self.request(state_of(step), Effect::CheckPreconditions { step }, fx);
        Transition(state_of(step))
    }

    fn halt(&mut self, reason: HaltReason, fx: &mut Fx) -> Outcome<State> {
        fx.push(Effect::Cleanup);
        fx.push(Effect::Halt(reason));
        fx.push(Effect::Exit { code: 1 });
        Transition(State::halted(reason))
    }

    fn finish(&mut self, code: u8, fx: &mut Fx) -> Outcome<State> {
        fx.push(Effect::Exit { code });
        Transition(State::finished(code))
    }

    fn select_next(&mut self, fx: &mut Fx) -> Outcome<State> {
        self.issue = None;
        self.dispatched = false;
        self.request(State::selecting(), Effect::SelectIssue, fx);
        Transition(State::selecting())
    }

    /// Issues no selection may offer again this session: escalated, merged or withdrawn.
    pub fn excluded(&self, issue: u32) -> bool {
        self.escalated.contains(&issue)
            || self.merged.contains(&issue)
            || self.withdrawn.contains(&issue)
    }

    fn start_issue_cycle(&mut self, issue: u32, first: Step, fx: &mut Fx) -> Outcome<State> {
        if self.escalated.contains(&issue) {
            // The tracker excludes escalated issues; if one comes back anyway, the tracker
            // cannot make progress and nobody should spend compute on that issue again.
            return self.halt(HaltReason::AllIssuesEscalated, fx);
        }
        if self.merged.contains(&issue) || self.withdrawn.contains(&issue) {
            // Merged is final and a person's decision stands: a tracker that offers such an
            // issue again would make the runner repeat finished work.
            return self.halt(HaltReason::TrackerStale { issue }, fx);
        }
        self.begin_cycle(issue);
        fx.push(Effect::Notify(Notice::CycleStarted { issue }));
        self.enter(first, fx)
    }

    /// The merge happened: it is final for the session from here on, whatever the tracker
    /// says next. Then the tracker is told.
    fn merged(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        self.consecutive_escalations = 0;
        self.last_escalation = None;
        self.merged.insert(issue);
        self.stats.merges += 1;
        self.stats.since_merge = Spend::default();
        self.stats.failed_by_class = [Spend::default(); FailureClass::COUNT];
        self.dispatched = false;
        let state = State::recording_merge(issue);
        self.request(state, Effect::RecordMerged { issue }, fx);
        Transition(state)
    }

    /// The tracker recorded the merge: announce it and go on.
    fn merge_recorded(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        fx.push(Effect::Notify(Notice::Merged { issue }));
        fx.push(Effect::CheckoutMain);
        if let Mode::SingleIssue(_) = self.mode {
            return self.finish(0, fx);
        }
        fx.push(Effect::ResetCycle);
        self.select_next(fx)
    }

    /// A person took the issue back: drop the cycle (the branch stays), blame nobody.
    fn withdraw(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        self.withdrawn.insert(issue);
        self.dispatched = false;
        fx.push(Effect::Cleanup);
        fx.push(Effect::CheckoutMain);
        fx.push(Effect::Notify(Notice::Withdrawn { issue }));
        if let Mode::SingleIssue(_) = self.mode {
            return self.finish(0, fx);
        }
        fx.push(Effect::ResetCycle);
        self.select_next(fx)
    }

    /// The step is done (run or already satisfied): move on.
    fn advance(&mut self, step: Step, fx: &mut Fx) -> Outcome<State> {
        if self.single_step() {
            return self.finish(0, fx);
        }
        match self.limits.next_step(step) {
            Some(next) => self.enter(next, fx),
            None => self.merged(self.current_issue(), fx),
        }
    }

    fn escalate(&mut self, step: Step, cause: EscalationCause, fx: &mut Fx) -> Outcome<State> {
        let issue = self.current_issue();
        // The failure that ends this cycle, when it is this step's own (not a bounce, a
        // budget or a person's skip).
        let own = match cause {
            EscalationCause::RetriesExhausted
            | EscalationCause::SameFailureRepeated
            | EscalationCause::NonRetryable => self.last_failure.filter(|f| f.step == step),
            _ => None,
        };
        if let (Some(now), Some((previous, before))) = (own, self.last_escalation) {
            if previous != issue && before == now {
                return self.same_failure_across_issues(step, now.class, fx);
            }
        }
        self.last_escalation = own.map(|f| (issue, f));
        self.last_escalation_alone = own.is_some_and(|f| {
            self.failures_seen[step.index()] == FailuresSeen::Only(f.class, f.signature)
        });
        self.escalated.insert(issue);
        self.consecutive_escalations += 1;
        self.dispatched = false;
        let state = State::escalating(step, cause);
        self.request(state, Effect::MarkEscalated { issue }, fx);
        Transition(state)
    }

    /// Two issues failing the same way, one after the other: the cause is common to both, so
    /// the second is not quarantined and the session stops. The first's quarantine is lifted
    /// first when that failure was the only way its step failed (it was never the issue's);
    /// when its step also failed another way, its quarantine stays (docs/counters-and-bounds.md).
    fn same_failure_across_issues(
        &mut self,
        step: Step,
        class: FailureClass,
        fx: &mut Fx,
    ) -> Outcome<State> {
        let halt = HaltReason::SameFailureAcrossIssues { step, class };
        match self.last_escalation {
            Some((first, _)) if self.last_escalation_alone => {
                self.dispatched = false;
                let state = State::releasing(step, class);
                self.request(state, Effect::Unquarantine { issue: first }, fx);
                Transition(state)
            }
            _ => self.halt(halt, fx),
        }
    }

    /// The tracker lifted the first issue's quarantine: it no longer counts as escalated, and
    /// the session halts as the environment's.
    fn release_recorded(
        &mut self,
        first: u32,
        step: Step,
        class: FailureClass,
        fx: &mut Fx,
    ) -> Outcome<State> {
        if self.escalated.remove(&first) {
            self.consecutive_escalations = self.consecutive_escalations.saturating_sub(1);
        }
        fx.push(Effect::Notify(Notice::Released {
            issue: first,
            second: self.current_issue(),
            step,
            class,
        }));
        self.halt(HaltReason::SameFailureAcrossIssues { step, class }, fx)
    }

    /// The tracker recorded the quarantine: stop, end the run or select the next issue.
    fn escalation_recorded(
        &mut self,
        step: Step,
        cause: EscalationCause,
        fx: &mut Fx,
    ) -> Outcome<State> {
        let issue = self.current_issue();
        let consecutive = self.consecutive_escalations;
        if let Mode::SingleIssue(_) = self.mode {
            fx.push(Effect::Cleanup);
            fx.push(Effect::AutoCommit(CommitKind::PartialWork));
            fx.push(Effect::CheckoutMain);
            fx.push(Effect::Notify(Notice::Escalated {
                issue,
                step,
                cause,
                consecutive,
            }));
            return self.finish(1, fx);
        }
        if consecutive >= self.limits.max_consecutive_escalations {
            return self.halt(HaltReason::ConsecutiveEscalations { cause, step }, fx);
        }
        fx.push(Effect::Cleanup);
        fx.push(Effect::AutoCommit(CommitKind::PartialWork));
        fx.push(Effect::CheckoutMain);
        fx.push(Effect::ResetCycle);
        fx.push(Effect::Notify(Notice::Escalated {
            issue,
            step,
            cause,
            consecutive,
        }));
        self.select_next(fx)
    }

    /// Retries are spent: a person decides (manual approval) or the issue escalates.
    fn give_up(&mut self, step: Step, cause: EscalationCause, fx: &mut Fx) -> Outcome<State> {
        if self.limits.manual_approval {
            fx.push(Effect::AskDecision {
                step,
                issue: self.current_issue(),
            });
            return Transition(State::awaiting_decision(step));
        }
        self.escalate(step, cause, fx)
    }

    fn dispatch(&mut self, step: Step, fx: &mut Fx) -> Outcome<State> {
        if let Some(outcome) = self.over_budget(step, fx) {
            return outcome;
        }
        let i = step.index();
        let repair = matches!(step, Step::Verify | Step::MonitorCi | Step::Merge)
            && self.last_class[i].is_some_and(FailureClass::code_fixable)
            && self.repairs[i] < self.limits.max_repair_iterations;
        if repair {
            self.repairs[i] += 1;
        }
        self.dispatched = true;
        self.ci_waits = 0;
        self.ci_waited_secs = 0;
        self.pending_usage = Usage::default();
        self.contention = Contention::default();
        self.merge_rerun = false;
        let run = Effect::RunStep {
            step,
            issue: self.current_issue(),
            attempt: self.attempts[i] + 1,
            repair,
        };
        self.request(state_of(step), run, fx);
        Handled
    }

    /// The budgets allow no attempt of `step`: the session halts, the issue escalates or a
    /// single step ends. `None`: the attempt may start.
    fn over_budget(&mut self, step: Step, fx: &mut Fx) -> Option<Outcome<State>> {
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
            self.issue_cost_micros,
            self.limits.per_issue_budget_micros,
            last.cost_micros,
        ) || over(
            self.issue_elapsed_ms,
            self.limits.per_issue_budget_ms,
            last.elapsed_ms,
        ) {
            if !self.single_step() {
                return Some(self.escalate(step, EscalationCause::IssueBudget, fx));
            }
            return Some(self.finish(1, fx));
        }
        None
    }

    fn bounce(&mut self, step: Step, check: Check, fx: &mut Fx) -> Outcome<State> {
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

    fn succeeded(&mut self, step: Step, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
        let i = step.index();
        self.record_usage(usage);
        self.wait_streak = 0;
        self.phase_failures[i] = 0;
        self.same_failure[i] = 0;
        self.last_signature[i] = None;
        self.last_class[i] = None;
        if step == Step::Implement {
            fx.push(Effect::AutoCommit(CommitKind::Implemented {
                issue: self.current_issue(),
            }));
        }
        self.advance(step, fx)
    }

    fn failed(
        &mut self,
        step: Step,
        class: FailureClass,
        signature: Signature,
        usage: &Usage,
        wait_hint_secs: Option<u64>,
        fx: &mut Fx,
    ) -> Outcome<State> {
        let i = step.index();
        self.record_usage(usage);
        self.stats.failed_by_class[class.index()].add(usage);
        self.last_failure = Some(LastFailure {
            step,
            class,
            signature,
        });
        match class.disposition() {
            Disposition::HaltEnvironment => {
                return self.halt(HaltReason::Environment { class, step }, fx);
            }
            Disposition::Backoff | Disposition::WaitForQuota => {
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
                fx.push(Effect::Wait { seconds });
                return Transition(State::backing_off(step, seconds));
            }
            Disposition::Retry | Disposition::EscalateNow => {}
        }
        self.wait_streak = 0;
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

    /// The attempt's outcome with what it cost before it (see `pending_usage`).
    fn with_pending(&mut self, usage: &Usage) -> Usage {
        let before = std::mem::take(&mut self.pending_usage);
        Usage {
            cost_micros: before.cost_micros.saturating_add(usage.cost_micros),
            elapsed_ms: before.elapsed_ms.saturating_add(usage.elapsed_ms),
            turns: before.turns.saturating_add(usage.turns),
        }
    }

    /// monitorCI looked at CI and it has not settled: wait on the CI schedule and look again,
    /// or, when the next wait would pass the step's time limit, fail the attempt (TIMEOUT).
    fn ci_pending(&mut self, usage: &Usage, fx: &mut Fx) -> Outcome<State> {
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
        fx.push(Effect::Wait { seconds });
        Transition(State::waiting_for_ci(seconds))
    }

    /// The merge step's preconditions hold: within the budgets, wait for the merge turn (a
    /// new wait) and merge.
    fn merge_ready(&mut self, fx: &mut Fx) -> Outcome<State> {
        if let Some(outcome) = self.over_budget(Step::Merge, fx) {
            return outcome;
        }
        self.merge_wait = LeaseWait::new(self.limits.merge_turn_wait_ms.unwrap_or(0));
        self.paused_for_turn = false;
        self.take_merge_turn(fx)
    }

    /// Ask for the merge turn (the holder's ask renews it), or merge at once when there is no
    /// turn to take.
    fn take_merge_turn(&mut self, fx: &mut Fx) -> Outcome<State> {
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
    fn merge_in_turn(&mut self, fx: &mut Fx) -> Outcome<State> {
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
        };
        self.request(State::merge(), run, fx);
        Transition(State::merge())
    }

    /// The merge turn is this runner's (or there is none to take). Straight after the merge's
    /// checks it merges; after a pause it checks again first (holding the turn), because a
    /// person may have closed or relabelled the issue, or the branch changed, while it waited.
    fn merge_turn_taken(&mut self, fx: &mut Fx) -> Outcome<State> {
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
    fn give_turn_back(&mut self, step: Step, fx: &mut Fx) {
        if step == Step::Merge && self.turn_held {
            self.turn_held = false;
            self.release_merge_turn(fx);
        }
    }

    /// Another merger holds the turn: pause on the `LeaseWait` schedule and ask again, or,
    /// past the wait's limit, halt naming the holder (the last words): no issue is blamed.
    fn merge_turn_busy(&mut self, fx: &mut Fx) -> Outcome<State> {
        let first = self.merge_wait.waited_ms() == 0;
        match self.merge_wait.busy() {
            Some(millis) => {
                if first {
                    fx.push(Effect::Notify(Notice::WaitingForMergeTurn {
                        limit_ms: self.limits.merge_turn_wait_ms.unwrap_or(0),
                    }));
                }
                self.paused_for_turn = true;
                fx.push(Effect::Pause { millis });
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
    fn merge_race_lost(
        &mut self,
        class: FailureClass,
        signature: Signature,
        usage: &Usage,
        fx: &mut Fx,
    ) -> Outcome<State> {
        match self.contention.lost_race() {
            AfterLostRace::Retry { pause_ms } => {
                self.pending_usage = self.with_pending(usage);
                self.dispatched = false;
                self.merge_rerun = true;
                self.merge_wait = LeaseWait::new(self.limits.merge_turn_wait_ms.unwrap_or(0));
                fx.push(Effect::Notify(Notice::MergeRaceLost {
                    lost: self.contention.lost(),
                    max: Contention::MAX_LOST_RACES,
                }));
                self.paused_for_turn = true;
                fx.push(Effect::Pause { millis: pause_ms });
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
    fn turn_asked(&self, step: Step) -> bool {
        step == Step::Merge
            && !self.dispatched
            && matches!(self.outstanding, Some((_, Effect::TakeMergeTurn { .. })))
    }

    /// The merge run ended (merged or not): the turn goes back, where there is one.
    fn release_merge_turn(&mut self, fx: &mut Fx) {
        if self.limits.merge_turn_wait_ms.is_some() {
            fx.push(Effect::ReleaseMergeTurn);
        }
    }

    /// On (re)start in a step state: a dispatched attempt without a recorded outcome did not
    /// survive the runner, so it failed (`KILLED`); otherwise the step is entered again.
    fn restart_step(&mut self, step: Step, fx: &mut Fx) -> Outcome<State> {
        if self.dispatched {
            let usage = Usage::default();
            return self.failed(
                step,
                FailureClass::Killed,
                Signature::INTERRUPTED,
                &usage,
                None,
                fx,
            );
        }
        self.enter(step, fx)
    }

    /// A restart in another mode. Counters carry over; the cycle in progress continues unless
    /// the new mode is about another issue (it is put aside: main checked out, the cycle's
    /// counters dropped, not escalated) or names a single step (that step is entered).
    /// `None`: carry on as on `Start`.
    fn change_mode(&mut self, mode: Mode, fx: &mut Fx) -> Option<Outcome<State>> {
        self.mode = mode;
        match (mode, self.issue) {
            (Mode::SingleIssue(n), Some(current)) if n != current => {
                self.dispatched = false;
                fx.push(Effect::CheckoutMain);
                fx.push(Effect::ResetCycle);
                Some(self.select_next(fx))
            }
            (Mode::SingleStep(step), Some(_)) => Some(self.enter(step, fx)),
            _ => None,
        }
    }

    /// Everything a step state does; the ten step handlers only name their step.
    fn on_step(&mut self, step: Step, event: &Event, fx: &mut Fx) -> Outcome<State> {
        match *event {
            Event::Start => self.restart_step(step, fx),
            // `--step` naming the step whose attempt was cut short: that attempt counts, as
            // on any restart, or a crash loop under `--step` would never escalate.
            Event::ModeChanged {
                mode: mode @ Mode::SingleStep(s),
            } if s == step && self.dispatched => {
                self.mode = mode;
                self.restart_step(step, fx)
            }
            Event::ModeChanged { mode } => match self.change_mode(mode, fx) {
                Some(outcome) => outcome,
                None => self.restart_step(step, fx),
            },
            Event::PreconditionsOk { step: s } if s == step && !self.dispatched => {
                if step == Step::Merge && self.turn_held {
                    self.turn_held = false;
                    return self.merge_in_turn(fx);
                }
                if step == Step::Merge {
                    return self.merge_ready(fx);
                }
                self.dispatch(step, fx)
            }
            Event::AlreadyDone { step: s } if s == step && !self.dispatched => {
                self.give_turn_back(step, fx);
                self.advance(step, fx)
            }
            Event::PreconditionFailed { step: s, check } if s == step && !self.dispatched => {
                self.give_turn_back(step, fx);
                self.bounce(step, check, fx)
            }
            Event::StepSucceeded { step: s, usage } if s == step && self.dispatched => {
                if step == Step::Merge {
                    self.release_merge_turn(fx);
                }
                let usage = self.with_pending(&usage);
                self.succeeded(step, &usage, fx)
            }
            Event::StepFailed {
                step: s,
                class,
                signature,
                usage,
                wait_hint_secs,
            } if s == step && self.dispatched => {
                if step == Step::Merge {
                    self.release_merge_turn(fx);
                }
                let usage = self.with_pending(&usage);
                self.failed(step, class, signature, &usage, wait_hint_secs, fx)
            }
            Event::CiPending { usage } if step == Step::MonitorCi && self.dispatched => {
                self.ci_pending(&usage, fx)
            }
            Event::NetworkFailed => self.network_failed(fx),
            Event::IssueWithdrawn { issue } if Some(issue) == self.issue && !self.dispatched => {
                self.give_turn_back(step, fx);
                self.withdraw(issue, fx)
            }
            Event::WorkspaceUnfit { step: s } if s == step => {
                self.halt(HaltReason::Workspace { step }, fx)
            }
            Event::MergeTurnTaken if self.turn_asked(step) => self.merge_turn_taken(fx),
            Event::MergeTurnBusy if self.turn_asked(step) => self.merge_turn_busy(fx),
            // The tracker's merge lease cannot be written: the environment's, like a wait
            // past its limit.
            Event::TrackerWriteFailed if self.turn_asked(step) => {
                let waited_ms = self.merge_wait.waited_ms();
                self.halt(HaltReason::MergeTurnHeld { waited_ms }, fx)
            }
            Event::MergeRaceLost {
                class,
                signature,
                usage,
            } if step == Step::Merge && self.dispatched => {
                self.merge_race_lost(class, signature, &usage, fx)
            }
            _ => Super,
        }
    }
}

/// The state of a step, for transitions computed from data.
pub fn state_of(step: Step) -> State {
    match step {
        Step::StartCycle => State::start_cycle(),
        Step::StartIssue => State::start_issue(),
        Step::WriteSpecs => State::write_specs(),
        Step::Implement => State::implement(),
        Step::Simplify => State::simplify(),
        Step::Verify => State::verify(),
        Step::CommitPush => State::commit_push(),
        Step::CreatePr => State::create_pr(),
        Step::MonitorCi => State::monitor_ci(),
        Step::Merge => State::merge(),
    }
}

#[state_machine(
    initial = "State::selecting()",
    state(derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)),
    superstate(derive(Debug))
)]
impl Runner {
    /// Session-wide behaviour: a signal stops the session wherever it is; the journal keeps
    /// the position so that the next start continues it.
    #[superstate]
    fn session(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        match *event {
            Event::ShutdownRequested { signal } => {
                context.push(Effect::Cleanup);
                if self.issue.is_some() {
                    context.push(Effect::AutoCommit(CommitKind::OnSignal(signal)));
                }
                context.push(Effect::Notify(Notice::ShuttingDown { signal }));
                context.push(Effect::Exit { code: 0 });
                self.dispatched = false;
                Handled
            }
            // Wherever it happens (selecting, probing a step, closing an issue): no attempt is
            // spent and no issue blamed; the session stops until a person sees to the network.
            Event::NetworkUnavailable => self.halt(HaltReason::Network, context),
            _ => Super,
        }
    }

    #[state(superstate = "session")]
    fn selecting(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        match *event {
            Event::Start => {
                self.request(State::selecting(), Effect::SelectIssue, context);
                Handled
            }
            Event::ModeChanged { mode } => {
                self.mode = mode;
                self.request(State::selecting(), Effect::SelectIssue, context);
                Handled
            }
            Event::NetworkFailed => self.network_failed(context),
            Event::IssueSelected { issue } => {
                let first = match self.mode {
                    Mode::SingleStep(step) => step,
                    _ => Step::StartCycle,
                };
                self.start_issue_cycle(issue, first, context)
            }
            Event::Resume { issue, next } => {
                if self.excluded(issue) {
                    // Work left on an escalated, merged or withdrawn issue's branch is not
                    // ours to continue.
                    context.push(Effect::CheckoutMain);
                    self.request(State::selecting(), Effect::SelectIssue, context);
                    return Handled;
                }
                let first = match self.mode {
                    Mode::SingleStep(step) => step,
                    _ => next,
                };
                self.start_issue_cycle(issue, first, context)
            }
            Event::AlreadyMerged { issue } => self.merged(issue, context),
            Event::NoIssues => {
                context.push(Effect::Notify(Notice::NothingToDo));
                self.finish(0, context)
            }
            Event::AllEscalated => self.halt(HaltReason::AllIssuesEscalated, context),
            Event::AllBlocked => self.halt(HaltReason::AllIssuesBlocked, context),
            _ => Super,
        }
    }

    /// A cycle works on one issue from startCycle to merge.
    #[superstate(superstate = "session")]
    fn cycle(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        match *event {
            // Observed progress on start overrides the recorded position, never the counters.
            Event::Resume { issue, next } if Some(issue) == self.issue => self.enter(next, context),
            _ => Super,
        }
    }

    #[superstate(superstate = "cycle")]
    fn specify(event: &Event) -> Outcome<State> {
        let _ = event;
        Super
    }

    #[superstate(superstate = "cycle")]
    fn build(event: &Event) -> Outcome<State> {
        let _ = event;
        Super
    }

    #[superstate(superstate = "cycle")]
    fn deliver(event: &Event) -> Outcome<State> {
        let _ = event;
        Super
    }

    #[state(superstate = "specify")]
    fn start_cycle(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::StartCycle, event, context)
    }

    #[state(superstate = "specify")]
    fn start_issue(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::StartIssue, event, context)
    }

    #[state(superstate = "specify")]
    fn write_specs(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::WriteSpecs, event, context)
    }

    #[state(superstate = "build")]
    fn implement(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::Implement, event, context)
    }

    #[state(superstate = "build")]
    fn simplify(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::Simplify, event, context)
    }

    #[state(superstate = "build")]
    fn verify(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::Verify, event, context)
    }

    #[state(superstate = "deliver")]
    fn commit_push(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::CommitPush, event, context)
    }

    #[state(superstate = "deliver")]
    fn create_pr(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::CreatePr, event, context)
    }

    #[state(superstate = "deliver")]
    fn monitor_ci(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::MonitorCi, event, context)
    }

    #[state(superstate = "deliver")]
    fn merge(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::Merge, event, context)
    }

    /// Waiting out a rate limit, an overload or a quota window; no attempt is consumed.
    #[state(superstate = "cycle")]
    fn backing_off(
        &mut self,
        step: &Step,
        seconds: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        match *event {
            Event::ModeChanged { mode } => match self.change_mode(mode, context) {
                Some(outcome) => outcome,
                None => {
                    context.push(Effect::Wait { seconds: *seconds });
                    Handled
                }
            },
            Event::Start => {
                context.push(Effect::Wait { seconds: *seconds });
                Handled
            }
            Event::WaitOver => self.enter(*step, context),
            _ => Super,
        }
    }

    /// The merge happened; the tracker is being told. Nothing here can unmerge it.
    #[state(superstate = "session")]
    fn recording_merge(&mut self, issue: &u32, event: &Event, context: &mut Fx) -> Outcome<State> {
        let issue = *issue;
        let refused = HaltReason::TrackerWrite {
            issue,
            merged: true,
        };
        self.on_tracker_write(event, refused, context, |r, fx| r.merge_recorded(issue, fx))
    }

    /// The cycle gave up on its issue; the tracker is being told (durable quarantine).
    #[state(superstate = "session")]
    fn escalating(
        &mut self,
        step: &Step,
        cause: &EscalationCause,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        let (step, cause) = (*step, *cause);
        let refused = HaltReason::TrackerWrite {
            issue: self.current_issue(),
            merged: false,
        };
        self.on_tracker_write(event, refused, context, |r, fx| {
            r.escalation_recorded(step, cause, fx)
        })
    }

    /// The same failure ended two issues in a row; the tracker is lifting the first one's
    /// quarantine before the session halts.
    #[state(superstate = "session")]
    fn releasing(
        &mut self,
        step: &Step,
        class: &FailureClass,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        let (step, class) = (*step, *class);
        let first = self.last_escalation.map_or(0, |(issue, _)| issue);
        let refused = HaltReason::TrackerWrite {
            issue: first,
            merged: false,
        };
        self.on_tracker_write(event, refused, context, |r, fx| {
            r.release_recorded(first, step, class, fx)
        })
    }

    /// A runner action failed on the network; its request is issued again after the wait.
    #[state(superstate = "session")]
    fn waiting_for_network(
        &mut self,
        seconds: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        match *event {
            Event::WaitOver => self.reissue(context),
            _ => self.wait_again(*seconds, event, context),
        }
    }

    /// monitorCI's attempt is under way and CI has not settled: the pause before the next look.
    /// A restart waits again and looks (what CI says is idempotent to read); the attempt's
    /// waits so far stay counted, so no restart lengthens it past the step's time limit.
    #[state(superstate = "deliver")]
    fn waiting_for_ci(&mut self, seconds: &u64, event: &Event, context: &mut Fx) -> Outcome<State> {
        match *event {
            Event::WaitOver => {
                self.dispatched = true;
                let look = Effect::LookAtCi {
                    issue: self.current_issue(),
                    look: self.ci_waits + 1,
                };
                self.request(State::monitor_ci(), look, context);
                Transition(State::monitor_ci())
            }
            _ => self.wait_again(*seconds, event, context),
        }
    }

    /// The pause before asking for the merge turn again: it was busy, or a merge lost a push
    /// race. No attempt is under way; a restart pauses again and asks.
    #[state(superstate = "deliver")]
    fn waiting_to_merge(
        &mut self,
        millis: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        let pause = Effect::Pause { millis: *millis };
        match *event {
            Event::WaitOver => self.take_merge_turn(context),
            Event::Start => {
                context.push(pause);
                Handled
            }
            Event::ModeChanged { mode } => match self.change_mode(mode, context) {
                Some(outcome) => outcome,
                None => {
                    context.push(pause);
                    Handled
                }
            },
            _ => Super,
        }
    }

    /// Manual approval: a person decides what happens after retries are spent.
    #[state(superstate = "cycle")]
    fn awaiting_decision(
        &mut self,
        step: &Step,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        match *event {
            Event::ModeChanged { mode } => match self.change_mode(mode, context) {
                Some(outcome) => outcome,
                None => {
                    context.push(Effect::AskDecision {
                        step: *step,
                        issue: self.current_issue(),
                    });
                    Handled
                }
            },
            Event::Start => {
                context.push(Effect::AskDecision {
                    step: *step,
                    issue: self.current_issue(),
                });
                Handled
            }
            Event::Decided {
                option: DecisionOption::Retry,
            } => {
                // One more attempt: the spent attempt is given back, so the next failure
                // lands on this decision point again rather than past the limit.
                let i = step.index();
                self.attempts[i] = self.attempts[i].saturating_sub(1);
                self.same_failure[i] = 0;
                self.last_signature[i] = None;
                self.enter(*step, context)
            }
            Event::Decided {
                option: DecisionOption::Skip,
            } => self.escalate(*step, EscalationCause::OperatorSkipped, context),
            Event::Decided {
                option: DecisionOption::Halt,
            } => self.halt(HaltReason::Operator, context),
            Event::DecisionTimedOut => self.halt(HaltReason::DecisionTimeout, context),
            _ => Super,
        }
    }

    /// Absorbing: nothing leaves a halt but a person (`--ack-halt` starts a new session).
    #[state]
    fn halted(reason: &HaltReason, event: &Event, context: &mut Fx) -> Outcome<State> {
        if let Event::Start | Event::ModeChanged { .. } = event {
            context.push(Effect::Halt(*reason));
            context.push(Effect::Exit { code: 1 });
        }
        Handled
    }

    /// Absorbing: the session ended normally (or a single issue/step run ended).
    #[state]
    fn finished(code: &u8, event: &Event, context: &mut Fx) -> Outcome<State> {
        if let Event::Start | Event::ModeChanged { .. } = event {
            context.push(Effect::Exit { code: *code });
        }
        Handled
    }
}

impl State {
    /// The step this state works on, if any.
    pub fn step(&self) -> Option<Step> {
        Some(match self {
            State::StartCycle {} => Step::StartCycle,
            State::StartIssue {} => Step::StartIssue,
            State::WriteSpecs {} => Step::WriteSpecs,
            State::Implement {} => Step::Implement,
            State::Simplify {} => Step::Simplify,
            State::Verify {} => Step::Verify,
            State::CommitPush {} => Step::CommitPush,
            State::CreatePr {} => Step::CreatePr,
            State::MonitorCi {} => Step::MonitorCi,
            State::Merge {} => Step::Merge,
            State::WaitingForCi { .. } => Step::MonitorCi,
            State::WaitingToMerge { .. } => Step::Merge,
            State::BackingOff { step, .. }
            | State::AwaitingDecision { step }
            | State::Escalating { step, .. }
            | State::Releasing { step, .. } => *step,
            _ => return None,
        })
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, State::Halted { .. } | State::Finished { .. })
    }

    /// The same state with its issue number taken out (see [`Effect::without_issue`]).
    pub fn without_issue(self) -> State {
        match self {
            State::RecordingMerge { .. } => State::recording_merge(0),
            other => other,
        }
    }

    /// The variant's name, as used in diagrams and the journal.
    pub fn name(&self) -> &'static str {
        match self {
            State::Selecting {} => "Selecting",
            State::StartCycle {} => "StartCycle",
            State::StartIssue {} => "StartIssue",
            State::WriteSpecs {} => "WriteSpecs",
            State::Implement {} => "Implement",
            State::Simplify {} => "Simplify",
            State::Verify {} => "Verify",
            State::CommitPush {} => "CommitPush",
            State::CreatePr {} => "CreatePr",
            State::MonitorCi {} => "MonitorCi",
            State::Merge {} => "Merge",
            State::BackingOff { .. } => "BackingOff",
            State::AwaitingDecision { .. } => "AwaitingDecision",
            State::RecordingMerge { .. } => "RecordingMerge",
            State::Escalating { .. } => "Escalating",
            State::Releasing { .. } => "Releasing",
            State::WaitingForNetwork { .. } => "WaitingForNetwork",
            State::WaitingForCi { .. } => "WaitingForCi",
            State::WaitingToMerge { .. } => "WaitingToMerge",
            State::Halted { .. } => "Halted",
            State::Finished { .. } => "Finished",
        }
    }
}
