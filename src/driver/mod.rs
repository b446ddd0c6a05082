//! The async shell around the pure core: it turns each effect into IO (git, the tracker, the
//! agent, the journal, notifications) and each IO result into the next event. It decides
//! nothing: every branch of the lifecycle is the machine's.
//!
//! The journal is written and fsync'd before the effects of an event are performed, so a
//! crash at any point replays into the same counters.

mod attempt;
mod builtin_step;
mod claim;
mod cycle;
mod decision;
mod dry_run;
mod facts;
mod fleet;
pub(crate) use fleet::halt_file as fleet_halt_file;
pub mod invoke;
mod merge;
mod network;
mod perform;
pub mod report;
mod review;
mod run_context;
mod select;
mod shell;
mod shutdown;
mod startup;
mod step_run;
use crate::narration as say;
pub(crate) use facts::{foreign_list, FOREIGN_FIX};
pub(crate) use startup::settle_tracker;
use startup::start;
#[cfg(test)]
use startup::start_on;

use crate::agent::cli::{self, AttemptInfo};
use crate::artifacts;
use crate::cleanup::{kill_matching, ProtectSet};
use crate::config::Config;
use crate::journal::{Journal, SessionEnd};
use crate::logs::append_line;
use crate::machine::{Core, Effect, Event, HaltReason, Mode, Notice, Report, State};
use crate::notify::Severity;
use crate::ports::{Io, World};
use crate::step::Step;
use crate::steps::checks::{self, StepContext};
use crate::tracker::{self, Selection};
use cycle::Cycle;
use invoke::IssueContext;
use run_context::{Restart, RunContext};
use shell::Shell;
#[cfg(test)]
use std::path::PathBuf;
use std::time::Duration;

/// Flags of `sdlc-runner run` beyond the config.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--dry-run`: print what would run, change nothing.
    pub dry_run: bool,
    /// `--issue N`: work on this issue only.
    pub issue: Option<u32>,
    /// `--step N`: run this one step only.
    pub step: Option<Step>,
    /// `--discord-channel`: overrides the config's `discordChannelId`.
    pub discord_channel: Option<String>,
    /// `--ack-halt`: the operator has seen the sticky halt; a new session may start.
    pub ack_halt: bool,
    /// This runner's name for issue claims; claims are off without it.
    pub worker_id: Option<String>,
    /// Issues worked at once (`--workers`, else the config's `workers`).
    pub workers: Option<u32>,
    /// What the project spent over the last 24 hours, read once by the fleet for all its
    /// workers (each worker's own runner directory holds only its clone's journal); `None`:
    /// the runner reads it itself when `budget.perDayUsd` is set.
    pub spent_today_micros: Option<u64>,
}

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

/// How a run on given ports ended (`run_on_ports`).
#[cfg(test)]
#[derive(Debug)]
pub struct PortsRun {
    /// The process exit code `run` would have returned (docs/interfaces.md).
    pub code: i32,
    /// The run's journal file, under the runner directory the git port named.
    pub journal: PathBuf,
}

#[cfg(test)]
impl PortsRun {
    /// The journal's lines, for a test to read what the machine was told and decided.
    pub fn journal_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.journal)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// Runs the lifecycle of one runner on `ports` in this process: the driver and the machine
