//! Startup: the checks that exit 2 before any agent runs, the lock, journal recovery and the
//! sticky halt, and where git says the work stands (SPEC §5).

use super::*;

impl Driver {
    /// Startup checks (exit 2 before any agent runs), lock, journal recovery, sticky halt.
    pub(super) fn start(mut cfg: Config, opts: RunOptions) -> Result<Started, String> {
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
        logs.create().map_err(|e| format!("logDir: {e}"))?;
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
        if let Some(open) = recovered.open_session.as_ref().filter(|s| s.mode != mode) {
            // The machine's decisions depend on the mode, so the interrupted session cannot be
            // continued under another one; say so rather than reset its counters silently.
            eprintln!(
                "warning: session {} was interrupted in mode {:?}; this run ({mode:?}) starts a new session and its failure counters start from zero. Run again in the same mode to continue it.",
                open.id, open.mode
            );
        }
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
    pub(super) fn initial_event(&mut self) -> Event {
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
}
