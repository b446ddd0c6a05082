//! An effect oracle: a second, plain implementation of the lifecycle contract
//! (docs/lifecycle.md, docs/counters-and-bounds.md) that predicts the exact effects of every
//! event, checked against the machine event by event on generated sessions.
//!
//! The generator covers what the other properties leave out: budgets (cost and time, issue
//! and session), single-issue and single-step modes, manual approval (retry, skip, halt,
//! timeout), quota waits with and without a reset hint, repair iterations, restarts in every
//! state and in other modes, shutdowns, and stale or duplicate events (the kind a resumed
//! runner produces), which the machine must ignore.
//!
//! Mutations this catches that the counter model cannot: a budget comparison or a usage sum
//! changed, the repair limit off by one, the auto-commit after implement dropped, the quota
//! cap ignored, a stale event acted on, single-step mode ignored, the spend statistics wrong.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sdlc_machine::failure::{Disposition, FailureClass, Signature};
use sdlc_machine::machine::{
    CommitKind, Core, DecisionOption, Effect, EscalationCause, Event, HaltReason, Limits, Mode,
    Notice, Signal, Spend, Usage,
};
use sdlc_machine::step::{Check, Step};
use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy, PartialEq)]
enum At {
    Selecting,
    Step(Step),
    Backoff(Step, u64),
    Decision(Step),
    Halted(HaltReason),
    Finished(u8),
}

/// The model: every counter the contract names, kept the way the contract words it.
#[derive(Debug, Clone)]
struct Model {
    l: Limits,
    mode: Mode,
    at: At,
    issue: Option<u32>,
    dispatched: bool,
    attempts: [u32; Step::COUNT],
    bounces: u32,
    same: [u32; Step::COUNT],
    last_sig: [Option<Signature>; Step::COUNT],
    last_class: [Option<FailureClass>; Step::COUNT],
    repairs: [u32; Step::COUNT],
    issue_cost: u64,
    issue_ms: u64,
    streak: u32,
    escalated: BTreeSet<u32>,
    phase: [u32; Step::COUNT],
    waits: u32,
    session_cost: u64,
    last_usage: Usage,
    merges: u64,
    total: Spend,
    since_merge: Spend,
    failed_by_class: [Spend; FailureClass::COUNT],
    fx: Vec<Effect>,
}

fn add(s: &mut Spend, u: &Usage) {
    s.invocations += 1;
    s.turns += u64::from(u.turns);
    s.cost_micros += u.cost_micros;
}

impl Model {
    fn new(l: &Limits, mode: Mode) -> Self {
        Model {
            l: l.clone(),
            mode,
            at: At::Selecting,
            issue: None,
            dispatched: false,
            attempts: [0; Step::COUNT],
            bounces: 0,
            same: [0; Step::COUNT],
            last_sig: [None; Step::COUNT],
            last_class: [None; Step::COUNT],
            repairs: [0; Step::COUNT],
            issue_cost: 0,
            issue_ms: 0,
            streak: 0,
            escalated: BTreeSet::new(),
            phase: [0; Step::COUNT],
            waits: 0,
            session_cost: 0,
            last_usage: Usage::default(),
            merges: 0,
            total: Spend::default(),
            since_merge: Spend::default(),
            failed_by_class: [Spend::default(); FailureClass::COUNT],
            fx: Vec::new(),
        }
    }

    fn issue(&self) -> u32 {
        self.issue.unwrap_or(0)
    }

    fn single_step(&self) -> bool {
        matches!(self.mode, Mode::SingleStep(_))
    }

    fn enter(&mut self, step: Step) {
        self.dispatched = false;
        self.fx.push(Effect::CheckPreconditions { step });
        self.at = At::Step(step);
    }

    fn halt(&mut self, r: HaltReason) {
        self.fx
            .extend([Effect::Cleanup, Effect::Halt(r), Effect::Exit { code: 1 }]);
        self.at = At::Halted(r);
    }

    fn finish(&mut self, code: u8) {
        self.fx.push(Effect::Exit { code });
        self.at = At::Finished(code);
    }

    fn select_next(&mut self) {
        self.issue = None;
        self.dispatched = false;
        self.fx.push(Effect::SelectIssue);
        self.at = At::Selecting;
    }

