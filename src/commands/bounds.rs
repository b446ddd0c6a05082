//! `sdlc-runner bounds --config F`: the exact worst-case step attempts for a config (the
//! machine counts attempts whoever performs them: agent invocations and builtin actions
//! together), then the worst case of agent invocations alone for the config's builtin steps,
//! and how a clean issue splits; the waits, the money, the processes and the GitHub requests
//! per issue.

use crate::machine::bounds;
use std::path::Path;

pub fn run(config: &Path) -> i32 {
    let cfg = match super::load_config(config) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let b = attempts(&cfg);
    waits(&cfg);
    merges(&cfg);
    train(&cfg);
    money(&cfg);
    github_requests(&cfg);
    processes(&cfg);
    if cfg.workers > 1 {
        let drivers = cfg.fleet_drivers(cfg.workers);
        let n = u64::from(drivers);
        let who = match cfg.at_work(cfg.workers) {
            Some(at_work) => format!(
                "with {} workers ({drivers} machines on their own clones, at most {at_work} at work while the others' PRs wait in the merge train: train.standby)",
                cfg.workers
            ),
            None => format!("with {drivers} workers"),
        };
        out!(
            "{who}: at most {} between two merges of the fleet, {} before the fleet halts when nothing succeeds (each machine has these limits, and the coordinator only stops them earlier: {n} times the figures above)",
            b.between_merges.saturating_mul(n),
            b.nothing_succeeds.saturating_mul(n)
        );
    }
    0
}

/// The step attempts and agent invocations (worst cases) and how a clean issue splits.
fn attempts(cfg: &crate::config::Config) -> bounds::Bounds {
    let b = bounds::compute(&cfg.limits());
    out!(
        "step attempts between two successful merges (worst case): {}",
        b.between_merges
    );
    out!(
        "step attempts before a halt when nothing succeeds (worst case): {}",
        b.nothing_succeeds
    );
    out!("step attempts in one cycle (worst case): {}", b.per_cycle);
    let a = bounds::agent_invocations(&cfg.limits(), &cfg.builtin_steps());
    out!(
        "agent invocations between two successful merges (worst case): {}",
        a.between_merges
    );
    out!(
        "agent invocations before a halt when nothing succeeds (worst case): {}",
        a.nothing_succeeds
    );
    out!(
        "agent invocations in one cycle (worst case): {}",
        a.per_cycle
    );
    let (agent, builtin) = cfg.steps_by_performer();
    out!(
        "a step attempt is an agent invocation or, for a builtin step, the runner's own git and forge action (no agent call); the agent invocations are the agent steps' attempts and the repair attempts of builtin commitPush, monitorCI and merge, where the agent fixes before the runner acts again"
    );
    out!(
        "a clean issue: {} agent invocation(s) ({}) and {} builtin action(s) ({})",
        agent.len(),
        agent.join(", "),
        builtin.len(),
        if builtin.is_empty() {
            "none".to_string()
        } else {
            builtin.join(", ")
        }
    );
    out!("an attempt cut short by a runner crash counts as a failed attempt (KILLED): these figures hold across crashes and restarts");
    b
}

/// How often each kind of runner call, CI look, queue look and review look may repeat.
fn waits(cfg: &crate::config::Config) {
    let l = cfg.limits();
    let waits: Vec<String> = (1..=l.max_network_waits)
        .map(|n| l.network_backoff_secs(n).to_string())
        .collect();
    out!(
        "runner calls (git, gh, the tracker, builtin steps): each is made at most {} time(s) in a row when it fails on the network (waits of {} s), then the session halts (NETWORK); no network failure spends an attempt or starts an agent",
        1 + l.max_network_waits,
        if waits.is_empty() { "none".to_string() } else { waits.join(", ") }
    );
    let polls = l.ci_polls();
    out!(
        "CI looks (gh pr checks, or the local CI command's verdict) per monitorCI attempt: at most {} (waits of {} s between, within monitorCI's timeoutMin of {} s), then the attempt fails as TIMEOUT; no look starts an agent or spends an attempt",
        1 + polls.len(),
        if polls.is_empty() {
            "none".to_string()
        } else {
            polls.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        },
        l.ci_timeout_secs
    );
    out!(
        "merge queue looks (GitHub's merge queue, where the base branch has one) per merge attempt: at most {} (the same waits as CI's), each the merge's run again and one GraphQL request, then the attempt fails as TIMEOUT; no look starts an agent or spends an attempt",
        polls.len()
    );
    if let Some(gate) = &l.review {
        let pauses = l.review_polls();
        out!(
            "reviews (review): at most {} addressReview round(s) per cycle (maxReviewRounds), each one agent invocation (counted above) handed only feedback it was not given, then the runner's push and CI again; new feedback past them escalates the issue; looks at the review per cycle: one after each CI pass, and at most {} that hold the merge (waits from {} s doubling to at most {} s, {} s in all), then the cycle ends waiting for a person",
            gate.max_rounds,
            1 + pauses.len(),
            pauses.first().copied().unwrap_or(0),
            pauses.iter().copied().max().unwrap_or(0),
            gate.wait_secs
        );
    }
    out!("tracker writes: one per merge and one per escalation; a write the tracker refuses halts the session (TRACKER), a merged issue is never selected again");
}

