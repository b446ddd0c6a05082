//! One agent attempt: prompt and invocation, the run itself, the attempt log, and the
//! classification or post-step check that becomes the machine's next event.

use super::facts::{FactsAsked, Probe};
use super::invoke::{self, RepairContext};
use super::step_run::{Calls, StepRun, Voice};
use super::{network, KILL_GRACE, TAIL_BYTES};
mod execute;
use execute::execute;

use crate::agent::classify::{classify_post_check, Classified, Observation};
use crate::agent::cli::{self, AttemptInfo};
use crate::agent::stream::StreamSummary;
use crate::agent::{sandbox, AgentError, AgentExit, AgentRun};
use crate::failure::FailureClass;
use crate::logs::{AttemptHeader, LiveCap};
use crate::machine::{Event, Usage};
use crate::narration as say;
use crate::notify::Severity;
use crate::step::Step;
use crate::steps::checks;
use crate::tracker::IssueText;

impl StepRun<'_> {
    /// The post-step check after a step's work: `Ok(None)` when it holds, `Ok(Some(failure))`
    /// when it does not, `Err(event)` when the machine must hear something else first (the
    /// workspace unfit, a stop request, a network wait). Once an agent ran (`agent_ran`), a
    /// check that cannot reach git or the forge fails the attempt as NETWORK: asking again
    /// would run the agent twice.
    pub(super) async fn post_step_check(
        &mut self,
        step: Step,
        agent_ran: bool,
    ) -> Result<Option<Classified>, Event> {
        let ctx = self.cycle.step_context(self.core);
        // The git locks first (never blamed on the attempt), then the step's check, in one
        // call off the runtime.
        let facts = FactsAsked::before(self.core, false).without_issue();
        let probe = self
            .shell
            .io
            .call(move |w| {
                crate::process::cancellable(|| {
                    Probe::ask(w, facts, |w| {
                        checks::post_check(&*w.git, &*w.forge, step, &ctx)
                    })
                })
            })
            .await;
        let mut told = super::Told::default();
        let hands = (&self.run.cfg, self.core, &self.shell.shutdown);
        let checked = super::facts::verdict(hands, step, probe, &mut told);
        self.voice.keep(told);
        let checked = checked?;
        let what = format!("checking the outcome of {}", step.key());
        let (calls, _, voice) = self.calls();
        match calls.judge(voice, &what, checked) {
            network::Patient::Done(Ok(Ok(()))) => Ok(None),
            network::Patient::Done(Ok(Err(what))) => {
                Ok(Some(classify_post_check(step.key(), &what)))
            }
            network::Patient::Done(Err(e)) => {
                Ok(Some(classify_post_check(step.key(), &e.to_string())))
            }
            network::Patient::GaveUp(_) if agent_ran => Ok(Some(
                crate::agent::classify::classify_network(step.key(), self.voice.just_said()),
            )),
            network::Patient::GaveUp(event) | network::Patient::Cancelled(event) => Err(event),
        }
    }

    /// One attempt of `step`: build the invocation, run the agent, archive its log, and turn
    /// what it did into the machine's next event. The failure context of a `StepFailed` is
    /// handed with it to the machine and the journal (`self.report`).
    pub(super) async fn run_step(
        &mut self,
        step: Step,
        issue: u32,
        attempt: u32,
        repair: bool,
        commit: Option<crate::machine::Commit>,
    ) -> Event {
        if self.shell.shutdown.requested().is_some() {
            return self.shell.shutdown.event();
        }
        if step == Step::Merge {
            return self.run_merge(issue, attempt, repair, commit).await;
        }
        if self.run.cfg.builtin(step) {
            return self
                .run_builtin(step, issue, attempt, repair, commit, false)
                .await;
        }
        self.run_agent(step, issue, attempt, repair, true).await
    }

    /// An attempt by the agent. `check_after`: the step's post-check decides success when the
    /// agent reports none (a builtin monitorCI watches CI itself after its repair agent).
    pub(super) async fn run_agent(
        &mut self,
        step: Step,
        issue: u32,
        attempt: u32,
        repair: bool,
        check_after: bool,
    ) -> Event {
        self.know(issue).await;
        let (calls, _, voice) = self.calls();
        let text = match issue_text(calls, voice, issue).await {
            Ok(text) => text,
            Err(event) => return event,
        };
        let run = match self.prepare(step, issue, attempt, repair, text.as_ref()) {
            Ok(run) => run,
            Err(Unprepared::Environment(message)) => {
                return environment_failure(&mut self.voice, step, &message)
            }
            Err(Unprepared::TooLarge(message)) => return self.too_large(step, issue, &message),
        };
        let name = self.voice.step_name(step);
        self.voice.log(&say::attempt_started(
            issue,
            (step.number(), name),
            attempt,
            repair,
        ));
        self.shell
            .notifier
            .send(Severity::Info, &say::started_notice(issue, name, attempt));
        let started_at = self.shell.clock.now();
        let started = self.shell.clock.instant();
        let live = crate::console::live().then(|| {
            crate::progress::Live::new(crate::progress::Snapshot::new(issue, step, attempt))
        });
        let kind = self.run.cfg.agent(step).kind;
        let mut reader = cli::Reader::new(kind, self.run.cfg.max_turns(step));
        if let Some(left) = self.cycle.money_left_micros {
            reader = reader.metered(self.run.cfg.pricing.clone(), self.run.cfg.model(step), left);
        }
        let ran = execute(
            &*self.shell.agent,
            &run,
            reader,
            (&self.shell.shutdown, &*self.shell.clock),
            self.shell.journal.as_mut(),
            live.as_ref(),
            &self.shell.live,
        )
        .await;
        crate::failpoint::point("agent exited");
        // Before any git call of the runner: what the agent changed of the repository's git
        // setup is put back first, whatever the attempt's outcome.
        let tampering = self.shell.io.call(|w| w.git.undo_tampering()).await;
        if let Some(e) = ran.unrecorded_group {
            self.voice.log(&say::group_unrecorded(&e));
        }
        if let Some(e) = ran.unrecorded_spend {
            self.voice.log(&say::spend_unrecorded(&e));
        }
        let summary = ran.summary;
        let exit = match ran.exit {
            Ok(exit) => exit,
            Err(e @ AgentError::ArgumentsTooLong { .. }) => {
                return self.too_large(step, issue, &e.to_string())
            }
            Err(e) => return environment_failure(&mut self.voice, step, &e.to_string()),
        };
        let header = attempt_header(&exit, issue, name, &self.run.session, attempt, started_at);
        let budget = self.run.cfg.max_log_disk_usage_bytes;
        archive(
            (&self.shell.logs, budget),
            &self.voice,
            &header,
            &run.live_log,
        );
        if !exit.refused_hosts.is_empty() {
            self.voice
                .log(&say::egress_refused(name, &exit.refused_hosts));
            self.shell
                .live
                .hosts_refused(issue, name, attempt, &exit.refused_hosts);
        }
        self.voice.say(last_words(&summary, &exit));
        let tampering = match tampering {
            Ok(changes) => changes,
            Err(e) if exit.cancelled => {
                self.voice.log(&say::git_setup_unchecked(&e));
                Vec::new()
            }
            Err(e) => {
                return environment_failure(&mut self.voice, step, &say::git_setup_unchecked(&e))
            }
        };
        if !tampering.is_empty() {
            self.voice.log(&say::git_setup_put_back(&tampering));
        }
        if exit.cancelled {
            // What the call spent before the signal stopped it is counted all the same.
            return self.shell.shutdown.event_after(usage_of(
                &summary,
                self.shell
                    .clock
                    .instant()
                    .saturating_duration_since(started),
                &self.run.cfg,
                step,
            ));
        }
        if let Some(message) = sandbox::failed_to_start(
            self.run.cfg.agent(step).sandbox.kind,
            exit.exit_code,
            exit.stdout_bytes,
            &exit.stderr_tail,
        ) {
            return environment_failure(&mut self.voice, step, &message);
        }
        let usage = usage_of(
            &summary,
            self.shell
                .clock
                .instant()
                .saturating_duration_since(started),
            &self.run.cfg,
            step,
        );
        if !tampering.is_empty() {
            let failure = crate::agent::classify::classify_git_tampering(step.key(), &tampering);
            return self.failed(step, issue, failure, usage);
        }
        if let Some(id) = summary
            .session_id
            .as_ref()
            .or(summary.result.as_ref().and_then(|r| r.session_id.as_ref()))
        {
            self.voice.log(&say::agent_session(id));
        }
        let temp = std::env::temp_dir();
        let failure = match cli::classify(
            kind,
            &observation(&exit, &summary, &temp, self.shell.clock.now().timestamp()),
        ) {
            Some(c) => Some(c),
            None if !check_after => None,
            None => match self.post_step_check(step, true).await {
                Ok(None) if step == Step::CommitPush => {
                    match self.agent_push_weakened(step).await {
                        Ok(failure) => failure,
                        Err(event) => return event,
                    }
                }
                Ok(failure) => failure,
                Err(event) => return event,
            },
        };
        match failure {
            None => self.succeeded(step, issue, usage).await,
            Some(c) => self.failed(step, issue, c, usage),
        }
    }

    /// The agent's argument vector, environment and limits for this attempt, with room made
    /// in the log budget; `Err` when the step's skill file cannot be read, the issue's text
    /// cannot be written or is too large.
    fn prepare(
        &mut self,
        step: Step,
        issue: u32,
        attempt: u32,
        repair: bool,
        text: Option<&IssueText>,
    ) -> Result<AgentRun, Unprepared> {
        let skill_text = match self.run.cfg.skill_file(step) {
            Some(path) => Some(std::fs::read_to_string(&path).map_err(|e| {
                Unprepared::Environment(format!(
                    "skill file {} for step {} cannot be read: {e}",
                    path.display(),
                    step.key()
                ))
            })?),
            None => None,
        };
        let text_file = text
            .map(|t| write_issue_text(&self.run.runner_dir, t))
            .transpose()?;
        // The failure this step last had, recorded in the journal, so a restarted runner
        // repairs with the same context.
        let repair_ctx = if repair {
            self.core.failure(step).map(|c| RepairContext {
                class: c.class.to_string(),
                summary: c.summary.clone(),
                excerpt: c.excerpt.clone(),
            })
        } else {
            None
        };
        let prompt = match &self.cycle.review_feedback {
            Some(feedback) => invoke::address_review_prompt(
                &self.run.cfg,
                &self.cycle.issue,
                feedback,
                text_file.as_deref(),
            ),
            None => invoke::prompt_with(
                &self.run.cfg,
                step,
                &self.cycle.issue,
                repair_ctx.as_ref(),
                text_file.as_deref(),
            ),
        };
        let issue_id = self.run.refs().id(issue);
        let info = AttemptInfo {
            step,
            name: self.voice.step_name(step),
            issue,
            issue_id: &issue_id,
            attempt,
            prompt: &prompt,
            skill: skill_text.as_deref(),
            money_left_micros: self.cycle.money_left_micros,
        };
        let command = &self.run.cfg.agent(step).command;
        let program = if *command == self.run.cfg.agent.command {
            self.run.program.clone()
        } else {
            which::which(command).map_err(|e| {
                Unprepared::Environment(format!(
                    "steps.{}.agent.command `{command}` not found on PATH ({e}); install it or set the step's agent.command",
                    step.key()
                ))
            })?
        };
        let mut inv = cli::invocation(&self.run.cfg, program, &info);
        if let Some(file) = &text_file {
            inv.env
                .push((ISSUE_FILE_VAR.to_string(), file.display().to_string()));
        }
        let agent = self.run.cfg.agent(step);
        let home = sandbox::runner_home();
        let handed: Vec<std::path::PathBuf> = text_file.iter().cloned().collect();
        let spec = sandbox::Spec {
            config: &agent.sandbox,
            agent: Some(agent.kind),
            // The agent changes the work tree; every branch, commit and push is the
            // runner's (docs/security.md, "What the agent leaves in .git").
            git_dir_writable: false,
            work_tree: &self.run.cfg.project_path,
            runner_dir: &self.run.runner_dir.dir,
            handed: &handed,
            home: home.as_deref(),
        };
        let wrapped = sandbox::wrap(
            &spec,
            &inv.program,
            &inv.args,
            &inv.env,
            &sandbox::runner_var,
        )
        .map_err(|e| Unprepared::Environment(e.to_string()))?;
        let isolated_env = wrapped.is_some();
        let mut egress = None;
        if let Some(w) = wrapped {
            inv.program = w.program;
            inv.args = w.args;
            inv.env = w.env;
            egress = w.egress;
        }
        let live_log = self.shell.logs.live_log(self.voice.step_name(step));
        let budget = self.run.cfg.max_log_disk_usage_bytes;
        let live_log_cap = LiveCap::for_budget(budget);
        // Room for this attempt's live log and archive first, so the budget holds throughout.
        if let Err(e) = self.shell.logs.prune(
            budget.saturating_sub(live_log_cap.reserve()),
            std::slice::from_ref(&live_log),
        ) {
            self.voice.log(&say::pruning_failed(&e));
        }
        Ok(AgentRun {
            program: inv.program,
            args: inv.args,
            cwd: self.run.cfg.project_path.clone(),
            env: inv.env,
            isolated_env,
            timeout: self.run.cfg.timeout(step),
            idle_timeout: self.run.cfg.idle_timeout(step),
            kill_grace: KILL_GRACE,
            live_log,
            live_log_cap,
            tail_bytes: TAIL_BYTES,
            egress,
        })
    }

    pub(super) async fn succeeded(&mut self, step: Step, issue: u32, usage: Usage) -> Event {
        let name = self.voice.step_name(step);
        let took = crate::progress::clock(std::time::Duration::from_millis(usage.elapsed_ms));
        self.voice
            .log(&say::succeeded(name, &took, usage.turns, usage.cost_micros));
        if step == Step::StartIssue {
            if let Ok(Some(branch)) = self.shell.io.call(|w| w.git.current_branch()).await {
                self.cycle.issue.branch = Some(branch.clone());
                self.shell.state.current_branch = Some(branch);
            }
        }
        self.shell.state.last_completed_step = step.number();
        self.save_state();
        self.shell
            .notifier
            .send(Severity::Info, &say::finished_notice(issue, name));
        Event::StepSucceeded { step, usage }
    }

    pub(super) fn failed(&mut self, step: Step, issue: u32, c: Classified, usage: Usage) -> Event {
        let name = self.voice.step_name(step);
        self.shell.notifier.send(
            Severity::Warning,
            &say::failed_notice(issue, name, &c.class, &c.summary),
        );
        self.voice
            .log(&say::failed(name, &c.class, &c.signature, &c.summary));
        self.save_state();
        self.voice
            .remember_failure(step, c.class, &c.summary, &c.excerpt);
        Event::StepFailed {
            step,
            class: c.class,
            signature: c.signature,
            usage,
            wait_hint_secs: c.wait_hint_secs,
        }
    }

    /// What the agent would be handed for this issue is more than it can be handed (the
    /// issue's text over the cap, a command line the system refuses): the issue's, and no
    /// attempt can change it, so it is escalated at once with the sizes (`CONTEXT_WINDOW`),
    /// never taken for a broken environment.
    fn too_large(&mut self, step: Step, issue: u32, message: &str) -> Event {
        self.voice.say(message.to_string());
        let class = FailureClass::ContextWindow;
        let normalized = crate::agent::classify::normalize(message);
        let c = Classified {
            class,
            signature: crate::agent::classify::signature(class, &normalized),
            summary: format!("{class}: {message}")
                .chars()
                .take(crate::agent::classify::MAX_SUMMARY_CHARS)
                .collect(),
            wait_hint_secs: None,
            excerpt: message.to_string(),
        };
        self.failed(step, issue, c, Usage::default())
    }
}

