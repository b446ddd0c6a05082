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
mod context;
mod cycle;
mod cycle_end;
mod decision;
mod dry_run;
mod exit;
mod facts;
mod fleet_link;
pub(crate) use fleet_link::{Link, Shared};
mod halt;
mod keeper;
mod merge;
mod merge_queue;
mod network;
mod notify;
mod request;
mod restart;
mod review;
mod run_context;
pub use run_context::RunOptions;
pub(crate) use run_context::{Restart, RunContext};
mod select;
mod shell;
pub(crate) use shell::Shell;
mod shutdown;
mod step_requests;
mod step_run;
mod tree;
mod wait;
use crate::narration as say;
use answer::{Answer, Narrator, Told};
pub(crate) use facts::{foreign_list, FOREIGN_FIX};
pub(crate) use keeper::ClaimKeeper;

use crate::agent::cli::{self, AttemptInfo};
use crate::artifacts;
use crate::config::Config;
use crate::machine::{Core, Effect, Event, Mode, Report, State};
use crate::ports::{Io, World};
use crate::prompt::IssueContext;
use crate::report;
use crate::step::Step;
use crate::steps::checks::{self, StepContext};
use crate::tracker::{self, Selection};
use context::Context;
use cycle::Cycle;
use request::{Request, Side};
use std::time::Duration;

/// Grace between SIGTERM and SIGKILL for the agent's process group (and, at startup, for
/// the groups a killed runner left).
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(5);
/// Bytes of stdout/stderr kept per attempt (for classification and the diagnostic).
const TAIL_BYTES: usize = 64 * 1024;

/// Everything one run holds. The machine (`core`) decides; the rest is the IO it needs and
/// what the driver must remember between effects to perform the next one, in groups by what
/// they hold.
pub(crate) struct Driver {
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
    /// This runner's issue claims, when it runs with `--worker-id`.
    claims: Option<ClaimKeeper>,
    /// The fleet this driver is a worker of (`run --workers N`).
    fleet: Option<fleet_link::Link>,
}

impl Driver {
    /// A driver on what startup made ready: the run's givens and shell, the machine of its
    /// session, where the restart begins, its claims, and the issues merged before (the
    /// journal's), outside any fleet.
    pub(crate) fn new(
        run: RunContext,
        shell: Shell,
        core: Core,
        restart: Restart,
        claims: Option<ClaimKeeper>,
        merged_before: std::collections::BTreeSet<u32>,
    ) -> Driver {
        Driver {
            run,
            shell,
            cycle: Cycle {
                merged_before,
                ..Cycle::default()
            },
            core,
            restart,
            claims,
            fleet: None,
        }
    }

    /// Makes this driver the fleet's worker `link.worker`: its stop is the fleet's to request.
    pub(crate) fn join_fleet(&mut self, link: Link) {
        link.shared.enlist(self.shell.shutdown.clone());
        self.fleet = Some(link);
    }

    /// The issue the session resumes, if it is in the middle of one.
    pub(crate) fn issue_under_way(&self) -> Option<u32> {
        self.core.runner().issue
    }

    /// What a request's handler works with, borrowed for one request decided in `state`.
    fn context<'a>(&'a mut self, state: &'a State) -> Context<'a> {
        let narrator = self.narrator();
        Context {
            run: &self.run,
            shell: &mut self.shell,
            cycle: &mut self.cycle,
            core: &self.core,
            claims: self.claims.as_mut(),
            fleet: self.fleet.as_ref(),
            state,
            narrator,
        }
    }

    /// Logs what a handler narrated, in order.
    pub(crate) fn narrate(&self, narration: impl IntoIterator<Item = String>) {
        self.narrator().narrate(narration);
    }