/// The processes the runner starts (worst cases, alone and with `--worker-id`, and on a sound
/// network).
fn processes(cfg: &crate::config::Config) {
    let l = cfg.limits();
    let p = crate::process_bounds::compute(&l, &cfg.builtin_steps());
    let pair = |x: crate::process_bounds::Processes| {
        format!(
            "{} agent process(es) and {} other process(es)",
            x.agents, x.others
        )
    };
    out!(
        "processes the runner starts (worst case; agent processes apart from git, gh, CI, tracker and notifier processes): one issue, selection to merge or escalation: {}",
        pair(p.per_issue)
    );
    out!(
        "processes between two successful merges (worst case, startup included): {}",
        pair(p.between_merges)
    );
    out!(
        "processes before a halt when nothing succeeds (worst case, startup included): {}",
        pair(p.nothing_succeeds)
    );
    let claimed = cfg.limits_for(shared(cfg));
    let c = crate::process_bounds::compute(&claimed, &cfg.builtin_steps());
    out!(
        "with --worker-id (issues claimed, the merge turn shared): each selected issue is claimed, an issue another runner holds is skipped (one selection and one claim more, once per cycle each), and every request that works on the issue or waits renews the claim first, and a merge run waits for the merge turn asking again after each of at most {} pause(s); processes: one issue {}; between two merges {}; before a halt when nothing succeeds {}",
        claimed
            .merge_turn_wait_ms
            .map_or(0, sdlc_machine::fleet::LeaseWait::max_pauses),
        pair(c.per_issue),
        pair(c.between_merges),
        pair(c.nothing_succeeds)
    );
    // The worst case multiplies every call by its network retries and every attempt by its
    // rate-limit and network waits: the figures without them say what a run on a sound network starts.
    let calm = |l: &crate::machine::Limits| crate::machine::Limits {
        max_network_waits: 0,
        max_rate_limit_waits: 0,
        ..l.clone()
    };
    let q = crate::process_bounds::compute(&calm(&l), &cfg.builtin_steps());
    let qc = crate::process_bounds::compute(&calm(&claimed), &cfg.builtin_steps());
    out!(
        "the same when no call fails on the network and nothing is rate-limited (the worst cases above repeat every call after each of {} network waits and every attempt after each of {} rate-limit waits and {} network waits): one issue {}; between two merges {}; with --worker-id, one issue {}; between two merges {}",
        l.max_network_waits,
        l.max_rate_limit_waits,
        l.max_network_waits,
        pair(q.per_issue),
        pair(q.between_merges),
        pair(qc.per_issue),
        pair(qc.between_merges)
    );
    out!("a run that merges k issues starts at most k + 1 times the between-merges figures");
    let rows: Vec<String> = crate::process_bounds::CHILDREN
        .iter()
        .map(|(label, c)| format!("{label}={}", c.others))
        .collect();
    out!("children per effect, other than agents: {}", rows.join(" "));
}

// ---- GitHub requests (issue 53) -------------------------------------------------------

/// The most GitHub requests the runner makes for one issue (`process_bounds::github_requests`,
/// each call's count from `services::github::requests`), and what a clean issue makes.
fn github_requests(cfg: &crate::config::Config) {
    let alone = crate::process_bounds::github_requests(&cfg.limits(), &cfg.builtin_steps());
    let claimed = cfg.limits_for(shared(cfg));
    let claims = crate::process_bounds::github_requests(&claimed, &cfg.builtin_steps());
    let calm = crate::machine::Limits {
        max_network_waits: 0,
        max_rate_limit_waits: 0,
        ..cfg.limits()
    };
    let sound = crate::process_bounds::github_requests(&calm, &cfg.builtin_steps());
    out!(
        "GitHub requests of the runner's own (tracker and forge on GitHub; worst case, every call repeated after its network and rate-limit waits and every read counted as if its answer changed): one issue, selection to merge or escalation: {}; between two successful merges: {}; with --worker-id, one issue: {}; one issue when no call fails on the network and nothing is rate-limited: {}",
        alone.per_issue.others,
        alone.between_merges.others,
        claims.per_issue.others,
        sound.per_issue.others
    );
    out!(
        "a clean issue makes at most {CLEAN_ISSUE_REQUESTS} of them; an answer GitHub gives as 304 (unchanged since the runner's last read, which asks with its ETag) does not count against GitHub's rate limit; each list past one page of 100 is one request more, and so is each dependency of an issue read one by one; an agent's own gh calls are the agent's"
    );
}

/// The GitHub requests of a clean issue through the builtin steps (one pass of every step,
/// CI passing at the first look), as `tests/it/real_gh.rs` counts them.
pub const CLEAN_ISSUE_REQUESTS: u64 = 15;

// ---- end of GitHub requests -------------------------------------------------------------