/// The issue's whole text as the tracker has it now; `Ok(None)` when there is no issue or
/// the tracker cannot say (the agent then has the title only, and is told so by the log).
async fn issue_text(
    calls: Calls<'_>,
    voice: &mut Voice<'_>,
    issue: u32,
) -> Result<Option<IssueText>, Event> {
    if issue == 0 {
        return Ok(None);
    }
    match calls
        .patiently(voice, "reading the issue", move |w| w.tracker.text(issue))
        .await
    {
        network::Patient::Done(Ok(text)) => Ok(Some(text)),
        network::Patient::Done(Err(e)) => {
            voice.log(&say::issue_text_unreadable(issue, &e));
            Ok(None)
        }
        network::Patient::GaveUp(event) | network::Patient::Cancelled(event) => Err(event),
    }
}

/// The issue's text in the file the prompt names, redacted like every text the runner
/// hands out; refused when it is larger than an agent is ever handed.
fn write_issue_text(
    runner_dir: &crate::runner_dir::RunnerDir,
    text: &IssueText,
) -> Result<std::path::PathBuf, Unprepared> {
    let rendered = text.render_within().map_err(Unprepared::TooLarge)?;
    runner_dir
        .write_issue_text(text.number, &crate::redact::redact(&rendered))
        .map_err(|e| Unprepared::Environment(e.to_string()))
}