    fn start_cycle(&mut self, issue: u32, first: Step) {
        if self.escalated.contains(&issue) {
            return self.halt(HaltReason::AllIssuesEscalated);
        }
        self.issue = Some(issue);
        self.dispatched = false;
        self.attempts = [0; Step::COUNT];
        self.bounces = 0;
        self.same = [0; Step::COUNT];
        self.last_sig = [None; Step::COUNT];
        self.last_class = [None; Step::COUNT];
        self.repairs = [0; Step::COUNT];
        self.issue_cost = 0;
        self.issue_ms = 0;
        self.fx.push(Effect::Notify(Notice::CycleStarted { issue }));
        self.enter(first);
    }

    fn merged(&mut self, issue: u32) {
        self.streak = 0;
        self.merges += 1;
        self.since_merge = Spend::default();
        self.failed_by_class = [Spend::default(); FailureClass::COUNT];
        self.fx.push(Effect::RecordMerged { issue });
        self.fx.push(Effect::Notify(Notice::Merged { issue }));
        self.fx.push(Effect::CheckoutMain);
        if matches!(self.mode, Mode::SingleIssue(_)) {
            return self.finish(0);
        }
        self.fx.push(Effect::ResetCycle);
        self.select_next();
    }

    fn advance(&mut self, step: Step) {
        if self.single_step() {
            return self.finish(0);
        }
        match self.l.next_step(step) {
            Some(next) => self.enter(next),
            None => self.merged(self.issue()),
        }
    }

    fn escalate(&mut self, step: Step, cause: EscalationCause) {
        let issue = self.issue();
        self.escalated.insert(issue);
        self.streak += 1;
        let notice = Effect::Notify(Notice::Escalated {
            issue,
            step,
            cause,
            consecutive: self.streak,
        });
        self.fx.push(Effect::MarkEscalated { issue });
        if matches!(self.mode, Mode::SingleIssue(_)) {
            self.fx.extend([
                Effect::Cleanup,
                Effect::AutoCommit(CommitKind::PartialWork),
                Effect::CheckoutMain,
                notice,
            ]);
            return self.finish(1);
        }
        if self.streak >= self.l.max_consecutive_escalations {
            return self.halt(HaltReason::ConsecutiveEscalations { cause, step });
        }
        self.fx.extend([
            Effect::Cleanup,
            Effect::AutoCommit(CommitKind::PartialWork),
            Effect::CheckoutMain,
            Effect::ResetCycle,
            notice,
        ]);
        self.select_next();
    }

    fn give_up(&mut self, step: Step, cause: EscalationCause) {
        if self.l.manual_approval {
            self.fx.push(Effect::AskDecision {
                step,
                issue: self.issue(),
            });
            self.at = At::Decision(step);
            return;
        }
        self.escalate(step, cause);
    }

    /// A budget is spent when what was spent reaches it or one more attempt like the last
    /// one would pass it.
    fn over(spent: u64, budget: Option<u64>, last: u64) -> bool {
        budget.is_some_and(|b| spent >= b || spent.saturating_add(last) > b)
    }

    fn dispatch(&mut self, step: Step) {
        let last = self.last_usage;
        if Self::over(
            self.session_cost,
            self.l.per_session_budget_micros,
            last.cost_micros,
        ) {
            return self.halt(HaltReason::SessionBudget);
        }
        if Self::over(
            self.issue_cost,
            self.l.per_issue_budget_micros,
            last.cost_micros,
        ) || Self::over(self.issue_ms, self.l.per_issue_budget_ms, last.elapsed_ms)
        {
            if self.single_step() {
                return self.finish(1);
            }
            return self.escalate(step, EscalationCause::IssueBudget);
        }
        let i = step.index();
        let repair = matches!(step, Step::Verify | Step::MonitorCi)
            && self.last_class[i].is_some_and(FailureClass::code_fixable)
            && self.repairs[i] < self.l.max_repair_iterations;
        if repair {
            self.repairs[i] += 1;
        }
        self.dispatched = true;
        self.fx.push(Effect::RunStep {
            step,
            issue: self.issue(),
            attempt: self.attempts[i] + 1,
            repair,
        });
    }

