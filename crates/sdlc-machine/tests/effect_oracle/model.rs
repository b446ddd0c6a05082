//! The model: the lifecycle contract restated plainly, one method per rule, with every
//! counter kept the way the contract words it. It shares no code with the machine.

use sdlc_machine::failure::{Disposition, FailureClass, Signature};
use sdlc_machine::machine::{
    CommitKind, DecisionOption, Effect, EscalationCause, Event, HaltReason, Limits, Mode, Notice,
    Spend, Usage,
};
use sdlc_machine::step::{Check, Step};
use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum At {
    Selecting,
    Step(Step),
    Backoff(Step, u64),
    Decision(Step),
    /// The merge is done; the tracker is being told.
    RecordingMerge(u32),
    /// The issue is given up; the tracker is being told.
    Escalating(Step, EscalationCause),
    /// The same failure ended the next issue too; the tracker is lifting the first one's
    /// quarantine before the halt.
    Releasing(Step, FailureClass),
    /// A runner call failed on the network; waiting this many seconds.
    NetworkWait(u64),
    /// monitorCI found CI pending; waiting this many seconds before the next look.
    CiWait(u64),
    /// The merge turn was busy or the merge lost a race: pausing this many milliseconds.
    MergePause(u64),
    Halted(HaltReason),
    Finished(u8),
}

/// The model: every counter the contract names, kept the way the contract words it.
#[derive(Debug, Clone)]
pub struct Model {
    pub l: Limits,
    pub mode: Mode,
    pub at: At,
    pub issue: Option<u32>,
    pub dispatched: bool,
    pub attempts: [u32; Step::COUNT],
    pub bounces: u32,
    pub same: [u32; Step::COUNT],
    pub last_sig: [Option<Signature>; Step::COUNT],
    pub last_class: [Option<FailureClass>; Step::COUNT],
    pub repairs: [u32; Step::COUNT],
    /// Every way each step's attempts failed in this cycle (waits aside), in order.
    pub failed_how: [Vec<(FailureClass, Signature)>; Step::COUNT],
    pub issue_cost: u64,
    pub issue_ms: u64,
    pub streak: u32,
    pub escalated: BTreeSet<u32>,
    pub phase: [u32; Step::COUNT],
    pub waits: u32,
    pub session_cost: u64,
    pub last_usage: Usage,
    pub merges: u64,
    pub total: Spend,
    pub since_merge: Spend,
    pub failed_by_class: [Spend; FailureClass::COUNT],
    /// Merged this session: never selected again.
    pub merged: BTreeSet<u32>,
    /// Taken back by a person this session: never selected again.
    pub withdrawn: BTreeSet<u32>,
    /// The last request the runner answers with a call of its own, and where it was asked.
    pub outstanding: Option<(At, Effect)>,
    /// Network waits in a row on that request.
    pub net_waits: u32,
    /// The last failure of any step: (step, class, signature).
    pub last_failure: Option<(Step, FailureClass, Signature)>,
    /// The issue and the failure that ended the last escalated cycle since the last merge.
    pub last_escalation: Option<(u32, Step, FailureClass, Signature)>,
    /// Whether every failed attempt of that escalation's step in its cycle failed that way.
    pub last_escalation_alone: bool,
    /// In the attempt under way: waits between looks at CI, their seconds, and what the
    /// looks before the outcome cost (added to the outcome's usage).
    pub ci_waits: u32,
    pub ci_waited: u64,
    pub pending: Usage,
    /// The wait for the merge turn under way: milliseconds paused and the next pause.
    pub turn_waited: u64,
    pub turn_next: u64,
    /// Push races the merge attempt under way lost, and whether the next merge run is the
    /// same attempt's again.
    pub races: u32,
    pub rerun: bool,
    /// Milliseconds paused for the merge since its checks last ran: a turn taken after any
    /// pause is followed by the checks again, with the turn held.
    pub paused_since_checks: u64,
    pub holding_turn: bool,
    pub fx: Vec<Effect>,
}

fn add(s: &mut Spend, u: &Usage) {
    s.invocations += 1;
    s.turns += u64::from(u.turns);
    s.cost_micros += u.cost_micros;
}

