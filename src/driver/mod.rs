//! The async shell around the pure core: it turns each effect into IO (git, the tracker, the
//! agent, the journal, notifications) and each IO result into the next event. It decides
//! nothing: every branch of the lifecycle is the machine's.
//!
//! The journal is written and fsync'd before the effects of an event are performed, so a
//! crash at any point replays into the same counters.

mod agent_push;
mod answer;
mod attempt;
mod builtin_step;
mod claim;
mod cycle;
mod cycle_end;
mod decision;
mod dry_run;
mod exit;
mod facts;
mod fleet;
pub(crate) use fleet::halt_file as fleet_halt_file;
mod halt;
pub mod invoke;
mod merge;
mod network;
#[cfg(test)]
mod on_ports;
#[cfg(test)]
pub(crate) use on_ports::{run_on_ports, PortsRun};
mod notify;
pub mod report;
mod review;
mod run_context;
pub use run_context::RunOptions;
mod select;
mod shell;
mod shutdown;
mod startup;
mod step_run;
mod tree;
mod wait;
use crate::narration as say;
use answer::{Answer, Narrator, Told};
pub(crate) use facts::{foreign_list, FOREIGN_FIX};
pub(crate) use startup::settle_tracker;
use startup::start;

use crate::agent::cli::{self, AttemptInfo};
use crate::artifacts;
use crate::config::Config;
use crate::machine::{Core, Effect, Event, Mode, Report, State};
use crate::ports::{Io, World};
use crate::step::Step;
use crate::steps::checks::{self, StepContext};
use crate::tracker::{self, Selection};
use cycle::Cycle;
use invoke::IssueContext;
use run_context::{Restart, RunContext};
use shell::Shell;
use std::time::Duration;

/// Grace between SIGTERM and SIGKILL for the agent's process group.
const KILL_GRACE: Duration = Duration::from_secs(5);
/// Bytes of stdout/stderr kept per attempt (for classification and the diagnostic).
const TAIL_BYTES: usize = 64 * 1024;

/// Run the lifecycle; returns the process exit code (docs/interfaces.md).
pub fn run(cfg: Config, opts: RunOptions) -> i32 {
    let workers = opts.workers.unwrap_or(cfg.workers);
    if workers > 1 {
        crate::console::disable_live();
        return fleet::run(cfg, opts, workers);
    }
    let runtime = match crate::runtime::build(None) {
        Ok(rt) => rt,
        Err(e) => {
            say!("error: cannot start the async runtime: {e}");
            return 2;
        }
    };
    // Startup is synchronous and may block (the tracker, git): it runs before the runtime
    // drives anything, outside its context.
    let started = start(cfg, opts);
    match started {
        Ok(Started::Ready(driver)) => runtime.block_on(driver.drive()),
        Ok(Started::Exit(code)) => code,
        Err(msg) => {
            say!("error: {msg}");
            2
        }
    }
}

enum Started {
    Ready(Box<Driver>),
    Exit(i32),
}

/// Everything one run holds. The machine (`core`) decides; the rest is the IO it needs and
/// what the driver must remember between effects to perform the next one, in groups by what
/// they hold.
struct Driver {
    /// What this run was started with and on: config, flags, session, runner directory.
    run: RunContext,
    /// The ports and the runner's own files: IO, notifier, agent, clock, logs, journal, lock.
    shell: Shell,
    /// What the driver knows of the issue under way beyond the machine's counters.
    cycle: Cycle,
    /// The pure state machine: every decision is its.
    core: Core,
    /// Where the restart begins: the first event and what the previous runner left undone.
    restart: Restart,
    /// Where the effect being performed collects what its answer reports beyond the event (a
    /// `StepFailed`'s failure context, what the attempt or the failed call said): `perform`
    /// empties it before the effect and hands it out with the answer, so nothing in it outlives
    /// one effect. The machine keeps each step's last failure (`Core::failure`, for the next
    /// repair prompt and the decision file) and the last words (`Core::last_words`, for the halt
    /// and escalation diagnostics).
    report: Report,
    /// This runner's issue claims, when it runs with `--worker-id`.
    claims: Option<claim::ClaimKeeper>,
    /// The fleet this driver is a worker of (`run --workers N`).
    fleet: Option<fleet::Link>,
}

