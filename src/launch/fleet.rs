//! `run --workers N`: N drivers in one process, each with its own clone of origin under the
//! runner's state directory (`<git dir>/sdlc-runner/workers/w<k>`, so each has its own main,
//! journal and lock), its own worker id for issue claims, and one shared coordinator
//! (`sdlc_machine::fleet`, held for the workers by `driver/fleet_link.rs`) for what is global.
//!
//! A clone is kept after the run: a crash or a stop leaves each worker's session and branch in
//! it, and the next `run --workers N` resumes them. A fleet-level halt is recorded in
//! `<git dir>/sdlc-runner/fleet-halt`; the next run refuses until `--ack-halt`.

use super::startup::spent_today;
use super::{start, Started};
use crate::config::Config;
use crate::driver::{Link, RunOptions, Shared};
use crate::git::repo::Repo;
use crate::journal::TrainJournal;
use crate::machine::Limits;
use sdlc_machine::fleet::{Coordinator, FleetHalt, FleetLimits, Worker};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A clone's open session as its journal recorded it: what it spent (with the running cost of
/// a call it died in) and the issue it is in the middle of; `None` without one.
fn continued(clone: &Path) -> Result<Option<(u64, Option<u32>)>, String> {
    let dir = crate::runner_dir::RunnerDir {
        dir: clone.join(".git").join(crate::runner_dir::DIR_NAME),
    };
    let path = dir.journal();
    if !path.exists() {
        return Ok(None);
    }
    let recovered = crate::journal::Journal::read(&path).map_err(|e| e.to_string())?;
    Ok(recovered.open_session.map(|open| {
        let (core, _) = crate::journal::rebuild_session(&open);
        let spent = core
            .runner()
            .session_cost_micros
            .saturating_add(open.unanswered_spend_micros.unwrap_or(0));
        (spent, core.runner().issue)
    }))
}

/// What the sessions the workers continue (a fleet killed or crashed, run again) had spent:
/// each worker's open session rebuilt from its journal. The fleet's shares lived in its
/// memory; the journals are what is left of them.
fn session_spent_before(clones: &[PathBuf]) -> Result<u64, String> {
    let mut total = 0u64;
    for clone in clones {
        let spent = continued(clone).map_err(|e| {
            format!("budget.perSessionUsd: cannot count what the workers' sessions spent: {e}; repair or move the journal it names")
        })?;
        total = total.saturating_add(spent.map_or(0, |(spent, _)| spent));
    }
    Ok(total)
}

/// Whether the driver on `clone` continues an issue (or cannot tell: its startup says why).
fn continues_an_issue(clone: &Path) -> bool {
    !matches!(continued(clone), Ok(None) | Ok(Some((_, None))))
}

/// The file that keeps a fleet halt across runs (`release` removes it too).
pub(crate) fn halt_file(runner_dir: &Path) -> PathBuf {
    runner_dir.join("fleet-halt")
}

/// Runs `workers` drivers on clones of the project's origin until each has nothing left, or
/// the fleet halts.
pub fn run(cfg: Config, opts: RunOptions, workers: u32) -> i32 {
    match prepare(&cfg, &opts, workers) {
        Ok(plan) => execute(cfg, opts, plan),
        Err(message) => {
            say!("error: {message}");
            2
        }
    }
}

struct Plan {
    runner_dir: PathBuf,
    /// One per driver: `--workers` of them, and as many standing by with `train.standby`.
    clones: Vec<PathBuf>,
    /// `--workers`: how many may be at work at once.
    at_work: u32,
    base_id: String,
    _lock: crate::runner_dir::lock::Lock,
}

