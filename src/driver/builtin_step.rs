//! A builtin (zero-token) attempt: the runner does the step with git and the forge, then the
//! same post-check, classification and counters as an agent attempt. monitorCI watches the
//! checks until they settle; only a repair attempt (CI failed last time) runs the agent, with
//! the failing checks as its repair context, then commits and pushes the agent's fix before
//! watching again. Likewise a merge whose branch conflicted with main: its repair attempt has
//! the runner start merging main into the branch, the agent resolve the conflicting files and
//! the runner conclude the merge; the update and push that follow are the machine's next
//! request (`UpdateBranch`, in `merge.rs`), and CI passes the new head before any merge. The
//! agent never writes git: in a sandbox its git directory is read-only.

use super::attempt::AgentCall;
use super::cycle::Cycle;
use super::network;
use super::request::RunStep;
use super::step_run::{StepRun, Voice};
mod look;
use crate::agent::classify::{classify_builtin, classify_builtin_timeout};
use crate::call_failure::CallFailureKind;
use crate::machine::{Commit, Core, Event, Usage};
use crate::narration as say;
use crate::notify::Severity;
use crate::ports::{GitPort, Io, World};
use crate::prompt::IssueContext;
use crate::step::Step;
use crate::steps::builtin::{self, Failed, Head, IssueFacts};
use crate::steps::weakening::Gate;
use look::look_once;
pub(super) use look::Looked;