impl Driver {
    /// The parts a step's handlers work with, borrowed for one request.
    fn step_run(&mut self) -> step_run::StepRun<'_> {
        let narrator = self.narrator();
        step_run::StepRun {
            run: &mut self.run,
            shell: &mut self.shell,
            cycle: &mut self.cycle,
            core: &self.core,
            voice: step_run::Voice::new(narrator, &self.core, &mut self.report),
        }
    }

    /// Logs what a handler narrated, in order.
    fn narrate(&self, narration: impl IntoIterator<Item = String>) {
        self.narrator().narrate(narration);
    }

    /// Logs what a handler's answer narrates, keeps what it said for the machine, and hands
    /// out its event.
    fn answer(&mut self, answer: Answer) -> Event {
        if let Some(said) = answer.said {
            self.say(said);
        }
        self.narrate(answer.narration);
        answer.event
    }

    /// One entry of the orchestration log, narrated on the console too: a `tracing` event
    /// with the worker, the issue and the step as fields (src/logging.rs writes it).
    fn log(&self, line: &str) {
        self.narrator().log(line);
    }

    /// Where and as whom a handler logs at once, as `log` does.
    fn narrator(&self) -> Narrator {
        let state = self.core.state();
        Narrator {
            log: self.shell.logs.orchestration_log(),
            worker: self.worker(),
            issue: (self.cycle.issue.number != 0).then_some(self.cycle.issue.number),
            step: state.step().map(|step| self.step_name(step)),
        }
    }

    /// This driver's worker number in a fleet.
    fn worker(&self) -> Option<u32> {
        self.fleet.as_ref().map(|link| link.worker)
    }

    async fn drive(mut self) -> i32 {
        if let Err(e) = self.shell.shutdown.watch_signals() {
            say!("error: {e}");
            return 2;
        }
        if self.run.opts.dry_run {
            let claims = self.claims.as_ref();
            let cycle = (&mut self.cycle, claims);
            let (code, said) = dry_run::dry_run(&self.run, &self.shell.io, &self.core, cycle).await;
            self.narrate(said);
            return code;
        }
        let project = self.run.cfg.project_path.clone();
        if let Err(e) = self.shell.io.call(|w| w.git.exclude_artifacts()).await {
            self.log(&say::cannot_exclude(&e));
        }
        if let Err(e) = artifacts::create_auto_mode(&project) {
            self.log(&say::cannot_create_auto_mode(&e));
        }
        self.shell.state.runner_pid = Some(std::process::id());
        self.shell.state.signal_shutdown = None;
        self.save_state();
        self.shell.live.reset();
        self.log_live_warning();
        let state = self.core.state().name();
        self.log(&say::session_started(&self.run.session, &project, state));
        if self.fleet.is_some() {
            // A lease left under this worker's id by a killed run is stale (the project's
            // lock is this run's): keeping it would make the worker with the turn wait.
            let said = merge::release_merge_lease(self.claims.as_ref(), &self.shell.io).await;
            self.narrate(said);
        }
        if self.restart.recovering {
            let said = facts::clear_locks_of_a_killed_runner(&self.shell.io).await;
            self.narrate(said);
        }
        if !self.restart.redo.is_empty() {
            self.log(&say::redoing(self.restart.redo.len()));
            let state = *self.core.state();
            for effect in std::mem::take(&mut self.restart.redo) {
                let _ = self.perform(effect, &state).await;
            }
        }
        let first = startup::initial_event(
            &self.core,
            &self.shell.io,
            (&self.shell.state, &self.run.main),
            &mut self.cycle,
            self.restart.first.clone(),
        )
        .await;
        let mut event = self.answer(first);
        // What was said before the first event (its answer's words, if any).
        let mut reported = std::mem::take(&mut self.report);
        loop {
            if let Some(signal) = self.shell.shutdown.requested() {
                if !matches!(event, Event::ShutdownRequested { .. }) {
                    // The answer is dropped, not what its call spent (a step that ended as
                    // the fleet halted): the machine counts it with the shutdown.
                    let usage = event.usage().copied().unwrap_or_default();
                    event = Event::ShutdownRequested { signal, usage };
                }
            }
            if let Some(code) = self.check_runner_files() {
                return code;
            }
            let answered = std::mem::take(&mut reported);
            let report = Report {
                failure: match event {
                    Event::StepFailed { step, .. } => answered.failure.filter(|d| d.step == step),
                    Event::MergeRaceLost { .. } | Event::MergeConflict { .. } => {
                        answered.failure.filter(|d| d.step == Step::Merge)
                    }
                    Event::CiFailedTogether { .. } => {
                        answered.failure.filter(|d| d.step == Step::MonitorCi)
                    }
                    _ => None,
                },
                said: answered.said.as_deref().map(answer::last_words_kept),
            };
            // A batch is side effects closed by one request (`Batch`, checked where the
            // machine builds it); an event the machine ignores gets none.
            let batch = match self.core.handle_reported(&event, report.clone()) {
                crate::machine::Reply::Batch(b) => Ok((b.effects().to_vec(), *b.request())),
                crate::machine::Reply::Ignored => Err("no request".to_string()),
                crate::machine::Reply::Broken(why) => Err(why.to_string()),
            };
            self.shell.mirror_retries(&event);
            let state = *self.core.state();
            tracing::debug!(?event, state = state.name(), ?batch, "event");
            let (effects, request) = match batch {
                Ok(batch) => batch,
                Err(why) => {
                    // Acting on nothing, or on a batch the driver cannot answer, would stall
                    // the run or act out of order.
                    self.log(&say::broken_batch(&why, &event, state.name()));
                    return 1;
                }
            };
            let recorded = match self.shell.journal.as_mut() {
                Some(j) => j.record_step(&event, &report, &effects, &state),
                None => Ok(()),
            };
            if let Err(e) = recorded {
                // Without the journal the failure-loop protection cannot survive a restart.
                self.log(&say::journal_unwritable(&e));
                return 1;
            }
            crate::failpoint::point(event.label());
            let mut batch = Report::default();
            let mut outcome = Outcome::Continue;
            // The side effects, then the request: its outcome is the next event.
            for effect in effects {
                let (done, report) = self.perform(effect, &state).await;
                // What a later effect of the batch says is the newer word.
                batch = Report {
                    failure: report.failure.or(batch.failure),
                    said: report.said.or(batch.said),
                };
                outcome = done;
            }
            match outcome {
                Outcome::Next(ev) => {
                    event = ev;
                    reported = batch;
                }
                Outcome::Exit(code) => {
                    let notifier = std::sync::Arc::clone(&self.shell.notifier);
                    self.shell
                        .io
                        .call(move |_| notifier.flush(Duration::from_secs(35)))
                        .await;
                    return code;
                }
                Outcome::Continue => {
                    self.log(&say::unanswered(&request, state.name()));
                    return 1;
                }
            }
        }
    }

    /// `Some(exit code)` when the journal or the lock is no longer the file this runner
    /// opened: it then halts before recording or doing anything more.
    fn check_runner_files(&mut self) -> Option<i32> {
        let lock = self.shell.lock.as_ref().and_then(|l| l.still_held().err());
        let journal = self
            .shell
            .journal
            .as_ref()
            .and_then(|j| j.check_intact().err())
            .map(|e| e.to_string());
        let what = journal.or(lock)?;
        Some(halt::runner_state_lost(&what, &self.run, &mut self.shell))
    }

    /// Logs the first failed write of `live.json`, once.
    fn log_live_warning(&self) {
        if let Some(warning) = self.shell.live.take_warning() {
            self.log(&warning);
        }
    }

    fn save_state(&mut self) {
        let said = self.shell.save_state(&self.run.cfg.project_path);
        self.narrate(said);
    }
}

