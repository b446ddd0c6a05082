//! The machine's shared storage (`Runner`, every counter of docs/counters-and-bounds.md) with
//! the small records it keeps, its constructor and the bookkeeping every handler shares.

use super::State;
use crate::failure::{FailureClass, Signature};
use crate::fleet::{Contention, LeaseWait};
use crate::machine::types::*;
use crate::step::Step;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Work spent, for the wasted-work report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Spend {
    pub invocations: u64,
    pub turns: u64,
    pub cost_micros: u64,
}

impl Spend {
    pub(super) fn add(&mut self, usage: &Usage) {
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
    pub(super) fn and(self, class: FailureClass, signature: Signature) -> FailuresSeen {
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
}

/// The effect buffer every handler pushes to.
pub(super) type Fx = Vec<Effect>;

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
        }
    }

    pub(super) fn begin_cycle(&mut self, issue: u32) {
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

    pub(super) fn current_issue(&self) -> u32 {
        self.issue.unwrap_or(0)
    }

    pub(super) fn single_step(&self) -> bool {
        matches!(self.mode, Mode::SingleStep(_))
    }

    pub(super) fn record_usage(&mut self, usage: &Usage) {
        self.issue_cost_micros += usage.cost_micros;
        self.issue_elapsed_ms += usage.elapsed_ms;
        self.session_cost_micros += usage.cost_micros;
        self.last_usage = *usage;
        self.stats.total.add(usage);
        self.stats.since_merge.add(usage);
    }

    /// Issues no selection may offer again this session: escalated, merged or withdrawn.
    pub fn excluded(&self, issue: u32) -> bool {
        self.escalated.contains(&issue)
            || self.merged.contains(&issue)
            || self.withdrawn.contains(&issue)
    }
}