impl StepRun<'_> {
    /// The request's `commit`: for monitorCI the commit its look is for (none: the one the
    /// runner pushed); for merge the commit to merge, `verified` when CI passed it in this
    /// cycle.
    pub(super) async fn run_builtin(&mut self, request: RunStep, verified: bool) -> Event {
        let RunStep {
            step,
            issue,
            attempt,
            repair,
            commit,
            ..
        } = request;
        self.know(issue).await;
        // The machine says whether this is the repair of a conflict with main.
        let conflict = self.core.runner().conflict_repair().is_some();
        // A repair hands the agent the last failure: failing CI, a conflict with main, a
        // hook's refusal of the push. The runner's own call follows as a request of its own,
        // so that a network failure of it never runs the agent again.
        if repair && (step != Step::Merge || conflict) {
            return self.repair(request, conflict).await;
        }
        self.voice.log(&say::builtin_started(
            issue,
            (step.number(), step.key()),
            attempt,
        ));
        self.shell.notifier.send(
            Severity::Info,
            &say::builtin_started_notice(issue, step.key(), attempt),
        );
        let started = self.shell.clock.instant();
        // Every process the step starts (a git hook, the CI command) dies with its group at
        // the step's timeoutMin.
        let deadline = crate::process::deadline_after(self.run.cfg.timeout(step));
        let outcome = if step == Step::MonitorCi {
            let (calls, cycle, voice) = self.calls();
            look_once(calls, cycle, voice, step, commit).await
        } else {
            let what = format!("{} (builtin)", step.key());
            let gate = match step {
                Step::CommitPush => weakening_gate(&self.run.cfg, self.core),
                Step::CreatePr => {
                    Gate::configured(&self.run.cfg, self.core.runner().weakening_approved())
                }
                _ => None,
            };
            let facts = Facts::of(self.cycle, self.run.refs()).gated(gate);
            let target = commit.map(|c| (c.hex(), verified));
            let once = move |w: &World| {
                crate::process::within_deadline(deadline, || {
                    facts.with(&*w.git, |facts| {
                        builtin_with(w, step, facts, target.as_ref())
                    })
                })
            };
            match self.patiently(&what, once).await {
                network::Patient::Done(Ok(Ok(done))) => Ok(Ok(Looked::Done(done))),
                network::Patient::Done(Ok(Err(head))) => Ok(Ok(Looked::Person(persons_move(
                    &mut self.voice,
                    &self.cycle.issue,
                    &self.run.main,
                    head,
                )))),
                network::Patient::Done(Err(failed)) => Ok(Err(failed)),
                network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => Err(ev),
            }
        };
        let result = match outcome {
            Ok(result) => result,
            Err(event) => return event,
        };
        let usage = usage_since(&*self.shell.clock, started);
        self.builtin_outcome(step, issue, result, usage).await
    }

    /// A builtin step's repair: the agent repairs in the work tree what the step's last
    /// failure named, and every git write around it is the runner's (in a sandbox the
    /// agent's git directory is read-only). A conflict with main: the runner starts merging
    /// main into the branch first (the conflicting files, with their markers, in the tree;
    /// no agent when nothing conflicts any more) and concludes the merge after (refused while
    /// a marker is left). Failing CI: the runner commits the agent's fix and pushes it. The
    /// rest is a request of the machine's own: the update and its push (`UpdateBranch`), the
    /// look at CI (`LookAtCi`), or commitPush's commit and push (its `RunStep` without
    /// `repair`). The agent's failure goes to the machine as it is.
    async fn repair(&mut self, request: RunStep, conflict: bool) -> Event {
        let RunStep { step, issue, .. } = request;
        let conflict = conflict && step == Step::Merge;
        if conflict {
            if let Some(event) = self.start_conflict_merge(issue).await {
                return event;
            }
        }
        let run = self.run;
        let call = AgentCall::step(request, &run.cfg).unchecked();
        let usage = match self.run_agent(call).await {
            Event::StepSucceeded { usage: spent, .. } => spent,
            other => return other,
        };
        if conflict {
            return self.conclude_conflict_merge(issue, usage).await;
        }
        if step == Step::MonitorCi {
            return self.push_ci_repair(issue, usage).await;
        }
        Event::Repaired { step, usage }
    }

    /// Origin's main merged into the branch up to the conflict, for the agent to resolve.
    /// `None`: the files are there for the agent; else the answer (main merges cleanly now:
    /// `Repaired` with no agent; a failure of the merge itself).
    async fn start_conflict_merge(&mut self, issue: u32) -> Option<Event> {
        let step = Step::Merge;
        let facts = Facts::of(self.cycle, self.run.refs());
        let what = format!("merging {} into the branch", self.run.main);
        let started = self
            .patiently(&what, move |w| {
                facts.with(&*w.git, |f| match f.branch {
                    Some(branch) => w.git.start_main_merge(branch).map_err(Failed::from),
                    None => Err(Failed::other(format!(
                        "no feature branch is known for issue #{}",
                        f.number
                    ))),
                })
            })
            .await;
        let main = self.run.main.clone();
        match started {
            network::Patient::Done(Ok(paths)) if paths.is_empty() => {
                self.voice.log(&say::main_merges_cleanly(&main));
                Some(Event::Repaired {
                    step,
                    usage: Usage::default(),
                })
            }
            network::Patient::Done(Ok(paths)) => {
                let said = say::conflict_left_for_agent(&main, &paths.join(", "));
                self.voice.log(&said);
                self.voice.say(said);
                None
            }
            network::Patient::Done(Err(failed)) => Some(
                self.builtin_failed(step, issue, failed, Usage::default())
                    .await,
            ),
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => Some(ev),
        }
    }

    /// The merge the agent resolved, concluded by the runner: `Repaired` (the update and its
    /// push follow), or the conflict again when markers are left (the merge aborted).
    async fn conclude_conflict_merge(&mut self, issue: u32, usage: Usage) -> Event {
        let step = Step::Merge;
        let message = format!(
            "Merge {} into the branch of issue #{issue} (conflict resolved)",
            self.run.main
        );
        let concluded = self
            .shell
            .io
            .call(move |w| w.git.conclude_merge(&message).map_err(Failed::from))
            .await;
        match concluded {
            Ok(_) => {
                self.voice
                    .log(&say::conflict_merge_concluded(&self.run.main));
                Event::Repaired { step, usage }
            }
            Err(failed) if failed.kind == CallFailureKind::Conflict => {
                self.merge_conflict(&failed.what, failed.paths, usage)
            }
            Err(failed) => self.builtin_failed(step, issue, failed, usage).await,
        }
    }

    /// The agent's fix of failing CI, committed by the runner and pushed: `Repaired` of
    /// monitorCI (CI is looked at again), a person's move, or the push's failure.
    async fn push_ci_repair(&mut self, issue: u32, usage: Usage) -> Event {
        let step = Step::MonitorCi;
        let gate = weakening_gate(&self.run.cfg, self.core);
        let facts = Facts::of(self.cycle, self.run.refs()).gated(gate);
        let deadline = crate::process::deadline_after(self.run.cfg.timeout(step));
        let push = move |w: &World| {
            crate::process::within_deadline(deadline, || {
                facts.with(&*w.git, |f| {
                    crate::steps::repair::push_ci_repair(&*w.git, &*w.forge, f)
                })
            })
        };
        match self.patiently("pushing the CI repair", push).await {
            network::Patient::Done(Ok(crate::steps::repair::Round::Person(head))) => {
                persons_move(&mut self.voice, &self.cycle.issue, &self.run.main, head)
            }
            network::Patient::Done(Ok(crate::steps::repair::Round::Pushed(done))) => {
                self.voice.say(done.clone());
                self.voice.log(&say::of_step(step.key(), &done));
                Event::Repaired { step, usage }
            }
            network::Patient::Done(Err(failed)) => {
                self.builtin_failed(step, issue, failed, usage).await
            }
            // The agent ran: asking for the repair again would run it twice.
            network::Patient::GaveUp(_) => {
                let c =
                    crate::agent::classify::classify_network(step.key(), self.voice.just_said());
                self.failed(step, issue, c, usage)
            }
            network::Patient::Cancelled(event) => event,
        }
    }

    /// A failure of the runner's own call in a step: said, classified (this issue's branch
    /// taken out of its words) and answered as the step's failure.
    pub(super) async fn builtin_failed(
        &mut self,
        step: Step,
        issue: u32,
        failed: Failed,
        usage: Usage,
    ) -> Event {
        self.voice.say(failed.what.clone());
        if !failed.weakened.is_empty() {
            self.voice
                .log(&say::tests_weakened(&failed.weakened, false));
            let c = crate::agent::classify::classify_weakening(step.key(), &failed.weakened, false);
            return self.failed(step, issue, c, usage);
        }
        let text = without_branch(&self.shell.io, &self.cycle.issue, &failed.what).await;
        let c = classify_builtin(step.key(), &text, failed.kind, false);
        self.failed(step, issue, c, usage)
    }

    /// One more look at CI within the monitorCI attempt under way (the machine waited since
    /// the last): no agent runs.
    pub(super) async fn look_at_ci(
        &mut self,
        issue: u32,
        look: u32,
        commit: Option<Commit>,
    ) -> Event {
        self.know(issue).await;
        let step = Step::MonitorCi;
        let of = commit
            .map(|c| format!(" of {}", c.short()))
            .unwrap_or_default();
        self.voice
            .log(&say::look_at_ci(issue, step.key(), look, &of));
        let started = self.shell.clock.instant();
        let (calls, cycle, voice) = self.calls();
        let result = match look_once(calls, cycle, voice, step, commit).await {
            Ok(result) => result,
            Err(event) => return event,
        };
        let usage = usage_since(&*self.shell.clock, started);
        self.builtin_outcome(step, issue, result, usage).await
    }

    /// What a builtin action's result means for the machine: CI still pending on a commit;
    /// a person's move (the event that tells it); done, which goes through the same post-step
    /// check as an agent's attempt (monitorCI's success names the commit CI passed).
    pub(super) async fn builtin_outcome(
        &mut self,
        step: Step,
        issue: u32,
        result: Result<Looked, Failed>,
        usage: Usage,
    ) -> Event {
        crate::failpoint::point(&format!("builtin {} done", step.key()));
        match result {
            Ok(Looked::Pending(commit)) => {
                self.voice
                    .log(&say::ci_pending(step.key(), &commit.short()));
                Event::CiPending {
                    usage,
                    commit: Some(commit),
                }
            }
            Ok(Looked::Person(event)) => event,
            Ok(Looked::Passed(commit)) => {
                let done = format!("CI checks let {} merge", commit.short());
                self.voice.say(done.clone());
                self.voice.log(&say::of_step(step.key(), &done));
                match self.post_step_check(step, false).await {
                    Ok(None) => match self.succeeded(step, issue, usage).await {
                        Event::StepSucceeded { usage, .. } => Event::CiPassed { commit, usage },
                        other => other,
                    },
                    Ok(Some(failure)) => self.failed(step, issue, failure, usage),
                    Err(event) => event,
                }
            }
            Ok(Looked::Done(done)) => {
                self.voice.say(done.clone());
                self.voice.log(&say::of_step(step.key(), &done));
                match self.post_step_check(step, false).await {
                    Ok(None) => self.succeeded(step, issue, usage).await,
                    Ok(Some(failure)) => self.failed(step, issue, failure, usage),
                    Err(event) => event,
                }
            }
            // A kill cut off the push after the agent's repair: the push happens now, a new
            // head for CI, rather than a failure no retry of this look could end.
            Ok(Looked::Unpushed) => self.push_ci_repair(issue, usage).await,
            Ok(Looked::CiFailed(checks)) => {
                self.voice.say(checks.clone());
                let text = without_branch(&self.shell.io, &self.cycle.issue, &checks).await;
                let c = classify_builtin(step.key(), &text, CallFailureKind::Other, true);
                self.failed(step, issue, c, usage)
            }
            Err(failed) => self.builtin_refused(step, issue, failed, usage).await,
        }
    }

    /// What a builtin action's failed call means for the machine: a conflict with main, CI
    /// failed on the commit main would hold, a branch behind, the step's deadline, or the
    /// step's failure.
    async fn builtin_refused(
        &mut self,
        step: Step,
        issue: u32,
        failed: Failed,
        usage: Usage,
    ) -> Event {
        match failed {
            // A conflict with main: the machine's to meet (a repair, or the escalation).
            failed if failed.kind == CallFailureKind::Conflict && step == Step::Merge => {
                self.merge_conflict(&failed.what, failed.paths, usage)
            }
            // CI failed on the commit main would hold: monitorCI's failure (its repair is
            // handed these words, which name the combination), the machine's to meet.
            failed if failed.kind == CallFailureKind::CiFailedTogether => {
                // Its first line says where CI failed (the job logs below it go to the repair).
                let headline = failed.what.lines().next().unwrap_or_default();
                self.voice.log(&say::of_step(step.key(), headline));
                self.voice.say(failed.what.clone());
                // The branch stays named: the words are about this branch and main together.
                let c = classify_builtin(Step::MonitorCi.key(), &failed.what, failed.kind, true);
                match self.failed(Step::MonitorCi, issue, c, usage) {
                    Event::StepFailed {
                        class,
                        signature,
                        usage,
                        ..
                    } => Event::CiFailedTogether {
                        class,
                        signature,
                        usage,
                    },
                    other => other,
                }
            }
            // The PR waits in the base branch's merge queue: the machine's wait.
            failed if failed.kind == CallFailureKind::Queued => {
                tracing::debug!("{}", failed.what);
                let words = say::in_merge_queue(issue, &self.run.main);
                self.voice.log(&say::of_step(step.key(), &words));
                self.voice.say(words);
                Event::MergeQueued { usage }
            }
            // The base branch's protection wants the branch up to date: the machine's to ask.
            failed if failed.kind == CallFailureKind::Behind => {
                self.voice.say(failed.what.clone());
                self.voice.log(&say::of_step(step.key(), &failed.what));
                Event::BranchBehind { usage }
            }
            failed if failed.kind == CallFailureKind::StepDeadline => {
                self.voice.say(failed.what.clone());
                let c = classify_builtin_timeout(step.key(), &failed.what);
                self.failed(step, issue, c, usage)
            }
            failed => self.builtin_failed(step, issue, failed, usage).await,
        }
    }
}

