//! The exhaustive search behind `bounds_exhaustive.rs` and its benchmark
//! (`benches/bounds_search.rs`): for small limits, a memoized search over every sequence of
//! outcomes the real machine can be fed finds the true worst case.
//!
//! The memo holds a 128-bit digest of each abstract state (24 bytes an entry), not the state:
//! a machine value with its sets is over a kilobyte, and the largest search meets 7.1 million
//! states (the memo of whole machines peaked at 18.8 GiB). Two of them sharing a digest is
//! out of reach (about 2^-83). The digest streams the key from the machine without cloning
//! it, which with the compact stream took the search from 169 s of CPU to 37 s.
#![allow(dead_code)]

use crate::common::{first_check, request};
use sdlc_machine::digest::{Digester, Recorder};
use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::fleet::Contention;
use sdlc_machine::machine::{
    Core, Effect, Event, Limits, Mode, ReviewDecision, ReviewNote, Runner, State, Usage,
};
use sdlc_machine::step::Step;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Goal {
    /// Most invocations up to and including the next merge, never halting.
    NextMerge,
    /// Most invocations before the halt when no attempt succeeds.
    HaltWithoutSuccess,
}

/// The decision-relevant part of the machine, streamed into `h` field by field (no machine
/// is cloned for it): statistics, money and issue identities never change what it does next
/// when the adversary always offers a fresh issue.
/// `repaired`: the steps whose repairs are counted (builtin steps the agent repairs), where
/// the last failure class and the repairs decide whether the next attempt is an agent call.
fn key(h: &mut Recorder<'_>, core: &Core, pending: Option<Effect>, repaired: [bool; Step::COUNT]) {
    // Every field is named, so that a field added to `Runner` fails to compile here until it
    // is kept in the key or said to be irrelevant.
    let Runner {
        // Fixed for the session (nothing assigns them after `Core::new`): one search, one set.
        limits,
        mode,
        issue,
        dispatched,
        attempts,
        bounces,
        same_failure,
        last_signature,
        last_class,
        repairs,
        // Which failures a quarantine rests on only decides whether the halt of the same
        // failure on two issues lifts the first one's quarantine: no attempt either way.
        failures_seen: _,
        issue_cost_micros: _,
        issue_elapsed_ms: _,
        consecutive_escalations,
        escalated: _,
        phase_failures,
        wait_streak,
        step_network_waits,
        session_cost_micros: _,
        last_usage: _,
        last_failure: _,
        stats: _,
        merged: _,
        withdrawn: _,
        held_elsewhere,
        outstanding,
        fleet_pauses,
        decision_looks,
        decision_waited_secs,
        decision_paused,
        budget_asked,
        weakening_asked,
        weakening_approved,
        network_waits,
        rate_limit_waits,
        last_escalation,
        last_escalation_alone: _,
        ci_waits,
        ci_waited_secs,
        queue_waits,
        pending_usage: _,
        merge_wait,
        contention,
        merge_rerun,
        paused_for_turn,
        turn_held,
        lost_race,
        ci_commit,
        verified,
        head_moves,
        review_looks,
        awaiting_person,
        review_rounds,
        // Which ids were handed decides only which feedback is new, and the search offers
        // new or old feedback as it likes: the count of rounds is what bounds them.
        review_handed: _,
        // Whether a round is under way decides whether monitorCI's next attempt is the
        // round again; what it hands does not.
        review_handout,
        review_unresolved: _,
        // Which files conflict decides nothing: the merge's counters bound their repair.
        conflict_paths: _,
        // The waits for the tracker's close come after the merge, the last of the cycle's
        // agent calls: they bound the looks at the tracker, never an attempt.
        close_waits: _,
    } = core.runner();
    let mut attempts = *attempts;
    let mut same_failure = *same_failure;
    let mut bounces = *bounces;
    let mut repairs = *repairs;
    let mut last_class = *last_class;
    // Only "same signature as the last one or not" matters, not the value.
    let mut last_signature = last_signature.map(|s| s.map(|_| Signature(0)));
    for (i, &counted) in repaired.iter().enumerate() {
        if counted {
            // Only "code-fixable or not" matters.
            last_class[i] = last_class[i].filter(|c| c.code_fixable());
        } else {
            last_class[i] = None;
            repairs[i] = 0;
        }
    }
    // A phase streak only matters where a phase limit is configured.
    let mut phase_failures = *phase_failures;
    for (i, f) in phase_failures.iter_mut().enumerate() {
        if limits.max_consecutive_failures[i] == 0 {
            *f = 0;
        }
    }
    // A network wait is in the step whose request it will issue again.
    let at_step = core
        .state()
        .step()
        .or_else(|| outstanding.and_then(|(s, _)| s.step()));
    match at_step {
        None => {
            // Between cycles the cycle counters are dead: the next cycle resets them.
            attempts = [0; Step::COUNT];
            same_failure = [0; Step::COUNT];
            last_signature = [None; Step::COUNT];
            bounces = 0;
            last_class = [None; Step::COUNT];
            repairs = [0; Step::COUNT];
        }
        Some(pos) => {
            // Steps further back than the remaining bounces can reach never run again this
            // cycle.
            let reach = limits.max_bounce_retries.saturating_sub(bounces) as usize;
            for i in 0..pos.index().saturating_sub(reach) {
                attempts[i] = 0;
                same_failure[i] = 0;
                last_signature[i] = None;
            }
        }
    }
    // The merge turn's wait and the lost races only matter at merge.
    let (merge_wait, contention) = if at_step == Some(Step::Merge) {
        (*merge_wait, *contention)
    } else {
        (
            sdlc_machine::fleet::LeaseWait::new(0),
            Contention::default(),
        )
    };
    let last_escalation = last_escalation.map(|(_, mut f)| {
        f.signature = Signature(0);
        (0u32, f)
    });
    let outstanding = outstanding.map(|(s, e)| (s.without_issue(), anonymous(e, repaired)));
    core.state().without_issue().hash(h);
    mode.hash(h);
    issue.map(|_| 0u32).hash(h);
    dispatched.hash(h);
    attempts.hash(h);
    bounces.hash(h);
    same_failure.hash(h);
    last_signature.hash(h);
    last_class.hash(h);
    repairs.hash(h);
    consecutive_escalations.hash(h);
    phase_failures.hash(h);
    wait_streak.hash(h);
    step_network_waits.hash(h);
    held_elsewhere.hash(h);
    outstanding.hash(h);
    fleet_pauses.hash(h);
    decision_looks.hash(h);
    decision_waited_secs.hash(h);
    decision_paused.hash(h);
    budget_asked.hash(h);
    weakening_asked.hash(h);
    weakening_approved.hash(h);
    network_waits.hash(h);
    rate_limit_waits.hash(h);
    last_escalation.hash(h);
    ci_waits.hash(h);
    ci_waited_secs.hash(h);
    queue_waits.hash(h);
    merge_wait.hash(h);
    contention.hash(h);
    merge_rerun.hash(h);
    paused_for_turn.hash(h);
    turn_held.hash(h);
    lost_race.hash(h);
    ci_commit.hash(h);
    verified.hash(h);
    head_moves.hash(h);
    review_looks.hash(h);
    review_rounds.hash(h);
    review_handout.is_empty().hash(h);
    // Which issues wait for a person never matters, only whether one does: then an empty
    // selection ends the session rather than halting it.
    awaiting_person.is_empty().hash(h);
    pending.map(|e| anonymous(e, repaired)).hash(h);
}

