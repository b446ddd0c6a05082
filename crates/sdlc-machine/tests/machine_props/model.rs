//! An independent, deliberately naive model of the counters, checked against the machine
//! after every event.

use sdlc_machine::failure::{Disposition, FailureClass, Signature};
use sdlc_machine::machine::{Event, Limits, Usage};
use sdlc_machine::step::Step;
use std::collections::BTreeSet;

/// An independent, deliberately naive model of the counters of docs/counters-and-bounds.md, written from the
/// table rather than from the machine's code.
pub struct Model {
    pub l: Limits,
    pub issue: Option<u32>,
    pub attempts: [u32; Step::COUNT],
    pub bounces: u32,
    pub streak: u32,
    pub escalated: BTreeSet<u32>,
    pub phase: [u32; Step::COUNT],
    pub waits: u32,
    pub same: [(u64, u32); Step::COUNT],
    pub halted: bool,
    /// The issue and (step, class, signature) of the last escalation since a merge.
    pub last_escalation: Option<(u32, Step, FailureClass, u64)>,
    /// Whether that step failed no other way in that cycle.
    pub last_escalation_alone: bool,
    /// Every way each step failed in this cycle (waits aside).
    pub how: [Vec<(FailureClass, u64)>; Step::COUNT],
    /// The same failure ended the next issue too: the first one's quarantine is being lifted.
    pub releasing: Option<u32>,
    /// The step whose attempt is out (answered `PreconditionsOk`, no outcome yet).
    pub out: Option<Step>,
    /// Looks at CI that found it pending in the attempt out, and whether the runner waits
    /// for the next look now (a restart then waits again: nothing was cut short).
    pub ci_pending: u32,
    pub ci_waiting: bool,
}

/// How many times one monitorCI attempt may find CI pending and wait: pauses doubling from
/// the first to the longest, at least a second each, while their sum stays within the limit.
pub fn ci_waits_allowed(l: &Limits) -> u32 {
    let (mut n, mut pause, mut sum) = (0u32, u64::from(l.ci_poll_initial_secs), 0u64);
    loop {
        let p = pause.min(u64::from(l.ci_poll_max_secs)).max(1);
        if sum + p > l.ci_timeout_secs {
            return n;
        }
        sum += p;
        n += 1;
        pause = pause.saturating_mul(2);
    }
}

impl Model {
    pub fn new(l: &Limits) -> Self {
        Model {
            l: l.clone(),
            issue: None,
            attempts: [0; Step::COUNT],
            bounces: 0,
            streak: 0,
            escalated: BTreeSet::new(),
            phase: [0; Step::COUNT],
            waits: 0,
            same: [(0, 0); Step::COUNT],
            halted: false,
            last_escalation: None,
            last_escalation_alone: false,
            how: Default::default(),
            releasing: None,
            out: None,
            ci_pending: 0,
            ci_waiting: false,
        }
    }

    /// `own`: the step's own failure that ended the cycle (none for a bounce loop).
    pub fn escalate(&mut self, own: Option<(Step, FailureClass, u64)>) {
        let issue = self.issue.unwrap_or(0);
        if let (Some(now), Some((before, s, c, g))) = (own, self.last_escalation) {
            // The same failure on two issues in a row is the environment's: halt, after
            // lifting the first's quarantine when it rested on that failure alone.
            if before != issue && now == (s, c, g) {
                if self.last_escalation_alone {
                    self.releasing = Some(before);
                } else {
                    self.halted = true;
                }
                return;
            }
        }
        self.last_escalation = own.map(|(s, c, g)| (issue, s, c, g));
        self.last_escalation_alone =
            own.is_some_and(|(s, c, g)| self.how[s.index()].iter().all(|&h| h == (c, g)));
        self.streak += 1;
        if let Some(i) = self.issue {
            self.escalated.insert(i);
        }
        if self.streak >= self.l.max_consecutive_escalations {
            self.halted = true;
        }
    }

