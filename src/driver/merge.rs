//! The merge step among other mergers (docs/scaling.md, "Merges"). Agent-run or builtin, a
//! merge happens within a **merge turn**: the fleet's (one worker of `run --workers N` at a
//! time, first come first served) and the tracker's merge lease (one runner of those sharing
//! the tracker at a time). Within it, the branch is first brought up to date with origin's
//! main (a conflict is the merge step's MERGE_CONFLICT repair), then merged. A merge that
//! failed because origin's main moved meanwhile (someone outside the turn pushed) lost a race:
//! that is contention, not a failed attempt, and it is merged again on the new main.
//!
//! Every policy here is pure and lives beside the fleet's coordinator
//! (`sdlc_machine::fleet`): the turn's queue, how long a wait for the lease may last
//! ([`LeaseWait`]) and how often a lost race is merged again ([`Contention`]). This module
//! only performs what they decide.

use super::{network, Driver};
use crate::claims::Claimed;
use crate::classify::classify_builtin;
use crate::failure::FailureClass;

use crate::machine::{Event, Signal, Usage};
use crate::step::Step;
use sdlc_machine::fleet::{AfterLostRace, Contention, LeaseWait, Report};
use std::time::Duration;

/// How long a merge lease lasts (and so the longest a waiter waits for a holder that died)
/// without claims: the merge step's time limit and a minute.
fn lease_without_claims(step_timeout: Duration) -> Duration {
    step_timeout + Duration::from_secs(60)
}

impl Driver {
    /// The merge step: its turn taken, the branch brought up to date, the merge done (again
    /// after a lost race, as [`Contention`] allows), the turn given back.
    pub(super) async fn run_merge(&mut self, issue: u32, attempt: u32, repair: bool) -> Event {
        let event = match self.take_merge_turn(issue).await {
            Ok(()) => self.merge_in_turn(issue, attempt, repair).await,
            Err(event) => event,
        };
        self.end_merge_turn();
        event
    }

    fn merge_lease(&self) -> Duration {
        match &self.claims {
            Some(keeper) => keeper.lease,
            None => lease_without_claims(self.cfg.timeout(Step::Merge)),
        }
    }

    /// Waits for the fleet's merge turn, then for the tracker's merge lease. `Err(event)`: a
    /// shutdown, a lost issue claim, or a wait past its limit (an environment failure that
    /// names the holder).
    async fn take_merge_turn(&mut self, issue: u32) -> Result<(), Event> {
        let lease = self.merge_lease();
        if let Some(link) = self.fleet.clone() {
            let limit = lease.saturating_mul(link.workers().max(1));
            let mut wait = LeaseWait::new(limit.as_millis() as u64);
            let mut told = false;
            loop {
                match link.report(Report::WantsMerge {
                    worker: link.worker,
                }) {
                    Some(true) => break,
                    Some(false) => {}
                    None => {
                        // The fleet halted: nothing is merged any more.
                        self.shutdown.request(Signal::Term);
                        return Err(self.shutdown.event());
                    }
                }
                if !told {
                    self.log(&format!(
                        "issue #{issue}: waiting for the fleet's merge turn (another worker is merging)"
                    ));
                    told = true;
                }
                match wait.busy() {
                    Some(ms) => self.pause_holding_claim(ms).await?,
                    None => {
                        let message = format!(
                            "waited {} s for the fleet's merge turn; another worker kept it past its lease",
                            wait.waited_ms() / 1000
                        );
                        return Err(self.environment_failure(Step::Merge, &message));
                    }
                }
            }
        }
        let Some(keeper) = self.claims.as_ref() else {
            return Ok(());
        };
        let (store_worker, limit) = (keeper.worker.clone(), keeper.lease + Duration::from_secs(2));
        let mut wait = LeaseWait::new(limit.as_millis() as u64);
        let mut told = false;
        loop {
            let answer = self.claims.as_ref().map(|k| {
                k.store
                    .lease_merge(issue, &store_worker, lease, self.clock.now())
            });
            let holder = match answer {
                None | Some(Ok(None)) => return Ok(()),
                Some(Ok(Some(Claimed::Won(_)))) => return Ok(()),
                Some(Ok(Some(Claimed::Held(holder)))) => holder,
                Some(Err(e)) => {
                    let message = format!("cannot take the merge lease: {e}");
                    return Err(self.environment_failure(Step::Merge, &message));
                }
            };
            if !told {
                self.log(&format!(
                    "issue #{issue}: waiting for the merge lease, held by worker {} (merging #{}) until {}",
                    holder.worker,
                    holder.issue,
                    holder.expires_at.format("%H:%M:%S UTC")
                ));
                told = true;
            }
            match wait.busy() {
                Some(ms) => self.pause_holding_claim(ms).await?,
                None => {
                    let file = self
                        .claims
                        .as_ref()
                        .and_then(|k| k.store.merge_lease_file())
                        .map(|f| f.display().to_string())
                        .unwrap_or_default();
                    let message = format!(
                        "waited {} s for the merge lease held by worker {} (merging #{}); remove {file} if that runner is gone",
                        wait.waited_ms() / 1000,
                        holder.worker,
                        holder.issue,
                    );
                    return Err(self.environment_failure(Step::Merge, &message));
                }
            }
        }
    }