/// The effect with its issue number taken out (every issue is a fresh one), and whether an
/// attempt is a repair where that is counted (`repaired`).
/// The effect without its issue; a repair flag only where it can change the count.
fn anonymous(e: Effect, repaired: [bool; Step::COUNT]) -> Effect {
    match e.without_issue() {
        Effect::RunStep {
            step,
            issue,
            attempt,
            repair,
            commit,
            money_left_micros,
        } => Effect::RunStep {
            step,
            issue,
            attempt,
            repair: repair && repaired[step.index()],
            commit,
            money_left_micros,
        },
        other => other,
    }
}

struct Search {
    goal: Goal,
    /// Count agent invocations alone for these builtin steps: an attempt of a builtin step
    /// costs nothing unless it is a repair (the agent fixes, then the runner acts).
    builtin: Option<[bool; Step::COUNT]>,
    /// The steps whose repairs are counted (builtin steps the agent repairs), where the last
    /// failure class and the repairs decide whether the next attempt is an agent call.
    repaired: [bool; Step::COUNT],
    /// Whether a merge run may lose a push race (`MergeRaceLost`) and the merge turn be
    /// busy: a race merged again is no attempt, but an agent-run merge calls the agent again.
    races: bool,
    /// The worst case from each abstract state met so far, by the key's digest.
    memo: Memo,
    digester: Digester,
}