impl Driver {
    /// Performs one effect, counting the child processes it started (`SDLC_RUNNER_STATS`):
    /// its outcome (the answer, for a request) and what the answer reports beyond the event.
    async fn perform(&mut self, effect: Effect, state: &State) -> (Outcome, Report) {
        self.report = Report::default();
        let before = crate::stats::spawns();
        let outcome = self.perform_effect(effect, state).await;
        crate::stats::effect_performed(effect.label(), before, crate::stats::spawns());
        (outcome, std::mem::take(&mut self.report))
    }

    /// A step's or a round's agent call (`name`) starts: it takes its share of the fleet's
    /// money (the event that answers instead when the fleet has none for it), and `status`
    /// shows it.
    fn call_started(
        &mut self,
        issue: u32,
        name: &str,
        attempt: u32,
        money_left_micros: Option<u64>,
    ) -> Result<(), Event> {
        self.cycle.money_left_micros = fleet::share(self.fleet.as_ref(), money_left_micros)?;
        crate::stats::step();
        self.shell.live.step_started(issue, name, attempt);
        Ok(())
    }

    /// A step's or a round's call ended: `status` stops showing it and, whatever ended it,
    /// its share of the fleet's money is given back with what it spent.
    fn call_ended(&mut self, event: Event) -> Event {
        self.shell.live.step_ended();
        self.log_live_warning();
        let micros = event.usage().map_or(0, |u| u.cost_micros);
        fleet::tell(self.fleet.as_ref(), |worker| {
            sdlc_machine::fleet::Report::Spent { worker, micros }
        });
        event
    }

