//! The exploration's key: what of a machine value decides which edges it offers. Two values
//! with the same key offer the same edges, so the explorer visits one of them; everything
//! the key forgets (issue numbers, spend beyond the budgets, statistics, the counters of other
//! steps) is forgotten because no edge depends on it, which keeps the state space finite.

use crate::failure::{FailureClass, Signature};
use crate::machine::{Core, Effect, FailuresSeen, Runner, State, Usage};
use crate::step::Step;
use std::collections::BTreeSet;

/// Two machine values that offer the same edges share a key: issue numbers, spend beyond the
/// budgets, statistics and the counters of other steps do not change which edges exist.
pub(super) fn exploration_key(core: &Core) -> (State, Runner, Option<Effect>) {
    let (state, mut r) = core.snapshot();
    if state.is_terminal() {
        return (state, Runner::new(r.limits, r.mode), None);
    }
    let current = state.step().map(|s| s.index());
    step_counters(&mut r, current);
    carried_only(&mut r, &state);
    r.issue = r
        .issue
        .map(|i| if core.escalated().contains(&i) { 1 } else { 0 });
    spend(&mut r);
    waits(&mut r, &state);
    finished_issues(&mut r, &state);
    outstanding(&mut r);
    failures(&mut r, current);
    let held_back = core.held_back().map(Effect::without_issue);
    (state.without_issue(), r, held_back)
}

/// The per-step counters: those of steps other than the `current` one are abstracted away
/// (every edge they could enable is also reached with the step current), and past its limit
/// every value of a counter behaves alike.
fn step_counters(r: &mut Runner, current: Option<usize>) {
    for i in (0..Step::COUNT).filter(|&i| Some(i) != current) {
        r.attempts[i] = 0;
        r.same_failure[i] = 0;
        r.last_signature[i] = None;
        r.last_class[i] = None;
        r.repairs[i] = 0;
    }
    // A person granting "retry once more" can push counters past their limits forever; past
    // the limit every value behaves alike.
    for i in 0..Step::COUNT {
        r.attempts[i] = r.attempts[i].min(r.limits.max_retries_per_step + 1);
        r.same_failure[i] = r.same_failure[i].min(r.limits.max_consecutive_same_failure + 1);
    }
    r.stats = Default::default();
    r.last_usage = Usage::default();
    // A per-step failure streak without a threshold can never trigger anything.
    for (i, f) in r.phase_failures.iter_mut().enumerate() {
        if r.limits.max_consecutive_failures[i] == 0 {
            *f = 0;
        }
    }
    // Only equality with the previous signature matters, never its value.
    for sig in r.last_signature.iter_mut().flatten() {
        *sig = Signature(0);
    }
}

/// What is carried for the diagnostics and the requests, never decided on, and what counts
/// only in some states.
fn carried_only(r: &mut Runner, state: &State) {
    // The last failure only feeds diagnostics.
    r.last_failure = None;
    // Which commit CI looks at or passed is carried, never decided on.
    r.ci_commit = None;
    r.verified = None;
    // A person's moves in the cycle only count while CI or the merge looks at the branch.
    if !matches!(state.step(), Some(Step::MonitorCi | Step::Merge))
        && !matches!(state, State::WaitingForCi { .. })
    {
        r.head_moves = 0;
    }
    // The merge turn's wait and the lost races only matter at merge.
    if state.step() != Some(Step::Merge) {
        r.merge_wait = crate::fleet::LeaseWait::new(0);
        r.contention = Default::default();
        r.merge_rerun = false;
    }
    let n = r.escalated.len().min(2) as u32;
    r.escalated = (1..=n).collect();
}

