//! One agent attempt: prompt and invocation, the run itself, the attempt log, and the
//! classification or post-step check that becomes the machine's next event.

use super::facts::{FactsAsked, Probe};
use super::network;
use super::request::RunStep;
use super::step_run::{Calls, StepRun, Voice};
mod execute;
mod prepare;
mod reading;
use execute::execute;
use prepare::Unprepared;
use reading::{archive, attempt_header, last_words, observation, usage_of};

use crate::agent::classify::{classify_post_check, Classified};
use crate::agent::cli;
use crate::agent::stream::StreamSummary;
use crate::agent::{sandbox, AgentError, AgentExit};
use crate::failure::FailureClass;
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
        let ctx = self.cycle.step_context(self.core, &self.run.cfg, step);
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
        let (cfg, shutdown) = (&self.run.cfg, &self.shell.shutdown);
        let checked = super::facts::verdict(cfg, self.core, shutdown, step, probe, &mut told);
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

    /// One attempt of the request's step: build the invocation, run the agent, archive its
    /// log, and turn what it did into the machine's next event. The failure context of a
    /// `StepFailed` is handed with it to the machine and the journal (the voice's report).
    pub(super) async fn run_step(&mut self, request: RunStep) -> Event {
        if self.shell.shutdown.requested().is_some() {
            return self.shell.shutdown.event();
        }
        if request.step == Step::Merge {
            return self.run_merge(request).await;
        }
        if self.run.cfg.builtin(request.step) {
            return self.run_builtin(request, false).await;
        }
        let run = self.run;
        self.run_agent(AgentCall::step(request, &run.cfg)).await
    }

    /// An attempt by the agent, as `call` asks it.
    pub(super) async fn run_agent(&mut self, call: AgentCall<'_>) -> Event {
        let RunStep {
            step,
            issue,
            attempt,
            repair,
            ..
        } = call.request;
        let cfg = call.cfg;
        self.know(issue).await;
        let (calls, _, voice) = self.calls();
        let text = match issue_text(calls, voice, issue).await {
            Ok(text) => text,
            Err(event) => return event,
        };
        let run = match self.prepare(&call, text.as_ref()) {
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
        let kind = cfg.agent(step).kind;
        let mut reader = cli::Reader::new(kind, cfg.max_turns(step));
        if let Some(left) = call.request.money_left_micros {
            reader = reader.metered(cfg.pricing.clone(), cfg.model(step), left);
        }
        let ran = execute(self.shell, &run, reader, live.as_ref()).await;
        crate::failpoint::point("agent exited");
        // Before any git call of the runner: what the agent changed of the repository's git
        // setup is put back first, whatever the attempt's outcome.
        let tampering = self.shell.io.call(|w| w.git.undo_tampering()).await;
        let began = Began {
            at: started_at,
            instant: started,
            live_log: run.live_log,
        };
        self.after_agent(&call, ran, tampering, began).await
    }

    /// What the agent left: its log archived, the repository's git setup put back, and the
    /// attempt's event (a stop, a sandbox that failed to start, git tampered with, or the
    /// verdict on its work).
    async fn after_agent(
        &mut self,
        call: &AgentCall<'_>,
        ran: execute::Ran,
        tampering: Result<Vec<String>, crate::ports::git::GitError>,
        began: Began,
    ) -> Event {
        let RunStep {
            step,
            issue,
            attempt,
            ..
        } = call.request;
        let (cfg, name) = (call.cfg, self.voice.step_name(step));
        execute::unrecorded(&ran, &self.voice);
        let summary = ran.summary;
        let exit = match ran.exit {
            Ok(exit) => exit,
            Err(e @ AgentError::ArgumentsTooLong { .. }) => {
                return self.too_large(step, issue, &e.to_string())
            }
            Err(e) => return environment_failure(&mut self.voice, step, &e.to_string()),
        };
        let header = attempt_header(&exit, issue, name, &self.run.session, attempt, began.at);
        let budget = cfg.max_log_disk_usage_bytes;
        archive(
            &self.shell.logs,
            budget,
            &self.voice,
            &header,
            &began.live_log,
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
        let took = self
            .shell
            .clock
            .instant()
            .saturating_duration_since(began.instant);
        let usage = usage_of(&summary, took, cfg, step);
        if exit.cancelled {
            // What the call spent before the signal stopped it is counted all the same.
            return self.shell.shutdown.event_after(usage);
        }
        if let Some(message) = sandbox::failed_to_start(
            cfg.agent(step).sandbox.kind,
            exit.exit_code,
            exit.stdout_bytes,
            &exit.stderr_tail,
        ) {
            return environment_failure(&mut self.voice, step, &message);
        }
        if !tampering.is_empty() {
            let failure = crate::agent::classify::classify_git_tampering(step.key(), &tampering);
            return self.failed(step, issue, failure, usage);
        }
        self.judge_agent(call, &exit, &summary, usage).await
    }

    /// The verdict on the agent's work: what its CLI reported, else (when the call asks) the
    /// step's post-check.
    async fn judge_agent(
        &mut self,
        call: &AgentCall<'_>,
        exit: &AgentExit,
        summary: &StreamSummary,
        usage: Usage,
    ) -> Event {
        let (step, issue) = (call.request.step, call.request.issue);
        let kind = call.cfg.agent(step).kind;
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
            &observation(exit, summary, &temp, self.shell.clock.now().timestamp()),
        ) {
            Some(c) => Some(c),
            None if !call.check_after => None,
            None => match self.post_step_check(step, true).await {
                Ok(None) if crate::steps::weakening::agent_pushes(step) => {
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

/// When and where an agent's run began: its start, for the archived log and for what it
/// took, and its live log.
struct Began {
    at: chrono::DateTime<chrono::Utc>,
    instant: std::time::Instant,
    live_log: std::path::PathBuf,
}

/// One agent attempt as asked: the step's request, the config it runs with and what the
/// agent is handed.
pub(super) struct AgentCall<'c> {
    /// The step, issue, attempt, whether it repairs, and the money it may spend.
    pub request: RunStep,
    /// The step's post-check decides success when the agent reports none (a builtin step's
    /// repair and a review round are followed by requests of their own instead).
    pub check_after: bool,
    /// The config the attempt runs with: the run's, or a review round's
    /// (`Config::review_round`: its agent, model, limits, skill and prompt).
    pub cfg: &'c crate::config::Config,
    /// A review round's feedback, quoted: its prompt replaces the step's.
    pub review_feedback: Option<&'c str>,
}

impl<'c> AgentCall<'c> {
    /// A step's attempt by the agent, with the run's config, checked after.
    pub fn step(request: RunStep, cfg: &'c crate::config::Config) -> AgentCall<'c> {
        AgentCall {
            request,
            check_after: true,
            cfg,
            review_feedback: None,
        }
    }

    /// The same attempt, whose success the agent's report alone decides (a builtin step's
    /// repair: the runner's own request follows it).
    pub fn unchecked(self) -> AgentCall<'c> {
        AgentCall {
            check_after: false,
            ..self
        }
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
