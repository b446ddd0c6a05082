//! The async shell around the pure core: it turns each effect into IO (git, the tracker, the
//! agent, the journal, notifications) and each IO result into the next event. It decides
//! nothing: every branch of the lifecycle is the machine's.
//!
//! The journal is written and fsync'd before the effects of an event are performed, so a
//! crash at any point replays into the same counters.

pub mod invoke;
pub mod report;

use crate::agent::{run_agent, AgentRun};
use crate::classify::{classify, classify_post_check, Classified, Observation};
use crate::cleanup::{kill_matching, ProtectSet};
use crate::config::{Config, Forge as ForgeKind, TrackerKind};
use crate::failure::FailureClass;
use crate::files::{self, StateFile};
use crate::forge::Forge;
use crate::journal::{Journal, SessionEnd};
use crate::logs::{append_line, AttemptHeader, Logs};
use crate::machine::{Core, DecisionOption, Effect, Event, Mode, Signal, State, Usage};
use crate::notify::{Channel, Notifier, Severity};
use crate::repo::{self, Repo, StepContext};
use crate::step::Step;
use crate::stream::StreamReader;
use crate::tracker::{self, Selection, Tracker};
use invoke::{AttemptInfo, IssueContext, RepairContext};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Flags of `sdlc-runner run` beyond the config.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub dry_run: bool,
    pub issue: Option<u32>,
    pub step: Option<Step>,
    pub discord_channel: Option<String>,
    pub ack_halt: bool,
}

/// Grace between SIGTERM and SIGKILL for the agent's process group.
const KILL_GRACE: Duration = Duration::from_secs(5);
/// Bytes of stdout/stderr kept per attempt (for classification and the diagnostic).
const TAIL_BYTES: usize = 64 * 1024;

/// Run the lifecycle; returns the process exit code (SPEC §7).
pub fn run(cfg: Config, opts: RunOptions) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return 2;
        }
    };
    runtime.block_on(async move {
        match Driver::start(cfg, opts) {
            Ok(Started::Ready(driver)) => driver.drive().await,
            Ok(Started::Exit(code)) => code,
            Err(msg) => {
                eprintln!("error: {msg}");
                2
            }
        }
    })
}

enum Started {
    Ready(Box<Driver>),
    Exit(i32),
}

struct Driver {
    cfg: Config,
    opts: RunOptions,
    program: PathBuf,
    repo: Repo,
    forge: Forge,
    tracker: Tracker,
    notifier: Notifier,
    logs: Logs,
    /// `None` in a dry run, which must not touch the project.
    journal: Option<Journal>,
    session: String,
    core: Core,
    /// Events to feed first (restart: the recovered position, then what git shows).
    first: Event,
    _lock: Option<files::Lock>,
    cancel_tx: watch::Sender<bool>,
    cancel_rx: watch::Receiver<bool>,
    signal: Arc<AtomicU8>,
    // what the driver remembers between effects
    issue: IssueContext,
    feature: Option<String>,
    last_failure: Option<Classified>,
    last_output: String,
    state: StateFile,
}

fn signal_of(code: u8) -> Option<Signal> {
    match code {
        1 => Some(Signal::Int),
        2 => Some(Signal::Term),
        _ => None,
    }
}