    fn bounce(&mut self, step: Step, check: Check) {
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

    fn record(&mut self, u: &Usage) {
        self.issue_cost += u.cost_micros;
        self.issue_ms += u.elapsed_ms;
        self.session_cost += u.cost_micros;
        self.last_usage = *u;
        add(&mut self.total, u);
        add(&mut self.since_merge, u);
    }

    fn succeeded(&mut self, step: Step, u: &Usage) {
        let i = step.index();
        self.record(u);
        self.waits = 0;
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

    fn failed(
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
                self.fx.push(Effect::Wait { seconds });
                self.at = At::Backoff(step, seconds);
                return;
            }
            Disposition::Retry | Disposition::EscalateNow => {}
        }
        self.waits = 0;
        self.attempts[i] += 1;
        self.phase[i] += 1;
        if self.last_sig[i] == Some(sig) {
            self.same[i] += 1;
        } else {
            self.same[i] = 1;
            self.last_sig[i] = Some(sig);
        }
        self.last_class[i] = Some(class);
        let limit = self.l.max_consecutive_failures[i];
        if limit > 0 && self.phase[i] >= limit {
            return self.halt(HaltReason::MaxConsecutiveFailures { step, limit });
        }
        if self.single_step() {
            return self.finish(1);
        }
        if class.disposition() == Disposition::EscalateNow {
            return self.escalate(step, EscalationCause::NonRetryable);
        }
        if self.attempts[i] >= self.l.max_retries_per_step {
            return self.give_up(step, EscalationCause::RetriesExhausted);
        }
        let same_limit = self.l.max_consecutive_same_failure;
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

    fn restart_step(&mut self, step: Step) {
        if self.dispatched {
            return self.failed(
                step,
                FailureClass::Killed,
                Signature::INTERRUPTED,
                &Usage::default(),
                None,
            );
        }
        self.enter(step);
    }

    /// `None`: carry on as on a plain restart.
    fn change_mode(&mut self, mode: Mode) -> Option<()> {
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

    fn first_step(&self) -> Step {
        match self.mode {
            Mode::SingleStep(step) => step,
            _ => Step::StartCycle,
        }
    }

    /// The effects of `ev`, exactly.
    fn on(&mut self, ev: &Event) -> Vec<Effect> {
        self.fx.clear();
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
            At::Halted(_) | At::Finished(_) => true,
        };
        if !handled {
            self.on_cycle_or_session(ev);
        }
        std::mem::take(&mut self.fx)
    }

    fn on_selecting(&mut self, ev: &Event) -> bool {
        match *ev {
            Event::Start => self.fx.push(Effect::SelectIssue),
            Event::ModeChanged { mode } => {
                self.mode = mode;
                self.fx.push(Effect::SelectIssue);
            }
            Event::IssueSelected { issue } => self.start_cycle(issue, self.first_step()),
            Event::Resume { issue, next } => {
                if self.escalated.contains(&issue) {
                    // An escalated issue's branch is not continued.
                    self.fx.extend([Effect::CheckoutMain, Effect::SelectIssue]);
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
            Event::AllEscalated => self.halt(HaltReason::AllIssuesEscalated),
            Event::AllBlocked => self.halt(HaltReason::AllIssuesBlocked),
            _ => return false,
        }
        true
    }

    fn on_step(&mut self, step: Step, ev: &Event) -> bool {
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
                self.dispatch(step)
            }
            Event::AlreadyDone { step: s } if s == step && !self.dispatched => self.advance(step),
            Event::PreconditionFailed { step: s, check } if s == step && !self.dispatched => {
                self.bounce(step, check)
            }
            Event::StepSucceeded { step: s, usage } if s == step && self.dispatched => {
                self.succeeded(step, &usage)
            }
            Event::StepFailed {
                step: s,
                class,
                signature,
                usage,
                wait_hint_secs,
            } if s == step && self.dispatched => {
                self.failed(step, class, signature, &usage, wait_hint_secs)
            }
            _ => return false,
        }
        true
    }

    fn on_backoff(&mut self, step: Step, seconds: u64, ev: &Event) -> bool {
        match *ev {
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.fx.push(Effect::Wait { seconds });
                }
            }
            Event::Start => self.fx.push(Effect::Wait { seconds }),
            Event::WaitOver => self.enter(step),
            _ => return false,
        }
        true
    }

    fn on_decision(&mut self, step: Step, ev: &Event) -> bool {
        let ask = Effect::AskDecision {
            step,
            issue: self.issue(),
        };
        match *ev {
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.fx.push(ask);
                }
            }
            Event::Start => self.fx.push(ask),
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
            } => self.escalate(step, EscalationCause::OperatorSkipped),
            Event::Decided {
                option: DecisionOption::Halt,
            } => self.halt(HaltReason::Operator),
            Event::DecisionTimedOut => self.halt(HaltReason::DecisionTimeout),
            _ => return false,
        }
        true
    }

    fn on_cycle_or_session(&mut self, ev: &Event) {
        let in_cycle = !matches!(self.at, At::Selecting);
        match *ev {
            Event::Resume { issue, next } if in_cycle && Some(issue) == self.issue => {
                self.enter(next)
            }
            Event::ShutdownRequested { signal } => {
                self.fx.push(Effect::Cleanup);
                if self.issue.is_some() {
                    self.fx
                        .push(Effect::AutoCommit(CommitKind::OnSignal(signal)));
                }
                self.fx
                    .push(Effect::Notify(Notice::ShuttingDown { signal }));
                self.fx.push(Effect::Exit { code: 0 });
                self.dispatched = false;
            }
            Event::NetworkUnavailable => self.halt(HaltReason::Network),
            _ => {}
        }
    }

    fn terminal(&self) -> bool {
        matches!(self.at, At::Halted(_) | At::Finished(_))
    }
}

