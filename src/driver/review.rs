//! `LookAtReview`: the PR's review read through the forge port, answered with what its
//! reviewers decide and wrote. Whether that lets the PR merge, how long to wait, and which
//! feedback an `addressReview` round hands the agent, is the machine's; this module runs the
//! round (the agent, then the runner's commit and push).

use super::attempt::AgentCall;
use super::context::Context;
use super::request::{AddressReview, LookAtReview, RunStep};
use super::step_run::StepRun;
use super::*;
use crate::forge::ReviewKind;
use crate::machine::ReviewNote;
use crate::narration as say;

/// `LookAtReview`: reads the review of the issue's PR once.
pub(super) async fn look_at_review(cx: Context<'_>, request: LookAtReview) -> Answer {
    let LookAtReview { issue, look } = request;
    let (run, core, cycle) = (cx.run, cx.core, cx.cycle);
    let (io, shutdown) = (&cx.shell.io, &cx.shell.shutdown);
    let mut told = Told::default();
    cycle.know(io, issue).await;
    let Some(branch) = cycle.issue.branch.clone() else {
        told.say(say::review_branch_missing(issue, &run.cfg.project_path));
        return told.answer(Event::WorkspaceUnfit { step: Step::Merge });
    };
    let read = branch.clone();
    // An approval counts for the commit CI verified, not for one before or after it.
    let verified = core.runner().verified.map(|c| c.to_string());
    let answer = network::call(io, move |w| w.forge.review_of(&read, verified.as_deref())).await;
    let services = || run.cfg.api_services();
    let (judged, failed) = network::judge(shutdown, services, "reading the PR's review", answer);
    told.told(failed);
    let state = match judged {
        network::Patient::Done(Ok(state)) => state,
        network::Patient::Done(Err(e)) => {
            told.say(say::review_unreadable(issue, &branch, &e));
            return told.answer(Event::WorkspaceUnfit { step: Step::Merge });
        }
        network::Patient::GaveUp(event) | network::Patient::Cancelled(event) => {
            return told.answer(event)
        }
    };
    // A listed bot's request for changes holds no merge (its words are never handed
    // either: the machine leaves its feedback out).
    let decision = state.decision_without(&run.cfg.review.ignore_authors_with_the_runner());
    told.narrate(say::review_looked(
        issue,
        look,
        &branch,
        decision,
        state.feedback.len(),
    ));
    // Approvals say nothing to address; every body is redacted before the journal or an
    // agent sees it.
    let feedback = state
        .feedback
        .into_iter()
        .filter(|f| f.kind != ReviewKind::Approve)
        .map(|f| ReviewNote {
            id: f.id,
            author: f.author,
            time: f.time,
            body: crate::redact::redact(&f.body),
            path: f.path,
            line: f.line,
        })
        .collect();
    told.answer(Event::ReviewLooked { decision, feedback })
}

impl StepRun<'_> {
    /// A round of addressing the reviewers' requests: the agent (`steps.addressReview`: its
    /// agent, model, limits, skill and prompt) is handed the feedback the machine chose, then
    /// the runner commits what it left and pushes. `Repaired` of monitorCI once pushed: CI is
    /// looked at again for the new head.
    pub(super) async fn address_review(&mut self, request: AddressReview) -> Event {
        let AddressReview {
            issue,
            round,
            attempt,
            money_left_micros,
        } = request;
        let step = Step::MonitorCi;
        if self.shell.shutdown.requested().is_some() {
            return self.shell.shutdown.event();
        }
        self.know(issue).await;
        let handout = self.core.runner().review_handout.clone();
        self.voice
            .log(&say::review_round_handout(issue, round, handout.len()));
        let feedback = crate::prompt::quote_feedback(&handout);
        // The machine's step of a round is monitorCI; its agent is the round's own.
        let round_cfg = self.run.cfg.review_round();
        // The round again after the runner refused its push: the facts go with the feedback.
        let repair = self.core.runner().weakening_handed_back(step);
        let call = AgentCall {
            request: RunStep {
                step,
                issue,
                attempt,
                repair,
                commit: None,
                money_left_micros,
            },
            check_after: false,
            cfg: &round_cfg,
            review_feedback: Some(&feedback),
        };
        let ran = self.run_agent(call).await;
        let usage = match ran {
            Event::StepSucceeded { usage, .. } => usage,
            other => return other,
        };
        let gate = builtin_step::weakening_gate(&self.run.cfg, self.core);
        let facts = builtin_step::Facts::of(self.cycle, self.run.refs()).gated(gate);
        let deadline = crate::process::deadline_after(self.run.cfg.timeout(step));
        let push = move |w: &crate::ports::World| {
            crate::process::within_deadline(deadline, || {
                facts.with(&*w.git, |facts| {
                    crate::steps::repair::push_review_round(&*w.git, &*w.forge, facts)
                })
            })
        };
        match self.patiently("pushing the review round", push).await {
            network::Patient::Done(Ok(crate::steps::repair::Round::Person(head))) => {
                let (cycle, main) = (&self.cycle.issue, &self.run.main);
                builtin_step::persons_move(&mut self.voice, cycle, main, head)
            }
            network::Patient::Done(Ok(crate::steps::repair::Round::Pushed(done))) => {
                self.voice.say(done.clone());
                self.voice.log(&say::review_round_done(issue, round, &done));
                Event::Repaired { step, usage }
            }
            network::Patient::Done(Err(failed)) => {
                self.builtin_failed(step, issue, failed, usage).await
            }
            // The agent ran: asking for the round again would run it twice.
            network::Patient::GaveUp(_) => {
                let c =
                    crate::agent::classify::classify_network(step.key(), self.voice.just_said());
                self.failed(step, issue, c, usage)
            }
            network::Patient::Cancelled(event) => event,
        }
    }
}