/// The most the run can spend (`bounds::money`), when a dollar budget bounds it.
fn money(cfg: &crate::config::Config) {
    let limits = cfg.limits_for(shared(cfg));
    let m = bounds::money(&limits, &cfg.builtin_steps());
    let usd = |micros: Option<u64>| micros.map(|m| format!("${:.2}", m as f64 / 1e6));
    let (Some(between), Some(nothing), Some(cycle)) = (
        usd(m.between_merges),
        usd(m.nothing_succeeds),
        usd(m.per_cycle),
    ) else {
        out!("money (worst case): not bounded in dollars (set budget.perCallUsd, and perIssueUsd, perSessionUsd or perDayUsd, to bound it)");
        return;
    };
    let mut terms = Vec::new();
    if let Some(c) = cfg.budget.per_call_usd {
        terms.push(format!("agent invocations × perCallUsd ${c:.2}"));
    }
    if let Some(i) = cfg.budget.per_issue_usd {
        terms.push(format!(
            "{} cycles × perIssueUsd ${i:.2}",
            limits.max_consecutive_escalations.max(1)
        ));
    }
    if let Some(s) = cfg.budget.per_session_usd {
        terms.push(format!("perSessionUsd ${s:.2}"));
    }
    if let Some(d) = cfg.budget.per_day_usd {
        terms.push(format!("perDayUsd ${d:.2}"));
    }
    out!(
        "money (worst case, the least of {}): {between} between two successful merges, {nothing} before a halt when nothing succeeds, {cycle} in one cycle; each agent call may pass the money it was handed by one model request's cost (the stream event that reached it), and a CLI that reports its tokens only when a call ends (codex, gemini) is held to it between calls only (doctor)",
        terms.join(", ")
    );
    if cfg.workers > 1 {
        out!(
            "with {} workers: each worker is held to these figures, the session and day budgets shared",
            cfg.workers
        );
    }
}

/// What merging among other mergers adds (`bounds::merges`): lost races merged again, the
/// agent calls they make, the waits for the merge turn.
fn merges(cfg: &crate::config::Config) {
    let limits = cfg.limits_for(shared(cfg));
    let m = bounds::merges(&limits, &cfg.builtin_steps());
    let races = m.runs_per_attempt.saturating_sub(1);
    out!(
        "a merge that lost a push race (origin's main moved while it merged) is merged again up to {races} times within its attempt, as contention, not as an attempt (the step-attempt figures above stand): a merge attempt is at most {} merge runs and at most {} agent invocations ({})",
        m.runs_per_attempt,
        m.agent_calls_per_attempt,
        if cfg.builtin(crate::step::Step::Merge) {
            "builtin merge: only a repair attempt calls the agent, a run again after a race is no repair"
        } else {
            "agent-run merge: every run"
        }
    );
    out!(
        "agent invocations with every lost race merged again: {} between two successful merges, {} before a halt when nothing succeeds, {} in one cycle (worst case)",
        m.agent_invocations.between_merges,
        m.agent_invocations.nothing_succeeds,
        m.agent_invocations.per_cycle
    );
    if let Some((pauses, limit_ms)) = m.pauses_per_turn_wait {
        out!(
            "merge turn (with --worker-id or workers): asked for before every merge run; while another worker or runner holds it, at most {pauses} pauses (200 ms doubling to 2 s) within {} s, then the session halts (MERGE LEASE) naming the holder, no issue blamed",
            limit_ms / 1000
        );
    }
}

/// The merge train's CI runs (`TrainLimits::max_ci_runs`), when `run --workers` forms one.
fn train(cfg: &crate::config::Config) {
    let Some(t) = cfg.train_limits() else {
        out!("merge train (run --workers): none for this config (it needs the local forge, localCi and a builtin merge); the workers take the merge turn one at a time, and the merge still lands only a commit CI passed");
        return;
    };
    let cars = u64::from(t.max_length.max(1));
    let worst = t.max_ci_runs(cars, 0);
    let per_kill = t.max_ci_runs(cars, 1).saturating_sub(worst);
    let exact = if t.batch <= 1 {
        "exact: some order of verdicts reaches it"
    } else {
        "an upper bound for batches of more than one"
    };
    out!(
        "merge train (run --workers; maxParallel {}, maxLength {cars}, batch {}): at most {worst} CI runs to settle a train of {cars} PRs (each lands or is returned, whatever CI answers; {exact}), so at most {worst} per landed issue when only one of them lands; each kill of the runner adds at most {per_kill}; when no run fails, at most {} runs for {cars} PRs, at most one per landed issue; with --workers of 2 or more these are a PR's only CI runs (none on the branch alone), and a returned PR's rounds are bounded by monitorCI's attempts",
        t.max_parallel.max(1),
        t.batch.max(1),
        t.max_ci_runs_when_green(cars)
    );
}

/// A run whose issues are claimed and whose merge turn is shared among the config's workers:
/// the worst case the money and merge figures allow for.
fn shared(cfg: &crate::config::Config) -> crate::config::RunShape {
    crate::config::RunShape {
        claims: true,
        workers: cfg.fleet_drivers(cfg.workers),
        spent_today_micros: 0,
    }
}