// ---- generated sessions --------------------------------------------------------------------

/// A tape of choices: each answer the world gives is picked from it; once it runs out every
/// choice is 0, the cooperative one, so every session ends.
struct Tape {
    choices: Vec<u32>,
    at: usize,
}

impl Tape {
    fn pick(&mut self, n: u32) -> u32 {
        let c = self.choices.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        c % n
    }
    fn exhausted(&self) -> bool {
        self.at >= self.choices.len()
    }
}

const CLASSES: [FailureClass; 11] = [
    FailureClass::TestAssertion,
    FailureClass::Lint,
    FailureClass::BuildCompile,
    FailureClass::Timeout,
    FailureClass::Killed,
    FailureClass::RateLimit,
    FailureClass::Overloaded,
    FailureClass::Quota,
    FailureClass::ContextWindow,
    FailureClass::Unknown,
    FailureClass::Auth,
];

/// Mostly failures the issue owns; an environment failure (which halts at once) is rare.
fn failure_class(t: &mut Tape) -> FailureClass {
    let n = CLASSES.len() as u32;
    match t.pick(2 * n) {
        i if i < n - 1 => CLASSES[i as usize],
        i if i < 2 * n - 1 => CLASSES[(i % (n - 1)) as usize],
        _ => FailureClass::Auth,
    }
}

fn usage(t: &mut Tape) -> Usage {
    Usage {
        cost_micros: [0, 150_000, 1_000_000, 4_000_000][t.pick(4) as usize],
        elapsed_ms: [0, 60_000, 900_000][t.pick(3) as usize],
        turns: t.pick(40),
    }
}

fn any_step(t: &mut Tape) -> Step {
    Step::ALL[t.pick(Step::COUNT as u32) as usize]
}

/// A stale, duplicate or out-of-place event, as a resumed or confused driver might send.
fn noise(t: &mut Tape, last: Option<Event>) -> Event {
    match t.pick(9) {
        0 => last.unwrap_or(Event::WaitOver),
        1 => Event::PreconditionsOk { step: any_step(t) },
        2 => Event::StepSucceeded {
            step: any_step(t),
            usage: usage(t),
        },
        3 => Event::StepFailed {
            step: any_step(t),
            class: failure_class(t),
            signature: Signature(u64::from(t.pick(3))),
            usage: usage(t),
            wait_hint_secs: None,
        },
        4 => Event::WaitOver,
        5 => Event::AlreadyDone { step: any_step(t) },
        6 => Event::Decided {
            option: DecisionOption::ALL[t.pick(3) as usize],
        },
        7 => Event::Resume {
            issue: 1 + t.pick(3),
            next: any_step(t),
        },
        _ => Event::IssueSelected {
            issue: 1 + t.pick(3),
        },
    }
}

