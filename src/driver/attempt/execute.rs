//! The agent's run itself: its stream read as it arrives, its process group and its running
//! cost journaled as they become known, so that a runner killed in the call leaves behind
//! what a successor needs (the group to stop, the money spent to count).

use super::super::shell::Shell;
use super::super::step_run::Voice;
use crate::agent::cli;
use crate::agent::stream::StreamSummary;
use crate::agent::{AgentError, AgentExit, AgentRun};
use crate::journal::{AgentGroup, Journal, Record};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What running the agent produced.
pub(super) struct Ran {
    pub exit: Result<AgentExit, AgentError>,
    pub summary: StreamSummary,
    /// Why the agent's process group could not be journaled, if it could not.
    pub unrecorded_group: Option<String>,
    /// Why the call's running cost could not be journaled, if it could not (the first time).
    pub unrecorded_spend: Option<String>,
}

/// Says what the journal could not record of the run (its group, its running cost).
pub(super) fn unrecorded(ran: &Ran, voice: &Voice<'_>) {
    if let Some(e) = &ran.unrecorded_group {
        voice.log(&crate::narration::group_unrecorded(e));
    }
    if let Some(e) = &ran.unrecorded_spend {
        voice.log(&crate::narration::spend_unrecorded(e));
    }
}

/// The running cost is fsync'd once it grew this much since the last fsync…
const SYNC_EVERY_MICROS: u64 = 500_000;
/// …or this long after the last fsync, whichever comes first.
const SYNC_EVERY: Duration = Duration::from_secs(10);

/// The call's running cost as the journal has it. Every growth is written (one line per
/// model request that costs: a runner killed by a signal, the OOM killer included, loses
/// none of it, as the kernel holds the write); the fsync that a power loss needs is begun
/// once per $0.50 or 10 s, on a thread of its own. The reader that meters the call never
/// waits on the disk: a slow fsync would let the agent spend past its cap unread.
struct SpendLog {
    written: u64,
    synced: u64,
    synced_at: Instant,
    /// The fsync under way, if one is.
    syncing: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    error: Option<String>,
}

impl SpendLog {
    fn new(now: Instant) -> SpendLog {
        SpendLog {
            written: 0,
            synced: 0,
            synced_at: now,
            syncing: None,
            error: None,
        }
    }

    /// Journals `cost` when it grew since the last line.
    fn observe(&mut self, cost: u64, journal: &mut Journal, now: Instant) {
        if cost <= self.written || self.error.is_some() {
            return;
        }
        self.collect_sync(false);
        if let Err(e) = journal.append_unsynced(&[Record::Spending { cost_micros: cost }]) {
            self.error = Some(e.to_string());
            return;
        }
        self.written = cost;
        let durable = cost - self.synced >= SYNC_EVERY_MICROS
            || now.duration_since(self.synced_at) >= SYNC_EVERY;
        if durable && self.syncing.is_none() {
            match journal.sync_in_background() {
                Ok(syncing) => {
                    self.syncing = Some(syncing);
                    self.synced = cost;
                    self.synced_at = now;
                }
                Err(e) => self.error = Some(e.to_string()),
            }
        }
    }

    /// The fsync under way, once it ended (or waiting for it, with `wait`): its error, if
    /// any, is the call's unrecorded spend.
    fn collect_sync(&mut self, wait: bool) {
        let Some(syncing) = self.syncing.take() else {
            return;
        };
        if !wait && !syncing.is_finished() {
            self.syncing = Some(syncing);
            return;
        }
        let failed = match syncing.join() {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(_) => "the fsync's thread panicked".to_string(),
        };
        self.error.get_or_insert(failed);
    }
}

/// Runs the agent, reading its stream as it arrives, and journals its process group as soon
/// as it exists, so that a restarted runner can stop what this one leaves behind, and its
/// running cost as it grows, so that a restarted runner counts what the call spent.
pub(super) async fn execute(
    shell: &mut Shell,
    run: &AgentRun,
    mut reader: cli::Reader,
    live: Option<&crate::progress::Live>,
) -> Ran {
    let (agent, shutdown, clock) = (&*shell.agent, &shell.shutdown, &*shell.clock);
    let (journal, status) = (shell.journal.as_mut(), &shell.live);
    let mut unrecorded_group = None;
    // Both callbacks write it, one at a time (the agent port calls them in turn).
    let journal = Mutex::new(journal);
    let mut spend = SpendLog::new(clock.instant());
    let ticker = live.map(crate::progress::Live::tick);
    let flusher = status.tick();
    let exit = {
        let mut sink = |bytes: &[u8]| {
            let keep_going = reader.feed(bytes);
            if let Some(live) = live {
                live.observe(reader.summary());
            }
            status.observe(reader.summary());
            if let Some(cost) = reader.running_cost_micros() {
                let mut held = journal
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(j) = held.as_mut() {
                    spend.observe(cost, j, clock.instant());
                }
            }
            keep_going
        };
        let mut on_spawn = |pgid: i32| {
            let group = AgentGroup {
                pgid,
                start_ticks: crate::cleanup::read_stat(pgid).map_or(0, |s| s.start_time),
            };
            let mut held = journal
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(j) = held.as_mut() {
                if let Err(e) = j.append_unsynced(&[Record::Agent { group }]) {
                    unrecorded_group = Some(e.to_string());
                }
            }
            crate::failpoint::point("agent spawned");
        };
        agent
            .run(run, &mut sink, shutdown.receiver(), &mut on_spawn)
            .await
    };
    flusher.abort();
    if let Some(ticker) = ticker {
        ticker.abort();
        crate::console::clear_status();
    }
    Ran {
        exit,
        summary: reader.finish(),
        unrecorded_group,
        unrecorded_spend: {
            spend.collect_sync(true);
            spend.error
        },
    }
}