/// Keeps the attempt's log under the log directory and prunes older ones (to `budget`
/// bytes), never the log whose path was just printed.
fn archive(
    (logs, budget): (&crate::logs::Logs, u64),
    voice: &Voice<'_>,
    header: &AttemptHeader,
    live_log: &std::path::Path,
) {
    match logs.archive_attempt(header, live_log) {
        Ok(path) => {
            voice.log(&say::attempt_log(&path));
            let keep = [live_log.to_path_buf(), path];
            if let Err(e) = logs.prune(budget, &keep) {
                voice.log(&say::pruning_failed(&e));
            }
        }
        Err(e) => voice.log(&say::cannot_archive(&e)),
    }
}

/// The agent could not even be run (binary vanished, skill file unreadable): the
/// environment is broken, not the issue.
fn environment_failure(voice: &mut Voice<'_>, step: Step, message: &str) -> Event {
    voice.log(&say::of_step(voice.step_name(step), message));
    voice.say(message.to_string());
    let class = FailureClass::ToolingEnv;
    voice.remember_failure(step, class, &format!("{class}: {message}"), message);
    let normalized = crate::agent::classify::normalize(message);
    Event::StepFailed {
        step,
        class,
        signature: crate::agent::classify::signature(class, &normalized),
        usage: Usage::default(),
        wait_hint_secs: None,
    }
}