/// The world's answer to the request in `effects`.
fn answer(
    t: &mut Tape,
    effects: &[Effect],
    merged: &BTreeSet<u32>,
    escalated: &BTreeSet<u32>,
    backlog: u32,
    mode: Mode,
) -> Event {
    let request = effects.iter().rev().find(|e| e.is_request()).copied();
    match request {
        Some(Effect::SelectIssue) => {
            if let Mode::SingleIssue(n) = mode {
                return Event::IssueSelected { issue: n };
            }
            let open: Vec<u32> = (1..=backlog)
                .filter(|n| !merged.contains(n) && !escalated.contains(n))
                .collect();
            match open.first() {
                Some(&issue) if t.pick(30) != 29 => Event::IssueSelected { issue },
                Some(_) => Event::AllBlocked,
                None if (1..=backlog).any(|n| escalated.contains(&n)) => Event::AllEscalated,
                None => Event::NoIssues,
            }
        }
        Some(Effect::CheckPreconditions { step }) => match t.pick(20) {
            18 => Event::PreconditionFailed {
                step,
                check: Check::of(step)
                    .first()
                    .copied()
                    .unwrap_or(Check::CleanWorkingTree),
            },
            19 => Event::AlreadyDone { step },
            _ => Event::PreconditionsOk { step },
        },
        Some(Effect::RunStep { step, .. }) => {
            let u = usage(t);
            match t.pick(20) {
                0..=16 => Event::StepSucceeded { step, usage: u },
                _ => {
                    let class = failure_class(t);
                    let hint = match (class, t.pick(3)) {
                        (FailureClass::Quota, 1) => Some(120),
                        (FailureClass::Quota, 2) => Some(1_000_000),
                        _ => None,
                    };
                    Event::StepFailed {
                        step,
                        class,
                        signature: Signature(u64::from(t.pick(3))),
                        usage: u,
                        wait_hint_secs: hint,
                    }
                }
            }
        }
        Some(Effect::Wait { .. }) => Event::WaitOver,
        Some(Effect::AskDecision { .. }) => match t.pick(4) {
            0 => Event::Decided {
                option: DecisionOption::Retry,
            },
            1 => Event::Decided {
                option: DecisionOption::Skip,
            },
            2 => Event::Decided {
                option: DecisionOption::Halt,
            },
            _ => Event::DecisionTimedOut,
        },
        // After an exit that is not the end (a shutdown), the runner is started again.
        Some(Effect::Exit { .. }) | Some(_) | None => Event::Start,
    }
}

/// Drives the machine and the model side by side; returns the first disagreement.
fn compare(l: &Limits, mode: Mode, backlog: u32, choices: Vec<u32>) -> Result<usize, String> {
    let mut core = Core::new(l.clone(), mode);
    let mut model = Model::new(l, mode);
    let mut tape = Tape { choices, at: 0 };
    let mut merged = BTreeSet::new();
    let mut event = Event::Start;
    for n in 0..4000 {
        let actual = core.handle(&event).to_vec();
        let expected = model.on(&event);
        if actual != expected {
            return Err(format!(
                "event {n} {event:?} in {:?}:\n machine {actual:?}\n   model {expected:?}",
                model.at
            ));
        }
        let r = core.runner();
        let counters = (
            r.attempts,
            r.bounces,
            r.repairs,
            r.issue_cost_micros,
            r.issue_elapsed_ms,
            r.session_cost_micros,
            r.wait_streak,
            r.consecutive_escalations,
        );
        let predicted = (
            model.attempts,
            model.bounces,
            model.repairs,
            model.issue_cost,
            model.issue_ms,
            model.session_cost,
            model.waits,
            model.streak,
        );
        if counters != predicted {
            return Err(format!(
                "counters after {event:?}: {counters:?} != {predicted:?}"
            ));
        }
        let stats = (
            r.stats.merges,
            r.stats.total,
            r.stats.since_merge,
            r.stats.failed_by_class,
        );
        if stats
            != (
                model.merges,
                model.total,
                model.since_merge,
                model.failed_by_class,
            )
        {
            return Err(format!("statistics after {event:?}: {:?}", r.stats));
        }
        if core.is_terminal() != model.terminal() {
            return Err(format!("terminal after {event:?}: {}", core.is_terminal()));
        }
        for e in &actual {
            if let Effect::RecordMerged { issue } = e {
                merged.insert(*issue);
            }
        }
        if model.terminal() {
            return Ok(n);
        }
        let last = Some(event);
        event = if !tape.exhausted() && tape.pick(20) == 19 {
            // Noise, a restart, a shutdown or a restart in another mode.
            match tape.pick(5) {
                0 => Event::Start,
                1 => Event::ShutdownRequested {
                    signal: Signal::Term,
                },
                2 => Event::ModeChanged {
                    mode: match tape.pick(3) {
                        0 => Mode::Continuous,
                        1 => Mode::SingleIssue(1 + tape.pick(3)),
                        _ => Mode::SingleStep(any_step(&mut tape)),
                    },
                },
                _ => noise(&mut tape, last),
            }
        } else {
            answer(
                &mut tape,
                &actual,
                &merged,
                &model.escalated,
                backlog,
                model.mode,
            )
        };
    }
    Err("the session did not end within 4000 events".into())
}