    /// A pause while waiting for the merge turn; the issue's claim is kept meanwhile.
    async fn pause_holding_claim(&mut self, ms: u64) -> Result<(), Event> {
        if let Some(event) = self.keep_claim(Duration::ZERO) {
            return Err(event);
        }
        tokio::select! {
            _ = self.clock.sleep(Duration::from_millis(ms)) => Ok(()),
            _ = self.shutdown.wait() => Err(self.shutdown.event()),
        }
    }

    /// Extends this runner's merge lease by a lease from now, before merging again after a
    /// lost race: several merges in one turn must not outlast the lease.
    fn renew_merge_lease(&mut self, issue: u32) {
        let renewed = self.claims.as_ref().map(|k| {
            k.store
                .lease_merge(issue, &k.worker, k.lease, self.clock.now())
        });
        match renewed {
            Some(Ok(Some(Claimed::Held(holder)))) => self.log(&format!(
                "warning: the merge lease is now worker {}'s; merging anyway, origin decides",
                holder.worker
            )),
            Some(Err(e)) => self.log(&format!("warning: cannot renew the merge lease: {e}")),
            _ => {}
        }
    }

    /// Gives the tracker's lease and then the fleet's turn back (merged or not): the next
    /// worker to get the turn finds the lease free.
    fn end_merge_turn(&mut self) {
        self.release_merge_lease();
        self.fleet_report(|worker| Report::MergeDone { worker });
    }

    /// Gives this runner's merge lease back, if it holds it. Also at the start of a fleet's
    /// worker: a lease left under its id by a killed run is stale (the project's lock is this
    /// run's), and keeping it would make the worker that has the fleet's turn wait for it.
    pub(super) fn release_merge_lease(&mut self) {
        let released = self
            .claims
            .as_ref()
            .map(|k| k.store.release_merge(&k.worker));
        if let Some(Err(e)) = released {
            self.log(&format!("warning: cannot give the merge lease back: {e}"));
        }
    }

