//! An independent, deliberately naive model of the counters, checked against the machine
//! after every event: with claims (docs/scaling.md, "Claims") and the merge turn
//! (docs/scaling.md, "Merges") as the world switches them on.

use sdlc_machine::failure::{Disposition, FailureClass, Signature};
use sdlc_machine::machine::{Effect, Event, Limits, Usage};
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
    /// Network waits in a row after steps' `NETWORK` failures.
    pub step_net_waits: u32,
    pub same: [(u64, u32); Step::COUNT],
    pub halted: bool,
    /// The issue and (step, class, signature) of the last escalation since a merge.
    pub last_escalation: Option<(u32, Step, FailureClass, u64)>,
    /// Whether that step failed no other way in that cycle.
    pub last_escalation_alone: bool,
    /// Every way each step failed in this cycle (waits aside).
    pub how: [Vec<(FailureClass, u64)>; Step::COUNT],
    /// The class of each step's last failure since it last succeeded in the cycle: a class
    /// handed back once (`TESTS_WEAKENED`) escalates when it comes again.
    pub last: [Option<FailureClass>; Step::COUNT],
    /// The same failure ended the next issue too: the first one's quarantine is being lifted.
    pub releasing: Option<u32>,
    /// The step whose attempt is out (answered `PreconditionsOk`, no outcome yet).
    pub out: Option<Step>,
    /// Looks at CI that found it pending in the attempt out.
    pub ci_pending: u32,
    /// The runner waits (the network, a backoff, CI, a pause for the merge turn): a restart
    /// waits again, and changes nothing.
    pub waiting: Option<Waiting>,
    // -- claims --
    /// The issue whose claim was asked for and not answered yet.
    pub claiming: Option<u32>,
    /// Issues another runner held when claimed, left out until the next cycle starts.
    pub held: BTreeSet<u32>,
    /// The claim on the issue under way was lost to another runner: the run stopped.
    pub stopped: bool,
    // -- the merge turn --
    /// The turn was asked for and not answered yet.
    pub asking_turn: bool,
    /// The runner paused for the merge since the merge's checks last ran.
    pub paused: bool,
    /// The turn is held while the merge's checks run again.
    pub turn_held: bool,
    /// The wait for the turn under way: milliseconds paused, and the next pause.
    pub waited_ms: u64,
    pub next_pause_ms: u64,
    /// Races lost by the merge attempt under way, whether the next merge run is that
    /// attempt's again, and how it failed when it last lost.
    pub races: u32,
    pub rerun: bool,
    pub race_failure: Option<(FailureClass, Signature)>,
}

