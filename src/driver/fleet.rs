//! `run --workers N`: N drivers in one process, each with its own clone of origin under the
//! runner's state directory (`<git dir>/sdlc-runner/workers/w<k>`, so each has its own main,
//! journal and lock), its own worker id for issue claims, and one shared coordinator
//! (`sdlc_machine::fleet`) for what is global: one issue per worker, consecutive escalations
//! across workers, the session budget, rate-limit pauses, and the halt that stops everyone.
//!
//! A clone is kept after the run: a crash or a stop leaves each worker's session and branch in
//! it, and the next `run --workers N` resumes them. A fleet-level halt is recorded in
//! `<git dir>/sdlc-runner/fleet-halt`; the next run refuses until `--ack-halt`.

mod train;

use super::shutdown::Shutdown;
use super::{RunOptions, Started};
use crate::config::Config;
use crate::git::repo::Repo;
use crate::journal::TrainJournal;
use crate::live_status::TrainSnapshot;
use crate::machine::{Event, Signal};
use crate::ports::Clock;
use chrono::{DateTime, Utc};
use sdlc_machine::fleet::{
    Coordinator, Dispatch, FleetLimits, Order, Report, Settled, Share, Test, Worker,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What the workers share.
#[derive(Debug)]
pub(super) struct Shared {
    coordinator: Mutex<Coordinator>,
    /// Every worker's stop request, to carry out a halt.
    shutdowns: Mutex<Vec<Shutdown>>,
    /// Every journal of the project (its own and each clone's): the day's window a worker's
    /// day halt reads when it says when the window frees.
    pub journals: crate::journal::Journals,
    /// The merge train's cars, by issue: the commit CI passed on its branch and the message
    /// of its merge, from which any worker builds the trees it is handed.
    cars: Mutex<BTreeMap<u32, (String, String)>>,
    /// The main each train epoch's trees are built on, as the first test of the epoch
    /// found origin's.
    bases: Mutex<BTreeMap<u32, String>>,
    /// The train as last written to `train.json` in `runner_dir`, for `status`.
    shown: Mutex<Option<TrainSnapshot>>,
    /// The train as last journaled (`journal/train.rs`).
    journaled: Mutex<Option<TrainJournal>>,
    /// When each car asked to merge and joined the train, for `status`'s waiting time.
    joined: Mutex<BTreeMap<u32, chrono::DateTime<chrono::Utc>>>,
    runner_dir: PathBuf,
}

impl Shared {
    /// What the workers of a fleet whose runner directory is `runner_dir` share, nothing
    /// held or journaled yet.
    fn new(coordinator: Coordinator, runner_dir: PathBuf) -> Shared {
        Shared {
            coordinator: Mutex::new(coordinator),
            shutdowns: Mutex::new(Vec::new()),
            journals: crate::journal::Journals::in_dir(&crate::runner_dir::RunnerDir {
                dir: runner_dir.clone(),
            }),
            cars: Mutex::new(BTreeMap::new()),
            bases: Mutex::new(BTreeMap::new()),
            shown: Mutex::new(None),
            journaled: Mutex::new(None),
            joined: Mutex::new(BTreeMap::new()),
            runner_dir,
        }
    }
}

/// What the coordinator answered a report with, for the worker that made it.
#[derive(Debug, Default)]
pub(super) struct Reply {
    /// `WantsIssue`, `WantsMerge`: go ahead (`Some(true)`), wait or skip (`Some(false)`);
    /// `None`: no answer (the fleet halted).
    pub start: Option<bool>,
    /// The train's test this worker runs while it waits.
    pub test: Option<Test>,
    /// Its car's place in the train, when it waits in one.
    pub position: Option<usize>,
    /// What the train settled, said.
    pub said: Vec<String>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// One worker's link to the fleet.
#[derive(Debug, Clone)]
pub(super) struct Link {
    pub shared: Arc<Shared>,
    pub worker: Worker,
}

impl Link {
    /// Hands a report to the coordinator and carries out its orders; `Some(start)` answers
    /// `WantsIssue` and `WantsMerge`.
    pub fn report(&self, report: Report) -> Option<bool> {
        self.ask(report).start
    }

    /// [`Link::report`], with all the coordinator answered this worker.
    pub fn ask(&self, report: Report) -> Reply {
        let (orders, train) = {
            let mut c = locked(&self.shared.coordinator);
            let orders = c.handle(report);
            self.shared.journal(&c);
            (orders, self.shared.snapshot(&c))
        };
        self.show(train);
        let mut reply = Reply::default();
        for order in orders {
            match order {
                Order::Start { .. } | Order::MergeGo { .. } => reply.start = Some(true),
                Order::Skip { .. } | Order::MergeWait { .. } => reply.start = Some(false),
                Order::TrainWait { position, .. } => {
                    reply.start = Some(false);
                    reply.position = Some(position);
                }
                Order::RunTest { test, .. } => reply.test = Some(test),
                Order::TrainSettled(settled) => {
                    if let Settled::Return { car, .. } = &settled {
                        // Returned: it waits anew when it asks to merge again.
                        locked(&self.shared.joined).remove(car);
                    }
                    let said = crate::narration::train_settled(&settled);
                    tracing::info!("{said}");
                    reply.said.push(said);
                }
                Order::PauseAll { until } => say!(
                    "fleet: every worker pauses until {} (a rate limit or quota)",
                    chrono::DateTime::from_timestamp(i64::try_from(until).unwrap_or(0), 0)
                        .map(|t| t.format("%H:%M:%S UTC").to_string())
                        .unwrap_or_default()
                ),
                Order::HaltAll(why) => {
                    say!("{}", why.headline());
                    let shutdowns = match self.shared.shutdowns.lock() {
                        Ok(s) => s.clone(),
                        Err(p) => p.into_inner().clone(),
                    };
                    for s in shutdowns {
                        s.request(Signal::Term);
                    }
                }
            }
        }
        reply
    }

    /// Writes the train to `train.json` for `status`, when it changed; a write that fails is
    /// only a status the less.
    fn show(&self, train: Option<TrainSnapshot>) {
        let mut shown = locked(&self.shared.shown);
        if train.is_none() || *shown == train {
            return;
        }
        let path = self.shared.runner_dir.join(crate::live_status::TRAIN_FILE);
        let written = serde_json::to_vec(&train)
            .map_err(std::io::Error::other)
            .and_then(|bytes| crate::safe_fs::write_atomic(&path, &bytes));
        if let Err(e) = written {
            tracing::debug!("{}: {e}", path.display());
        }
        *shown = train;
    }

    /// `issue`'s car, boarding the train at `now` (the first time counts): `commit`, the one
    /// CI passed, and its merge's `message`.
    pub fn board(&self, issue: u32, commit: String, message: String, now: DateTime<Utc>) {
        locked(&self.shared.joined).entry(issue).or_insert(now);
        locked(&self.shared.cars).insert(issue, (commit, message));
        self.shared.journal(&locked(&self.shared.coordinator));
    }

    /// The merges of a tree's `cars`, in order; `None` when one is unknown.
    pub fn merges_of(&self, cars: &[u32]) -> Option<Vec<(String, String)>> {
        let known = locked(&self.shared.cars);
        cars.iter().map(|c| known.get(c).cloned()).collect()
    }

    /// The main train epoch `epoch`'s trees are built on, once a test found it.
    pub fn base_of(&self, epoch: u32) -> Option<String> {
        locked(&self.shared.bases).get(&epoch).cloned()
    }

    /// Records `base` as epoch `epoch`'s main, unless one is recorded: whether the epoch's
    /// main is `base`.
    pub fn settle_base(&self, epoch: u32, base: &str) -> bool {
        let same = locked(&self.shared.bases)
            .entry(epoch)
            .or_insert_with(|| base.to_string())
            == base;
        self.shared.journal(&locked(&self.shared.coordinator));
        same
    }

    /// Whether another worker of the fleet holds an issue.
    pub fn others_hold(&self) -> bool {
        locked(&self.shared.coordinator).others_hold(self.worker)
    }

    /// The fleet's share of money for this worker's next agent call.
    pub fn share(&self, wanted: Option<u64>) -> Share {
        locked(&self.shared.coordinator).share(self.worker, wanted)
    }

    /// `now_secs`: the clock port's time, in seconds since the epoch.
    pub fn may_dispatch(&self, now_secs: u64) -> Dispatch {
        locked(&self.shared.coordinator).may_dispatch(now_secs)
    }
}

/// Reports to the fleet, when this driver is one of its workers.
pub(super) fn tell(fleet: Option<&Link>, report: impl FnOnce(Worker) -> Report) -> Option<bool> {
    let link = fleet?;
    link.report(report(link.worker))
}

/// Whether the fleet's coordinator gives `issue` to this worker (always, outside a fleet).
pub(super) fn gives(fleet: Option<&Link>, issue: u32) -> bool {
    tell(fleet, |worker| Report::WantsIssue { worker, issue }) != Some(false)
}

/// Whether another worker of this runner's fleet holds an issue: then an empty selection
/// (all escalated or blocked) ends this worker, not the fleet (the coordinator's rule).
pub(super) fn others_hold(fleet: Option<&Link>) -> bool {
    fleet.is_some_and(Link::others_hold)
}

/// What holds the remaining issues, for the message: other runners' claims, else the
/// fleet's other workers.
pub(super) fn held_elsewhere(claims: String) -> String {
    if claims.is_empty() {
        "other workers of this fleet".to_string()
    } else {
        claims
    }
}

/// Before a dispatch: the fleet's answer instead of the request's when it may not go
/// ahead now: `FleetPaused` while the fleet pauses (the machine waits and asks again), the
/// shutdown event once the fleet halted.
pub(super) fn gate(fleet: Option<&Link>, clock: &dyn Clock, shutdown: &Shutdown) -> Option<Event> {
    let link = fleet?;
    let now_secs = u64::try_from(clock.now().timestamp()).unwrap_or(0);
    match link.may_dispatch(now_secs) {
        Dispatch::Go => None,
        Dispatch::Stop => {
            shutdown.request(Signal::Term);
            Some(shutdown.event())
        }
        Dispatch::WaitUntil(until) => Some(Event::FleetPaused {
            seconds: until.saturating_sub(now_secs).max(1),
        }),
    }
}

/// Before an agent call the machine handed `wanted`: what the call may spend, the
/// coordinator's share of the fleet's money for it (as much without a fleet), or the
/// event that answers instead while the other workers' calls hold all of it.
pub(super) fn share(fleet: Option<&Link>, wanted: Option<u64>) -> Result<Option<u64>, Event> {
    let Some(link) = fleet else {
        return Ok(wanted);
    };
    match link.share(wanted) {
        Share::Granted(money) => Ok(money),
        Share::WaitForOthers => Err(Event::FleetPaused {
            seconds: Coordinator::SHARE_RECHECK_SECS,
        }),
    }
}

/// What the sessions the workers continue (a fleet killed or crashed, run again) had spent:
/// each worker's open session rebuilt from its journal, with the running cost of a call it
/// died in. The fleet's shares lived in its memory; the journals are what is left of them.
fn session_spent_before(clones: &[PathBuf]) -> Result<u64, String> {
    let mut total = 0u64;
    for clone in clones {
        let dir = crate::runner_dir::RunnerDir {
            dir: clone.join(".git").join(crate::runner_dir::DIR_NAME),
        };
        let path = dir.journal();
        if !path.exists() {
            continue;
        }
        let recovered = crate::journal::Journal::read(&path).map_err(|e| {
            format!("budget.perSessionUsd: cannot count what the workers' sessions spent: {e}; repair or move the journal it names")
        })?;
        if let Some(open) = recovered.open_session {
            let (core, _) = crate::journal::rebuild_session(&open);
            let spent = core.runner().session_cost_micros;
            total = total
                .saturating_add(spent)
                .saturating_add(open.unanswered_spend_micros.unwrap_or(0));
        }
    }
    Ok(total)
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
    clones: Vec<PathBuf>,
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
    for k in 0..workers {
        let clone = homes.join(format!("w{k}"));
        if !clone.join(".git").exists() {
            make_clone(&repo, &origin, &clone)?;
        }
        clones.push(clone);
    }
    Ok(Plan {
        runner_dir: runner_dir.dir,
        clones,
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

fn execute(cfg: Config, opts: RunOptions, plan: Plan) -> i32 {
    let workers = plan.clones.len() as u32;
    let limits = cfg.limits();
    // The day's spend is the project's, over every clone's journal: read once, here, and
    // handed to each worker, whose own runner directory sees only its clone.
    let spent_today = match limits.per_day_budget_micros {
        Some(_) => {
            let dir = crate::runner_dir::RunnerDir {
                dir: plan.runner_dir.clone(),
            };
            let now = crate::ports::clock::Clock::now(&crate::ports::clock::TokioClock);
            match super::startup::spent_today(&dir, now) {
                Ok(micros) => Some(micros),
                Err(e) => {
                    say!("error: {e}");
                    return 2;
                }
            }
        }
        None => None,
    };
    let spent_before = match limits.per_session_budget_micros {
        Some(_) => match session_spent_before(&plan.clones) {
            Ok(micros) => micros,
            Err(e) => {
                say!("error: {e}");
                return 2;
            }
        },
        None => 0,
    };
    let shared = Arc::new(Shared::new(
        Coordinator::new(FleetLimits {
            workers,
            max_consecutive_escalations: limits.max_consecutive_escalations,
            session_budget_micros: limits.per_session_budget_micros,
            day_budget_left_micros: limits
                .per_day_budget_micros
                .map(|b| b.saturating_sub(spent_today.unwrap_or(0))),
            session_spent_before_micros: spent_before,
            train: cfg.train_limits(),
        }),
        plan.runner_dir.clone(),
    ));
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
    say!(
        "fleet: {workers} workers on clones under {}",
        plan.runner_dir.join("workers").display()
    );
    // Each worker's startup is synchronous and may block (the tracker, git): it runs before
    // the runtime drives anything, outside its context.
    let mut started = Vec::new();
    for (k, clone) in plan.clones.iter().enumerate() {
        let worker = k as Worker;
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
            ..opts.clone()
        };
        // Every diagnostic of this worker, from its start on, says `worker=<k>`.
        let span = crate::logging::worker_span(worker);
        let result = span.in_scope(|| super::start(wcfg, wopts));
        started.push((k, worker, span, result));
    }
    let resumed: Vec<(Worker, u32)> = started
        .iter()
        .filter_map(|(_, worker, _, result)| match result {
            Ok(Started::Ready(driver)) => Some((*worker, driver.core.runner().issue?)),
            _ => None,
        })
        .collect();
    if let Some(said) = shared.resume(journal, &resumed) {
        say!("{said}");
    }
    let codes: Vec<i32> = runtime.block_on(async {
        let mut tasks = Vec::new();
        for (k, worker, span, result) in started {
            match result {
                Ok(Started::Ready(mut driver)) => {
                    driver.fleet = Some(Link {
                        shared: shared.clone(),
                        worker,
                    });
                    if let Ok(mut s) = shared.shutdowns.lock() {
                        s.push(driver.shell.shutdown.clone());
                    }
                    let drive = tracing::Instrument::instrument(driver.drive(), span);
                    tasks.push(tokio::spawn(drive));
                }
                Ok(Started::Exit(code)) => tasks.push(tokio::spawn(async move { code })),
                Err(msg) => {
                    say!("error: worker w{k}: {msg}");
                    tasks.push(tokio::spawn(async { 2 }));
                }
            }
        }
        let mut codes = Vec::new();
        for t in tasks {
            codes.push(t.await.unwrap_or(2));
        }
        codes
    });
    let halt = shared.coordinator.lock().ok().and_then(|c| {
        Some((
            c.halt()?,
            c.escalated().iter().copied().collect::<Vec<u32>>(),
        ))
    });
    if let Some((why, escalated)) = halt {
        let mut headline = why.headline();
        if let (sdlc_machine::fleet::FleetHalt::DayBudget { .. }, Some(budget)) =
            (why, limits.per_day_budget_micros)
        {
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
        out!(
            "{headline}\nevery worker was stopped; each clone under {} keeps its work.{}",
            plan.runner_dir.join("workers").display(),
            super::report::recovery(&escalated, &cfg.file, &format!(" --workers {workers}"))
        );
        return 1;
    }
    codes.into_iter().max().unwrap_or(0)
}