    async fn merge_in_turn(&mut self, issue: u32, attempt: u32, repair: bool) -> Event {
        let step = Step::Merge;
        // A conflict's repair attempt has the agent bring the branch up to date; doing it
        // here first would only meet the same conflict again.
        let conflict_repair = repair
            && self
                .core
                .failure(step)
                .is_some_and(|f| f.class == FailureClass::MergeConflict);
        let mut contention = Contention::default();
        let mut spent = Usage::default();
        loop {
            let first = contention.lost() == 0;
            let base = if conflict_repair && first {
                self.main_before_merge()
            } else {
                match self.up_to_date(issue).await {
                    Ok(base) => base,
                    Err(event) => return with_usage(event, spent),
                }
            };
            // A merge again after a lost race is no repair: the last failure was the race.
            let repair = repair && first;
            let event = if self.cfg.builtin(step) {
                self.run_builtin(step, issue, attempt, repair).await
            } else {
                self.run_agent(step, issue, attempt, repair, true).await
            };
            let lost = match &event {
                Event::StepFailed { class, .. } if *class != FailureClass::MergeConflict => {
                    self.lost_race(issue, base.as_deref())
                }
                _ => false,
            };
            if !lost {
                return with_usage(event, spent);
            }
            if let Event::StepFailed { usage, .. } = &event {
                spent = add(spent, *usage);
            }
            match contention.lost_race() {
                AfterLostRace::Retry { pause_ms } => {
                    // Not an attempt: the failure the step just recorded is taken back.
                    if let Some(n) = self.state.retries.get_mut(step.key()) {
                        *n = n.saturating_sub(1);
                    }
                    self.log(&format!(
                        "issue #{issue}: the merge lost a push race (origin's {} moved meanwhile); refreshing main and merging again, not counted as an attempt ({} of {})",
                        self.repo.main(),
                        contention.lost(),
                        Contention::MAX_LOST_RACES
                    ));
                    if let Err(event) = self.pause_holding_claim(pause_ms).await {
                        return with_usage(event, spent);
                    }
                    self.renew_merge_lease(issue);
                }
                AfterLostRace::GiveUp => {
                    self.log(&format!(
                        "issue #{issue}: the merge lost {} push races in a row; this attempt counts as failed",
                        Contention::MAX_LOST_RACES + 1
                    ));
                    return event;
                }
            }
        }
    }

    /// Origin's main as it stands before a merge the runner does not prepare (a conflict's
    /// repair), to tell a lost race afterwards; `None` where the forge merges on its side.
    fn main_before_merge(&self) -> Option<String> {
        if !self.forge.is_local() {
            return None;
        }
        self.repo.fetch().ok()?;
        self.repo.origin_main().ok().flatten()
    }

    /// Brings the issue's branch up to date with origin's main (local forge: on GitHub the
    /// forge merges against its newest main itself). `Ok(origin's main)` as it stood;
    /// `Err(event)` for a conflict (MERGE_CONFLICT) or another failure of the step.
    async fn up_to_date(&mut self, issue: u32) -> Result<Option<String>, Event> {
        let step = Step::Merge;
        if !self.forge.is_local() {
            return Ok(None);
        }
        let Ok(Some(branch)) = self.repo.feature_branch(issue) else {
            // No branch to bring up to date: the step's own checks say what is missing.
            return Ok(self.repo.origin_main().ok().flatten());
        };
        let what = format!("bringing {branch} up to date with {}", self.repo.main());
        match self
            .patiently(&what, |d| d.repo.bring_up_to_date(&branch))
            .await
        {
            network::Patient::Done(Ok(base)) => Ok(base),
            network::Patient::Done(Err(e)) => {
                let text = format!("{what}: {e}");
                self.say(text.clone());
                let c = classify_builtin(step.key(), &text, false);
                Err(self.failed(step, issue, c, Usage::default()))
            }
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => Err(ev),
        }
    }

    /// Whether the failed merge lost a race: origin's main moved on from `base` and the
    /// branch is not in it. A question git cannot answer counts as no race (the failure then
    /// stands as the attempt's).
    fn lost_race(&self, issue: u32, base: Option<&str>) -> bool {
        match self.repo.feature_branch(issue) {
            Ok(Some(branch)) => self.repo.lost_race(&branch, base).unwrap_or(false),
            _ => false,
        }
    }
}

fn add(a: Usage, b: Usage) -> Usage {
    Usage {
        cost_micros: a.cost_micros.saturating_add(b.cost_micros),
        elapsed_ms: a.elapsed_ms.saturating_add(b.elapsed_ms),
        turns: a.turns.saturating_add(b.turns),
    }
}

/// The step's event with what the merges lost to races spent added to its usage.
fn with_usage(mut event: Event, spent: Usage) -> Event {
    if let Event::StepSucceeded { usage, .. } | Event::StepFailed { usage, .. } = &mut event {
        *usage = add(*usage, spent);
    }
    event
}