    pub fn apply(&mut self, ev: &Event, _now: Option<Step>) {
        if self.halted {
            return;
        }
        if let Some(first) = self.releasing {
            match ev {
                Event::TrackerUpdated => {
                    self.escalated.remove(&first);
                    self.streak -= 1;
                    self.halted = true;
                }
                Event::TrackerWriteFailed => self.halted = true,
                _ => {}
            }
            return;
        }
        let out = self.out.take();
        if let Event::PreconditionsOk { step } = *ev {
            self.out = Some(step);
            self.ci_pending = 0;
            self.ci_waiting = false;
        }
        // A network wait on the attempt's own call issues the same attempt again, and CI
        // pending is looked at again: the attempt stays out.
        if matches!(
            ev,
            Event::NetworkFailed | Event::WaitOver | Event::CiPending { .. }
        ) {
            self.out = out;
        }
        if *ev == Event::WaitOver {
            self.ci_waiting = false;
        }
        // A restart while an attempt is out: that attempt failed with the runner, unless the
        // runner was waiting for CI's next look (it waits again).
        let interrupted;
        let ev = match (ev, out) {
            (Event::Start, Some(_)) if self.ci_waiting => {
                self.out = out;
                ev
            }
            (Event::CiPending { .. }, Some(Step::MonitorCi)) => {
                if self.ci_pending < ci_waits_allowed(&self.l) {
                    self.ci_pending += 1;
                    self.ci_waiting = true;
                    return;
                }
                // Pending through the step's time limit: the attempt failed.
                self.out = None;
                interrupted = Event::StepFailed {
                    step: Step::MonitorCi,
                    class: FailureClass::Timeout,
                    signature: Signature::CI_STILL_PENDING,
                    usage: Usage::default(),
                    wait_hint_secs: None,
                };
                &interrupted
            }
            (Event::Start, Some(step)) => {
                interrupted = Event::StepFailed {
                    step,
                    class: FailureClass::Killed,
                    signature: Signature::INTERRUPTED,
                    usage: Usage::default(),
                    wait_hint_secs: None,
                };
                &interrupted
            }
            _ => ev,
        };
        match *ev {
            Event::IssueSelected { issue } => {
                if self.escalated.contains(&issue) {
                    self.halted = true;
                    return;
                }
                self.issue = Some(issue);
                self.attempts = [0; Step::COUNT];
                self.bounces = 0;
                self.same = [(0, 0); Step::COUNT];
                self.how = Default::default();
            }
            Event::NoIssues | Event::AllEscalated | Event::AllBlocked => self.halted = true,
            Event::PreconditionFailed { .. } => {
                self.bounces += 1;
                if self.bounces > self.l.max_bounce_retries {
                    self.escalate(None);
                }
            }
            Event::StepSucceeded { step, .. } => {
                self.waits = 0;
                self.phase[step.index()] = 0;
                self.same[step.index()] = (0, 0);
                if step == Step::Merge {
                    self.streak = 0;
                    self.last_escalation = None;
                }
            }
            Event::AlreadyDone { step: Step::Merge } => {
                self.streak = 0;
                self.last_escalation = None;
            }
            Event::StepFailed {
                step,
                class,
                signature,
                ..
            } => {
                let i = step.index();
                match class.disposition() {
                    Disposition::HaltEnvironment => {
                        self.halted = true;
                        return;
                    }
                    Disposition::Backoff | Disposition::WaitForQuota => {
                        self.waits += 1;
                        if self.waits > self.l.max_rate_limit_waits {
                            self.halted = true;
                        }
                        return;
                    }
                    _ => {}
                }
                self.waits = 0;
                self.attempts[i] += 1;
                self.phase[i] += 1;
                self.how[i].push((class, signature.0));
                self.same[i] = if self.same[i].0 == signature.0 {
                    (signature.0, self.same[i].1 + 1)
                } else {
                    (signature.0, 1)
                };
                let f = self.l.max_consecutive_failures[i];
                if f > 0 && self.phase[i] >= f {
                    self.halted = true;
                    return;
                }
                let s = self.l.max_consecutive_same_failure;
                let spent = self.attempts[i] >= self.l.max_retries_per_step
                    || (s > 0 && self.same[i].1 >= s);
                if class == FailureClass::Killed && spent {
                    // Deaths of the runner are not the issue's failures.
                    self.halted = true;
                    return;
                }
                if class.disposition() == Disposition::EscalateNow || spent {
                    self.escalate(Some((step, class, signature.0)));
                }
            }
            _ => {}
        }
    }
}