/// The test-weakening check a push of this cycle runs first (`steps::weakening`): none
/// when `tests.weakening` is `allow` or when the machine holds a person's approval of the
/// weakening for this cycle.
pub(super) fn weakening_gate(cfg: &crate::config::Config, core: &Core) -> Option<Gate> {
    Gate::configured(cfg, core.runner().weakening_approved()).filter(|g| !g.approved)
}

/// `text` with this issue's branch name taken out: the same refusal (a hook, a protected
/// remote) must have the same signature on every issue, so that it is seen as the
/// environment's and not blamed on each issue in turn.
pub(super) async fn without_branch(io: &Io, issue: &IssueContext, text: &str) -> String {
    let number = issue.number;
    let found = io
        .call(move |w| w.git.feature_branch(number).ok().flatten())
        .await;
    [found.as_deref(), issue.branch.as_deref()]
        .into_iter()
        .flatten()
        .filter(|b| !b.is_empty())
        .fold(text.to_string(), |t, b| t.replace(b, "<branch>"))
}

/// A commit id git printed, as the machine carries it.
pub(super) fn commit_of(hex: &str) -> Result<Commit, Failed> {
    Commit::parse(hex).ok_or_else(|| {
        Failed::other(format!(
            "git named the commit `{hex}`, which is no commit id (40 or 64 hex digits)"
        ))
    })
}

