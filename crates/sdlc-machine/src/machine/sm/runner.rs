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
    /// Agent invocations (attempts) counted.
    pub invocations: u64,
    /// Agent turns, as the agents reported them.
    pub turns: u64,
    /// Cost in micro-dollars.
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
    /// Merges this session.
    pub merges: u64,
    /// Everything spent this session.
    pub total: Spend,
    /// Spent since the last merge: the work a report would call wasted if nothing merges.
    pub since_merge: Spend,
    /// Spend of failed attempts since the last merge, by `FailureClass::index`.
    pub failed_by_class: [Spend; FailureClass::COUNT],
}

/// The last failure seen, for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LastFailure {
    /// The step that failed.
    pub step: Step,
    /// How it failed.
    pub class: FailureClass,
    /// The failure's signature, to tell the same failure from another of its class.
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
    /// The limits of docs/counters-and-bounds.md, fixed for the session.
    pub limits: Limits,
    /// How the session runs (continuous, one issue, one step); a restart may change it.
    pub mode: Mode,
    /// Issue of the current cycle.
    pub issue: Option<u32>,
    /// Whether the current step's attempt was dispatched (vs. waiting for its preconditions).
    pub dispatched: bool,
    // -- cycle scope: reset by `begin_cycle` --
    /// Failed attempts of each step in this cycle, by step index.
    pub attempts: [u32; Step::COUNT],
    /// Bounces in this cycle (a step's precondition failed and an earlier step ran again).
    pub bounces: u32,
    /// Same-signature failures in a row of each step in this cycle.
    pub same_failure: [u32; Step::COUNT],
    /// The signature of each step's last failure in this cycle, for `same_failure`.
    pub last_signature: [Option<Signature>; Step::COUNT],
    /// The class of each step's last failure in this cycle: whether its next attempt repairs.
    pub last_class: [Option<FailureClass>; Step::COUNT],
    /// Repair attempts of each step in this cycle (within `max_repair_iterations`).
    pub repairs: [u32; Step::COUNT],
    /// How each step's failed attempts failed in this cycle (waits aside).
    pub failures_seen: [FailuresSeen; Step::COUNT],
    /// What this cycle's attempts cost, in micro-dollars (the per-issue budget).
    pub issue_cost_micros: u64,
    /// How long this cycle's attempts took, in milliseconds (the per-issue time budget).
    pub issue_elapsed_ms: u64,
    // -- session scope --
    /// Escalations in a row this session: a merge resets it, the limit halts.
    pub consecutive_escalations: u32,
    /// Issues escalated this session: no selection offers them again.
    pub escalated: BTreeSet<u32>,
    /// Failures in a row of each step across the session (`maxConsecutiveFailures`).
    pub phase_failures: [u32; Step::COUNT],
    /// Rate-limit, overload and quota waits in a row.
    pub wait_streak: u32,
    /// Network waits in a row after steps that failed as `NETWORK` (the agent could not
    /// reach its model): bounded by `max_network_waits` like a runner call's, counted apart
    /// from `wait_streak` and from the outstanding request's `network_waits` (a step's wait
    /// enters the step again, whose checks are a new request).
    #[serde(default)]
    pub step_network_waits: u32,
    /// What the session's attempts cost, in micro-dollars (the session budget).
    pub session_cost_micros: u64,
    /// The last attempt's usage: a budget refuses an attempt that would likely pass it.
    pub last_usage: Usage,
    /// The last failure of the session, for the diagnostics and the same-failure check.
    pub last_failure: Option<LastFailure>,
    /// The wasted-work figures; never read by a decision.
    pub stats: Stats,
    /// Issues merged this session: final, whether or not the tracker could be told, so no
    /// selection offers them again.
    pub merged: BTreeSet<u32>,
    /// Issues a person took back during the session (closed, relabelled, escalated).
    pub withdrawn: BTreeSet<u32>,
    /// Issues another runner held when this runner tried to claim them, left out of its
    /// selections until its next cycle starts (their claims may run out meanwhile).
    pub held_elsewhere: BTreeSet<u32>,
    /// The request the runner is answering now and the state that issued it: what a network
    /// wait calls again.
    pub outstanding: Option<(State, Effect)>,
    /// Fleet pauses in a row on the outstanding request.
    pub fleet_pauses: u32,
    /// The wait for a person's decision under way: looks that found no answer, and the
    /// seconds waited between them.
    pub decision_looks: u32,
    /// See `decision_looks`.
    pub decision_waited_secs: u64,
    /// A pause before the next look for a person's answer is under way: only its end
    /// (`WaitOver`) asks for the look.
    pub decision_paused: bool,
    /// The decision under way was asked because the issue's budget was reached
    /// (`budget.onExceeded: ask`): `retry` grants the budget again rather than an attempt.
    #[serde(default)]
    pub budget_asked: bool,
    /// A person was asked about the tests this branch weakens (`tests.weakening: "ask"`).
    pub weakening_asked: bool,
    /// A person approved the weakening for this cycle: the check is off until the next.
    pub weakening_approved: bool,
    /// Network waits in a row on the outstanding request.
    pub network_waits: u32,
    /// Rate-limit waits in a row on the outstanding request.
    pub rate_limit_waits: u32,
    /// The issue and failure of the last escalation, to tell an environment's failure (the
    /// same on two issues in a row) from the issues'.
    pub last_escalation: Option<(u32, LastFailure)>,
    /// Whether that failure was the only way the escalating step failed in its cycle: then
    /// the quarantine rests on it alone, and the same failure on the next issue releases it.
    pub last_escalation_alone: bool,
    // -- attempt scope: reset by `dispatch` --
    /// Waits between looks at CI in the monitorCI attempt under way, and their seconds.
    pub ci_waits: u32,
    /// Their seconds, for the diagnostic when CI never settles.
    pub ci_waited_secs: u64,
    /// Waits so far for the forge's merge queue to merge the PR of the merge attempt under
    /// way (`MergeQueued`), on monitorCI's CI schedule: past its last wait the attempt fails.
    #[serde(default)]
    pub queue_waits: u32,
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
    /// How the merge attempt under way failed when it lost its last push race: should the
    /// checks after the pause fail, that is the attempt's failure (the attempt ends, counted,
    /// rather than vanish in a bounce).
    pub lost_race: Option<(FailureClass, Signature)>,
    // -- the verified commit (docs/lifecycle.md, "The verified commit") --
    /// The commit monitorCI's next look at CI is for: what the last look saw, or a person's
    /// newer head pushed on top of it. `None` before the attempt's first look, which is for
    /// the branch the runner pushed.
    #[serde(default)]
    pub ci_commit: Option<Commit>,
    /// The commit CI passed in this cycle (`CiPassed`): the only one a merge request carries.
    /// Cleared when monitorCI runs again and when the branch moves.
    #[serde(default)]
    pub verified: Option<Commit>,
    /// Times in this cycle a person's commits on top of the branch sent it back to CI:
    /// bounded by the length of monitorCI's CI schedule, past which the session stops.
    #[serde(default)]
    pub head_moves: u32,
    // -- the review gate (docs/reviews.md) --
    /// Looks at the PR's review in this cycle that found it not letting the PR merge: each
    /// is followed by a pause of `Limits::review_polls`, and one more than it has ends the
    /// cycle waiting for a person.
    #[serde(default)]
    pub review_looks: u32,
    /// Issues whose cycle ended waiting for a person's review this session: left out of the
    /// selections until the next session, neither blamed nor quarantined.
    #[serde(default)]
    pub awaiting_person: BTreeSet<u32>,
    /// Rounds of addressing a request for changes in this cycle, at most the gate's
    /// `max_rounds`.
    #[serde(default)]
    pub review_rounds: u32,
    /// The ids of every review and comment handed to the agent this session: none is
    /// handed twice, across rounds and restarts.
    #[serde(default)]
    pub review_handed: BTreeSet<String>,
    /// The feedback of the round under way, asked for and not yet answered by `Repaired`:
    /// what its agent is handed (and handed again when the round is retried), deduplicated,
    /// without ignored authors. Empty between rounds; cleared when the cycle ends.
    #[serde(default)]
    pub review_handout: Vec<ReviewNote>,
    /// The feedback still new when the rounds ran out: what the escalation quotes.
    #[serde(default)]
    pub review_unresolved: Vec<ReviewNote>,
    // -- a conflict with main (docs/lifecycle.md, "The verified commit") --
    /// The files of this cycle's last conflict with main (`MergeConflict`): what its repair
    /// attempt resolves and its escalation names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflict_paths: Vec<String>,
    // -- the merged issue's close (docs/lifecycle.md, "The merged issue") --
    /// Waits so far for the tracker's own close of the issue just merged, at most
    /// `Limits::tracker_close_waits`; the look after the last one closes it if still open.
    #[serde(default)]
    pub close_waits: u32,
}

