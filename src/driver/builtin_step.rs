//! A builtin (zero-token) attempt: the runner does the step with git and the forge, then the
//! same post-check, classification and counters as an agent attempt. monitorCI watches the
//! checks until they settle; only a repair attempt (CI failed last time) runs the agent, with
//! the failing checks as its repair context, before watching again. Likewise a merge whose
//! branch conflicted with main: its repair attempt has the agent bring the branch up to date
//! (the conflicting files are the repair context) before the runner merges again.

use super::{network, Driver};
use crate::agent::classify::{classify_builtin, classify_builtin_timeout};
use crate::call_failure::CallFailureKind;
use crate::machine::{Event, Usage};
use crate::notify::Severity;
use crate::ports::{GitPort, World};
use crate::step::Step;
use crate::steps::builtin::{self, Failed, IssueFacts};
use std::time::Instant;

impl Driver {
    pub(super) async fn run_builtin(
        &mut self,
        step: Step,
        issue: u32,
        attempt: u32,
        repair: bool,
    ) -> Event {
        self.know_issue(issue).await;
        let mut usage = Usage::default();
        // Whether the agent ran in this attempt: then a network failure of the runner's own
        // call fails the attempt as NETWORK instead of asking for it again.
        let mut agent_ran = false;
        let conflict = step == Step::Merge
            && self
                .core
                .failure(step)
                .is_some_and(|f| f.class == crate::failure::FailureClass::MergeConflict);
        if repair && (step == Step::MonitorCi || conflict) {
            match self.run_agent(step, issue, attempt, true, false).await {
                Event::StepSucceeded { usage: spent, .. } => usage = spent,
                other => return other,
            }
            agent_ran = true;
        }
        self.log(&format!(
            "issue #{issue} step {} {} attempt {attempt} (builtin)",
            step.number(),
            step.key()
        ));
        self.notifier.send(
            Severity::Info,
            &format!(
                "issue #{issue}: {} started (builtin, attempt {attempt})",
                step.key()
            ),
        );
        let started = Instant::now();
        // Every process the step starts (a git hook, the CI command) dies with its group at
        // the step's timeoutMin.
        let deadline = started + self.cfg.timeout(step);
        let outcome = if step == Step::MonitorCi {
            self.look_once(step).await
        } else {
            let what = format!("{} (builtin)", step.key());
            let facts = self.facts();
            let once = move |w: &World| {
                crate::process::within_deadline(deadline, || {
                    facts.with(&*w.git, |facts| builtin_with(w, step, facts))
                })
            };
            match self.patiently(&what, once).await {
                network::Patient::Done(result) => Ok(result.map(Some)),
                network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => Err(ev),
            }
        };
        let result = match outcome {
            Ok(result) => result,
            Err(Event::NetworkFailed) if agent_ran => {
                let c = crate::agent::classify::classify_network(step.key(), self.just_said());
                return self.failed(step, issue, c, usage);
            }
            Err(event) => return event,
        };
        usage.elapsed_ms += started.elapsed().as_millis() as u64;
        self.builtin_outcome(step, issue, result, usage, agent_ran)
            .await
    }

    /// One more look at CI within the monitorCI attempt under way (the machine waited since
    /// the last): no agent runs.
    pub(super) async fn look_at_ci(&mut self, issue: u32, look: u32) -> Event {
        self.know_issue(issue).await;
        let step = Step::MonitorCi;
        self.log(&format!("issue #{issue} {}: look {look} at CI", step.key()));
        let started = Instant::now();
        let result = match self.look_once(step).await {
            Ok(result) => result,
            Err(event) => return event,
        };
        let usage = Usage {
            elapsed_ms: started.elapsed().as_millis() as u64,
            ..Usage::default()
        };
        self.builtin_outcome(step, issue, result, usage, false)
            .await
    }