impl Driver {
    /// Startup checks (exit 2 before any agent runs), lock, journal recovery, sticky halt.
    fn start(mut cfg: Config, opts: RunOptions) -> Result<Started, String> {
        if let Some(id) = &opts.discord_channel {
            cfg.discord_channel_id = Some(id.clone());
        }
        let problems = cfg.environment_problems();
        if !problems.is_empty() {
            return Err(format!("{}: {}", cfg.file.display(), problems.join("; ")));
        }
        let program = which::which(&cfg.agent.command).map_err(|e| {
            format!(
                "{}: agent.command `{}` not found on PATH ({e}); install it or set agent.command",
                cfg.file.display(),
                cfg.agent.command
            )
        })?;
        let repo = Repo::open(&cfg.project_path)
            .map_err(|e| format!("{}: projectPath: {e}", cfg.file.display()))?;
        let project = cfg.project_path.clone();
        let lock = if opts.dry_run {
            None
        } else {
            Some(files::acquire_lock(&project).map_err(|e| e.to_string())?)
        };
        let forge = match cfg.forge {
            ForgeKind::Github => Forge::GitHub {
                gh: PathBuf::from("gh"),
                repo_dir: project.clone(),
                require_checks: cfg.require_checks,
            },
            ForgeKind::Local => Forge::Local {
                require_checks: cfg.require_checks,
            },
        };
        let tracker = match (cfg.tracker.kind, &cfg.tracker.dir) {
            (TrackerKind::Local, Some(dir)) => {
                let mut t = tracker::Local::new(dir.clone());
                t.label = cfg.tracker.label.clone();
                t.escalated_label = cfg.tracker.escalated_label.clone();
                Tracker::Local(t)
            }
            _ => {
                let mut t = tracker::GitHub::new(project.clone());
                t.label = cfg.tracker.label.clone();
                t.escalated_label = cfg.tracker.escalated_label.clone();
                Tracker::GitHub(t)
            }
        };
        let logs = Logs {
            dir: cfg.log_dir.clone(),
        };
        logs.create()
            .map_err(|e| format!("logDir {}: {e}", logs.dir.display()))?;
        let mut channels = Vec::new();
        if let Some(target) = &cfg.discord_channel_id {
            channels.push(Channel::Discord {
                openclaw: PathBuf::from("openclaw"),
                target: target.clone(),
            });
        }
        if let Some(url) = &cfg.notify.webhook_url {
            channels.push(Channel::Webhook { url: url.clone() });
        }
        if let Some(cmd) = &cfg.notify.command {
            if let Some((program, args)) = cmd.split_first() {
                channels.push(Channel::Command {
                    program: program.into(),
                    args: args.to_vec(),
                });
            }
        }
        let notifier = Notifier::new(channels, Some(logs.orchestration_log()));

        let mode = match (opts.step, opts.issue) {
            (Some(step), _) => Mode::SingleStep(step),
            (None, Some(n)) => Mode::SingleIssue(n),
            (None, None) => Mode::Continuous,
        };
        let limits = cfg.limits();
        let journal_path = project.join(files::JOURNAL_FILE);
        if let Some(parent) = journal_path.parent().filter(|_| !opts.dry_run) {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let (mut journal, recovered) = if opts.dry_run {
            let recovered = Journal::read(&journal_path)
                .map_err(|e| format!("journal {}: {e}", journal_path.display()))?;
            (None, recovered)
        } else {
            let (j, r) = Journal::open(&journal_path)
                .map_err(|e| format!("journal {}: {e}", journal_path.display()))?;
            (Some(j), r)
        };
        if let Some(torn) = &recovered.torn_line {
            eprintln!(
                "warning: {}: {torn} (dropped; earlier records kept)",
                journal_path.display()
            );
        }
        if let Some((session, headline)) = &recovered.sticky_halt {
            if !opts.ack_halt {
                eprintln!(
                    "refusing to run: session {session} halted: {headline}\nInspect the diagnostic in {} and the project, fix the cause, then run again with --ack-halt.",
                    logs.orchestration_log().display()
                );
                return Ok(Started::Exit(1));
            }
            if let Some(j) = journal.as_mut() {
                j.end(SessionEnd::HaltAcknowledged)
                    .map_err(|e| e.to_string())?;
            }
            eprintln!("halt of session {session} acknowledged; starting a new session");
        }
        let state = match files::read_state(&project) {
            files::StateLoad::Ok(s) => s,
            files::StateLoad::Missing => StateFile::default(),
            files::StateLoad::Corrupt { error, backup } => {
                eprintln!(
                    "warning: state file was corrupt ({error}); moved to {} and rebuilt from the journal and git",
                    backup.display()
                );
                StateFile::default()
            }
        };
        let continuing = recovered
            .open_session
            .filter(|s| s.mode == mode && !opts.dry_run);
        let (core, session) = match continuing {
            Some(open) => {
                let recorded: Vec<(Event, String)> =
                    open.events.iter().map(|e| (*e, String::new())).collect();
                let (core, _) = crate::journal::rebuild(&limits, mode, &recorded);
                if let Some(j) = journal.as_mut() {
                    j.continue_session(&open.id);
                }
                eprintln!(
                    "continuing session {} ({} events recorded)",
                    open.id,
                    open.events.len()
                );
                (core, open.id)
            }
            None => match journal.as_mut() {
                Some(j) => {
                    let id = j.begin(&limits, mode).map_err(|e| e.to_string())?;
                    (Core::new(limits, mode), id)
                }
                None => (Core::new(limits, mode), "dry-run".to_string()),
            },
        };
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let mut driver = Driver {
            cfg,
            opts,
            program,
            repo,
            forge,
            tracker,
            notifier,
            logs,
            journal,
            session,
            core,
            first: Event::Start,
            _lock: lock,
            cancel_tx,
            cancel_rx,
            signal: Arc::new(AtomicU8::new(0)),
            issue: IssueContext::default(),
            feature: None,
            last_failure: None,
            last_output: String::new(),
            state,
        };
        driver.first = driver.initial_event();
        Ok(Started::Ready(Box::new(driver)))
    }

    /// What git shows on start (SPEC §5) overrides the recorded position, never the counters.
    fn initial_event(&mut self) -> Event {
        if self.core.is_terminal() {
            return Event::Start;
        }
        let detected = match repo::detect_progress(&self.repo, &self.forge, Some(&self.state)) {
            Ok(d) => d,
            Err(e) => {
                self.log(&format!(
                    "resume detection failed ({e}); continuing from the journal"
                ));
                None
            }
        };
        let Some(d) = detected else {
            return Event::Start;
        };
        let in_cycle = self.core.runner().issue;
        let wanted = match self.core.runner().mode {
            Mode::SingleIssue(n) => d.issue == n,
            Mode::SingleStep(_) => true,
            Mode::Continuous => true,
        };
        if !wanted || in_cycle.is_some_and(|i| i != d.issue) {
            return Event::Start;
        }
        self.issue = IssueContext {
            number: d.issue,
            title: String::new(),
            branch: Some(d.branch.clone()),
        };
        if let Ok(issue) = self.tracker.get(d.issue) {
            self.issue.title = issue.title;
        }
        self.feature = d.feature.clone();
        if matches!(self.core.runner().mode, Mode::SingleStep(_)) {
            return Event::Start;
        }
        if d.merged && in_cycle.is_none() {
            self.log(&format!(
                "issue #{} is already merged: main and a fresh cycle",
                d.issue
            ));
            return Event::AlreadyMerged { issue: d.issue };
        }
        let next = if d.merged { Step::Merge } else { d.next };
        self.log(&format!(
            "git shows issue #{} ready for {}: resuming there",
            d.issue,
            next.key()
        ));
        Event::Resume {
            issue: d.issue,
            next,
        }
    }

    fn log(&self, line: &str) {
        let stamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let _ = append_line(&self.logs.orchestration_log(), &format!("[{stamp}] {line}"));
        eprintln!("{line}");
    }

    fn watch_signals(&self) -> Result<(), String> {
        use tokio::signal::unix::{signal, SignalKind};
        for (kind, code) in [
            (SignalKind::interrupt(), 1u8),
            (SignalKind::terminate(), 2u8),
        ] {
            let mut stream =
                signal(kind).map_err(|e| format!("cannot install signal handler: {e}"))?;
            let tx = self.cancel_tx.clone();
            let flag = self.signal.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    flag.store(code, Ordering::SeqCst);
                    let _ = tx.send(true);
                }
            });
        }
        Ok(())
    }

    fn pending_signal(&self) -> Option<Signal> {
        signal_of(self.signal.load(Ordering::SeqCst))
    }

    async fn drive(mut self) -> i32 {
        if let Err(e) = self.watch_signals() {
            eprintln!("error: {e}");
            return 2;
        }
        if self.opts.dry_run {
            return self.dry_run();
        }
        let project = self.cfg.project_path.clone();
        if let Err(e) = files::exclude_artifacts(&project) {
            self.log(&format!(
                "warning: cannot keep runner files out of git: {e}"
            ));
        }
        if let Err(e) = files::create_auto_mode(&project) {
            self.log(&format!("warning: cannot create the auto-mode flag: {e}"));
        }
        self.state.runner_pid = Some(std::process::id());
        self.state.signal_shutdown = None;
        self.save_state();
        self.log(&format!(
            "sdlc-runner {} session {} on {} (state {})",
            env!("CARGO_PKG_VERSION"),
            self.session,
            project.display(),
            self.core.state().name()
        ));
        let mut event = self.first;
        loop {
            if let Some(signal) = self.pending_signal() {
                if !matches!(event, Event::ShutdownRequested { .. }) {
                    event = Event::ShutdownRequested { signal };
                }
            }
            let effects = self.core.handle(&event).to_vec();
            let state = *self.core.state();
            let recorded = match self.journal.as_mut() {
                Some(j) => j.record_step(&event, &effects, &state),
                None => Ok(()),
            };
            if let Err(e) = recorded {
                // Without the journal the failure-loop protection cannot survive a restart.
                self.log(&format!(
                    "FATAL: cannot write the journal ({e}); stopping without acting"
                ));
                return 1;
            }
            let mut next = None;
            for effect in effects {
                match self.perform(effect, &state).await {
                    Outcome::Continue => {}
                    Outcome::Next(ev) => next = Some(ev),
                    Outcome::Exit(code) => {
                        self.notifier.flush(Duration::from_secs(35));
                        return code;
                    }
                }
            }
            match next {
                Some(ev) => event = ev,
                None => {
                    self.log(&format!(
                        "internal error: no request after {event:?} in {}",
                        state.name()
                    ));
                    return 1;
                }
            }
        }
    }

    /// `--dry-run`: show the issue and the first invocation; change nothing.
    fn dry_run(&mut self) -> i32 {
        println!("dry run: project {}", self.cfg.project_path.display());
        let selection = match self.core.runner().mode {
            Mode::SingleIssue(n) => self.tracker.get(n).map(Selection::Issue),
            _ => self.tracker.select(self.core.escalated()),
        };
        match selection {
            Ok(Selection::Issue(issue)) => {
                println!("would work on issue #{}: {}", issue.number, issue.title);
                self.issue = IssueContext {
                    number: issue.number,
                    title: issue.title,
                    branch: None,
                };
            }
            Ok(Selection::NoIssues) => {
                println!("no open automatable issue: nothing to do");
                return 0;
            }
            Ok(Selection::AllEscalated { numbers }) => {
                println!("would halt: all issues escalated ({numbers:?})")
            }
            Ok(Selection::AllBlocked { numbers }) => {
                println!("would halt: all issues blocked ({numbers:?})")
            }
            Err(e) => {
                eprintln!("error: tracker: {e}");
                return 2;
            }
        }
        let first = match self.core.runner().mode {
            Mode::SingleStep(step) => step,
            _ => Step::StartCycle,
        };
        for step in Step::ALL
            .into_iter()
            .filter(|s| s.number() >= first.number() && self.cfg.enabled(*s))
        {
            let prompt = invoke::prompt(&self.cfg, step, &self.issue, None);
            let info = AttemptInfo {
                step,
                issue: self.issue.number,
                attempt: 1,
                prompt: &prompt,
                skill: None,
            };
            let inv = invoke::invocation(&self.cfg, self.program.clone(), &info);
            let skill = self
                .cfg
                .skill_file(step)
                .map(|p| format!(" (+ skill {})", p.display()))
                .unwrap_or_default();
            println!(
                "step {} {}: {} {}{skill}",
                step.number(),
                step.key(),
                inv.program.display(),
                inv.args
                    .iter()
                    .map(|a| if a.contains(' ') {
                        format!("{a:?}")
                    } else {
                        a.clone()
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            if matches!(self.core.runner().mode, Mode::SingleStep(_)) {
                break;
            }
        }
        let b = crate::machine::bounds::compute(&self.cfg.limits());
        println!(
            "worst case: {} agent invocations between merges, {} before a halt if nothing succeeds",
            b.between_merges, b.nothing_succeeds
        );
        0
    }

    fn end_session(&mut self, end: SessionEnd) -> Result<(), crate::journal::JournalError> {
        match self.journal.as_mut() {
            Some(j) => j.end(end),
            None => Ok(()),
        }
    }

    fn save_state(&mut self) {
        self.state.last_transition_at = Some(chrono::Utc::now().to_rfc3339());
        if let Err(e) = files::write_state(&self.cfg.project_path, &self.state) {
            self.log(&format!("warning: cannot write the state file: {e}"));
        }
    }

    fn step_context(&self) -> StepContext {
        StepContext {
            issue: self.core.runner().issue,
            feature: self.feature.clone(),
        }
    }

    async fn perform(&mut self, effect: Effect, state: &State) -> Outcome {
        match effect {
            Effect::SelectIssue => match self.select_issue() {
                Some(event) => Outcome::Next(event),
                None => {
                    self.state.runner_pid = None;
                    self.save_state();
                    let _ = files::remove_auto_mode(&self.cfg.project_path);
                    Outcome::Exit(1)
                }
            },
            Effect::CheckPreconditions { step } => Outcome::Next(self.check_preconditions(step)),
            Effect::RunStep {
                step,
                issue,
                attempt,
                repair,
            } => Outcome::Next(self.run_step(step, issue, attempt, repair).await),
            Effect::Wait { seconds } => {
                self.log(&format!("waiting {seconds} s"));
                let mut rx = self.cancel_rx.clone();
                let sleep = tokio::time::sleep(Duration::from_secs(seconds));
                tokio::select! {
                    _ = sleep => Outcome::Next(Event::WaitOver),
                    _ = rx.wait_for(|c| *c) => Outcome::Next(self.shutdown_event()),
                }
            }
            Effect::AutoCommit(kind) => {
                match self.repo.auto_commit(&kind.message()) {
                    Ok(true) => self.log(&format!("committed: {}", kind.message())),
                    Ok(false) => {}
                    Err(e) => self.log(&format!("auto-commit skipped: {e}")),
                }
                Outcome::Continue
            }
            Effect::CheckoutMain => {
                if let Err(e) = self.repo.checkout_main() {
                    self.log(&format!(
                        "warning: cannot check out {}: {e}",
                        self.repo.main
                    ));
                }
                Outcome::Continue
            }
            Effect::ResetCycle => {
                self.state.current_issue = None;
                self.state.current_branch = None;
                self.state.feature_name = None;
                self.state.retries.clear();
                self.state.current_step = 0;
                self.state.last_completed_step = 0;
                self.state.pr_number = None;
                self.feature = None;
                self.last_failure = None;
                self.save_state();
                Outcome::Continue
            }
            Effect::RecordMerged { issue } => {
                if let Err(e) = self.tracker.close(issue, "merged by sdlc-runner") {
                    self.log(&format!("warning: cannot close issue #{issue}: {e}"));
                }
                Outcome::Continue
            }
            Effect::MarkEscalated { issue } => {
                let text = report::escalation_diagnostic(
                    issue,
                    self.core.runner(),
                    &self.last_output,
                    &self.logs.dir.display().to_string(),
                );
                if let Err(e) = self.tracker.mark_escalated(issue, &text) {
                    self.log(&format!(
                        "warning: cannot mark issue #{issue} escalated in the tracker: {e}"
                    ));
                }
                Outcome::Continue
            }
            Effect::Cleanup => {
                let killed =
                    kill_matching(&self.cfg.cleanup.process_patterns, &ProtectSet::current());
                for (pid, cmd) in killed {
                    self.log(&format!("cleanup: stopped pid {pid} ({cmd})"));
                }
                Outcome::Continue
            }
            Effect::Notify(n) => {
                let (severity, text) = report::notice(&n);
                self.notifier.send(severity, &text);
                eprintln!("{}", text);
                Outcome::Continue
            }
            Effect::AskDecision { step, issue } => {
                Outcome::Next(self.ask_decision(step, issue).await)
            }
            Effect::Halt(reason) => {
                let text = report::halt_diagnostic(
                    &reason,
                    self.core.runner(),
                    &self.last_output,
                    &self.logs.dir.display().to_string(),
                );
                println!("{text}");
                let _ = append_line(&self.logs.orchestration_log(), &text);
                self.notifier.send(Severity::Alert, &text);
                if let Err(e) = self.end_session(SessionEnd::Halt {
                    reason,
                    headline: reason.headline(),
                }) {
                    self.log(&format!(
                        "warning: cannot record the halt in the journal: {e}"
                    ));
                }
                Outcome::Continue
            }
            Effect::Exit { code } => Outcome::Exit(self.exit(code, state)),
        }
    }

    fn exit(&mut self, code: u8, state: &State) -> i32 {
        let project = self.cfg.project_path.clone();
        if matches!(state, State::Halted { .. }) {
            // Everything stays for inspection: state file, auto-mode flag, branch, tree.
            return i32::from(code);
        }
        if let Some(signal) = self.pending_signal() {
            // The session stays open: the next run continues it with the same counters.
            self.state.signal_shutdown = Some(signal.name().to_string());
            self.state.runner_pid = None;
            self.save_state();
            let _ = files::remove_auto_mode(&project);
            self.log(&format!(
                "{}: shut down; next run continues session {}",
                signal.name(),
                self.session
            ));
            return i32::from(code);
        }
        if let Err(e) = self.end_session(SessionEnd::Exit { code }) {
            self.log(&format!("warning: cannot record the session end: {e}"));
        }
        self.state.runner_pid = None;
        self.save_state();
        let _ = files::remove_auto_mode(&project);
        let r = self.core.runner();
        self.log(&format!(
            "done (exit {code}): {} merge(s); {}",
            r.stats.merges,
            report::wasted_work(r).replace('\n', ";")
        ));
        i32::from(code)
    }

    fn shutdown_event(&self) -> Event {
        Event::ShutdownRequested {
            signal: self.pending_signal().unwrap_or(Signal::Term),
        }
    }

    /// The next event from the tracker; `None` when the tracker itself failed.
    fn select_issue(&mut self) -> Option<Event> {
        let mode = self.core.runner().mode;
        let selection = match mode {
            Mode::SingleIssue(n) => self.tracker.get(n).map(Selection::Issue),
            Mode::SingleStep(_) if self.issue.number > 0 => {
                return Some(Event::IssueSelected {
                    issue: self.issue.number,
                });
            }
            Mode::SingleStep(_) if self.state.current_issue.is_some() => {
                let n = self.state.current_issue.unwrap_or_default();
                self.issue = IssueContext {
                    number: n,
                    title: String::new(),
                    branch: self.state.current_branch.clone(),
                };
                return Some(Event::IssueSelected { issue: n });
            }
            _ => self.tracker.select(self.core.escalated()),
        };
        let event = match selection {
            Ok(Selection::Issue(issue)) => {
                self.log(&format!(
                    "selected issue #{}: {}",
                    issue.number, issue.title
                ));
                self.issue = IssueContext {
                    number: issue.number,
                    title: issue.title.clone(),
                    branch: Some(issue.branch()),
                };
                self.state.current_issue = Some(issue.number);
                self.state.current_branch = Some(issue.branch());
                self.state.signal_shutdown = None;
                self.save_state();
                Event::IssueSelected {
                    issue: issue.number,
                }
            }
            Ok(Selection::NoIssues) => Event::NoIssues,
            Ok(Selection::AllEscalated { .. }) => Event::AllEscalated,
            Ok(Selection::AllBlocked { numbers }) => {
                self.log(&format!("blocked issues: {numbers:?}"));
                Event::AllBlocked
            }
            Err(e) => {
                // Not a failure loop and no agent ran: stop without a sticky halt, keeping the
                // session open so that the next run continues with the same counters.
                self.log(&format!("tracker failed: {e}"));
                self.notifier.send(
                    Severity::Alert,
                    &format!("sdlc-runner stopped: the issue tracker failed: {e}"),
                );
                return None;
            }
        };
        Some(event)
    }

    fn check_preconditions(&mut self, step: Step) -> Event {
        let ctx = self.step_context();
        self.state.current_step = step.number();
        self.save_state();
        match repo::already_done(&self.repo, &self.forge, step, &ctx) {
            Ok(true) => {
                self.log(&format!(
                    "{}: already done (observed in git); not run again",
                    step.key()
                ));
                self.state.last_completed_step = step.number();
                return Event::AlreadyDone { step };
            }
            Ok(false) => {}
            Err(e) => self.log(&format!(
                "{}: idempotency probe failed ({e}); treating as not done",
                step.key()
            )),
        }
        match repo::precondition(&self.repo, &self.forge, step, &ctx) {
            Ok(Ok(())) => Event::PreconditionsOk { step },
            Ok(Err(check)) => Event::PreconditionFailed { step, check },
            Err(e) => {
                self.log(&format!("{}: precondition probe failed: {e}", step.key()));
                match crate::step::Check::of(step).first() {
                    Some(&check) => Event::PreconditionFailed { step, check },
                    None => Event::PreconditionsOk { step },
                }
            }
        }
    }

    async fn run_step(&mut self, step: Step, issue: u32, attempt: u32, repair: bool) -> Event {
        if self.pending_signal().is_some() {
            return self.shutdown_event();
        }
        let skill_text = match self.cfg.skill_file(step) {
            Some(path) => match std::fs::read_to_string(&path) {
                Ok(text) => Some(text),
                Err(e) => {
                    let msg = format!(
                        "skill file {} for step {} cannot be read: {e}",
                        path.display(),
                        step.key()
                    );
                    return self.environment_failure(step, &msg);
                }
            },
            None => None,
        };
        let repair_ctx = if repair {
            self.last_failure.as_ref().map(|c| RepairContext {
                class: c.class.to_string(),
                summary: c.summary.clone(),
                excerpt: c.excerpt.clone(),
            })
        } else {
            None
        };
        if self.issue.number != issue {
            // Restarted mid-cycle with nothing in git to show for it yet: ask the tracker.
            self.issue = IssueContext {
                number: issue,
                title: self.tracker.get(issue).map(|i| i.title).unwrap_or_default(),
                branch: self.repo.feature_branch(issue).ok().flatten(),
            };
        }
        let prompt = invoke::prompt(&self.cfg, step, &self.issue, repair_ctx.as_ref());
        let info = AttemptInfo {
            step,
            issue,
            attempt,
            prompt: &prompt,
            skill: skill_text.as_deref(),
        };
        let inv = invoke::invocation(&self.cfg, self.program.clone(), &info);
        let live_log = self.logs.live_log(step.key());
        if let Err(e) = self.logs.prune(
            self.cfg.max_log_disk_usage_bytes,
            std::slice::from_ref(&live_log),
        ) {
            self.log(&format!("warning: log pruning failed: {e}"));
        }
        let run = AgentRun {
            program: inv.program,
            args: inv.args,
            cwd: self.cfg.project_path.clone(),
            env: inv.env,
            timeout: self.cfg.timeout(step),
            idle_timeout: self.cfg.idle_timeout(step),
            kill_grace: KILL_GRACE,
            live_log: live_log.clone(),
            tail_bytes: TAIL_BYTES,
        };
        self.log(&format!(
            "issue #{issue} step {} {} attempt {attempt}{}",
            step.number(),
            step.key(),
            if repair { " (repair)" } else { "" }
        ));
        self.notifier.send(
            Severity::Info,
            &format!("issue #{issue}: {} started (attempt {attempt})", step.key()),
        );
        let started_at = chrono::Utc::now();
        let started = Instant::now();
        let mut reader = StreamReader::new();
        let exit = {
            let mut sink = |bytes: &[u8]| reader.feed(bytes);
            run_agent(&run, &mut sink, self.cancel_rx.clone()).await
        };
        let summary = reader.finish();
        let exit = match exit {
            Ok(exit) => exit,
            Err(e) => return self.environment_failure(step, &e.to_string()),
        };
        let header = AttemptHeader {
            step_key: step.key().to_string(),
            session: self.session.clone(),
            attempt,
            started_at,
            exit_code: exit.exit_code,
            signal: exit.signal,
            duration: exit.duration,
            timed_out: exit.timed_out,
            idle_timed_out: exit.idle_timed_out,
            cancelled: exit.cancelled,
        };
        match self.logs.archive_attempt(&header, &live_log) {
            Ok(path) => self.log(&format!("attempt log: {}", path.display())),
            Err(e) => self.log(&format!("warning: cannot archive the attempt log: {e}")),
        }
        // What a person should read first: the agent's own final words, else its raw tail.
        self.last_output = match summary.result.as_ref().and_then(|r| r.result_text.clone()) {
            Some(text) if !text.trim().is_empty() => text,
            _ if !exit.stdout_tail.is_empty() => exit.stdout_tail.clone(),
            _ => exit.stderr_tail.clone(),
        };
        if exit.cancelled {
            return self.shutdown_event();
        }
        let result = summary.result.as_ref();
        let usage = Usage {
            cost_micros: result
                .and_then(|r| r.total_cost_usd)
                .map_or(0, |c| (c.max(0.0) * 1e6) as u64),
            elapsed_ms: started.elapsed().as_millis() as u64,
            turns: result.and_then(|r| r.num_turns).unwrap_or(0),
        };
        if let Some(id) = summary
            .session_id
            .as_ref()
            .or(result.and_then(|r| r.session_id.as_ref()))
        {
            self.log(&format!("agent session {id}"));
        }
        let temp = std::env::temp_dir();
        let obs = Observation {
            exit_code: exit.exit_code,
            timed_out: exit.timed_out,
            idle_timed_out: exit.idle_timed_out,
            killed: exit.signal.is_some() && !exit.killed_by_runner(),
            summary: &summary,
            stderr_tail: &exit.stderr_tail,
            output_tail: &exit.stdout_tail,
            now_epoch_secs: chrono::Utc::now().timestamp(),
            temp_dir: &temp,
        };
        let failure = match classify(&obs) {
            Some(c) => Some(c),
            None => match repo::post_check(&self.repo, &self.forge, step, &self.step_context()) {
                Ok(Ok(())) => None,
                Ok(Err(what)) => Some(classify_post_check(step.key(), &what)),
                Err(e) => Some(classify_post_check(step.key(), &e.to_string())),
            },
        };
        match failure {
            None => {
                self.log(&format!(
                    "{}: succeeded ({} turns, ${:.2})",
                    step.key(),
                    usage.turns,
                    usage.cost_micros as f64 / 1e6
                ));
                if step == Step::StartIssue {
                    if let Ok(Some(branch)) = self.repo.current_branch() {
                        self.issue.branch = Some(branch.clone());
                        self.state.current_branch = Some(branch);
                    }
                }
                self.state.last_completed_step = step.number();
                self.state.retries.remove(step.key());
                self.save_state();
                self.last_failure = None;
                self.notifier.send(
                    Severity::Info,
                    &format!("issue #{issue}: {} finished", step.key()),
                );
                Event::StepSucceeded { step, usage }
            }
            Some(c) => {
                self.notifier.send(
                    Severity::Warning,
                    &format!(
                        "issue #{issue}: {} failed ({}): {}",
                        step.key(),
                        c.class,
                        c.summary
                    ),
                );
                self.log(&format!(
                    "{}: failed: {} {} — {}",
                    step.key(),
                    c.class,
                    c.signature,
                    c.summary
                ));
                *self
                    .state
                    .retries
                    .entry(step.key().to_string())
                    .or_default() += 1;
                self.save_state();
                let ev = Event::StepFailed {
                    step,
                    class: c.class,
                    signature: c.signature,
                    usage,
                    wait_hint_secs: c.wait_hint_secs,
                };
                self.last_failure = Some(c);
                ev
            }
        }
    }

    /// The agent could not even be run (binary vanished, skill file unreadable): the
    /// environment is broken, not the issue.
    fn environment_failure(&mut self, step: Step, message: &str) -> Event {
        self.log(&format!("{}: {message}", step.key()));
        self.last_output = message.to_string();
        let normalized = crate::classify::normalize(message);
        Event::StepFailed {
            step,
            class: FailureClass::ToolingEnv,
            signature: crate::classify::signature(FailureClass::ToolingEnv, &normalized),
            usage: Usage::default(),
            wait_hint_secs: None,
        }
    }

    async fn ask_decision(&mut self, step: Step, issue: u32) -> Event {
        let path = self.cfg.project_path.join(files::DECISION_FILE);
        let last = self
            .last_failure
            .as_ref()
            .map(|c| format!("{} ({}): {}", c.class, c.signature, c.summary));
        let request = serde_json::json!({
            "session": self.session,
            "issue": issue,
            "step": step.key(),
            "reason": format!("step {} of issue #{issue} used up its automatic attempts", step.key()),
            "lastFailure": last,
            "options": DecisionOption::ALL.iter().map(|o| o.name()).collect::<Vec<_>>(),
            "howToAnswer": format!("sdlc-runner decide <retry|skip|halt> --config {}", self.cfg.file.display()),
            "answer": serde_json::Value::Null,
        });
        let text = serde_json::to_string_pretty(&request).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text) {
            self.log(&format!("cannot write {}: {e}", path.display()));
            return Event::DecisionTimedOut;
        }
        self.notifier.send(
            Severity::Warning,
            &format!(
                "decision needed: issue #{issue} step {} — answer with `sdlc-runner decide <retry|skip|halt> --config {}`",
                step.key(),
                self.cfg.file.display()
            ),
        );
        let deadline = Instant::now() + self.cfg.decision_timeout;
        let mut rx = self.cancel_rx.clone();
        loop {
            if let Some(option) = read_answer(&path) {
                let _ = std::fs::remove_file(&path);
                self.log(&format!("decision: {}", option.name()));
                return Event::Decided { option };
            }
            if Instant::now() >= deadline {
                let _ = std::fs::remove_file(&path);
                return Event::DecisionTimedOut;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                _ = rx.wait_for(|c| *c) => return self.shutdown_event(),
            }
        }
    }
}

fn read_answer(path: &Path) -> Option<DecisionOption> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    DecisionOption::parse(value.get("answer")?.as_str()?)
}

enum Outcome {
    Continue,
    Next(Event),
    Exit(i32),
}