    /// The fleet's gate before an agent call or its preconditions: the event that answers
    /// instead when the fleet stops or pauses this worker.
    fn fleet_gate(&self, effect: &Effect) -> Option<Event> {
        let gated = matches!(
            effect,
            Effect::RunStep { .. }
                | Effect::AddressReview { .. }
                | Effect::CheckPreconditions { .. }
        );
        let shell = &self.shell;
        gated
            .then(|| fleet::gate(self.fleet.as_ref(), &*shell.clock, &shell.shutdown))
            .flatten()
    }

    async fn perform_effect(&mut self, effect: Effect, state: &State) -> Outcome {
        // The effect loop's diagnostics keep the driver's target, wherever the code lives.
        tracing::debug!(target: "sdlc_runner::driver", ?effect, "perform");
        if let Some(event) = self.fleet_gate(&effect) {
            return Outcome::Next(event);
        }
        let calls = (&self.shell.io, &self.shell.shutdown, &self.run.cfg);
        let holders = (self.claims.as_mut(), self.fleet.as_ref());
        let answer = match effect {
            Effect::SelectIssue => {
                let work = (&self.core, &mut self.cycle);
                select::select_issue(&self.run, &mut self.shell, work, holders).await
            }
            Effect::CheckPreconditions { step } => {
                let facts = (&self.core, &self.cycle);
                select::check_preconditions(&self.run, &mut self.shell, facts, step).await
            }
            Effect::RunStep {
                step,
                issue,
                attempt,
                repair,
                commit,
                money_left_micros,
            } => {
                let started = self.call_started(issue, step.key(), attempt, money_left_micros);
                if let Err(event) = started {
                    return Outcome::Next(event);
                }
                let mut run = self.step_run();
                let event = run.run_step(step, issue, attempt, repair, commit).await;
                return Outcome::Next(self.call_ended(event));
            }
            Effect::LookAtCi {
                issue,
                look,
                commit,
            } => return Outcome::Next(self.step_run().look_at_ci(issue, look, commit).await),
            Effect::LookAtReview { issue, look } => {
                let hands = (&self.run, &self.shell.io, &self.shell.shutdown);
                let cycle = &mut self.cycle;
                review::look_at_review(hands, &self.core, cycle, (issue, look)).await
            }
            Effect::AddressReview {
                issue,
                round,
                attempt,
                money_left_micros,
            } => {
                // A round is an agent call like a step's: the fleet's share of its money too.
                let name = crate::config::ADDRESS_REVIEW;
                if let Err(event) = self.call_started(issue, name, attempt, money_left_micros) {
                    return Outcome::Next(event);
                }
                let event = self.step_run().address_review(issue, round, attempt).await;
                return Outcome::Next(self.call_ended(event));
            }
            Effect::UpdateBranch { issue, commit } => {
                return Outcome::Next(self.step_run().update_branch(issue, commit).await)
            }
            Effect::Wait { seconds, reason } => {
                let (narrator, fleet) = (self.narrator(), self.fleet.as_ref());
                let shell = (&*self.shell.clock, &self.shell.shutdown, &self.shell.live);
                let terms = (seconds, reason);
                Answer::of(wait::wait(shell, fleet, state, terms, &narrator).await)
            }
            Effect::Pause { millis } => {
                let clock = &*self.shell.clock;
                Answer::of(wait::pause(clock, &self.shell.shutdown, millis).await)
            }
            Effect::TakeMergeTurn { issue } => {
                let holders = (self.fleet.as_ref(), self.claims.as_ref());
                let shell = (&self.shell.io, &*self.shell.clock, &self.shell.shutdown);
                let car = merge::car(&self.core, &self.cycle, issue);
                merge::take_merge_turn(holders, shell, (issue, car)).await
            }
            Effect::ClaimIssue { issue } => {
                let fleet = self.fleet.as_ref();
                let holders = (holders.0, move |issue| fleet::gives(fleet, issue));
                claim::claim_issue(issue, holders, calls, &*self.shell.clock).await
            }
            Effect::RenewClaim {
                issue,
                secs,
                lease_secs,
                fresh_secs,
            } => {
                let terms = (issue, secs, lease_secs, fresh_secs);
                claim::renew(holders.0, calls.0, &*self.shell.clock, terms).await
            }
            Effect::RecordMerged { issue, wait } => {
                // What the machine waited for the tracker's own close, for the close's words.
                let waited = match wait {
                    true => 0,
                    false => self.core.runner().limits.close_waited_secs(),
                };
                cycle_end::record_merged((issue, wait, waited), holders, calls).await
            }
            Effect::MarkEscalated { issue } => {
                let facts = (&self.core, &self.cycle, &*self.shell.logs.dir);
                cycle_end::mark_escalated(issue, facts, holders, calls).await
            }
            Effect::Unquarantine { issue } => {
                cycle_end::unquarantine(issue, &self.core, calls).await
            }
            Effect::AskDecision {
                step,
                issue,
                budget_spent_micros,
            } => {
                let asked = (step, issue, budget_spent_micros);
                let notifier = &*self.shell.notifier;
                decision::ask(&self.run, notifier, &self.core, asked)
            }
            Effect::LookForDecision { .. } => decision::look(&self.run.runner_dir),
            Effect::Exit { code } => {
                let driver = (&self.core, &self.run);
                let ended = exit::exit((code, state), driver, &mut self.shell, holders).await;
                self.narrate(ended.1);
                return Outcome::Exit(ended.0);
            }
            Effect::ReleaseMergeTurn
            | Effect::AutoCommit(_)
            | Effect::CheckoutMain
            | Effect::ResetCycle
            | Effect::Cleanup
            | Effect::Notify(_)
            | Effect::Halt(_) => {
                let said = self.side_effect(effect).await;
                self.narrate(said);
                return Outcome::Continue;
            }
        };
        Outcome::Next(self.answer(answer))
    }