    /// What a builtin action's result means for the machine: `Ok(None)` is CI still pending;
    /// `Ok(Some(done))` goes through the same post-step check as an agent's attempt.
    async fn builtin_outcome(
        &mut self,
        step: Step,
        issue: u32,
        result: Result<Option<String>, Failed>,
        usage: Usage,
        agent_ran: bool,
    ) -> Event {
        crate::failpoint::point(&format!("builtin {} done", step.key()));
        match result {
            Ok(None) => {
                self.log(&format!("{}: CI pending", step.key()));
                Event::CiPending { usage }
            }
            Ok(Some(done)) => {
                self.say(done.clone());
                self.log(&format!("{}: {done}", step.key()));
                match self.post_step_check(step, agent_ran).await {
                    Ok(None) => self.succeeded(step, issue, usage).await,
                    Ok(Some(failure)) => self.failed(step, issue, failure, usage),
                    Err(event) => event,
                }
            }
            Err(failed) if failed.kind == CallFailureKind::StepDeadline => {
                self.say(failed.what.clone());
                let c = classify_builtin_timeout(step.key(), &failed.what);
                self.failed(step, issue, c, usage)
            }
            Err(failed) => {
                self.say(failed.what.clone());
                let ci = step == Step::MonitorCi && failed.what.starts_with("CI checks failing");
                let text = self.without_branch(&failed.what).await;
                let c = classify_builtin(step.key(), &text, failed.kind, ci);
                self.failed(step, issue, c, usage)
            }
        }
    }

    /// `text` with this issue's branch name taken out: the same refusal (a hook, a protected
    /// remote) must have the same signature on every issue, so that it is seen as the
    /// environment's and not blamed on each issue in turn.
    async fn without_branch(&self, text: &str) -> String {
        let number = self.issue.number;
        let found = self
            .io
            .call(move |w| w.git.feature_branch(number).ok().flatten())
            .await;
        [found.as_deref(), self.issue.branch.as_deref()]
            .into_iter()
            .flatten()
            .filter(|b| !b.is_empty())
            .fold(text.to_string(), |t, b| t.replace(b, "<branch>"))
    }

    /// The issue as the builtin steps see it, for a call off the runtime.
    fn facts(&self) -> Facts {
        Facts {
            number: self.issue.number,
            title: self.issue.title.clone(),
            branch: self.issue.branch.clone(),
            feature: self.feature.clone(),
        }
    }

    /// One look at CI: `Ok(None)` while the checks have not settled. The look dies with its
    /// process group at the step's timeoutMin; the waits between looks are the machine's.
    async fn look_once(&mut self, step: Step) -> Result<Result<Option<String>, Failed>, Event> {
        let deadline = Instant::now() + self.cfg.timeout(step);
        let facts = self.facts();
        let settled = self
            .patiently("watching CI", move |w| {
                crate::process::within_deadline(deadline, || {
                    facts.with(&*w.git, |facts| builtin::ci_settled(&*w.forge, facts))
                })
            })
            .await;
        match settled {
            network::Patient::Done(Ok(true)) => {
                Ok(Ok(Some("CI checks let the branch merge".to_string())))
            }
            network::Patient::Done(Ok(false)) => Ok(Ok(None)),
            network::Patient::Done(Err(failed)) => Ok(Err(failed)),
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => Err(ev),
        }
    }
}

/// The issue as the builtin steps see it, owned so that a call off the runtime takes it along.
struct Facts {
    number: u32,
    title: String,
    branch: Option<String>,
    feature: Option<String>,
}

impl Facts {
    /// Runs `act` on the facts. The branch is git's `<n>-*` branch when there is one: the
    /// agent that ran startIssue chose its slug.
    fn with<T>(&self, git: &dyn GitPort, act: impl FnOnce(&IssueFacts) -> T) -> T {
        let found = git.feature_branch(self.number).ok().flatten();
        act(&IssueFacts {
            number: self.number,
            title: &self.title,
            branch: found.as_deref().or(self.branch.as_deref()),
            feature: self.feature.as_deref(),
        })
    }
}

/// One try of a builtin step other than monitorCI.
fn builtin_with(world: &World, step: Step, facts: &IssueFacts) -> Result<String, Failed> {
    let (git, forge) = (&*world.git, &*world.forge);
    match step {
        Step::StartCycle => builtin::start_cycle(git),
        Step::CommitPush => builtin::commit_push(git, facts),
        Step::CreatePr => builtin::create_pr(git, forge, facts),
        Step::Merge => builtin::merge(git, forge, facts),
        other => Err(Failed::other(format!(
            "{} has no builtin implementation",
            other.key()
        ))),
    }
}
