//! `sdlc-runner status --config F [--json]`: what the runner would continue from, read from
//! the journal without modifying anything: the session, the machine's state and every counter
//! of docs/counters-and-bounds.md (rebuilt from the recorded events), the last failure, a sticky halt, the work
//! wasted since the last merge, the state file and where the logs are.

use crate::artifacts::{self, StateFile};
use crate::config::Config;
use crate::failure::FailureClass;
use crate::journal::{self, Journal, OpenSession, SessionEnd};
use crate::logs::ORCHESTRATION_LOG;
use crate::machine::{Core, Spend};
use crate::redact::{redact, redact_json};
use crate::step::Step;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// Everything `status` shows; `--json` prints exactly this.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub project: PathBuf,
    pub journal: PathBuf,
    pub journal_lines: u64,
    pub torn_line: Option<String>,
    /// The last session (open or ended), `None` when the journal holds none.
    pub session: Option<String>,
    /// `open`, `exited`, `halted` or `haltAcknowledged`.
    pub session_status: Option<String>,
    pub exit_code: Option<u8>,
    pub state: Option<String>,
    pub current_issue: Option<u32>,
    pub current_step: Option<String>,
    /// The attempt of the current step the agent (or the runner) is working on, if one is.
    pub current_attempt: Option<u32>,
    /// The step the runner runs now, live (only while the runner that wrote it holds the lock).
    pub running_step: Option<RunningStepView>,
    /// The wait the runner is in now (a backoff, quota, network or fleet pause), live.
    pub wait: Option<WaitView>,
    pub counters: Option<Counters>,
    /// Spend against the configured budgets (`None` before the first session).
    pub budgets: Option<Budgets>,
    pub last_failure: Option<LastFailureView>,
    /// Headline of an unacknowledged halt: `run` refuses until `--ack-halt`.
    pub sticky_halt: Option<String>,
    pub wasted_since_last_merge: Option<Wasted>,
    /// The recorded state the machine no longer reproduces (`replay` tells more).
    pub divergence: Option<String>,
    pub state_file: StateFileView,
    pub log_dir: PathBuf,
    pub orchestration_log: PathBuf,
    /// Whether a runner works on the project now: `running` (with its pid), `not running`.
    pub runner: String,
    /// Issue claims of the runners sharing the tracker (`--worker-id`), live or expired.
    pub claims: Vec<ClaimView>,
    /// The merge lease of the runners sharing the local tracker, when one is on record.
    pub merge_lease: Option<ClaimView>,
    /// The workers of `run --workers N` on this project, each with its own clone and session.
    pub workers: Vec<WorkerView>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerView {
    /// `w0`, `w1`, …
    pub name: String,
    pub clone: PathBuf,
    pub runner: String,
    pub session_status: Option<String>,
    pub state: Option<String>,
    pub current_issue: Option<u32>,
    pub current_step: Option<String>,
    pub current_attempt: Option<u32>,
    pub running_step: Option<RunningStepView>,
    pub wait: Option<WaitView>,
    pub sticky_halt: Option<String>,
}

/// The running step of `live.json`, with its elapsed time at the moment of reading.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunningStepView {
    #[serde(flatten)]
    pub step: crate::live_status::RunningStep,
    pub elapsed_seconds: u64,
}

/// The wait of `live.json`, with the seconds left at the moment of reading.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitView {
    #[serde(flatten)]
    pub wait: crate::live_status::Wait,
    pub remaining_seconds: u64,
}

/// The running step and the wait of the runner of `project`, when the runner that wrote them
/// is the one holding the lock now and is alive (a dead runner's last snapshot is not shown).
fn live(project: &Path) -> (Option<RunningStepView>, Option<WaitView>) {
    let Ok(dir) = crate::runner_dir::RunnerDir::locate(project) else {
        return (None, None);
    };
    let holder = lock_holder(&dir).filter(|pid| crate::cleanup::process_alive(*pid));
    let Some(snap) = crate::live_status::read(&dir.dir) else {
        return (None, None);
    };
    if holder.and_then(|p| u32::try_from(p).ok()) != Some(snap.pid) {
        return (None, None);
    }
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
                current_step: st.as_ref().and_then(|s| s.current_step.clone()),
                current_attempt: st.as_ref().and_then(|s| s.current_attempt),
                sticky_halt: st.and_then(|s| s.sticky_halt),
            }
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimView {
    pub issue: u32,
    pub worker: String,
    pub expires_at: String,
    /// `false` once the lease ran out: another runner may take the issue over.
    pub live: bool,
}