/// Digests are uniform already: the map takes their low bits instead of hashing again.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

/// `Some(n)` as `n`, `None` (the goal unreachable) as `u64::MAX`: 24 bytes an entry.
type Memo = HashMap<[u64; 2], u64, BuildHasherDefault<Prehashed>>;

const UNREACHABLE: u64 = u64::MAX;

impl Search {
    fn new(goal: Goal, builtin: Option<[bool; Step::COUNT]>, races: bool) -> Search {
        let mut repaired = [false; Step::COUNT];
        if let Some(builtin) = builtin {
            for s in Step::ALL {
                repaired[s.index()] = builtin[s.index()]
                    && matches!(
                        s,
                        Step::Verify | Step::CommitPush | Step::MonitorCi | Step::Merge
                    );
            }
        }
        Search {
            goal,
            builtin,
            repaired,
            races,
            memo: Memo::default(),
            digester: Digester::new(),
        }
    }

    /// Most invocations from here to the goal, `None` if the goal cannot be reached.
    fn best(&mut self, core: &Core, pending: Effect) -> Option<u64> {
        let repaired = self.repaired;
        let k = self
            .digester
            .stream(|h| key(h, core, Some(pending), repaired));
        if let Some(&v) = self.memo.get(&k) {
            return (v != UNREACHABLE).then_some(v);
        }
        let v = self.explore(core, pending);
        self.memo.insert(k, v.unwrap_or(UNREACHABLE));
        v
    }