fn prepare(cfg: &Config, opts: &RunOptions, workers: u32) -> Result<Plan, String> {
    let file = cfg.file.display();
    if opts.dry_run || opts.issue.is_some() || opts.step.is_some() {
        return Err(format!(
            "{file}: --workers runs whole issues: it cannot be combined with --dry-run, --issue or --step"
        ));
    }
    let project = &cfg.project_path;
    let repo = Repo::open(project).map_err(|e| format!("{file}: projectPath: {e}"))?;
    let runner_dir = crate::runner_dir::RunnerDir::locate(project).map_err(|e| e.to_string())?;
    runner_dir.ensure().map_err(|e| e.to_string())?;
    // The project's own lock: no single runner works beside the fleet.
    let lock = crate::runner_dir::lock::acquire_lock(&runner_dir.lock(), project)
        .map_err(|e| e.to_string())?;
    let halt = halt_file(&runner_dir.dir);
    if let Ok(text) = std::fs::read_to_string(&halt) {
        if !opts.ack_halt {
            return Err(format!(
                "the last fleet halted: {}; inspect the workers' logs, fix the cause, then release the escalated issues (`sdlc-runner release N --config {file}`, which acknowledges the halt too) or acknowledge it: `sdlc-runner run --config {file} --workers {workers} --ack-halt`",
                text.trim()
            ));
        }
        std::fs::remove_file(&halt).map_err(|e| format!("{}: {e}", halt.display()))?;
    }
    let origin = crate::git::command::output(project, &["remote", "get-url", "origin"])
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            format!(
                "{file}: --workers clones the project's origin, and {} has no origin remote",
                project.display()
            )
        })?;
    let homes = runner_dir.dir.join("workers");
    crate::safe_fs::create_private_dir(&homes).map_err(|e| e.to_string())?;
    let mut clones = Vec::new();
    for k in 0..cfg.fleet_drivers(workers) {
        let clone = homes.join(format!("w{k}"));
        if !clone.join(".git").exists() {
            make_clone(&repo, &origin, &clone)?;
        }
        clones.push(clone);
    }
    Ok(Plan {
        runner_dir: runner_dir.dir,
        clones,
        at_work: workers,
        base_id: opts
            .worker_id
            .clone()
            .unwrap_or_else(|| "fleet".to_string()),
        _lock: lock,
    })
}

