//! The model: the lifecycle contract restated plainly, one method per rule, with every
//! counter kept the way the contract words it. It shares no code with the machine.

use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::WaitReason;
use sdlc_machine::machine::{
    Effect, EscalationCause, HaltReason, Limits, Mode, Notice, Spend, Usage,
};
use sdlc_machine::step::Step;
use std::collections::BTreeSet;

mod attempt;
mod claims;
mod cycle;
mod escalation;
mod events;
mod merge_turn;

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
    /// The merged issue is still open: waiting this many seconds for the tracker's own
    /// close before looking again.
    CloseWait(u32, u64),
    /// The merge turn was busy or the merge lost a race: pausing this many milliseconds.
    MergePause(u64),
    /// The merge's PR waits in the forge's merge queue: waiting this many seconds before
    /// the merge's run looks at the queue again.
    QueueWait(u64),
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
    /// The decision under way was asked for the issue's budget (`onExceeded: ask`).
    pub budget_asked: bool,
    pub issue_ms: u64,
    pub streak: u32,
    pub escalated: BTreeSet<u32>,
    pub phase: [u32; Step::COUNT],
    pub waits: u32,
    /// Network waits in a row after steps' `NETWORK` failures.
    pub step_net_waits: u32,
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
    /// In the merge attempt under way: waits for the merge queue, and their seconds.
    pub queue_waits: u32,
    pub queue_waited: u64,
    pub pending: Usage,
    /// The wait for the merge turn under way: milliseconds paused and the next pause.
    pub turn_waited: u64,
    pub turn_next: u64,
    /// Push races the merge attempt under way lost, and whether the next merge run is the
    /// same attempt's again.
    pub races: u32,
    pub rerun: bool,
    /// How the attempt failed when it lost its last race: its failure, should the checks
    /// after the pause fail.
    pub race_failure: Option<(FailureClass, Signature)>,
    /// Milliseconds paused for the merge since its checks last ran: a turn taken after any
    /// pause is followed by the checks again, with the turn held.
    pub paused_since_checks: u64,
    pub holding_turn: bool,
    /// Issues another runner held when this one claimed them: left out until a cycle starts.
    pub held: BTreeSet<u32>,
    /// The request kept back until the claim on the issue under way is renewed.
    pub held_back: Option<Effect>,
    /// A step's run or look at CI held back for a renewal that the event at hand left
    /// unanswered: it never started, and a restart asks for it again as it was.
    pub unsent_run: Option<Effect>,
    /// Waits so far for the tracker's own close of the issue just merged.
    pub close_waits: u32,
    pub fx: Vec<Effect>,
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
            budget_asked: false,
            issue_ms: 0,
            streak: 0,
            escalated: BTreeSet::new(),
            phase: [0; Step::COUNT],
            waits: 0,
            step_net_waits: 0,
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
            queue_waits: 0,
            queue_waited: 0,
            close_waits: 0,
            ci_waited: 0,
            pending: Usage::default(),
            turn_waited: 0,
            turn_next: 200,
            races: 0,
            rerun: false,
            race_failure: None,
            paused_since_checks: 0,
            holding_turn: false,
            held: BTreeSet::new(),
            held_back: None,
            unsent_run: None,
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
        self.fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::Network),
        });
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
}