    fn explore(&mut self, core: &Core, pending: Effect) -> Option<u64> {
        let (cost, mut events) = match pending {
            Effect::SelectIssue => {
                let fresh = core.escalated().len() as u32 + 1;
                (0, vec![Event::IssueSelected { issue: fresh }])
            }
            Effect::RecordMerged { .. }
            | Effect::MarkEscalated { .. }
            | Effect::Unquarantine { .. } => {
                (0, vec![Event::TrackerUpdated, Event::TrackerWriteFailed])
            }
            Effect::Wait { .. } | Effect::Pause { .. } => (0, vec![Event::WaitOver]),
            Effect::TakeMergeTurn { .. } => (
                0,
                vec![
                    Event::MergeTurnTaken,
                    Event::MergeTurnBusy,
                    Event::TrackerWriteFailed,
                ],
            ),
            Effect::CheckPreconditions { step } => {
                let mut evs = vec![Event::PreconditionsOk { step }];
                if self.goal == Goal::NextMerge {
                    evs.push(Event::AlreadyDone { step });
                }
                if step.has_precondition() {
                    evs.push(Event::PreconditionFailed {
                        step,
                        check: first_check(step),
                    });
                }
                (0, evs)
            }
            Effect::LookAtReview { .. } => {
                // The reviewer approves, or asks for changes with feedback new to the agent
                // (a round, or past the rounds an escalation): the ids are fresh by
                // construction, one per issue and round. A request with nothing new holds
                // the merge until the cycle ends waiting for a person, neither merged nor
                // escalated: the search leaves it out.
                let r = core.runner();
                let id = format!("{}-{}", r.issue.unwrap_or(0), r.review_rounds + 1);
                let fresh = ReviewNote {
                    id,
                    author: "ann".into(),
                    ..ReviewNote::default()
                };
                (
                    0,
                    vec![
                        Event::ReviewLooked {
                            decision: ReviewDecision::Approved,
                            feedback: Vec::new(),
                        },
                        Event::ReviewLooked {
                            decision: ReviewDecision::ChangesRequested,
                            feedback: vec![fresh],
                        },
                    ],
                )
            }
            Effect::RunStep { .. } | Effect::LookAtCi { .. } | Effect::AddressReview { .. } => {
                let (step, repair) = match pending {
                    Effect::RunStep { step, repair, .. } => (step, repair),
                    _ => (Step::MonitorCi, false),
                };
                let round = matches!(pending, Effect::AddressReview { .. });
                let u = Usage::default();
                let fail = |class, sig| Event::StepFailed {
                    step,
                    class,
                    signature: Signature(sig),
                    usage: u,
                    wait_hint_secs: Some(1),
                };
                let last = core.runner().last_signature[step.index()].map_or(0, |s| s.0);
                let mut evs = vec![
                    fail(FailureClass::TestAssertion, last + 1),
                    fail(FailureClass::ContextWindow, last + 1),
                    fail(FailureClass::RateLimit, last + 1),
                    fail(FailureClass::Network, last + 1),
                    fail(FailureClass::Auth, last + 1),
                ];
                if last != 0 {
                    evs.push(fail(FailureClass::TestAssertion, last));
                }
                if self.goal == Goal::NextMerge {
                    // A round succeeds when the runner pushed what its agent changed.
                    evs.push(if round {
                        Event::Repaired { step, usage: u }
                    } else {
                        Event::StepSucceeded { step, usage: u }
                    });
                }
                if step == Step::MonitorCi && !round {
                    evs.push(Event::CiPending {
                        usage: u,
                        commit: None,
                    });
                }
                if step == Step::Merge && self.races {
                    evs.push(Event::MergeRaceLost {
                        class: FailureClass::Unknown,
                        signature: Signature(last + 1),
                        usage: u,
                    });
                }
                // The merge queue holds the PR (a builtin merge's answer only).
                let builtin_merge = self.builtin.is_none_or(|b| b[Step::Merge.index()]);
                if step == Step::Merge && builtin_merge && !round {
                    evs.push(Event::MergeQueued { usage: u });
                }
                // Another look at CI, or at the merge queue (the merge's run again after the
                // queue's wait), is the runner's alone: it neither starts an agent nor counts
                // as an attempt.
                let queue_look = core.runner().queue_waits > 0;
                let agent_call = match (pending, self.builtin) {
                    (Effect::LookAtCi { .. }, _) => false,
                    (Effect::RunStep { .. }, _) if queue_look => false,
                    // A round is always an agent's (`steps.addressReview`).
                    (Effect::AddressReview { .. }, _) => true,
                    (_, Some(builtin)) => !builtin[step.index()] || repair,
                    (_, None) => true,
                };
                (u64::from(agent_call), evs)
            }
            Effect::Exit { .. } | Effect::AskDecision { .. } => return self.terminal(core),
            other => unreachable!("{other:?}"),
        };
        // Every call of the runner's own may fail on the network; the runner answers a
        // `RunStep` so only when no agent ran in it, so that answer costs no invocation.
        if !matches!(pending, Effect::Wait { .. }) {
            events.push(Event::NetworkFailed);
        }
        let mut best: Option<u64> = None;
        // A race merged again is no attempt (only the one past the free re-runs is); it is
        // an agent call where the run was one.
        let gives_up = core.runner().contention.lost() >= Contention::MAX_LOST_RACES;
        for ev in events {
            let cost = match ev {
                Event::NetworkFailed => 0,
                Event::MergeRaceLost { .. } if self.builtin.is_none() && !gives_up => 0,
                _ => cost,
            };
            let mut next = core.clone();
            let effects = next.handle(&ev);
            let merged = effects
                .iter()
                .any(|e| matches!(e, Effect::RecordMerged { .. }));
            let req = request(effects);
            let value = if merged {
                (self.goal == Goal::NextMerge).then_some(0)
            } else {
                match req {
                    Some(req) => self.best(&next, req),
                    None => None,
                }
            };
            if let Some(v) = value {
                best = Some(best.map_or(v + cost, |b: u64| b.max(v + cost)));
            }
        }
        best
    }