impl Model {
    pub fn new(l: &Limits, mode: Mode) -> Self {
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
            failed_how: Default::default(),
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
            merged: BTreeSet::new(),
            withdrawn: BTreeSet::new(),
            outstanding: None,
            net_waits: 0,
            last_failure: None,
            last_escalation: None,
            last_escalation_alone: false,
            ci_waits: 0,
            ci_waited: 0,
            pending: Usage::default(),
            turn_waited: 0,
            turn_next: 200,
            races: 0,
            rerun: false,
            paused_since_checks: 0,
            holding_turn: false,
            fx: Vec::new(),
        }
    }

    fn issue(&self) -> u32 {
        self.issue.unwrap_or(0)
    }

    fn single_step(&self) -> bool {
        matches!(self.mode, Mode::SingleStep(_))
    }

    /// A request answered by a call of the runner's own: remembered for network retries.
    fn ask(&mut self, at: At, e: Effect) {
        self.net_waits = 0;
        self.outstanding = Some((at, e));
        self.fx.push(e);
        self.at = at;
    }

    fn network_failed(&mut self) {
        if self.outstanding.is_none() {
            return;
        }
        if self.net_waits >= self.l.max_network_waits {
            return self.halt(HaltReason::Network);
        }
        self.net_waits += 1;
        let seconds = u64::from(self.l.network_backoff_secs(self.net_waits));
        self.fx.push(Effect::Notify(Notice::NetworkWait {
            seconds,
            wait: self.net_waits,
        }));
        self.fx.push(Effect::Wait { seconds });
        self.at = At::NetworkWait(seconds);
    }

    fn ask_again(&mut self) {
        match self.outstanding {
            Some((at, e)) => {
                self.fx.push(e);
                self.at = at;
            }
            None => self.select_next(),
        }
    }

    fn enter(&mut self, step: Step) {
        self.dispatched = false;
        self.paused_since_checks = 0;
        self.holding_turn = false;
        self.ask(At::Step(step), Effect::CheckPreconditions { step });
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
        self.ask(At::Selecting, Effect::SelectIssue);
    }

    fn start_cycle(&mut self, issue: u32, first: Step) {
        if self.escalated.contains(&issue) {
            return self.halt(HaltReason::AllIssuesEscalated);
        }
        if self.merged.contains(&issue) || self.withdrawn.contains(&issue) {
            return self.halt(HaltReason::TrackerStale { issue });
        }
        self.issue = Some(issue);
        self.dispatched = false;
        self.attempts = [0; Step::COUNT];
        self.bounces = 0;
        self.same = [0; Step::COUNT];
        self.last_sig = [None; Step::COUNT];
        self.last_class = [None; Step::COUNT];
        self.repairs = [0; Step::COUNT];
        self.failed_how = Default::default();
        self.issue_cost = 0;
        self.issue_ms = 0;
        self.rerun = false;
        self.fx.push(Effect::Notify(Notice::CycleStarted { issue }));
        self.enter(first);
    }

    fn merged(&mut self, issue: u32) {
        self.streak = 0;
        self.last_escalation = None;
        self.merged.insert(issue);
        self.merges += 1;
        self.since_merge = Spend::default();
        self.failed_by_class = [Spend::default(); FailureClass::COUNT];
        self.dispatched = false;
        self.ask(At::RecordingMerge(issue), Effect::RecordMerged { issue });
    }

    fn merge_recorded(&mut self, issue: u32) {
        self.fx.push(Effect::Notify(Notice::Merged { issue }));
        self.fx.push(Effect::CheckoutMain);
        if matches!(self.mode, Mode::SingleIssue(_)) {
            return self.finish(0);
        }
        self.fx.push(Effect::ResetCycle);
        self.select_next();
    }

    fn withdraw(&mut self, issue: u32) {
        self.withdrawn.insert(issue);
        self.dispatched = false;
        self.fx.extend([
            Effect::Cleanup,
            Effect::CheckoutMain,
            Effect::Notify(Notice::Withdrawn { issue }),
        ]);
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
        let own_failure = matches!(
            cause,
            EscalationCause::RetriesExhausted
                | EscalationCause::SameFailureRepeated
                | EscalationCause::NonRetryable
        );
        let now = match self.last_failure {
            Some((s, class, sig)) if own_failure && s == step => Some((issue, s, class, sig)),
            _ => None,
        };
        if let (Some((_, s, class, sig)), Some((before, s0, class0, sig0))) =
            (now, self.last_escalation)
        {
            if before != issue && (s, class, sig) == (s0, class0, sig0) {
                // The environment's: the second is not quarantined; the first is released
                // when its step never failed any other way in its cycle.
                if self.last_escalation_alone {
                    self.dispatched = false;
                    return self.ask(
                        At::Releasing(step, class),
                        Effect::Unquarantine { issue: before },
                    );
                }
                return self.halt(HaltReason::SameFailureAcrossIssues { step, class });
            }
        }
        self.last_escalation = now;
        self.last_escalation_alone = now.is_some_and(|(_, s, class, sig)| {
            self.failed_how[s.index()]
                .iter()
                .all(|&how| how == (class, sig))
        });
        self.escalated.insert(issue);
        self.streak += 1;
        self.dispatched = false;
        self.ask(At::Escalating(step, cause), Effect::MarkEscalated { issue });
    }

    fn release_recorded(&mut self, first: u32, step: Step, class: FailureClass) {
        if self.escalated.remove(&first) {
            self.streak -= 1;
        }
        self.fx.push(Effect::Notify(Notice::Released {
            issue: first,
            second: self.issue(),
            step,
            class,
        }));
        self.halt(HaltReason::SameFailureAcrossIssues { step, class });
    }

    fn escalation_recorded(&mut self, step: Step, cause: EscalationCause) {
        let issue = self.issue();
        let notice = Effect::Notify(Notice::Escalated {
            issue,
            step,
            cause,
            consecutive: self.streak,
        });
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

    /// Whether a budget forbids another attempt of `step` (and the session, the issue or the
    /// single step ended for it).
    fn budget_spent(&mut self, step: Step) -> bool {
        let last = self.last_usage;
        if Self::over(
            self.session_cost,
            self.l.per_session_budget_micros,
            last.cost_micros,
        ) {
            self.halt(HaltReason::SessionBudget);
            return true;
        }
        if Self::over(
            self.issue_cost,
            self.l.per_issue_budget_micros,
            last.cost_micros,
        ) || Self::over(self.issue_ms, self.l.per_issue_budget_ms, last.elapsed_ms)
        {
            if self.single_step() {
                self.finish(1);
            } else {
                self.escalate(step, EscalationCause::IssueBudget);
            }
            return true;
        }
        false
    }

    fn dispatch(&mut self, step: Step) {
        if self.budget_spent(step) {
            return;
        }
        let i = step.index();
        let repair = matches!(step, Step::Verify | Step::MonitorCi | Step::Merge)
            && self.last_class[i].is_some_and(FailureClass::code_fixable)
            && self.repairs[i] < self.l.max_repair_iterations;
        if repair {
            self.repairs[i] += 1;
        }
        self.dispatched = true;
        self.ci_waits = 0;
        self.ci_waited = 0;
        self.pending = Usage::default();
        self.races = 0;
        self.rerun = false;
        let run = Effect::RunStep {
            step,
            issue: self.issue(),
            attempt: self.attempts[i] + 1,
            repair,
        };
        self.ask(At::Step(step), run);
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
        self.last_failure = Some((step, class, sig));
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
    fn settle(&mut self, u: &Usage) -> Usage {
        let p = std::mem::take(&mut self.pending);
        Usage {
            cost_micros: p.cost_micros + u.cost_micros,
            elapsed_ms: p.elapsed_ms + u.elapsed_ms,
            turns: p.turns + u.turns,
        }
    }

    /// CI pending: the next pause is `initial · 2^waits`, capped, at least a second; when it
    /// would take the attempt's waits past the step's time limit, the attempt fails.
    fn ci_pending(&mut self, u: &Usage) {
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
        self.fx.push(Effect::Wait { seconds: pause });
        self.at = At::CiWait(pause);
    }

    fn on_ci_wait(&mut self, seconds: u64, ev: &Event) -> bool {
        match *ev {
            Event::WaitOver => {
                self.dispatched = true;
                let look = Effect::LookAtCi {
                    issue: self.issue(),
                    look: self.ci_waits + 1,
                };
                self.ask(At::Step(Step::MonitorCi), look);
            }
            Event::Start => self.fx.push(Effect::Wait { seconds }),
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.fx.push(Effect::Wait { seconds });
                }
            }
            _ => return false,
        }
        true
    }

    /// Merge's preconditions hold: within the budgets, a new wait for the merge turn.
    fn merge_ready(&mut self) {
        if self.budget_spent(Step::Merge) {
            return;
        }
        self.turn_waited = 0;
        self.turn_next = 200;
        self.paused_since_checks = 0;
        self.take_turn();
    }

    /// Ask for the merge turn; without one (a runner alone) merge at once.
    fn take_turn(&mut self) {
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
    fn merge_now(&mut self) {
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
        };
        self.ask(At::Step(Step::Merge), run);
    }

    /// Busy: pauses of 200 ms doubling to 2 s, the last one cut at the limit; at the limit
    /// the session halts (nobody's issue is blamed).
    fn turn_busy(&mut self) {
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
        self.fx.push(Effect::Pause { millis: pause });
        self.at = At::MergePause(pause);
    }

    /// An answer about the merge turn counts only while the turn was asked for.
    fn turn_asked(&self, step: Step) -> bool {
        step == Step::Merge
            && !self.dispatched
            && matches!(self.outstanding, Some((_, Effect::TakeMergeTurn { .. })))
    }

    /// The turn is ours (or none is needed): after any pause since the merge's checks, they
    /// run again first, the turn held; otherwise the merge runs.
    fn turn_taken(&mut self) {
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
    fn drop_held_turn(&mut self) {
        if self.holding_turn {
            self.holding_turn = false;
            self.release_turn();
        }
    }

    fn release_turn(&mut self) {
        if self.l.merge_turn_wait_ms.is_some() {
            self.fx.push(Effect::ReleaseMergeTurn);
        }
    }

    /// A lost race: three are merged again for free (pauses of 250 ms per race), the
    /// fourth is the attempt's failure.
    fn race_lost(&mut self, class: FailureClass, sig: Signature, u: &Usage) {
        if self.races < 3 {
            self.races += 1;
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
            self.fx.push(Effect::Pause { millis });
            self.at = At::MergePause(millis);
            return;
        }
        self.release_turn();
        self.fx
            .push(Effect::Notify(Notice::MergeRacesExhausted { lost: 4 }));
        let u = self.settle(u);
        self.failed(Step::Merge, class, sig, &u, None);
    }

    fn on_merge_pause(&mut self, millis: u64, ev: &Event) -> bool {
        match *ev {
            Event::WaitOver => self.take_turn(),
            Event::Start => self.fx.push(Effect::Pause { millis }),
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    self.fx.push(Effect::Pause { millis });
                }
            }
            _ => return false,
        }
        true
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
    pub fn on(&mut self, ev: &Event) -> Vec<Effect> {
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
            At::Halted(_) | At::Finished(_) => true,
        };
        if !handled {
            self.on_cycle_or_session(ev);
        }
        std::mem::take(&mut self.fx)
    }

    fn on_tracker_write(
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

    fn on_network_wait(&mut self, ev: &Event) -> bool {
        match *ev {
            Event::WaitOver => self.ask_again(),
            Event::Start => {
                if let At::NetworkWait(seconds) = self.at {
                    self.fx.push(Effect::Wait { seconds });
                }
            }
            Event::ModeChanged { mode } => {
                if self.change_mode(mode).is_none() {
                    if let At::NetworkWait(seconds) = self.at {
                        self.fx.push(Effect::Wait { seconds });
                    }
                }
            }
            _ => return false,
        }
        true
    }

    fn on_selecting(&mut self, ev: &Event) -> bool {
        match *ev {
            Event::Start => self.ask(At::Selecting, Effect::SelectIssue),
            Event::ModeChanged { mode } => {
                self.mode = mode;
                self.ask(At::Selecting, Effect::SelectIssue);
            }
            Event::NetworkFailed => self.network_failed(),
            Event::IssueSelected { issue } => self.start_cycle(issue, self.first_step()),
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
            Event::CiPending { usage } if step == Step::MonitorCi && self.dispatched => {
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
            Event::NetworkFailed => self.network_failed(),
            Event::IssueWithdrawn { issue } if Some(issue) == self.issue && !self.dispatched => {
                self.drop_held_turn();
                self.withdraw(issue)
            }
            Event::WorkspaceUnfit { step: s } if s == step => {
                self.halt(HaltReason::Workspace { step })
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
        let in_cycle = matches!(
            self.at,
            At::Step(_) | At::Backoff(..) | At::Decision(_) | At::CiWait(_) | At::MergePause(_)
        );
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

    pub fn terminal(&self) -> bool {
        matches!(self.at, At::Halted(_) | At::Finished(_))
    }
}