    /// The effects that answer nothing (the batch's side effects): what each narrates.
    async fn side_effect(&mut self, effect: Effect) -> Vec<String> {
        let (io, project) = (&self.shell.io, &self.run.cfg.project_path);
        match effect {
            Effect::ReleaseMergeTurn => {
                let (fleet, claims) = (self.fleet.as_ref(), self.claims.as_ref());
                merge::release_merge_turn(fleet, claims, io).await
            }
            Effect::AutoCommit(kind) => tree::auto_commit(kind, io).await,
            Effect::CheckoutMain => tree::checkout_main(&self.run.main, io).await,
            Effect::ResetCycle => cycle_end::reset_cycle(&mut self.shell, &mut self.cycle, project),
            Effect::Cleanup => cycle_end::cleanup(&self.run.cfg, io).await,
            Effect::Notify(n) => {
                let (notifier, worker) = (&*self.shell.notifier, self.worker());
                notify::notify(n, &self.core, &self.run.refs(), notifier, worker);
                Vec::new()
            }
            Effect::Halt(reason) => {
                let fleet = self.fleet.as_ref();
                halt::halt(reason, &self.core, &self.run, &mut self.shell, fleet).await
            }
            // Every request is answered in `perform_effect`.
            _ => Vec::new(),
        }
    }
}

enum Outcome {
    Continue,
    Next(Event),
    Exit(i32),
}

impl Driver {
    /// What the answer being produced said, for the diagnostics (see `report`).
    /// What an attempt of `step` is told as (`report::step_name`): `addressReview` while a
    /// review round is under way.
    fn step_name(&self, step: Step) -> &'static str {
        report::step_name(step, self.core.runner().round_pending())
    }

    fn say(&mut self, text: String) {
        self.report.said = Some(text);
    }
}