    fn terminal(&self, core: &Core) -> Option<u64> {
        match (self.goal, core.state()) {
            (Goal::HaltWithoutSuccess, State::Halted { .. }) => Some(0),
            _ => None,
        }
    }
}

pub fn worst(limits: &Limits, goal: Goal) -> u64 {
    worst_of(limits, goal, None)
}

pub fn worst_of(limits: &Limits, goal: Goal, builtin: Option<[bool; Step::COUNT]>) -> u64 {
    worst_with(limits, goal, builtin, false)
}

pub fn worst_with(
    limits: &Limits,
    goal: Goal,
    builtin: Option<[bool; Step::COUNT]>,
    races: bool,
) -> u64 {
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    let req = request(core.handle(&Event::Start)).expect("start requests");
    let mut s = Search::new(goal, builtin, races);
    s.best(&core, req).expect("goal reachable")
}

pub fn small_limits() -> Vec<(String, Limits)> {
    let mut out = Vec::new();
    let phase = |step: Option<Step>, f: u32| {
        let mut a = [0u32; Step::COUNT];
        if let Some(s) = step {
            a[s.index()] = f;
        }
        a
    };
    let phases: &[(Option<Step>, u32)] = &[
        (None, 0),
        (Some(Step::Verify), 2),
        (Some(Step::Verify), 1),
        (Some(Step::WriteSpecs), 2),
        (Some(Step::StartCycle), 2),
        (Some(Step::StartCycle), 4),
        (Some(Step::Merge), 2),
        (Some(Step::Merge), 4),
        (Some(Step::Merge), 5),
    ];
    for r in 1..=3u32 {
        for b in 0..=2u32 {
            for e in 1..=2u32 {
                for (i, &(ps, pf)) in phases.iter().enumerate() {
                    // Keep the grid affordable: every phase limit with the middle values,
                    // every R/B/E with no phase limit.
                    if i > 0 && !(r == 3 && b == 1) {
                        continue;
                    }
                    let l = Limits {
                        max_retries_per_step: r,
                        max_bounce_retries: b,
                        max_consecutive_escalations: e,
                        max_consecutive_same_failure: if (r + b) % 2 == 0 { 2 } else { 0 },
                        max_consecutive_failures: phase(ps, pf),
                        max_rate_limit_waits: if b == 1 { 1 } else { 0 },
                        simplify_enabled: !(r == 2 && b == 2),
                        // A step's network waits multiply the states as the rate-limit
                        // waits do: one of the two per configuration keeps the grid
                        // affordable (`bounds_exhaustive.rs` checks both at once, smaller).
                        max_network_waits: if b == 1 { 0 } else { (r + e) % 2 },
                        // CI pending: no wait, or one wait and a second look.
                        ci_timeout_secs: if b == 1 { 10 } else { 0 },
                        ..Limits::default()
                    };
                    out.push((
                        format!(
                            "R={r} B={b} E={e} F={ps:?}:{pf} W={} N={} S={} simplify={}",
                            l.max_rate_limit_waits,
                            l.max_network_waits,
                            l.max_consecutive_same_failure,
                            l.simplify_enabled
                        ),
                        l,
                    ));
                }
            }
        }
    }
    // Several phase limits at once: bounces must go to the steps that gain most from them.
    let mut multi = [0u32; Step::COUNT];
    multi[Step::StartIssue.index()] = 2;
    multi[Step::WriteSpecs.index()] = 2;
    multi[Step::Verify.index()] = 2;
    multi[Step::Merge.index()] = 3;
    for (r, b, e) in [(4, 2, 2), (4, 1, 2), (3, 2, 1)] {
        let l = Limits {
            max_retries_per_step: r,
            max_bounce_retries: b,
            max_consecutive_escalations: e,
            max_consecutive_same_failure: 2,
            max_consecutive_failures: multi,
            max_rate_limit_waits: 0,
            // The largest searches: no wait of either kind (the grid above has both).
            max_network_waits: 0,
            ci_timeout_secs: 10,
            ..Limits::default()
        };
        out.push((format!("R={r} B={b} E={e} multi-phase"), l));
    }
    out
}

