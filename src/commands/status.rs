//! `sdlc-runner status --config F [--json]`: what the runner would continue from, read from
//! the journal without modifying anything: the session, the machine's state and every counter
//! of docs/counters-and-bounds.md (rebuilt from the recorded events), the last failure, a sticky halt, the work
//! wasted since the last merge, the state file and where the logs are.

use crate::artifacts::{self, StateFile};
use crate::config::Config;
use crate::failure::FailureClass;
use crate::journal::{self, Journal, OpenSession, SessionEnd};
use crate::logs::ORCHESTRATION_LOG;
use crate::machine::Core;
use crate::redact::{redact, redact_json};
use crate::step::Step;
use std::path::{Path, PathBuf};

mod text;
mod views;

pub use text::now_text;
pub use views::{
    Budgets, ByStep, ClaimView, Counters, DayView, LastFailureView, Limited, RunningStepView,
    SpendView, StateFileView, Status, WaitView, Wasted, WorkerView,
};

pub fn run(config: &Path, json: bool) -> i32 {
    let cfg = match super::load_config(config) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let report = match status(&cfg) {
        Ok(r) => r,
        Err(e) => {
            say!("error: {e}");
            return 2;
        }
    };
    if json {
        match encode(&report) {
            Ok(text) => out!("{text}"),
            Err(e) => {
                say!("error: {e}");
                return 2;
            }
        }
    } else {
        out_raw!("{}", redact(&report.text()));
    }
    0
}

/// The document `status --json` prints (and `GET /api/status` serves), redacted.
pub fn encode(report: &Status) -> Result<String, String> {
    serde_json::to_value(report)
        .and_then(|mut v| {
            redact_json(&mut v);
            serde_json::to_string_pretty(&v)
        })
        .map_err(|e| format!("cannot encode the status as JSON: {e}"))
}

/// [`status`] as the `--json` document.
pub fn json(cfg: &Config) -> Result<String, String> {
    encode(&status(cfg).map_err(|e| e.to_string())?)
}

/// The running step and the wait of the runner of `project`, when the runner that wrote them
/// is the one holding the lock now and is alive (a dead runner's last snapshot is not shown).
fn live(project: &Path) -> (Option<RunningStepView>, Option<WaitView>) {
    let Some(snap) = held_snapshot(project) else {
        return (None, None);
    };
    let now = chrono::Utc::now();
    let secs = |d: chrono::TimeDelta| u64::try_from(d.num_seconds()).unwrap_or(0);
    (
        snap.step.map(|step| RunningStepView {
            elapsed_seconds: secs(now - step.started_at),
            step,
        }),
        snap.wait.map(|wait| WaitView {
            remaining_seconds: secs(wait.until - now),
            wait,
        }),
    )
}

/// The merge train of the fleet working `project`, when that fleet holds the lock and is
/// alive.
fn train(project: &Path) -> Option<crate::live_status::TrainSnapshot> {
    let dir = crate::runner_dir::RunnerDir::locate(project).ok()?;
    let holder = lock_holder(&dir).filter(|pid| crate::cleanup::process_alive(*pid))?;
    let mut train = crate::live_status::read_train(&dir.dir)?;
    let now = chrono::Utc::now();
    for car in &mut train.cars {
        car.waiting_seconds = car
            .joined_at
            .map(|at| u64::try_from((now - at).num_seconds()).unwrap_or(0));
    }
    (u32::try_from(holder).ok() == Some(train.pid)).then_some(train)
}

/// `live.json` of the runner holding the lock now, if it is alive.
fn held_snapshot(project: &Path) -> Option<crate::live_status::Snapshot> {
    let dir = crate::runner_dir::RunnerDir::locate(project).ok()?;
    let holder = lock_holder(&dir).filter(|pid| crate::cleanup::process_alive(*pid));
    let snap = crate::live_status::read(&dir.dir)?;
    (holder.and_then(|p| u32::try_from(p).ok()) == Some(snap.pid)).then_some(snap)
}

/// GitHub's requests the live runner made so far and the rate-limit budget left, from its
/// `live.json` (as of its last change: a step or a wait beginning or ending).
fn live_github(project: &Path) -> Option<crate::stats::GithubRequests> {
    held_snapshot(project)?.github
}

/// The pid the lock file names (emptied when the runner exits cleanly).
fn lock_holder(dir: &crate::runner_dir::RunnerDir) -> Option<i32> {
    crate::safe_fs::read_no_follow(&dir.lock())
        .ok()
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<i32>().ok())
}