fn limits() -> impl Strategy<Value = Limits> {
    let budget = |values: Vec<u64>| prop_oneof![3 => Just(None), 1 => proptest::sample::select(values).prop_map(Some)];
    (
        (
            1u32..=4,
            0u32..=2,
            1u32..=4,
            prop_oneof![Just(0u32), Just(2)],
        ),
        (0u32..=4, 0u32..=3, any::<bool>(), any::<bool>()),
        (
            budget(vec![1, 3_000_000, 9_000_000]),
            budget(vec![2_000_000, 10_000_000, 30_000_000]),
            budget(vec![1, 2_000_000, 6_000_000]),
        ),
        (
            proptest::sample::select(vec![60u64, 300, 3_600]),
            prop::collection::vec((0usize..Step::COUNT, 1u32..=3), 0..2),
        ),
    )
        .prop_map(
            |((r, b, e, s), (w, repairs, simplify, manual), (pi, ps, pt), (quota, phases))| {
                let mut f = [0u32; Step::COUNT];
                for (i, v) in phases {
                    f[i] = v;
                }
                Limits {
                    max_retries_per_step: r,
                    max_bounce_retries: b,
                    max_consecutive_escalations: e,
                    max_consecutive_same_failure: s,
                    max_consecutive_failures: f,
                    max_rate_limit_waits: w,
                    backoff_initial_secs: 7,
                    backoff_max_secs: 100,
                    max_quota_wait_secs: quota,
                    max_repair_iterations: repairs,
                    simplify_enabled: simplify,
                    per_issue_budget_micros: pi,
                    per_session_budget_micros: ps,
                    per_issue_budget_ms: pt,
                    manual_approval: manual,
                }
            },
        )
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        7 => Just(Mode::Continuous),
        2 => (1u32..=3).prop_map(Mode::SingleIssue),
        1 => (0usize..Step::COUNT).prop_map(|i| Mode::SingleStep(Step::ALL[i])),
    ]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 20_000,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/effect_oracle.txt"
        )))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_machine_emits_exactly_the_effects_the_contract_predicts(
        l in limits(),
        m in mode(),
        backlog in 1u32..4,
        choices in prop::collection::vec(any::<u32>(), 0..400),
    ) {
        if let Err(diff) = compare(&l, m, backlog, choices) {
            prop_assert!(false, "{}", diff);
        }
    }
}

/// The cooperative session (every answer the first choice) merges every issue: the oracle is
/// not vacuous.
#[test]
fn a_cooperative_session_merges_its_backlog() {
    let l = Limits::default();
    let mut core = Core::new(l.clone(), Mode::Continuous);
    let mut model = Model::new(&l, Mode::Continuous);
    let mut tape = Tape {
        choices: vec![],
        at: 0,
    };
    let mut merged = BTreeSet::new();
    let mut event = Event::Start;
    let mut implemented = 0;
    while !model.terminal() {
        let effects = core.handle(&event).to_vec();
        assert_eq!(effects, model.on(&event));
        for e in &effects {
            match e {
                Effect::RecordMerged { issue } => {
                    merged.insert(*issue);
                }
                Effect::AutoCommit(CommitKind::Implemented { .. }) => implemented += 1,
                _ => {}
            }
        }
        event = answer(
            &mut tape,
            &effects,
            &merged,
            &model.escalated,
            3,
            Mode::Continuous,
        );
    }
    assert_eq!(merged, BTreeSet::from([1, 2, 3]));
    assert_eq!(implemented, 3);
    assert_eq!(core.runner().stats.merges, 3);
}