/// The event that tells the machine of a person's move a look found on `issue`'s branch,
/// said and logged (`main`: the default branch a person merged into).
pub(super) fn persons_move(
    voice: &mut Voice<'_>,
    issue: &IssueContext,
    main: &str,
    head: Head,
) -> Event {
    let number = issue.number;
    let branch = issue.branch.clone().unwrap_or_default();
    match head {
        // Logged as well as said: the cycle goes on or is dropped, so no halt report
        // would carry the words, and the notice that follows is generic.
        Head::Merged => {
            let words = say::merged_by_a_person(number, &branch, main);
            voice.log(&words);
            voice.say(words);
            Event::AlreadyMerged { issue: number }
        }
        Head::Gone(what) => {
            let words = say::withdrawn_by_a_person(number, what, &branch);
            voice.log(&words);
            voice.say(words);
            Event::IssueWithdrawn { issue: number }
        }
        Head::Moved {
            ours,
            head,
            on_top,
            onto_our_push,
        } => {
            let (Some(o), Some(h)) = (Commit::parse(&ours), Commit::parse(&head)) else {
                voice.say(say::moved_to_no_commit(number, &branch, &head));
                return Event::WorkspaceUnfit {
                    step: voice.at().unwrap_or(Step::MonitorCi),
                };
            };
            voice.say(say::branch_moved(
                number,
                &branch,
                (&h.short(), &o.short()),
                (on_top, onto_our_push),
            ));
            Event::BranchMoved {
                ours: o,
                head: h,
                on_top,
            }
        }
        Head::At(_) => Event::WorkspaceUnfit {
            step: voice.at().unwrap_or(Step::MonitorCi),
        },
    }
}