/// The effect buffer every handler pushes to, with what the claim gate before the states
/// knows (`Core` holds a request back until the claim is renewed, and the states never see
/// the renewal).
#[derive(Debug)]
pub struct Fx {
    effects: Vec<Effect>,
    /// The request the state asked for last was held back for a claim renewal that got no
    /// answer: it never went out. A restart must not take a step's run as under way then.
    pub(crate) unsent: bool,
}

impl Default for Fx {
    fn default() -> Self {
        // A batch is a handful of effects: one allocation serves every event.
        Fx {
            effects: Vec::with_capacity(16),
            unsent: false,
        }
    }
}

impl std::ops::Deref for Fx {
    type Target = Vec<Effect>;
    fn deref(&self) -> &Vec<Effect> {
        &self.effects
    }
}

impl std::ops::DerefMut for Fx {
    fn deref_mut(&mut self) -> &mut Vec<Effect> {
        &mut self.effects
    }
}

impl Runner {
    /// Storage with every counter at zero and nothing selected.
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
            step_network_waits: 0,
            session_cost_micros: 0,
            last_usage: Usage::default(),
            last_failure: None,
            stats: Stats::default(),
            merged: BTreeSet::new(),
            withdrawn: BTreeSet::new(),
            held_elsewhere: BTreeSet::new(),
            outstanding: None,
            network_waits: 0,
            rate_limit_waits: 0,
            fleet_pauses: 0,
            decision_looks: 0,
            decision_waited_secs: 0,
            decision_paused: false,
            budget_asked: false,
            weakening_asked: false,
            weakening_approved: false,
            last_escalation: None,
            last_escalation_alone: false,
            ci_waits: 0,
            ci_waited_secs: 0,
            queue_waits: 0,
            pending_usage: Usage::default(),
            merge_wait: LeaseWait::new(0),
            contention: Contention::default(),
            merge_rerun: false,
            paused_for_turn: false,
            turn_held: false,
            lost_race: None,
            ci_commit: None,
            verified: None,
            head_moves: 0,
            review_looks: 0,
            awaiting_person: BTreeSet::new(),
            review_rounds: 0,
            review_handed: BTreeSet::new(),
            review_handout: Vec::new(),
            review_unresolved: Vec::new(),
            conflict_paths: Vec::new(),
            close_waits: 0,
        }
    }

    pub(super) fn begin_cycle(&mut self, issue: u32) {
        self.issue = Some(issue);
        self.held_elsewhere.clear();
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
        self.budget_asked = false;
        self.weakening_asked = false;
        self.weakening_approved = false;
        self.merge_rerun = false;
        self.lost_race = None;
        self.ci_commit = None;
        self.verified = None;
        self.head_moves = 0;
        self.review_looks = 0;
        self.review_rounds = 0;
        self.review_handout.clear();
        self.review_unresolved.clear();
        self.conflict_paths.clear();
    }

    /// The conflicting files, when the outstanding request is the merge's repair of a conflict
    /// with main: the agent resolves them and the runner's update follows (`Repaired`, then
    /// `UpdateBranch`). `None` for a plain merge and for a repair of another failure. The
    /// paths are empty for a conflict an older journal reported as a `StepFailed`.
    pub fn conflict_repair(&self) -> Option<&[String]> {
        let repairing = matches!(
            self.outstanding,
            Some((
                _,
                Effect::RunStep {
                    step: Step::Merge,
                    repair: true,
                    ..
                }
            ))
        );
        let conflict = self.last_class[Step::Merge.index()] == Some(FailureClass::MergeConflict);
        (repairing && conflict).then_some(&self.conflict_paths[..])
    }

    /// Whether `step`'s last outcome was a branch that weakens the tests (`TESTS_WEAKENED`),
    /// handed back by the next attempt: a review round whose push was refused is handed the
    /// facts with the feedback.
    pub fn weakening_handed_back(&self, step: Step) -> bool {
        self.last_class[step.index()] == Some(FailureClass::TestsWeakened)
    }

    /// Whether a person approved, in this cycle, the tests the branch weakens
    /// (`tests.weakening: "ask"`): the runner then pushes without the check.
    pub fn weakening_approved(&self) -> bool {
        self.weakening_approved
    }

    pub(super) fn current_issue(&self) -> u32 {
        self.issue.unwrap_or(0)
    }

    pub(super) fn single_step(&self) -> bool {
        matches!(self.mode, Mode::SingleStep(_))
    }

    /// What the next agent call may spend: the least of what the issue's, the session's and
    /// the day's budgets have left (the attempt's earlier runs, a merge's lost races, counted)
    /// and the per-call cap; `None` when no dollar budget is set.
    pub fn money_left_micros(&self) -> Option<u64> {
        let pending = self.pending_usage.cost_micros;
        let left = |budget: Option<u64>, spent: u64| {
            budget.map(|b: u64| b.saturating_sub(spent.saturating_add(pending)))
        };
        [
            left(self.limits.per_issue_budget_micros, self.issue_cost_micros),
            left(
                self.limits.per_session_budget_micros,
                self.session_cost_micros,
            ),
            left(self.limits.per_day_budget_micros, self.day_cost_micros()),
            self.limits.per_call_budget_micros,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The project's spend over the day as this session counts it: what was spent before it
    /// began and what it spent since.
    pub fn day_cost_micros(&self) -> u64 {
        self.limits
            .day_spent_before_micros
            .saturating_add(self.session_cost_micros)
    }

    pub(super) fn record_usage(&mut self, usage: &Usage) {
        self.issue_cost_micros += usage.cost_micros;
        self.issue_elapsed_ms += usage.elapsed_ms;
        self.session_cost_micros += usage.cost_micros;
        self.last_usage = *usage;
        self.stats.total.add(usage);
        self.stats.since_merge.add(usage);
    }

    /// Issues no selection may offer again this session: escalated, merged, withdrawn or
    /// waiting for a person's review.
    pub fn excluded(&self, issue: u32) -> bool {
        self.escalated.contains(&issue)
            || self.merged.contains(&issue)
            || self.withdrawn.contains(&issue)
            || self.awaiting_person.contains(&issue)
    }
}