/// What the runner waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// The network, a backoff or CI: the wait's end goes on where the runner was.
    Other,
    /// A pause before asking for the merge turn (busy, or a lost race): its end asks.
    MergeTurn,
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
            step_net_waits: 0,
            same: [(0, 0); Step::COUNT],
            halted: false,
            last_escalation: None,
            last_escalation_alone: false,
            how: Default::default(),
            last: [None; Step::COUNT],
            releasing: None,
            out: None,
            ci_pending: 0,
            waiting: None,
            claiming: None,
            held: BTreeSet::new(),
            stopped: false,
            asking_turn: false,
            paused: false,
            turn_held: false,
            waited_ms: 0,
            next_pause_ms: 200,
            races: 0,
            rerun: false,
            race_failure: None,
        }
    }

    /// A new cycle on `issue`: the cycle's counters start again, and no issue is held
    /// elsewhere any more as far as this runner knows.
    fn begin(&mut self, issue: u32) {
        self.issue = Some(issue);
        self.attempts = [0; Step::COUNT];
        self.bounces = 0;
        self.same = [(0, 0); Step::COUNT];
        self.how = Default::default();
        self.last = [None; Step::COUNT];
        self.held.clear();
        self.rerun = false;
        self.race_failure = None;
    }

    /// A step entered again (its checks asked for): no turn is asked for or held.
    fn enter(&mut self) {
        self.asking_turn = false;
        self.paused = false;
        self.turn_held = false;
    }

    /// The merge run goes out: the same attempt again after a lost race, or a new attempt.
    fn merge_runs(&mut self) {
        self.out = Some(Step::Merge);
        if !self.rerun {
            self.races = 0;
        }
        self.rerun = false;
    }

    /// The turn is the runner's (or there is none): after a pause the merge's checks run
    /// again first, the turn held; otherwise the merge runs.
    fn turn_taken(&mut self) {
        self.asking_turn = false;
        if self.paused {
            self.paused = false;
            self.turn_held = true;
        } else {
            self.merge_runs();
        }
    }

    fn take_turn(&mut self) {
        if self.l.merge_turn_wait_ms.is_none() {
            self.turn_taken();
        } else {
            self.asking_turn = true;
        }
    }

    /// Busy: pauses of 200 ms doubling to 2 s, the last one cut at the limit; at the limit
    /// the session halts.
    fn turn_busy(&mut self) {
        self.asking_turn = false;
        let limit = self.l.merge_turn_wait_ms.unwrap_or(0);
        if self.waited_ms >= limit {
            self.halted = true;
            return;
        }
        let pause = self.next_pause_ms.min(limit - self.waited_ms).max(1);
        self.waited_ms += pause;
        self.next_pause_ms = (self.next_pause_ms * 2).min(2_000);
        self.paused = true;
        self.waiting = Some(Waiting::MergeTurn);
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

    /// An answer about the merge turn, which counts only while the turn is asked for.
    fn merge_turn_event(&mut self, ev: &Event) -> bool {
        if !self.asking_turn {
            return false;
        }
        match ev {
            Event::MergeTurnTaken => self.turn_taken(),
            Event::MergeTurnBusy => self.turn_busy(),
            // The tracker's merge lease cannot be written: the environment's.
            Event::TrackerWriteFailed => self.halted = true,
            _ => return false,
        }
        true
    }

    /// `asked`: the machine's request `ev` answers (the model knows what it asked for, as
    /// the world does).
    pub fn apply(&mut self, ev: &Event, asked: Option<&Effect>) {
        if self.halted || self.stopped {
            return;
        }
        if let Some(Effect::RenewClaim { .. }) = asked {
            match ev {
                // The renewal is a gate, not a step: renewed or not writable, the request
                // held back goes out and nothing else changes.
                Event::ClaimRenewed | Event::TrackerWriteFailed | Event::NetworkFailed => return,
                Event::ClaimLost { .. } => {
                    self.stopped = true;
                    self.out = None;
                    return;
                }
                // Killed before the answer, with an attempt out: its run (or its next look at
                // CI) waited for the renewal and never started. The restart renews again and
                // the attempt stays out, uncounted.
                Event::Start if self.out.is_some() => return,
                _ => {}
            }
        }
        if let Event::ClaimLost { .. } = ev {
            self.stopped = true;
            self.out = None;
            return;
        }
        if *ev == Event::Start && self.waiting.is_some() {
            // A restart in a wait waits again.
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
        if let Event::TrackerUpdated = ev {
            if matches!(
                asked,
                Some(Effect::RecordMerged { .. } | Effect::MarkEscalated { .. })
            ) {
                // Recorded: the runner selects its next issue (or halts, or finishes).
                self.issue = None;
            }
        }
        if self.merge_turn_event(ev) {
            return;
        }
        let waiting = self.waiting.take();
        if *ev == Event::WaitOver && waiting == Some(Waiting::MergeTurn) {
            self.take_turn();
            return;
        }
        if *ev == Event::NetworkFailed {
            self.waiting = Some(Waiting::Other);
        }
        let out = self.out.take();
        if let Event::PreconditionsOk { step } = *ev {
            self.ci_pending = 0;
            if step != Step::Merge {
                self.out = Some(step);
                // A new attempt: no race lost in it yet.
                self.races = 0;
            } else if self.turn_held {
                self.turn_held = false;
                self.merge_runs();
            } else {
                self.waited_ms = 0;
                self.next_pause_ms = 200;
                self.paused = false;
                self.take_turn();
            }
        }
        // A network wait on the attempt's own call issues the same attempt again, and CI
        // pending is looked at again: the attempt stays out.
        if matches!(
            ev,
            Event::NetworkFailed | Event::WaitOver | Event::CiPending { .. }
        ) {
            self.out = out;
        }
        if *ev == Event::Start {
            self.claiming = None;
            if out.is_none() {
                self.enter();
            }
        }
        // A restart while an attempt is out: that attempt failed with the runner.
        let interrupted;
        let ev = match (ev, out) {
            (Event::CiPending { .. }, Some(Step::MonitorCi)) => {
                if self.ci_pending < ci_waits_allowed(&self.l) {
                    self.ci_pending += 1;
                    self.waiting = Some(Waiting::Other);
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
            (
                Event::MergeRaceLost {
                    class, signature, ..
                },
                Some(Step::Merge),
            ) => {
                if self.races < 3 {
                    // Contention, not an attempt: pause, take the turn again, merge again.
                    self.races += 1;
                    self.race_failure = Some((*class, *signature));
                    self.rerun = true;
                    self.waited_ms = 0;
                    self.next_pause_ms = 200;
                    self.paused = true;
                    self.waiting = Some(Waiting::MergeTurn);
                    return;
                }
                // The fourth race in a row is the attempt's failure.
                interrupted = Event::StepFailed {
                    step: Step::Merge,
                    class: *class,
                    signature: *signature,
                    usage: Usage::default(),
                    wait_hint_secs: None,
                };
                &interrupted
            }
            (
                Event::PreconditionFailed {
                    step: Step::Merge, ..
                },
                _,
            ) if self.rerun => {
                // The checks after a lost race's pause failed (the turn held, or given back by
                // a restart): the attempt that lost the race ends as its failure, counted,
                // instead of vanishing in a bounce.
                self.turn_held = false;
                self.rerun = false;
                let (class, signature) = self
                    .race_failure
                    .take()
                    .unwrap_or((FailureClass::Unknown, Signature(0)));
                interrupted = Event::StepFailed {
                    step: Step::Merge,
                    class,
                    signature,
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
                if !self.l.claims {
                    return self.begin(issue);
                }
                if self.held.contains(&issue) {
                    // Left out, and offered anyway: a stale tracker halts.
                    self.halted = true;
                    return;
                }
                // Claimed first: no cycle starts on an issue this runner did not claim.
                self.claiming = Some(issue);
            }
            Event::ClaimTaken { issue } if self.claiming == Some(issue) => {
                self.claiming = None;
                self.begin(issue);
            }
            Event::ClaimHeld { issue } if self.claiming == Some(issue) => {
                self.claiming = None;
                self.held.insert(issue);
            }
            // A claim the tracker cannot write halts: the tracker's failure.
            Event::TrackerWriteFailed if self.claiming.is_some() => self.halted = true,
            Event::NoIssues
            | Event::StandBy
            | Event::AllEscalated { .. }
            | Event::AllBlocked { .. } => self.halted = true,
            Event::PreconditionFailed { .. } => {
                self.turn_held = false;
                self.bounces += 1;
                if self.bounces > self.l.max_bounce_retries {
                    self.escalate(None);
                }
            }
            Event::StepSucceeded { step, .. } => {
                self.waits = 0;
                self.step_net_waits = 0;
                self.phase[step.index()] = 0;
                self.same[step.index()] = (0, 0);
                self.last[step.index()] = None;
                if step == Step::Merge {
                    self.streak = 0;
                    self.last_escalation = None;
                }
            }
            Event::AlreadyDone { step: Step::Merge } => {
                self.turn_held = false;
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
                        self.waiting = Some(Waiting::Other);
                        return;
                    }
                    Disposition::WaitForNetwork => {
                        if self.step_net_waits >= self.l.max_network_waits {
                            self.halted = true;
                        } else {
                            self.step_net_waits += 1;
                        }
                        self.waiting = Some(Waiting::Other);
                        return;
                    }
                    _ => {}
                }
                self.waits = 0;
                self.step_net_waits = 0;
                let again = class.hands_back_once() && self.last[i] == Some(class);
                self.last[i] = Some(class);
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
                if class.disposition() == Disposition::EscalateNow || again || spent {
                    self.escalate(Some((step, class, signature.0)));
                }
            }
            _ => {}
        }
    }
}