/// The claims on the configured tracker: the local tracker's files, or (asked through `gh`,
/// within 10 s) the GitHub issues labelled claimed; and the local tracker's merge lease. A
/// tracker that cannot be read shows none.
fn claims(cfg: &Config) -> (Vec<ClaimView>, Option<ClaimView>) {
    let store = match &cfg.tracker {
        crate::config::TrackerConfig::Local { dir, .. } => crate::claims::ClaimStore::local(dir),
        crate::config::TrackerConfig::Github { .. } => {
            let mut gh = crate::tracker::GitHub::new(&cfg.project_path);
            gh.timeout = std::time::Duration::from_secs(10);
            crate::claims::ClaimStore::GitHub(Box::new(gh))
        }
    };
    let now = chrono::Utc::now();
    let view = |c: crate::claims::Claim| ClaimView {
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

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    /// Failed attempts per step in this cycle, by step key (steps with none are left out).
    pub attempts: BTreeMap<String, u32>,
    pub max_retries_per_step: u32,
    pub bounces: u32,
    pub max_bounce_retries: u32,
    pub consecutive_escalations: u32,
    pub max_consecutive_escalations: u32,
    pub escalated_issues: Vec<u32>,
    /// Consecutive failures per step across the session, with the step's limit (0 = off).
    pub phase_failures: BTreeMap<String, Limited>,
    /// Same-signature failures in a row per step in this cycle.
    pub same_signature_streak: BTreeMap<String, u32>,
    pub max_consecutive_same_failure: u32,
    pub rate_limit_wait_streak: u32,
    pub max_rate_limit_waits: u32,
}

/// What the session and the current issue spent, beside their budgets (`None`: no budget).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Budgets {
    pub issue_usd: f64,
    pub per_issue_usd: Option<f64>,
    pub issue_minutes: f64,
    pub per_issue_minutes: Option<f64>,
    pub session_usd: f64,
    pub per_session_usd: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Limited {
    pub count: u32,
    pub limit: u32,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastFailureView {
    pub step: String,
    pub class: String,
    pub signature: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendView {
    pub invocations: u64,
    pub turns: u64,
    pub cost_usd: f64,
}

impl From<&Spend> for SpendView {
    fn from(s: &Spend) -> Self {
        SpendView {
            invocations: s.invocations,
            turns: s.turns,
            cost_usd: s.cost_micros as f64 / 1_000_000.0,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Wasted {
    pub merges: u64,
    pub since_merge: SpendView,
    /// Failed attempts since the last merge, by failure class (classes with none left out).
    pub failed_by_class: BTreeMap<String, SpendView>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateFileView {
    pub path: PathBuf,
    /// `missing`, `ok` or `corrupt`.
    pub status: String,
    pub content: Option<StateFile>,
    pub error: Option<String>,
}

pub fn status(cfg: &Config) -> Result<Status, journal::JournalError> {
    let mut st = status_of_clone(cfg)?;
    let (claims, merge_lease) = claims(cfg);
    st.claims = claims;
    st.merge_lease = merge_lease;
    st.workers = workers(cfg);
    Ok(st)
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
        project: project.clone(),
        journal: journal_path,
        journal_lines: rec.lines,
        torn_line: rec.torn_line.clone(),
        session: None,
        session_status: None,
        exit_code: None,
        state: None,
        current_issue: None,
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
        orchestration_log: cfg.log_dir.join(ORCHESTRATION_LOG),
    };
    if let Some(session) = &rec.last_session {
        st.session = Some(session.id.clone());
        st.session_status = Some(
            match &rec.last_end {
                None => "open",
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
    });
    st.last_failure = r.last_failure.map(|f| LastFailureView {
        step: f.step.key().to_string(),
        class: f.class.name().to_string(),
        signature: f.signature.to_string(),
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
    let by_step = |values: &[u32; Step::COUNT]| -> BTreeMap<String, u32> {
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

impl Status {
    /// The human-readable form.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let mut line = |s: String| {
            o.push_str(&s);
            o.push('\n');
        };
        line(format!("project:  {}", self.project.display()));
        line(format!("runner:   {}", self.runner));
        for w in &self.workers {
            let mut how = w
                .session_status
                .clone()
                .unwrap_or_else(|| "no session".into());
            if let Some(state) = &w.state {
                how.push_str(&format!(", {state}"));
            }
            if let (Some(n), Some(step)) = (w.current_issue, &w.current_step) {
                how.push_str(&format!(", issue #{n} at {step}"));
                if let Some(a) = w.current_attempt {
                    how.push_str(&format!(" attempt {a}"));
                }
            }
            if let Some(h) = &w.sticky_halt {
                how.push_str(&format!(", HALTED: {h}"));
            }
            line(format!("worker {}: {} ({how})", w.name, w.runner));
            if let Some(r) = &w.running_step {
                line(format!("  running:  {}", running_text(r)));
            }
            if let Some(wait) = &w.wait {
                line(format!("  waiting:  {}", wait_text(wait)));
            }
        }
        let lease = self.merge_lease.iter().map(|c| ("merge:   ", c));
        for (what, c) in self.claims.iter().map(|c| ("claim:   ", c)).chain(lease) {
            line(format!(
                "{what} #{} by worker {} until {}{}",
                c.issue,
                c.worker,
                c.expires_at,
                if c.live {
                    ""
                } else {
                    " (expired: may be taken over)"
                }
            ));
        }
        line(format!(
            "journal:  {} ({} records)",
            self.journal.display(),
            self.journal_lines
        ));
        if let Some(t) = &self.torn_line {
            line(format!("  warning: {t}"));
        }
        if let Some(h) = &self.sticky_halt {
            line(format!(
                "HALTED:   {h} — `run` refuses to start until you inspect the cause and pass --ack-halt"
            ));
        }
        match &self.session {
            None => line("session:  none recorded yet".into()),
            Some(id) => {
                let mut how = self.session_status.clone().unwrap_or_default();
                if let Some(code) = self.exit_code {
                    how.push_str(&format!(" (code {code})"));
                }
                line(format!("session:  {id} ({how})"));
            }
        }
        if let Some(state) = &self.state {
            line(format!("state:    {state}"));
            line(format!(
                "issue:    {}",
                self.current_issue
                    .map_or("none".to_string(), |i| format!("#{i}"))
            ));
            line(format!(
                "step:     {}{}",
                self.current_step.as_deref().unwrap_or("none"),
                self.current_attempt
                    .map(|a| format!(" (attempt {a})"))
                    .unwrap_or_default()
            ));
        }
        if let Some(r) = &self.running_step {
            line(format!("running:  {}", running_text(r)));
        }
        if let Some(w) = &self.wait {
            line(format!("waiting:  {}", wait_text(w)));
        }
        if let Some(d) = &self.divergence {
            line(format!(
                "  warning: the journal diverges from the machine at {d}"
            ));
        }
        if let Some(c) = &self.counters {
            line("counters:".into());
            line(format!(
                "  failed attempts (limit {} per step): {}",
                c.max_retries_per_step,
                render_map(&c.attempts)
            ));
            line(format!(
                "  bounces: {} (escalate above {})",
                c.bounces, c.max_bounce_retries
            ));
            line(format!(
                "  consecutive escalations: {}/{}",
                c.consecutive_escalations, c.max_consecutive_escalations
            ));
            let escalated: Vec<String> =
                c.escalated_issues.iter().map(|i| format!("#{i}")).collect();
            line(format!(
                "  escalated issues: {}",
                if escalated.is_empty() {
                    "none".to_string()
                } else {
                    escalated.join(", ")
                }
            ));
            let phases: Vec<String> = c
                .phase_failures
                .iter()
                .map(|(k, v)| {
                    if v.limit > 0 {
                        format!("{k} {}/{}", v.count, v.limit)
                    } else {
                        format!("{k} {} (no limit)", v.count)
                    }
                })
                .collect();
            line(format!(
                "  consecutive failures per step: {}",
                if phases.is_empty() {
                    "none".to_string()
                } else {
                    phases.join(", ")
                }
            ));
            line(format!(
                "  same-signature streak (limit {}): {}",
                c.max_consecutive_same_failure,
                render_map(&c.same_signature_streak)
            ));
            line(format!(
                "  rate-limit waits in a row: {}/{}",
                c.rate_limit_wait_streak, c.max_rate_limit_waits
            ));
        }
        if let Some(b) = &self.budgets {
            let of = |spent: String, limit: Option<f64>, unit: &str| match limit {
                Some(l) => format!("{spent} of {l:.2}{unit}"),
                None => format!("{spent} (no budget)"),
            };
            line(format!(
                "spend:    issue ${}, issue time {}, session ${}",
                of(format!("{:.2}", b.issue_usd), b.per_issue_usd, ""),
                of(
                    format!("{:.1}", b.issue_minutes),
                    b.per_issue_minutes,
                    " min"
                ),
                of(format!("{:.2}", b.session_usd), b.per_session_usd, ""),
            ));
        }
        if let Some(f) = &self.last_failure {
            line(format!(
                "last failure: {} in {} (signature {})",
                f.class, f.step, f.signature
            ));
        }
        if let Some(w) = &self.wasted_since_last_merge {
            line(format!(
                "since the last merge ({} merges this session): {} invocations, {} turns, ${:.2}",
                w.merges, w.since_merge.invocations, w.since_merge.turns, w.since_merge.cost_usd
            ));
            for (class, s) in &w.failed_by_class {
                line(format!(
                    "  failed {class}: {} invocations, {} turns, ${:.2}",
                    s.invocations, s.turns, s.cost_usd
                ));
            }
        }
        let sf = &self.state_file;
        match (&sf.content, &sf.error) {
            (Some(s), _) => line(format!(
                "state file: {} (step {}, last completed {}, issue {})",
                sf.path.display(),
                s.current_step,
                s.last_completed_step,
                s.current_issue
                    .map_or("none".to_string(), |i| format!("#{i}"))
            )),
            (None, Some(e)) => line(format!("state file: {}: {e}", sf.path.display())),
            (None, None) => line(format!("state file: {} (missing)", sf.path.display())),
        }
        line(format!("logs:     {}", self.log_dir.display()));
        line(format!(
            "orchestration log: {}",
            self.orchestration_log.display()
        ));
        o
    }
}

/// `implement attempt 2 of #12 · 3m05s · 14 turns · $0.42 · Edit`.
pub fn running_text(r: &RunningStepView) -> String {
    let s = &r.step;
    format!(
        "{} attempt {} of #{} · {}",
        s.step,
        s.attempt,
        s.issue,
        tally(r)
    )
}

fn tally(r: &RunningStepView) -> String {
    crate::progress::tally(
        std::time::Duration::from_secs(r.elapsed_seconds),
        r.step.turns,
        r.step.cost_usd,
        r.step.last_tool.as_deref(),
    )
}

/// What a runner does this moment, short (the table beside it names the step): `3m05s · 14
/// turns · $0.42 · Edit`, `RATE_LIMIT until 16:40:00 UTC (25s)`, or `—`.
pub fn now_text(running: Option<&RunningStepView>, wait: Option<&WaitView>) -> String {
    match (running, wait) {
        (Some(r), _) => tally(r),
        (None, Some(w)) => format!(
            "{} until {} ({})",
            w.wait.reason,
            w.wait.until.format("%H:%M:%S UTC"),
            crate::progress::clock(std::time::Duration::from_secs(w.remaining_seconds))
        ),
        (None, None) => "—".to_string(),
    }
}

/// `RATE_LIMIT until 2026-11-25 16:40:00 UTC (25s left)`.
pub fn wait_text(w: &WaitView) -> String {
    format!(
        "{} until {} ({} left)",
        w.wait.reason,
        w.wait.until.format("%Y-%m-%d %H:%M:%S UTC"),
        crate::progress::clock(std::time::Duration::from_secs(w.remaining_seconds))
    )
}

fn render_map(m: &BTreeMap<String, u32>) -> String {
    if m.is_empty() {
        return "none".to_string();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