/// Each worker clone's own status (`<git dir>/sdlc-runner/workers/w<k>`).
fn workers(cfg: &Config) -> Vec<WorkerView> {
    let Ok(dir) = crate::runner_dir::RunnerDir::locate(&cfg.project_path) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir.dir.join("workers")) else {
        return Vec::new();
    };
    let mut homes: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let k = e
                .file_name()
                .to_str()?
                .strip_prefix('w')?
                .parse::<u32>()
                .ok()?;
            Some((k, e.path()))
        })
        .filter(|(_, p)| p.join(".git").is_dir())
        .collect();
    homes.sort();
    homes
        .into_iter()
        .map(|(k, clone)| {
            let mut wcfg = cfg.clone();
            wcfg.project_path = clone.clone();
            wcfg.log_dir = cfg.log_dir.join(format!("w{k}"));
            let st = status_of_clone(&wcfg).ok();
            let (running_step, wait) = live(&clone);
            WorkerView {
                running_step,
                wait,
                name: format!("w{k}"),
                runner: runner_liveness(&clone),
                clone,
                session_status: st.as_ref().and_then(|s| s.session_status.clone()),
                state: st.as_ref().and_then(|s| s.state.clone()),
                current_issue: st.as_ref().and_then(|s| s.current_issue),
                current_issue_ref: st.as_ref().and_then(|s| s.current_issue_ref.clone()),
                current_step: st.as_ref().and_then(|s| s.current_step.clone()),
                current_attempt: st.as_ref().and_then(|s| s.current_attempt),
                sticky_halt: st.and_then(|s| s.sticky_halt),
            }
        })
        .collect()
}

/// The claims on the configured tracker: the local tracker's files, or (asked through `gh`,
/// within 10 s) the GitHub issues labelled claimed; and the local tracker's merge lease. A
/// tracker that cannot be read shows none.
fn claims(cfg: &Config) -> (Vec<ClaimView>, Option<ClaimView>) {
    let Ok(store) = crate::wiring::claim_store(cfg, Some(std::time::Duration::from_secs(10)))
    else {
        return (Vec::new(), None);
    };
    let now = chrono::Utc::now();
    let view = |c: crate::ports::claims::Claim| ClaimView {
        issue: c.issue,
        live: c.live(now),
        worker: c.worker,
        expires_at: c
            .expires_at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    let claims = store
        .all()
        .unwrap_or_default()
        .into_iter()
        .map(view)
        .collect();
    (claims, store.merge_lease().ok().flatten().map(view))
}

/// The daily ceiling over every journal of the project (its own and each worker's clone's).
fn day(cfg: &Config) -> Option<DayView> {
    let budget = cfg.budget.per_day_usd?;
    let now = chrono::Utc::now();
    let journals = journal::Journals::of(&cfg.project_path).paths();
    let day = journal::DaySpend::read(&journals, now).ok()?;
    Some(DayView {
        spent_usd: day.total_micros() as f64 / 1e6,
        per_day_usd: budget,
        frees_at: day
            .frees_at((budget * 1e6).round() as u64)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
    })
}

/// The lock file holds the pid of the runner holding it (emptied when it exits cleanly); a
/// pid whose process is gone means the runner died (a crash, kill -9). Read without locking:
/// `status` must never stand in the way of a runner starting.
pub(crate) fn runner_liveness(project: &Path) -> String {
    let Ok(dir) = crate::runner_dir::RunnerDir::locate(project) else {
        return "not running".into();
    };
    match lock_holder(&dir) {
        Some(pid) if crate::cleanup::process_alive(pid) => format!("running (pid {pid})"),
        Some(pid) => format!("not running (runner pid {pid} died without cleaning up; the next run continues its session)"),
        None => "not running".into(),
    }
}

pub fn status(cfg: &Config) -> Result<Status, journal::JournalError> {
    let mut st = status_of_clone(cfg)?;
    let (claims, merge_lease) = claims(cfg);
    st.claims = claims;
    st.merge_lease = merge_lease;
    st.workers = workers(cfg);
    st.train = train(&cfg.project_path);
    st.day = day(cfg);
    let clones = st.workers.iter().map(|w| w.clone.as_path());
    st.refused_hosts = refused_hosts(std::iter::once(cfg.project_path.as_path()).chain(clones));
    Ok(st)
}

/// The hosts the allowlist's proxy refused the agent in the last run of each clone, from its
/// `live.json` (whether or not that runner still runs: the list outlives the run, until the
/// next run starts).
fn refused_hosts<'a>(
    clones: impl Iterator<Item = &'a Path>,
) -> Vec<crate::live_status::RefusedHost> {
    clones
        .filter_map(|clone| crate::runner_dir::RunnerDir::locate(clone).ok())
        .filter_map(|dir| crate::live_status::read(&dir.dir))
        .flat_map(|snap| snap.refused_hosts)
        .collect()
}