/// What searching every `small_limits` configuration found and cost.
pub struct Checked {
    /// The configurations whose computed bounds differ from the exhaustive worst cases.
    pub mismatches: Vec<String>,
    /// CPU time of the longest single search, in seconds: no number of cores goes below it.
    pub longest_cpu_secs: f64,
    /// CPU time of all the searches, in seconds.
    pub total_cpu_secs: f64,
}

/// The CPU time the calling thread used so far, in seconds (`utime` and `stime` of
/// `/proc/thread-self/stat`, in the kernel's 100 ticks a second); 0 where there is no /proc.
fn thread_cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return 0.0;
    };
    // The name in parentheses may hold spaces: fields are counted after it.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// The computed bounds of every `small_limits` configuration against the exhaustive worst
/// cases, searched on `threads` threads (each search is independent).
/// `f` of every job, on `threads` threads that each take the next job until none is left;
/// the answers in the jobs' order. The searches are independent and CPU-bound.
pub fn in_parallel<T: Sync, R: Send>(
    jobs: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let answers: Mutex<Vec<Option<R>>> = Mutex::new(jobs.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(at) else { break };
                let answer = f(job);
                answers.lock().expect("no job panicked")[at] = Some(answer);
            });
        }
    });
    answers
        .into_inner()
        .expect("no job panicked")
        .into_iter()
        .map(|a| a.expect("every job ran"))
        .collect()
}

pub fn check_small_limits(threads: usize) -> Checked {
    use std::sync::Mutex;
    let configs = small_limits();
    // The largest searches (the last configurations, to the next merge) first, so that the
    // threads finish together.
    let jobs: Vec<(usize, Goal)> = (0..configs.len())
        .rev()
        .flat_map(|i| [(i, Goal::NextMerge), (i, Goal::HaltWithoutSuccess)])
        .collect();
    let found = Mutex::new(vec![[0u64; 2]; configs.len()]);
    let cpu = Mutex::new((0.0f64, 0.0f64));
    in_parallel(&jobs, threads, |&(i, goal)| {
        let before = thread_cpu_secs();
        let v = worst(&configs[i].1, goal);
        let spent = thread_cpu_secs() - before;
        let slot = usize::from(goal == Goal::HaltWithoutSuccess);
        found.lock().expect("no search panicked")[i][slot] = v;
        let mut cpu = cpu.lock().expect("no search panicked");
        cpu.0 = cpu.0.max(spent);
        cpu.1 += spent;
    });
    let found = found.into_inner().expect("no search panicked");
    let (longest_cpu_secs, total_cpu_secs) = cpu.into_inner().expect("no search panicked");
    let mismatches = configs
        .iter()
        .zip(found)
        .filter_map(|((name, limits), [merge, halt])| {
            let computed = sdlc_machine::machine::bounds::compute(limits);
            (computed.between_merges != merge || computed.nothing_succeeds != halt).then(|| {
                format!(
                    "{name}: computed {}/{} exhaustive {merge}/{halt}",
                    computed.between_merges, computed.nothing_succeeds
                )
            })
        })
        .collect();
    Checked {
        mismatches,
        longest_cpu_secs,
        total_cpu_secs,
    }
}