    /// Logs what a handler's answer narrates and hands out its event, with what it reports
    /// to the machine beyond it (a `StepFailed`'s failure context, what the attempt or the
    /// failed call said). The machine keeps each step's last failure (`Core::failure`, for the
    /// next repair prompt and the decision file) and the last words (`Core::last_words`, for
    /// the halt and escalation diagnostics).
    fn answer(&self, mut answer: Answer) -> (Event, Report) {
        let report = answer.report();
        self.narrate(std::mem::take(&mut answer.narration));
        (answer.event, report)
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

    /// Drives the run to its end: the exit code (docs/interfaces.md).
    pub(crate) async fn drive(mut self) -> i32 {
        if let Err(e) = self.shell.shutdown.watch_signals() {
            say!("error: {e}");
            return 2;
        }
        if self.run.opts.dry_run {
            let (run, io, core) = (&self.run, &self.shell.io, &self.core);
            let claims = self.claims.as_ref();
            let ended = dry_run::dry_run(run, io, core, &mut self.cycle, claims).await;
            self.narrate(ended.narration);
            return ended.code;
        }
        self.begin().await;
        let first = restart::initial_event(
            &self.core,
            &self.shell.io,
            &self.shell.state,
            &self.run,
            &mut self.cycle,
            self.restart.first.clone(),
        )
        .await;
        // What was said before the first event (its answer's words, if any).
        let (mut event, mut reported) = self.answer(first);
        loop {
            event = self.unless_stopped(event);
            if let Some(code) = self.check_runner_files() {
                return code;
            }
            let batch = match self.decide(&event, std::mem::take(&mut reported)) {
                Ok(batch) => batch,
                Err(code) => return code,
            };
            // The side effects, then the request: its outcome is the next event.
            let (outcome, report) = self.perform_batch(batch.effects, &batch.state).await;
            match outcome {
                Outcome::Next(ev) => {
                    event = ev;
                    reported = report;
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
                    self.log(&say::unanswered(&batch.request, batch.state.name()));
                    return 1;
                }
            }
        }
    }

    /// Before the first event: the runner's marks in the work tree and its state file, what a
    /// killed runner left (its merge lease in a fleet, its locks) and the side effects of its
    /// last batch, carried out again.
    async fn begin(&mut self) {
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
    }

    /// `event`, or the shutdown in its place once one was requested.
    fn unless_stopped(&self, event: Event) -> Event {
        let Some(signal) = self.shell.shutdown.requested() else {
            return event;
        };
        if matches!(event, Event::ShutdownRequested { .. }) {
            return event;
        }
        // The answer is dropped, not what its call spent (a step that ended as the fleet
        // halted): the machine counts it with the shutdown.
        let usage = event.usage().copied().unwrap_or_default();
        Event::ShutdownRequested { signal, usage }
    }

    /// The machine's batch for `event`, with what its answer `reported`, journaled before any
    /// of it is performed; the exit code when there is none to act on or the journal cannot
    /// record it.
    fn decide(&mut self, event: &Event, reported: Report) -> Result<Decided, i32> {
        let report = Report {
            failure: match event {
                Event::StepFailed { step, .. } => reported.failure.filter(|d| d.step == *step),
                Event::MergeRaceLost { .. } | Event::MergeConflict { .. } => {
                    reported.failure.filter(|d| d.step == Step::Merge)
                }
                Event::CiFailedTogether { .. } => {
                    reported.failure.filter(|d| d.step == Step::MonitorCi)
                }
                _ => None,
            },
            said: reported.said.as_deref().map(answer::last_words_kept),
        };
        // A batch is side effects closed by one request (`Batch`, checked where the
        // machine builds it); an event the machine ignores gets none.
        let batch = match self.core.handle_reported(event, report.clone()) {
            crate::machine::Reply::Batch(b) => Ok((b.effects().to_vec(), *b.request())),
            crate::machine::Reply::Ignored => Err("no request".to_string()),
            crate::machine::Reply::Broken(why) => Err(why.to_string()),
        };
        self.shell.mirror_retries(event);
        let state = *self.core.state();
        tracing::debug!(?event, state = state.name(), ?batch, "event");
        let (effects, request) = match batch {
            Ok(batch) => batch,
            Err(why) => {
                // Acting on nothing, or on a batch the driver cannot answer, would stall
                // the run or act out of order.
                self.log(&say::broken_batch(&why, event, state.name()));
                return Err(1);
            }
        };
        let recorded = match self.shell.journal.as_mut() {
            Some(j) => j.record_step(event, &report, &effects, &state),
            None => Ok(()),
        };
        if let Err(e) = recorded {
            // Without the journal the failure-loop protection cannot survive a restart.
            self.log(&say::journal_unwritable(&e));
            return Err(1);
        }
        crate::failpoint::point(event.label());
        Ok(Decided {
            effects,
            request,
            state,
        })
    }

    /// Performs a batch's effects in order: the last one's outcome, and what the batch's
    /// answers report to the machine.
    async fn perform_batch(&mut self, effects: Vec<Effect>, state: &State) -> (Outcome, Report) {
        let mut batch = Report::default();
        let mut outcome = Outcome::Continue;
        for effect in effects {
            let (done, report) = self.perform(effect, state).await;
            // What a later effect of the batch says is the newer word.
            batch = Report {
                failure: report.failure.or(batch.failure),
                said: report.said.or(batch.said),
            };
            outcome = done;
        }
        (outcome, batch)
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
        let before = crate::stats::spawns();
        let performed = self.perform_effect(effect, state).await;
        crate::stats::effect_performed(effect.label(), before, crate::stats::spawns());
        performed
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
            .then(|| fleet_link::gate(self.fleet.as_ref(), &*shell.clock, &shell.shutdown))
            .flatten()
    }

    /// Performs one effect by its handler: the outcome, and what the answer reports to the
    /// machine beyond its event.
    async fn perform_effect(&mut self, effect: Effect, state: &State) -> (Outcome, Report) {
        // The effect loop's diagnostics keep the driver's target, wherever the code lives.
        tracing::debug!(target: "sdlc_runner::driver", ?effect, "perform");
        if let Some(event) = self.fleet_gate(&effect) {
            return (Outcome::Next(event), Report::default());
        }
        let cx = self.context(state);
        let answer = match Request::from(effect) {
            Request::SelectIssue(r) => select::select_issue(cx, r).await,
            Request::CheckPreconditions(r) => select::check_preconditions(cx, r).await,
            Request::RunStep(r) => step_requests::run_step(cx, r).await,
            Request::LookAtCi(r) => step_requests::look_at_ci(cx, r).await,
            Request::LookAtReview(r) => review::look_at_review(cx, r).await,
            Request::AddressReview(r) => step_requests::address_review(cx, r).await,
            Request::UpdateBranch(r) => step_requests::update_branch(cx, r).await,
            Request::Wait(r) => wait::wait(cx, r).await,
            Request::Pause(r) => wait::pause(cx, r).await,
            Request::TakeMergeTurn(r) => merge::take_merge_turn(cx, r).await,
            Request::ClaimIssue(r) => claim::claim_issue(cx, r).await,
            Request::RenewClaim(r) => claim::renew(cx, r).await,
            Request::RecordMerged(r) => cycle_end::record_merged(cx, r).await,
            Request::MarkEscalated(r) => cycle_end::mark_escalated(cx, r).await,
            Request::Unquarantine(r) => cycle_end::unquarantine(cx, r).await,
            Request::AskDecision(r) => decision::ask(cx, r),
            Request::LookForDecision(r) => decision::look(cx, r),
            Request::Exit(r) => {
                let ended = exit::exit(cx, r).await;
                self.narrate(ended.narration);
                return (Outcome::Exit(ended.code), Report::default());
            }
            Request::Side(r) => {
                let said = side_effect(cx, r).await;
                self.narrate(said);
                return (Outcome::Continue, Report::default());
            }
        };
        let (event, report) = self.answer(answer);
        (Outcome::Next(event), report)
    }
}

/// The effects that answer nothing (the batch's side effects): what each narrates.
async fn side_effect(cx: Context<'_>, side: Side) -> Vec<String> {
    match side {
        Side::ReleaseMergeTurn => merge::release_merge_turn(cx).await,
        Side::AutoCommit(kind) => tree::auto_commit(cx, kind).await,
        Side::CheckoutMain => tree::checkout_main(cx).await,
        Side::ResetCycle => cycle_end::reset_cycle(cx),
        Side::Cleanup => cycle_end::cleanup(cx).await,
        Side::Notify(notice) => notify::notify(cx, notice),
        Side::Halt(reason) => halt::halt(cx, reason).await,
    }
}

/// What the machine decided for an event: its side effects, then its request, in `state`.
struct Decided {
    effects: Vec<Effect>,
    request: Effect,
    state: State,
}

enum Outcome {
    Continue,
    Next(Event),
    Exit(i32),
}

impl Driver {
    /// What an attempt of `step` is told as (`report::step_name`): `addressReview` while a
    /// review round is under way.
    fn step_name(&self, step: Step) -> &'static str {
        report::step_name(step, self.core.runner().round_pending())
    }
}