/// [`status`] of one clone's own journal, without the tracker's claims or the workers.
fn status_of_clone(cfg: &Config) -> Result<Status, journal::JournalError> {
    let project = cfg.project_path.clone();
    let journal_path = match journal::journal_path(&project) {
        Ok(path) if path.exists() => path,
        // Before the first run of this version the journal is still where older runners kept it.
        Ok(path) if project.join(crate::runner_dir::LEGACY_JOURNAL).is_file() => {
            let _ = path;
            project.join(crate::runner_dir::LEGACY_JOURNAL)
        }
        Ok(path) => path,
        // Not (yet) a git work tree: no runner has recorded anything; say so rather than fail.
        Err(_) => project
            .join(".git")
            .join(crate::runner_dir::DIR_NAME)
            .join("journal.jsonl"),
    };
    let rec = Journal::read(&journal_path)?;
    let (running_step, wait) = live(&project);
    let mut st = Status {
        refs: crate::config::IssueRefs::of(cfg),
        project: project.clone(),
        journal: journal_path,
        journal_lines: rec.lines,
        torn_line: rec.torn_line.clone(),
        session: None,
        session_status: None,
        exit_code: None,
        state: None,
        current_issue: None,
        current_issue_ref: None,
        current_step: None,
        current_attempt: None,
        running_step,
        wait,
        counters: None,
        budgets: None,
        last_failure: None,
        sticky_halt: rec.sticky_halt.as_ref().map(|(_, h)| h.clone()),
        wasted_since_last_merge: None,
        divergence: None,
        state_file: state_file(&project),
        log_dir: cfg.log_dir.clone(),
        runner: runner_liveness(&project),
        claims: Vec::new(),
        merge_lease: None,
        workers: Vec::new(),
        train: None,
        orchestration_log: cfg.log_dir.join(ORCHESTRATION_LOG),
        day: None,
        refused_hosts: Vec::new(),
        github: live_github(&project),
    };
    if let Some(session) = &rec.last_session {
        st.session = Some(session.id.clone());
        // A worker that stood by ended its session on `StandBy`: it is no idle worker, the
        // fleet starts it again when a PR joins the merge train.
        let stood_by = session.events.last() == Some(&crate::machine::Event::StandBy);
        st.session_status = Some(
            match &rec.last_end {
                None => "open",
                Some(SessionEnd::Exit { .. }) if stood_by => "standingBy",
                Some(SessionEnd::Exit { .. }) => "exited",
                Some(SessionEnd::Halt { .. }) => "halted",
                Some(SessionEnd::HaltAcknowledged) => "haltAcknowledged",
            }
            .to_string(),
        );
        if let Some(SessionEnd::Exit { code }) = &rec.last_end {
            st.exit_code = Some(*code);
        }
        fill_from_machine(&mut st, session);
    }
    Ok(st)
}

fn fill_from_machine(st: &mut Status, session: &OpenSession) {
    let (core, divergence) = journal::rebuild_session(session);
    st.divergence = divergence.map(|d| {
        format!(
            "seq {}: recorded {}, the machine now gives {} (run `sdlc-runner replay {}`)",
            d.seq,
            d.expected,
            d.actual,
            st.journal.display()
        )
    });
    let r = core.runner();
    let state = core.state();
    st.state = Some(state.name().to_string());
    st.current_issue = r.issue;
    st.current_issue_ref = r.issue.map(|n| st.refs.issue(n));
    st.current_step = state.step().map(|s| s.key().to_string());
    st.current_attempt = session.last_effects.iter().find_map(|e| match e {
        crate::machine::Effect::RunStep { attempt, .. } => Some(*attempt),
        _ => None,
    });
    st.counters = Some(counters(&core));
    let usd = |micros: u64| micros as f64 / 1_000_000.0;
    st.budgets = Some(Budgets {
        issue_usd: usd(r.issue_cost_micros),
        per_issue_usd: r.limits.per_issue_budget_micros.map(usd),
        issue_minutes: r.issue_elapsed_ms as f64 / 60_000.0,
        per_issue_minutes: r.limits.per_issue_budget_ms.map(|ms| ms as f64 / 60_000.0),
        session_usd: usd(r.session_cost_micros),
        per_session_usd: r.limits.per_session_budget_micros.map(usd),
        per_call_usd: r.limits.per_call_budget_micros.map(usd),
        call_left_usd: r.money_left_micros().map(usd),
    });
    st.last_failure = r.last_failure.map(|f| LastFailureView {
        step: f.step.key().to_string(),
        class: f.class.name().to_string(),
        signature: f.signature.to_string(),
        // From the journal: the cycle's end forgets the machine's failure contexts.
        weakened: session
            .recorded
            .iter()
            .rev()
            .find_map(|r| r.report.failure.as_ref())
            .filter(|d| d.class == FailureClass::TestsWeakened && d.step == f.step)
            .map(|d| crate::weakening::listed(&d.excerpt))
            .unwrap_or_default(),
        decided: (f.class == FailureClass::TestsWeakened).then(|| weakening_decided(r, f)),
    });
    let stats = &r.stats;
    st.wasted_since_last_merge = Some(Wasted {
        merges: stats.merges,
        since_merge: SpendView::from(&stats.since_merge),
        failed_by_class: FailureClass::ALL
            .iter()
            .filter(|c| stats.failed_by_class[c.index()].invocations > 0)
            .map(|c| {
                (
                    c.name().to_string(),
                    SpendView::from(&stats.failed_by_class[c.index()]),
                )
            })
            .collect(),
    });
}