/// The environment variable that names the file of the issue's whole text for the agent
/// (the prompt names it too).
pub const ISSUE_FILE_VAR: &str = "SDLC_ISSUE_FILE";

/// Why an attempt could not be prepared.
enum Unprepared {
    /// The runner's environment (a skill file, the agent command, the runner directory).
    Environment(String),
    /// The issue is larger than an agent is handed.
    TooLarge(String),
}

/// The header of the attempt's archived log.
fn attempt_header(
    exit: &AgentExit,
    issue: u32,
    name: &str,
    session: &str,
    attempt: u32,
    started_at: chrono::DateTime<chrono::Utc>,
) -> AttemptHeader {
    AttemptHeader {
        issue,
        step_key: name.to_string(),
        session: session.to_string(),
        attempt,
        started_at,
        exit_code: exit.exit_code,
        signal: exit.signal,
        duration: exit.duration,
        timed_out: exit.timed_out,
        idle_timed_out: exit.idle_timed_out,
        cancelled: exit.cancelled,
        refused_hosts: exit.refused_hosts.clone(),
    }
}

/// What the classifier is shown of the attempt.
fn observation<'a>(
    exit: &'a AgentExit,
    summary: &'a StreamSummary,
    temp_dir: &'a std::path::Path,
    now_epoch_secs: i64,
) -> Observation<'a> {
    Observation {
        exit_code: exit.exit_code,
        timed_out: exit.timed_out,
        idle_timed_out: exit.idle_timed_out,
        killed: exit.signal.is_some() && !exit.killed_by_runner(),
        summary,
        stderr_tail: &exit.stderr_tail,
        output_tail: &exit.stdout_tail,
        now_epoch_secs,
        temp_dir,
    }
}