/// as `run` has them, every outside call through the ports. With the fakes of
/// `crate::ports::fake` no process is started and no wait sleeps; the runner's own files
/// (journal, lock, state file, logs) are real files under the config's project and log
/// directories and the directory the git port names.
#[cfg(test)]
pub(crate) fn run_on_ports(cfg: Config, opts: RunOptions, ports: crate::ports::Ports) -> PortsRun {
    // The orchestration log is written by the logging layer: a caller that installed none
    // would get a run without its record.
    crate::logging::init(0);
    let journal = match ports.git.runner_dir() {
        Ok(dir) => dir.journal(),
        Err(e) => {
            say!("error: {e}");
            return PortsRun {
                code: 2,
                journal: PathBuf::new(),
            };
        }
    };
    let code = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => {
            let program = PathBuf::from(&cfg.agent.command);
            let started = start_on(cfg, opts, program, ports);
            match started {
                Ok(Started::Ready(driver)) => runtime.block_on(driver.drive()),
                Ok(Started::Exit(code)) => code,
                Err(msg) => {
                    say!("error: {msg}");
                    2
                }
            }
        }
        Err(e) => {
            say!("error: cannot start the async runtime: {e}");
            2
        }
    };
    PortsRun { code, journal }
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
    /// How the tracker and the forge name issues and changes (`#12`, `ENG-12`, `!34`).
    fn refs(&self) -> crate::config::IssueRefs {
        self.run.refs()
    }

    /// Makes the call once, off the runtime, and judges its answer (`network::judge`): what a
    /// failed call tells is said and narrated, as for a step's calls. Every call site that may
    /// meet the network.
    async fn patiently<T, E>(
        &mut self,
        what: &str,
        call: impl FnOnce(&World) -> Result<T, E> + Send + 'static,
    ) -> network::Patient<T, E>
    where
        T: Send + 'static,
        E: std::fmt::Display + crate::call_failure::Kinded + Send + 'static,
    {
        self.step_run().patiently(what, call).await
    }

    /// The parts a step's handlers work with, borrowed for one request.
    fn step_run(&mut self) -> step_run::StepRun<'_> {
        step_run::StepRun {
            run: &mut self.run,
            shell: &mut self.shell,
            cycle: &mut self.cycle,
            core: &self.core,
            report: &mut self.report,
            worker: self.fleet.as_ref().map(|link| link.worker),
        }
    }

    /// Logs what a handler narrated, in order.
    fn narrate(&self, narration: impl IntoIterator<Item = String>) {
        for line in narration {
            self.log(&line);
        }
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
        let log = self.shell.logs.orchestration_log();
        let state = self.core.state();
        crate::logging::orchestrate(
            crate::logging::Origin {
                log: &log,
                worker: self.fleet.as_ref().map(|link| link.worker),
                issue: (self.cycle.issue.number != 0).then_some(self.cycle.issue.number),
                step: state.step().map(|step| self.step_name(step)),
            },
            line,
        );
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
                    _ => None,
                },
                said: answered.said.as_deref().map(last_words_kept),
            };
            // A batch is side effects closed by one request (`Batch`, checked where the
            // machine builds it); an event the machine ignores gets none.
            let batch = match self.core.handle_reported(&event, report.clone()) {
                crate::machine::Reply::Batch(b) => Ok((b.effects().to_vec(), *b.request())),
                crate::machine::Reply::Ignored => Err("no request".to_string()),
                crate::machine::Reply::Broken(why) => Err(why.to_string()),
            };
            self.mirror_retries(&event);
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

    /// The state file's count of failed attempts per step follows the events the machine took:
    /// a failure counts, a success clears it, and a lost push race (no attempt) leaves it be.
    fn mirror_retries(&mut self, event: &Event) {
        match *event {
            Event::StepFailed { step, .. } => {
                *self
                    .shell
                    .state
                    .retries
                    .entry(step.key().to_string())
                    .or_default() += 1;
            }
            Event::StepSucceeded { step, .. } => {
                self.shell.state.retries.remove(step.key());
            }
            _ => {}
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
        Some(self.runner_state_lost(&what))
    }

    /// The halt when the runner's own state was removed or replaced under it. The halt is made
    /// sticky where that is still possible: a removed journal is restored from the open
    /// descriptor first, so no counter is lost.
    fn runner_state_lost(&mut self, what: &str) -> i32 {
        let reason = HaltReason::RunnerStateLost;
        let text = format!(
            "{}\nloop type: environment\n{what}.\nA second runner could start on this project, or progress would be recorded where nobody reads it. Find out what removed it (an agent command? a clean-up job?), then run again with --ack-halt.\nrunner state: {}",
            reason.headline(),
            self.run.runner_dir.dir.display()
        );
        out!("{text}");
        let _ = append_line(&self.shell.logs.orchestration_log(), &text);
        self.shell.notifier.send(Severity::Alert, &text);
        if let Some(j) = self.shell.journal.as_mut() {
            let path = j.path().to_path_buf();
            if std::fs::symlink_metadata(&path).is_err() {
                let restored = j
                    .contents()
                    .and_then(|bytes| crate::safe_fs::write_new(&path, &bytes));
                match restored {
                    Ok(()) => say!("journal restored at {}", path.display()),
                    Err(e) => say!("cannot restore the journal at {}: {e}", path.display()),
                }
                if let Ok((mut fresh, _)) = Journal::open(&path) {
                    if let Some(id) = j.session() {
                        fresh.continue_session(id);
                    }
                    *j = fresh;
                }
            }
            let end = SessionEnd::Halt {
                reason,
                headline: reason.headline(),
            };
            if let Err(e) = j.end(end) {
                say!("the halt could not be recorded in the journal: {e}");
            }
        }
        1
    }

    /// Logs the first failed write of `live.json`, once.
    fn log_live_warning(&self) {
        if let Some(warning) = self.shell.live.take_warning() {
            self.log(&warning);
        }
    }

    fn end_session(&mut self, end: SessionEnd) -> Result<(), crate::journal::JournalError> {
        match self.shell.journal.as_mut() {
            Some(j) => j.end(end),
            None => Ok(()),
        }
    }

    fn save_state(&mut self) {
        let said = self.shell.save_state(&self.run.cfg.project_path);
        self.narrate(said);
    }

    async fn exit(&mut self, code: u8, state: &State) -> i32 {
        // A merge turn held when the run stops (a halt, a signal) is given back with it.
        let (fleet, claims) = (self.fleet.as_ref(), self.claims.as_ref());
        let said = merge::release_merge_turn(fleet, claims, &self.shell.io).await;
        self.narrate(said);
        fleet::tell(self.fleet.as_ref(), |worker| {
            sdlc_machine::fleet::Report::Finished { worker }
        });
        if let Some(issue) = self.claims.as_ref().and_then(|k| k.held).map(|(n, _)| n) {
            let said = claim::release(self.claims.as_mut(), &self.shell.io, issue).await;
            self.narrate(said);
        }
        let project = self.run.cfg.project_path.clone();
        if matches!(state, State::Halted { .. }) {
            // Everything stays for inspection: state file, auto-mode flag, branch, tree.
            return i32::from(code);
        }
        if !self.core.is_terminal() {
            // The machine did not end the session (a signal, a lost claim, a tracker that
            // could not be read): the next run continues it with the same counters.
            let signal = self.shell.shutdown.requested();
            self.shell.state.signal_shutdown = signal.map(|s| s.name().to_string());
            self.shell.state.runner_pid = None;
            self.save_state();
            let _ = artifacts::remove_auto_mode(&project);
            let how = match signal {
                Some(s) => format!("{}: shut down", s.name()),
                None => format!("stopped (exit {code})"),
            };
            self.log(&say::stopped_continues(&how, &self.run.session));
            return i32::from(code);
        }
        if let Err(e) = self.end_session(SessionEnd::Exit { code }) {
            self.log(&say::cannot_record_end(&e));
        }
        self.shell.state.runner_pid = None;
        self.save_state();
        let _ = artifacts::remove_auto_mode(&project);
        let r = self.core.runner();
        self.log(&say::done(code, r.stats.merges, &report::wasted_work(r)));
        i32::from(code)
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
    fn call_ended(&mut self, event: &Event) {
        self.shell.live.step_ended();
        self.log_live_warning();
        let micros = event.usage().map_or(0, |u| u.cost_micros);
        fleet::tell(self.fleet.as_ref(), |worker| {
            sdlc_machine::fleet::Report::Spent { worker, micros }
        });
    }

    async fn perform_effect(&mut self, effect: Effect, state: &State) -> Outcome {
        // The effect loop's diagnostics keep the driver's target, wherever the code lives.
        tracing::debug!(target: "sdlc_runner::driver", ?effect, "perform");
        if matches!(
            effect,
            Effect::RunStep { .. }
                | Effect::AddressReview { .. }
                | Effect::CheckPreconditions { .. }
        ) {
            if let Some(event) = fleet::gate(
                self.fleet.as_ref(),
                &*self.shell.clock,
                &self.shell.shutdown,
            ) {
                return Outcome::Next(event);
            }
        }
        match effect {
            Effect::SelectIssue => {
                let work = (&self.core, &mut self.cycle);
                let holders = (self.claims.as_mut(), self.fleet.as_ref());
                let selected =
                    select::select_issue(&self.run, &mut self.shell, work, holders).await;
                Outcome::Next(self.answer(selected))
            }
            Effect::CheckPreconditions { step } => {
                let facts = (&self.core, &self.cycle);
                let checked =
                    select::check_preconditions(&self.run, &mut self.shell, facts, step).await;
                Outcome::Next(self.answer(checked))
            }
            Effect::RunStep {
                step,
                issue,
                attempt,
                repair,
                commit,
                money_left_micros,
            } => {
                if let Err(event) = self.call_started(issue, step.key(), attempt, money_left_micros)
                {
                    return Outcome::Next(event);
                }
                let event = self
                    .step_run()
                    .run_step(step, issue, attempt, repair, commit)
                    .await;
                self.call_ended(&event);
                Outcome::Next(event)
            }
            Effect::LookAtCi {
                issue,
                look,
                commit,
            } => Outcome::Next(self.step_run().look_at_ci(issue, look, commit).await),
            Effect::LookAtReview { issue, look } => {
                let hands = (&self.run, &self.shell.io, &self.shell.shutdown);
                let cycle = &mut self.cycle;
                let looked = review::look_at_review(hands, &self.core, cycle, (issue, look)).await;
                Outcome::Next(self.answer(looked))
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
                self.call_ended(&event);
                Outcome::Next(event)
            }
            Effect::UpdateBranch { issue, commit } => {
                Outcome::Next(self.step_run().update_branch(issue, commit).await)
            }
            Effect::Wait { seconds, reason } => {
                let until = u64::try_from(self.shell.clock.now().timestamp())
                    .unwrap_or(0)
                    .saturating_add(seconds);
                if sdlc_machine::fleet::wait_pauses_fleet(state) {
                    fleet::tell(self.fleet.as_ref(), |worker| {
                        sdlc_machine::fleet::Report::Waiting { worker, until }
                    });
                }
                let until = i64::try_from(seconds)
                    .ok()
                    .and_then(chrono::TimeDelta::try_seconds)
                    .and_then(|d| self.shell.clock.now().checked_add_signed(d))
                    .map(|t| t.format(", until %Y-%m-%d %H:%M:%S UTC").to_string())
                    .unwrap_or_default();
                self.log(&say::waiting(seconds, &until));
                // A wait journaled by an earlier version says nothing of its reason.
                let reason = reason.map_or("BACKOFF", crate::machine::WaitReason::label);
                self.shell.live.wait_started(reason, seconds);
                self.log_live_warning();
                let next = perform::sleep(
                    &*self.shell.clock,
                    &self.shell.shutdown,
                    Duration::from_secs(seconds),
                )
                .await;
                self.shell.live.wait_ended();
                Outcome::Next(next)
            }
            // Short and frequent (the merge turn): not narrated, not shown as a wait.
            Effect::Pause { millis } => Outcome::Next(
                perform::sleep(
                    &*self.shell.clock,
                    &self.shell.shutdown,
                    Duration::from_millis(millis),
                )
                .await,
            ),
            Effect::TakeMergeTurn { issue } => {
                let holders = (self.fleet.as_ref(), self.claims.as_ref());
                let shell = (&self.shell.io, &*self.shell.clock, &self.shell.shutdown);
                let taken = merge::take_merge_turn(holders, shell, issue).await;
                Outcome::Next(self.answer(taken))
            }
            Effect::ClaimIssue { issue } => Outcome::Next(self.claim_issue(issue).await),
            Effect::RenewClaim {
                issue,
                secs,
                lease_secs,
                fresh_secs,
            } => {
                let claims = self.claims.as_mut();
                let terms = (issue, secs, lease_secs, fresh_secs);
                let renewed = claim::renew(claims, &self.shell.io, &*self.shell.clock, terms).await;
                Outcome::Next(self.answer(renewed))
            }
            Effect::ReleaseMergeTurn => {
                let (fleet, claims) = (self.fleet.as_ref(), self.claims.as_ref());
                let said = merge::release_merge_turn(fleet, claims, &self.shell.io).await;
                self.narrate(said);
                Outcome::Continue
            }
            Effect::AutoCommit(kind) => {
                let message = kind.message();
                match self
                    .shell
                    .io
                    .call(move |w| w.git.auto_commit(&message))
                    .await
                {
                    Ok(true) => self.log(&say::committed(&kind.message())),
                    Ok(false) => {}
                    Err(e) => self.log(&say::auto_commit_skipped(&e)),
                }
                Outcome::Continue
            }
            Effect::CheckoutMain => {
                // A post-checkout hook that hangs must not hold off a signal.
                let checkout = |w: &World| crate::process::cancellable(|| w.git.checkout_main());
                if let Err(e) = self.shell.io.call(checkout).await {
                    self.log(&say::cannot_check_out(&self.run.main, &e));
                }
                Outcome::Continue
            }
            Effect::ResetCycle => {
                self.shell.state.current_issue = None;
                self.shell.state.current_issue_ref = None;
                self.shell.state.current_branch = None;
                self.shell.state.feature_name = None;
                self.shell.state.retries.clear();
                self.shell.state.current_step = 0;
                self.shell.state.last_completed_step = 0;
                self.shell.state.pr_number = None;
                self.cycle.feature = None;
                self.save_state();
                Outcome::Continue
            }
            Effect::RecordMerged { issue } => {
                // The merge is already final (journaled with the event that led here); the
                // claim and the fleet learn of it whatever the tracker answers.
                let said = claim::release(self.claims.as_mut(), &self.shell.io, issue).await;
                self.narrate(said);
                fleet::tell(self.fleet.as_ref(), |worker| {
                    sdlc_machine::fleet::Report::Merged { worker, issue }
                });
                let what = format!("closing issue #{issue} in the tracker");
                let written = self
                    .patiently(&what, move |w| {
                        w.tracker.close(issue, "merged by sdlc-runner")
                    })
                    .await;
                crate::failpoint::point("tracker: closed");
                Outcome::Next(self.answer(perform::tracker_written(&what, written)))
            }
            Effect::MarkEscalated { issue } => {
                let known = self.cycle.issue.branch.clone();
                let rescued = self
                    .shell
                    .io
                    .call(move |w| {
                        let branch = w.git.feature_branch(issue).ok().flatten().or(known);
                        branch
                            .and_then(|b| w.git.rescue_refs(&b).ok())
                            .unwrap_or_default()
                    })
                    .await;
                let mut text = report::escalation_diagnostic(
                    issue,
                    self.core.runner(),
                    self.core.last_words(),
                    &self.shell.logs.dir.display().to_string(),
                );
                text.push_str(&report::rescued(&rescued));
                let what = format!("marking issue #{issue} escalated in the tracker");
                let written = self
                    .patiently(&what, move |w| w.tracker.mark_escalated(issue, &text))
                    .await;
                crate::failpoint::point("tracker: marked escalated");
                let said = claim::release(self.claims.as_mut(), &self.shell.io, issue).await;
                self.narrate(said);
                fleet::tell(self.fleet.as_ref(), |worker| {
                    sdlc_machine::fleet::Report::Escalated { worker, issue }
                });
                Outcome::Next(self.answer(perform::tracker_written(&what, written)))
            }
            Effect::Unquarantine { issue } => {
                let note = report::release_note(issue, self.core.runner());
                let what = format!("lifting the quarantine of issue #{issue} in the tracker");
                let written = {
                    let note = note.clone();
                    self.patiently(&what, move |w| w.tracker.unquarantine(issue, &note))
                        .await
                };
                if matches!(written, network::Patient::Done(Ok(()))) {
                    self.log(&say::released(issue, &note));
                }
                Outcome::Next(self.answer(perform::tracker_written(&what, written)))
            }
            Effect::Cleanup => {
                let patterns = self.run.cfg.cleanup.process_patterns.clone();
                // Its grace between SIGTERM and SIGKILL is a wait: off the runtime.
                let kill = move |_: &World| kill_matching(&patterns, &ProtectSet::current());
                let killed = self.shell.io.call(kill).await;
                for (pid, cmd) in killed {
                    self.log(&say::cleanup_stopped(pid, &cmd));
                }
                Outcome::Continue
            }
            Effect::Notify(n) => {
                let round = self.core.runner().round_pending();
                let (severity, mut text) = report::notice(&n, &self.refs(), round);
                match n {
                    // Who holds the turn, as the answer that found it busy said.
                    Notice::WaitingForMergeTurn { .. } => {
                        text = format!("{}; {text}", self.core.last_words());
                    }
                    // What the tracker answered, as the failed read said.
                    Notice::TrackerReadFailed => {
                        text = format!("{text}: {}", self.core.last_words());
                    }
                    _ => {}
                }
                self.shell.notifier.send(severity, &text);
                match &self.fleet {
                    Some(link) => say!("[w{}] {}", link.worker, text),
                    None => say!("{}", text),
                }
                Outcome::Continue
            }
            Effect::AskDecision {
                step,
                issue,
                budget_spent_micros,
            } => {
                let asked = decision::ask(
                    &self.run,
                    &*self.shell.notifier,
                    &self.core,
                    (step, issue, budget_spent_micros),
                );
                Outcome::Next(self.answer(asked))
            }
            Effect::LookForDecision { .. } => {
                Outcome::Next(self.answer(decision::look(&self.run.runner_dir)))
            }
            Effect::Halt(reason) => {
                if reason == HaltReason::DecisionTimeout {
                    // Nobody answered in time: the question is withdrawn with the halt.
                    let _ = std::fs::remove_file(self.run.runner_dir.decision());
                }
                fleet::tell(self.fleet.as_ref(), |worker| {
                    sdlc_machine::fleet::Report::Halted { worker }
                });
                let mut quarantined: Vec<u32> =
                    self.core.runner().escalated.iter().copied().collect();
                if matches!(reason, HaltReason::AllIssuesEscalated) {
                    let selected = self
                        .shell
                        .io
                        .call(|w| w.tracker.select(&Default::default(), &Default::default()))
                        .await;
                    if let Ok(Selection::AllEscalated { numbers }) = selected {
                        quarantined.extend(numbers);
                    }
                }
                quarantined.sort_unstable();
                quarantined.dedup();
                let mut text = report::halt_diagnostic(
                    &reason,
                    self.core.runner(),
                    self.core.last_words(),
                    &self.shell.logs.dir.display().to_string(),
                    &quarantined,
                    &self.run.cfg.file,
                );
                if let HaltReason::RateLimit { wait_secs } = reason {
                    // The machine keeps no clock: the reset's time is told here, from now.
                    let lifts = i64::try_from(wait_secs)
                        .ok()
                        .and_then(chrono::Duration::try_seconds)
                        .and_then(|d| self.shell.clock.now().checked_add_signed(d));
                    if let Some(lifts) = lifts {
                        let at = text.find('\n').unwrap_or(text.len());
                        let line = lifts.format("%Y-%m-%d %H:%M:%S UTC");
                        text.insert_str(at, &format!("\nthe rate limit lifts at: {line}"));
                    }
                }
                if reason == HaltReason::DayBudget {
                    let at = text.find('\n').unwrap_or(text.len());
                    text.insert_str(
                        at,
                        &format!(
                            "\n{}",
                            perform::day_frees_at(
                                &self.core,
                                self.fleet.as_ref(),
                                &self.run.runner_dir,
                                &*self.shell.clock,
                            )
                        ),
                    );
                }
                out!("{text}");
                let _ = append_line(&self.shell.logs.orchestration_log(), &text);
                self.shell.notifier.send(Severity::Alert, &text);
                if let Err(e) = self.end_session(SessionEnd::Halt {
                    reason,
                    headline: reason.headline(),
                }) {
                    self.log(&say::cannot_record_halt(&e));
                }
                Outcome::Continue
            }
            Effect::Exit { code } => Outcome::Exit(self.exit(code, state).await),
        }
    }

    /// `ClaimIssue`: claims the selected issue. `ClaimTaken` (also when this runner keeps no
    /// claims), `ClaimHeld` when another runner holds it or the fleet gives it to another
    /// worker, `TrackerWriteFailed` when the claim cannot be written, or the network's event.
    async fn claim_issue(&mut self, issue: u32) -> Event {
        let what = format!("claiming issue #{issue}");
        let asked = self
            .claims
            .as_ref()
            .map(|k| (k.worker.clone(), k.lease, self.shell.clock.now()));
        let answer = match self
            .patiently(&what, move |w| match (&w.claims, asked) {
                (Some(store), Some((worker, lease, now))) => {
                    store.claim(issue, &worker, lease, now).map(Some)
                }
                _ => Ok(None),
            })
            .await
        {
            network::Patient::Done(answer) => answer,
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => return ev,
        };
        let mut said = Vec::new();
        let io = &self.shell.io;
        let noted = claim::note_claim(self.claims.as_mut(), io, issue, answer, &mut said).await;
        let event = match noted {
            Ok(true) => {
                // The fleet's coordinator may give the issue to another of its workers.
                let wants = |worker| sdlc_machine::fleet::Report::WantsIssue { worker, issue };
                if fleet::tell(self.fleet.as_ref(), wants) == Some(false) {
                    let claims = self.claims.as_mut();
                    said.extend(claim::refused_by_fleet(claims, io, issue).await);
                    Event::ClaimHeld { issue }
                } else {
                    Event::ClaimTaken { issue }
                }
            }
            Ok(false) => Event::ClaimHeld { issue },
            Err(detail) => {
                self.say(format!("{what}: {detail}"));
                said.push(crate::narration::tracker_write_failed(&what, &detail));
                Event::TrackerWriteFailed
            }
        };
        self.narrate(said);
        event
    }
}

enum Outcome {
    Continue,
    Next(Event),
    Exit(i32),
}

/// The longest tail of what was said that the machine keeps and the journal records: far more
/// than the diagnostics quote, which is what makes the cut invisible in them.
const LAST_WORDS_CHARS: usize = 4000;

/// What the machine keeps of what was said: redacted (the journal is a sink like any other)
/// and its tail only.
fn last_words_kept(said: &str) -> String {
    let said = crate::redact::redact(said);
    match said.char_indices().rev().nth(LAST_WORDS_CHARS - 1) {
        Some((cut, _)) => said[cut..].to_string(),
        None => said,
    }
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

/// An open issue skipped for lacking the selection label is said, not silently passed over:
/// what to narrate.
async fn unlabelled(io: &Io) -> Vec<String> {
    let (skipped, label) = io
        .call(|w| {
            (
                w.tracker.open_without_label(),
                w.tracker.label().to_string(),
            )
        })
        .await;
    if skipped.is_empty() {
        return Vec::new();
    }
    vec![crate::narration::unlabelled(&issue_list(&skipped), &label)]
}

/// What a request's handler answers: the event for the machine and the lines it narrates,
/// which the loop logs in the order they were said.
pub(super) struct Answer {
    pub event: Event,
    /// What the answer said, for the diagnostics (`Report::said`), when it said anything.
    pub said: Option<String>,
    pub narration: Vec<String>,
}

impl Answer {
    /// The answer `event`, with nothing said or to narrate yet.
    pub fn of(event: Event) -> Answer {
        Answer {
            event,
            said: None,
            narration: Vec::new(),
        }
    }

    /// The answer with one more line to narrate.
    pub fn narrated(mut self, line: String) -> Answer {
        self.narration.push(line);
        self
    }
}

/// What a handler has told so far while it works: the words for the diagnostics (the last
/// said wins, as `Report::said`) and the lines to narrate, in order.
#[derive(Default)]
pub(super) struct Told {
    said: Option<String>,
    narration: Vec<String>,
}

impl Told {
    /// What the answer says, for the diagnostics.
    pub fn say(&mut self, text: String) {
        self.said = Some(text);
    }

    /// One more line for the log.
    pub fn narrate(&mut self, line: String) {
        self.narration.push(line);
    }

    /// What a failed call told (`network::judge`), said and narrated.
    pub fn told(&mut self, told: Option<network::Told>) {
        if let Some(told) = told {
            self.say(told.said);
            self.narrate(told.narration);
        }
    }

    /// The handler's answer: `event` with all it told.
    pub fn answer(self, event: Event) -> Answer {
        Answer {
            event,
            said: self.said,
            narration: self.narration,
        }
    }
}

/// What the step's checks are told of the cycle: the machine's issue and verified commit, the
/// feature the driver saw.
fn step_context(core: &Core, cycle: &Cycle) -> StepContext {
    StepContext {
        issue: core.runner().issue,
        feature: cycle.feature.clone(),
        verified: core.runner().verified.map(|c| c.hex()),
    }
}

/// `#1, #2` for messages.
fn issue_list(numbers: &[u32]) -> String {
    numbers
        .iter()
        .map(|n| format!("#{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
