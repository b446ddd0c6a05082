//! A fleet worker's link to what the workers of `run --workers N` share (the orchestrator that
//! starts them is `launch/fleet.rs`): the one coordinator (`sdlc_machine::fleet`) for what is
//! global (one issue per worker, consecutive escalations across workers, the session budget,
//! rate-limit pauses, the halt that stops everyone), every worker's stop, and the merge train
//! (`fleet_link/train.rs`). The handlers report to it and ask it through [`Link`].

mod train;

use super::shutdown::Shutdown;
use crate::journal::TrainJournal;
use crate::live_status::TrainSnapshot;
use crate::machine::{Event, Signal};
use crate::ports::Clock;
use chrono::{DateTime, Utc};
use sdlc_machine::fleet::{
    Coordinator, Dispatch, FleetHalt, Order, Report, Settled, Share, Test, Worker,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the workers share.
#[derive(Debug)]
pub(crate) struct Shared {
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
    /// Where the coordinator's `TakeOn` goes: the orchestrator, which starts a worker
    /// standing by.
    take_on: Mutex<Option<tokio::sync::mpsc::UnboundedSender<()>>>,
    /// Woken when the merge turn may have passed on (a merge ended, a train's verdict came):
    /// a worker pausing for its turn asks again at once instead of at its pause's end.
    turn_news: tokio::sync::Notify,
    runner_dir: PathBuf,
}

impl Shared {
    /// What the workers of a fleet whose runner directory is `runner_dir` share, nothing
    /// held or journaled yet.
    pub(crate) fn new(coordinator: Coordinator, runner_dir: PathBuf) -> Shared {
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
            take_on: Mutex::new(None),
            turn_news: tokio::sync::Notify::new(),
            runner_dir,
        }
    }

    /// `shutdown` is a worker's stop, for a halt to carry out.
    pub(super) fn enlist(&self, shutdown: Shutdown) {
        if let Ok(mut s) = self.shutdowns.lock() {
            s.push(shutdown);
        }
    }

    /// The coordinator's `TakeOn` orders go to `sender` from now on.
    pub(crate) fn on_take_on(&self, sender: tokio::sync::mpsc::UnboundedSender<()>) {
        *locked(&self.take_on) = Some(sender);
    }

    /// Whether the fleet is stopping: it halted, or a worker was asked to stop (a signal):
    /// no worker standing by is started then.
    pub(crate) fn stopping(&self) -> bool {
        locked(&self.coordinator).halt().is_some()
            || locked(&self.shutdowns)
                .iter()
                .any(|s| s.requested().is_some())
    }

    /// How many more workers may take an issue now (`Coordinator::room`).
    pub(crate) fn room(&self) -> usize {
        locked(&self.coordinator).room()
    }

    /// Why the fleet halted, if it did, with the issues it escalated.
    pub(crate) fn halt(&self) -> Option<(FleetHalt, Vec<u32>)> {
        let c = self.coordinator.lock().ok()?;
        Some((c.halt()?, c.escalated().iter().copied().collect()))
    }
}

/// What the coordinator answered a report with, for the worker that made it.
#[derive(Debug, Default)]
pub(crate) struct Reply {
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
pub(crate) struct Link {
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
        let news = is_turn_news(&report);
        let (orders, train) = {
            let mut c = locked(&self.shared.coordinator);
            let orders = c.handle(report);
            self.shared.journal(&c);
            (orders, self.shared.snapshot(&c))
        };
        self.show(train);
        if news {
            self.shared.turn_news.notify_waiters();
        }
        let mut reply = Reply::default();
        for order in orders {
            match order {
                Order::Start { .. } | Order::MergeGo { .. } => reply.start = Some(true),
                Order::TakeOn => {
                    if let Some(sender) = locked(&self.shared.take_on).as_ref() {
                        // The orchestrator gone (the fleet ending), nobody is started.
                        let _ = sender.send(());
                    }
                }
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

    /// Whether the train still waits for test `id`'s verdict.
    pub fn test_wanted(&self, id: u64) -> bool {
        locked(&self.shared.coordinator).test_under_way(id)
    }

    /// Watches the train test `id` this worker runs as call `call`: once the train no longer
    /// waits for its verdict (a PR ahead failed, main moved), the call is withdrawn and its CI
    /// stopped, freeing the worker for a test that counts. Aborted when the test ends.
    pub fn watch_test(&self, id: u64, call: u64) -> tokio::task::JoinHandle<()> {
        let shared = self.shared.clone();
        tokio::spawn(async move {
            loop {
                let news = shared.turn_news.notified();
                tokio::pin!(news);
                news.as_mut().enable();
                if !locked(&shared.coordinator).test_under_way(id) {
                    crate::process::withdraw(call);
                    return;
                }
                news.await;
            }
        })
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

/// Whether `report` may pass the merge turn on or settle, rebuild or empty the train: news for
/// the workers pausing for their turn and for the tests under way. An ask for the turn is
/// not: every paused worker woken by one would ask in turn, and wake the others again.
fn is_turn_news(report: &Report) -> bool {
    match report {
        Report::MergeDone { .. }
        | Report::Merged { .. }
        | Report::Tested { .. }
        | Report::TestAbandoned { .. }
        | Report::MainMoved { .. }
        | Report::Escalated { .. }
        | Report::Halted { .. }
        | Report::Finished { .. } => true,
        Report::WantsMerge { .. }
        | Report::WantsIssue { .. }
        | Report::Spent { .. }
        | Report::Waiting { .. } => false,
    }
}

/// Resolves when the merge turn may have passed on in this worker's fleet (never outside a
/// fleet): a pause for the turn ends then, and the machine asks again.
pub(super) async fn turn_news(fleet: Option<&Link>) {
    match fleet {
        Some(link) => link.shared.turn_news.notified().await,
        None => std::future::pending().await,
    }
}

/// Whether this worker may take an issue now (always, outside a fleet): not while as many of
/// the fleet's workers are at work as may be.
pub(super) fn may_take_issue(fleet: Option<&Link>) -> bool {
    fleet.is_none_or(|link| locked(&link.shared.coordinator).may_take_issue(link.worker))
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