/// The issue as the builtin steps see it, owned so that a call off the runtime takes it along.
pub(super) struct Facts {
    number: u32,
    title: String,
    branch: Option<String>,
    feature: Option<String>,
    refs: crate::config::IssueRefs,
    gate: Option<Gate>,
}

impl Facts {
    /// The issue of `cycle` as the builtin steps see it, named by `refs`.
    pub(super) fn of(cycle: &Cycle, refs: crate::config::IssueRefs) -> Facts {
        Facts {
            number: cycle.issue.number,
            title: cycle.issue.title.clone(),
            branch: cycle.issue.branch.clone(),
            feature: cycle.feature.clone(),
            refs,
            gate: None,
        }
    }

    /// The facts of a push: the test-weakening check runs before it when `gate` is set.
    pub(super) fn gated(mut self, gate: Option<Gate>) -> Facts {
        self.gate = gate;
        self
    }

    /// Runs `act` on the facts. The branch is git's `<n>-*` branch when there is one: the
    /// agent that ran startIssue chose its slug.
    pub(super) fn with<T>(&self, git: &dyn GitPort, act: impl FnOnce(&IssueFacts) -> T) -> T {
        let found = git.feature_branch(self.number).ok().flatten();
        act(&IssueFacts {
            number: self.number,
            title: &self.title,
            branch: found.as_deref().or(self.branch.as_deref()),
            feature: self.feature.as_deref(),
            refs: &self.refs,
            gate: self.gate.as_ref(),
        })
    }
}

/// One try of a builtin step other than monitorCI (`Err(head)`: commitPush found a person's
/// move); `target` is merge's commit and whether CI passed it in this cycle.
fn builtin_with(
    world: &World,
    step: Step,
    facts: &IssueFacts,
    target: Option<&(String, bool)>,
) -> Result<Result<String, Head>, Failed> {
    let (git, forge) = (&*world.git, &*world.forge);
    match step {
        Step::StartCycle => builtin::start_cycle(git).map(Ok),
        Step::StartIssue => builtin::start_issue(git, facts).map(Ok),
        Step::CommitPush => builtin::commit_push(git, facts),
        Step::CreatePr => builtin::create_pr(git, forge, facts).map(Ok),
        Step::Merge => match target {
            Some((commit, verified)) => {
                builtin::merge(git, forge, facts, commit, *verified).map(Ok)
            }
            None => Err(Failed::other(
                "the merge was asked for without a commit to merge".to_string(),
            )),
        },
        other => Err(Failed::other(format!(
            "{} has no builtin implementation",
            other.key()
        ))),
    }
}

/// What a builtin action used: the time it took since `started` by `clock`, nothing else.
pub(super) fn usage_since(clock: &dyn crate::ports::Clock, started: std::time::Instant) -> Usage {
    let took = clock.instant().saturating_duration_since(started);
    Usage {
        elapsed_ms: took.as_millis() as u64,
        ..Usage::default()
    }
}