fn counters(core: &Core) -> Counters {
    let r = core.runner();
    let l = &r.limits;
    let by_step = |values: &[u32; Step::COUNT]| -> ByStep<u32> {
        Step::ALL
            .iter()
            .filter(|s| values[s.index()] > 0)
            .map(|s| (s.key().to_string(), values[s.index()]))
            .collect()
    };
    Counters {
        attempts: by_step(&r.attempts),
        max_retries_per_step: l.max_retries_per_step,
        bounces: r.bounces,
        max_bounce_retries: l.max_bounce_retries,
        consecutive_escalations: r.consecutive_escalations,
        max_consecutive_escalations: l.max_consecutive_escalations,
        escalated_issues: r.escalated.iter().copied().collect(),
        phase_failures: Step::ALL
            .iter()
            .filter(|s| {
                r.phase_failures[s.index()] > 0 || l.max_consecutive_failures[s.index()] > 0
            })
            .map(|s| {
                (
                    s.key().to_string(),
                    Limited {
                        count: r.phase_failures[s.index()],
                        limit: l.max_consecutive_failures[s.index()],
                    },
                )
            })
            .collect(),
        same_signature_streak: by_step(&r.same_failure),
        max_consecutive_same_failure: l.max_consecutive_same_failure,
        rate_limit_wait_streak: r.wait_streak,
        max_rate_limit_waits: l.max_rate_limit_waits,
        step_network_wait_streak: r.step_network_waits,
        max_network_waits: l.max_network_waits,
        review_rounds: r.review_rounds,
        max_review_rounds: l.review.as_ref().map(|g| g.max_rounds),
        review_looks: r.review_looks,
        waiting_for_person: r.awaiting_person.iter().copied().collect(),
    }
}

/// Reads the state file without `artifacts::read_state`'s recovery (which moves a corrupt file
/// aside): `status` must not change anything on disk.
fn state_file(project: &Path) -> StateFileView {
    let path = artifacts::state_path(project);
    let (status, content, error) = match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => ("missing", None, None),
        Err(e) => ("corrupt", None, Some(format!("cannot read it: {e}"))),
        Ok(bytes) => match serde_json::from_slice::<StateFile>(&bytes) {
            Ok(s) => ("ok", Some(s), None),
            Err(e) => (
                "corrupt",
                None,
                Some(format!(
                    "not a valid state file: {e} (the next run recovers from the journal and git)"
                )),
            ),
        },
    };
    StateFileView {
        path,
        status: status.to_string(),
        content,
        error,
    }
}

/// What was decided about the tests the branch weakens (the last failure `f`, a
/// `TESTS_WEAKENED`): a person asked or approving, the issue escalated, or the facts handed
/// back to the agent.
fn weakening_decided(r: &crate::machine::Runner, f: crate::machine::LastFailure) -> String {
    let escalated = r.last_escalation.is_some_and(|(_, e)| e == f);
    if r.weakening_asked {
        "held for a person's approval (tests.weakening: ask; `decide retry` approves it)"
    } else if r.weakening_approved {
        "approved by a person for this cycle"
    } else if escalated {
        "escalated: weakened again after the hand-back"
    } else {
        "handed back to the agent once"
    }
    .to_string()
}