/// Spend and time only matter up to one past each budget.
fn spend(r: &mut Runner) {
    let cap = |v: u64, budget: Option<u64>| budget.map_or(0, |b| v.min(b.saturating_add(1)));
    r.session_cost_micros = cap(r.session_cost_micros, r.limits.per_session_budget_micros);
    r.issue_cost_micros = cap(r.issue_cost_micros, r.limits.per_issue_budget_micros);
    r.issue_elapsed_ms = cap(r.issue_elapsed_ms, r.limits.per_issue_budget_ms);
    // What the attempt's looks at CI cost joins the budgets' sums at its outcome.
    let money = r
        .limits
        .per_issue_budget_micros
        .max(r.limits.per_session_budget_micros);
    r.pending_usage = Usage {
        cost_micros: cap(r.pending_usage.cost_micros, money),
        elapsed_ms: cap(r.pending_usage.elapsed_ms, r.limits.per_issue_budget_ms),
        turns: 0,
    };
}

/// The waits for a decision and the fleet's pauses only count while they are under way.
fn waits(r: &mut Runner, state: &State) {
    // The wait for a decision only matters while the machine awaits one: every way into that
    // state starts the wait afresh.
    if !matches!(state, State::AwaitingDecision { .. }) {
        r.decision_looks = 0;
        r.decision_waited_secs = 0;
        r.decision_paused = false;
    }
    // Fleet pauses in a row only matter while their request is still outstanding (its step
    // state, or a wait before it is issued again): the next request starts them at zero.
    let asked_here = r
        .outstanding
        .is_some_and(|(asked_in, _)| asked_in == *state);
    if !asked_here
        && !matches!(
            state,
            State::WaitingForFleet { .. } | State::WaitingForNetwork { .. }
        )
    {
        r.fleet_pauses = 0;
    }
}

/// Finished issues only matter as "offered again or not": one token each; the review looks
/// only while the gate is looked at or waited on.
fn finished_issues(r: &mut Runner, state: &State) {
    let token = |set: &BTreeSet<u32>, t: u32| {
        if set.is_empty() {
            Default::default()
        } else {
            BTreeSet::from([t])
        }
    };
    r.merged = token(&r.merged, 1_000);
    r.withdrawn = token(&r.withdrawn, 1_001);
    // Issues waiting for a person only matter as "some or none" (an empty selection ends
    // the session then); the review looks only while the gate is looked at or waited on.
    r.awaiting_person = token(&r.awaiting_person, 1_002);
    if !matches!(
        state,
        State::AwaitingReview {} | State::WaitingForReview { .. } | State::WaitingForNetwork { .. }
    ) {
        r.review_looks = 0;
    }
}

/// Issue numbers and signature values in the outstanding request never change which edge is
/// taken.
fn outstanding(r: &mut Runner) {
    let cap_attempt = r.limits.max_retries_per_step + 2;
    r.outstanding = r.outstanding.map(|(s, e)| {
        let e = match e.without_issue() {
            Effect::RunStep {
                step,
                issue,
                attempt,
                repair,
                commit: _,
                money_left_micros: _,
            } => Effect::RunStep {
                step,
                issue,
                attempt: attempt.min(cap_attempt),
                repair,
                commit: None,
                money_left_micros: None,
            },
            Effect::LookAtCi { issue, look, .. } => Effect::LookAtCi {
                issue,
                look,
                commit: None,
            },
            Effect::UpdateBranch { issue, .. } => Effect::UpdateBranch {
                issue,
                commit: None,
            },
            other => other,
        };
        (s.without_issue(), e)
    });
}

/// Whether the last escalation can match the next one is what matters; which failure it was
/// multiplies the states without adding an edge. Likewise which failures a step saw only
/// matters for the step at hand (whether its escalation may be released later), and only as
/// one way or several.
fn failures(r: &mut Runner, current: Option<usize>) {
    for (i, seen) in r.failures_seen.iter_mut().enumerate() {
        *seen = match *seen {
            _ if Some(i) != current => FailuresSeen::None,
            FailuresSeen::Only(..) => FailuresSeen::Only(FailureClass::TestAssertion, Signature(0)),
            other => other,
        };
    }
    r.last_escalation = r.last_escalation.map(|(_, mut f)| {
        f.signature = Signature(0);
        f.step = Step::StartCycle;
        f.class = FailureClass::TestAssertion;
        (0, f)
    });
}