/// What a person should read first: the agent's own final words, else its raw tail.
fn last_words(summary: &StreamSummary, exit: &AgentExit) -> String {
    match summary.result.as_ref().and_then(|r| r.result_text.clone()) {
        Some(text) if !text.trim().is_empty() => text,
        _ if !exit.stdout_tail.is_empty() => exit.stdout_tail.clone(),
        _ => exit.stderr_tail.clone(),
    }
}

/// What the attempt spent, as the stream reported it: dollars where the CLI says them, else
/// its tokens at `agent.pricing` (0 for a model without a price, which `config check`
/// refuses when budgets are in dollars). A run stopped at its money counts at least what the
/// meter saw.
fn usage_of(
    summary: &StreamSummary,
    elapsed: std::time::Duration,
    cfg: &crate::config::Config,
    step: Step,
) -> Usage {
    let result = summary.result.as_ref();
    let priced = || {
        crate::agent::tokens::cost_micros(&cfg.pricing, &summary.tokens, cfg.model(step))
            .unwrap_or(0)
    };
    let metered = summary.money_reached.map_or(0, |m| m.spent_micros);
    Usage {
        cost_micros: metered.max(match result.and_then(|r| r.total_cost_usd) {
            Some(c) => (c.max(0.0) * 1e6) as u64,
            // Stopped before its result (the money reached, a timeout): what its messages'
            // tokens cost, as the meter counted them.
            None => priced(),
        }),
        elapsed_ms: elapsed.as_millis() as u64,
        // A CLI stopped before its result still made the tool calls it was counted for.
        turns: result
            .and_then(|r| r.num_turns)
            .unwrap_or(summary.tool_calls.max(summary.turns)),
    }
}