/// A clone of origin that borrows the project's objects, with the project's git identity.
fn make_clone(repo: &Repo, origin: &str, clone: &Path) -> Result<(), String> {
    let target = clone.to_string_lossy().into_owned();
    let reference = repo.path.to_string_lossy().into_owned();
    let out = crate::git::command::output(
        &repo.path,
        &[
            "clone",
            "--quiet",
            "--reference-if-able",
            &reference,
            origin,
            &target,
        ],
    )
    .map_err(|e| format!("cannot clone {origin} into {target}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git clone {origin} {target}: {}; check that origin is reachable",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    for key in ["user.name", "user.email", "commit.gpgsign"] {
        if let Ok(o) = crate::git::command::output(&repo.path, &["config", "--get", key]) {
            let value = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if o.status.success() && !value.is_empty() {
                let _ = crate::git::command::output(clone, &["config", key, &value]);
            }
        }
    }
    Ok(())
}

/// What the project had spent before the fleet starts, as its budgets read it.
struct Spent {
    /// The day's spend over every clone's journal (`budget.perDayUsd` only).
    today: Option<u64>,
    /// What the sessions the workers continue had spent (`budget.perSessionUsd` only).
    before: u64,
}

/// The project's spend, for the budgets that read it. The day's spend is the project's, over
/// every clone's journal: read once, here, and handed to each worker, whose own runner
/// directory sees only its clone.
fn spent(limits: &Limits, plan: &Plan) -> Result<Spent, String> {
    let today = match limits.per_day_budget_micros {
        Some(_) => {
            let dir = crate::runner_dir::RunnerDir {
                dir: plan.runner_dir.clone(),
            };
            let now = crate::ports::clock::Clock::now(&crate::ports::clock::TokioClock);
            Some(spent_today(&dir, now)?)
        }
        None => None,
    };
    let before = match limits.per_session_budget_micros {
        Some(_) => session_spent_before(&plan.clones)?,
        None => 0,
    };
    Ok(Spent { today, before })
}

/// What the workers share, its coordinator set to the fleet's limits and what was spent.
fn shared(cfg: &Config, limits: &Limits, plan: &Plan, spent: &Spent) -> Arc<Shared> {
    Arc::new(Shared::new(
        Coordinator::new(FleetLimits {
            workers: plan.clones.len() as u32,
            max_consecutive_escalations: limits.max_consecutive_escalations,
            session_budget_micros: limits.per_session_budget_micros,
            day_budget_left_micros: limits
                .per_day_budget_micros
                .map(|b| b.saturating_sub(spent.today.unwrap_or(0))),
            session_spent_before_micros: spent.before,
            train: cfg.train_limits(),
            at_work: cfg.at_work(plan.at_work),
        }),
        plan.runner_dir.clone(),
    ))
}

fn execute(cfg: Config, opts: RunOptions, plan: Plan) -> i32 {
    let workers = plan.clones.len() as u32;
    let limits = cfg.limits();
    let spent = match spent(&limits, &plan) {
        Ok(spent) => spent,
        Err(e) => {
            say!("error: {e}");
            return 2;
        }
    };
    let shared = shared(&cfg, &limits, &plan, &spent);
    let journal = crate::journal::train_journal(&plan.runner_dir);
    let journal =
        match TrainJournal::read(&journal).map(|j| j.filter(|_| cfg.train_limits().is_some())) {
            Ok(journal) => journal,
            Err(e) => {
                say!("error: {e}");
                return 2;
            }
        };
    let runtime = match crate::runtime::build(Some(workers.clamp(2, 16) as usize)) {
        Ok(rt) => rt,
        Err(e) => {
            say!("error: cannot start the async runtime: {e}");
            return 2;
        }
    };
    let standing_by = match plan.clones.len() as u32 - plan.at_work {
        0 => String::new(),
        n => format!(
            " (and {n} standing by, to take the next issues while PRs wait in the merge train)"
        ),
    };
    say!(
        "fleet: {} workers{standing_by} on clones under {}",
        plan.at_work,
        plan.runner_dir.join("workers").display()
    );
    let seats = seats(&cfg, &opts, &plan, spent.today);
    // The drivers that continue an issue start first; fresh ones then while there is room at
    // work. The others begin no session until a `TakeOn` starts them.
    let (resuming, fresh): (Vec<Seat>, Vec<Seat>) = seats
        .iter()
        .cloned()
        .partition(|s| continues_an_issue(&s.cfg.project_path));
    let mut started: Vec<Starting> = resuming.into_iter().map(Seat::start).collect();
    let resumed: Vec<(Worker, u32)> = started
        .iter()
        .filter_map(|w| match &w.started {
            Ok(Started::Ready(driver)) => Some((w.worker, driver.issue_under_way()?)),
            _ => None,
        })
        .collect();
    if let Some(said) = shared.resume(journal, &resumed) {
        say!("{said}");
    }
    started.extend(fresh.into_iter().take(shared.room()).map(Seat::start));
    let codes = runtime.block_on(drive_workers(&shared, &seats, started));
    if let Some((why, escalated)) = shared.halt() {
        let halt = Halted {
            why,
            escalated,
            day_budget: limits.per_day_budget_micros,
        };
        return halted(&halt, &cfg, &plan);
    }
    codes.into_iter().max().unwrap_or(0)
}

/// One driver of the fleet as its startup left it.
struct Starting {
    /// Its number in the fleet (`w<k>`).
    worker: Worker,
    /// Its diagnostics' span (`worker=<k>`).
    span: tracing::Span,
    started: Result<Started, String>,
}

/// How one driver of the fleet starts: its config and options on its own clone.
#[derive(Clone)]
struct Seat {
    worker: Worker,
    cfg: Config,
    opts: RunOptions,
}

impl Seat {
    /// The driver started on its clone. A startup is synchronous and may block (the tracker,
    /// git): it runs outside the runtime's context, or on its blocking pool.
    fn start(self) -> Starting {
        // Every diagnostic of this worker, from its start on, says `worker=<k>`.
        let span = crate::logging::worker_span(self.worker);
        let started = span.in_scope(|| start(self.cfg, self.opts));
        Starting {
            worker: self.worker,
            span,
            started,
        }
    }
}

/// Each driver's seat on its clone.
fn seats(cfg: &Config, opts: &RunOptions, plan: &Plan, spent_today: Option<u64>) -> Vec<Seat> {
    let mut seats = Vec::new();
    for (k, clone) in plan.clones.iter().enumerate() {
        let mut wcfg = cfg.clone();
        wcfg.project_path = clone.clone();
        if let Some(ci) = wcfg.local_ci.as_mut() {
            // One store of CI's verdicts for every clone: a tree one worker tested is
            // tested for the worker that lands it.
            ci.results = Some(plan.runner_dir.join("ci"));
        }
        wcfg.log_dir = cfg.log_dir.join(format!("w{k}"));
        let wopts = RunOptions {
            worker_id: Some(format!("{}-w{k}", plan.base_id)),
            spent_today_micros: spent_today,
            workers: Some(plan.at_work),
            ..opts.clone()
        };
        seats.push(Seat {
            worker: k as Worker,
            cfg: wcfg,
            opts: wopts,
        });
    }
    seats
}

/// Drives the workers started to their end, together: each run's exit code. The seats not
/// started stand by until the coordinator orders `TakeOn` (a PR joined the merge train), when
/// one whose clone is free is started; so is one whose driver ended well.
async fn drive_workers(shared: &Arc<Shared>, seats: &[Seat], started: Vec<Starting>) -> Vec<i32> {
    let (take_on, mut asked) = tokio::sync::mpsc::unbounded_channel();
    shared.on_take_on(take_on);
    let mut tasks = tokio::task::JoinSet::new();
    let mut idle: Vec<Worker> = seats
        .iter()
        .map(|s| s.worker)
        .filter(|w| !started.iter().any(|s| s.worker == *w))
        .rev()
        .collect();
    for starting in started {
        tasks.spawn(drive_one(shared.clone(), starting));
    }
    let mut codes = Vec::new();
    loop {
        tokio::select! {
            ended = tasks.join_next() => match ended {
                None => break,
                Some(Ok((worker, code))) => {
                    if code == 0 {
                        idle.push(worker);
                    }
                    codes.push(code);
                }
                Some(Err(_)) => codes.push(2),
            },
            Some(()) = asked.recv() => {
                if shared.stopping() {
                    continue;
                }
                let Some(seat) = idle.pop().and_then(|w| seats.get(w as usize)).cloned() else {
                    continue;
                };
                let shared = shared.clone();
                let worker = seat.worker;
                tasks.spawn(async move {
                    let start = move || crate::process::off_runtime(|| seat.start());
                    match tokio::task::spawn_blocking(start).await {
                        Ok(starting) => drive_one(shared, starting).await,
                        Err(_) => (worker, 2),
                    }
                });
            }
        }
    }
    codes
}

/// Drives one started driver to its end: its worker and exit code.
async fn drive_one(shared: Arc<Shared>, starting: Starting) -> (Worker, i32) {
    let Starting {
        worker,
        span,
        started,
    } = starting;
    let code = match started {
        Ok(Started::Ready(mut driver)) => {
            driver.join_fleet(Link { shared, worker });
            tracing::Instrument::instrument(driver.drive(), span).await
        }
        Ok(Started::Exit(code)) => code,
        Err(msg) => {
            say!("error: worker w{worker}: {msg}");
            2
        }
    };
    (worker, code)
}

/// How the fleet halted.
struct Halted {
    why: FleetHalt,
    /// The issues it escalated, for the recovery it prints.
    escalated: Vec<u32>,
    /// `budget.perDayUsd`, for when a day's halt frees.
    day_budget: Option<u64>,
}

/// The fleet halted: the halt recorded for the next run and said with its recovery; the exit
/// code.
fn halted(halt: &Halted, cfg: &Config, plan: &Plan) -> i32 {
    let mut headline = halt.why.headline();
    if let (FleetHalt::DayBudget { .. }, Some(budget)) = (&halt.why, halt.day_budget) {
        let dir = crate::runner_dir::RunnerDir {
            dir: plan.runner_dir.clone(),
        };
        let journals = crate::journal::Journals::in_dir(&dir).paths();
        let now = crate::ports::clock::Clock::now(&crate::ports::clock::TokioClock);
        if let Ok(day) = crate::journal::DaySpend::read(&journals, now) {
            let at = day.frees_at(budget).unwrap_or(now);
            headline.push_str(&format!(
                "; the daily budget frees at {}",
                at.format("%Y-%m-%d %H:%M:%S UTC")
            ));
        }
    }
    if let Err(e) = crate::safe_fs::write_atomic(
        &halt_file(&plan.runner_dir),
        format!("{headline}\n").as_bytes(),
    ) {
        say!("warning: cannot record the fleet halt: {e}");
    }
    let workers = plan.at_work;
    out!(
        "{headline}\nevery worker was stopped; each clone under {} keeps its work.{}",
        plan.runner_dir.join("workers").display(),
        crate::report::recovery(&halt.escalated, &cfg.file, &format!(" --workers {workers}"))
    );
    1
}
