//! The handlers of a step's requests (`RunStep`, `LookAtCi`, `UpdateBranch`,
//! `AddressReview`): each works with the step's parts (`StepRun`, from the context) and
//! answers with the event and what its voice kept. An agent's call (a step's or a review
//! round's) takes its share of the fleet's money first and gives it back after.

use super::answer::Answer;
use super::context::Context;
use super::fleet_link::{self, Link};
use super::request::{AddressReview, LookAtCi, RunStep, UpdateBranch};
use super::shell::Shell;
use super::step_run::Voice;
use crate::machine::Event;

/// `RunStep`: one attempt of the step, by the agent or the runner (`StepRun::run_step`).
pub(super) async fn run_step(cx: Context<'_>, request: RunStep) -> Answer {
    let fleet = cx.fleet;
    let mut run = cx.step_run();
    let start = AgentCallStart {
        issue: request.issue,
        name: request.step.key(),
        attempt: request.attempt,
        money_left_micros: request.money_left_micros,
    };
    let money_left_micros = match call_started(fleet, run.shell, start) {
        Ok(money) => money,
        Err(event) => return Answer::of(event),
    };
    let request = RunStep {
        money_left_micros,
        ..request
    };
    let event = run.run_step(request).await;
    let event = call_ended(fleet, run.shell, &run.voice, event);
    run.voice.answer(event)
}

/// `AddressReview`: a round of addressing the reviewers' requests, an agent's call like a
/// step's (`StepRun::address_review`).
pub(super) async fn address_review(cx: Context<'_>, request: AddressReview) -> Answer {
    let fleet = cx.fleet;
    let mut run = cx.step_run();
    let start = AgentCallStart {
        issue: request.issue,
        name: crate::config::ADDRESS_REVIEW,
        attempt: request.attempt,
        money_left_micros: request.money_left_micros,
    };
    let money_left_micros = match call_started(fleet, run.shell, start) {
        Ok(money) => money,
        Err(event) => return Answer::of(event),
    };
    let request = AddressReview {
        money_left_micros,
        ..request
    };
    let event = run.address_review(request).await;
    let event = call_ended(fleet, run.shell, &run.voice, event);
    run.voice.answer(event)
}

/// `LookAtCi`: one more look at CI within the monitorCI attempt under way.
pub(super) async fn look_at_ci(cx: Context<'_>, request: LookAtCi) -> Answer {
    let LookAtCi {
        issue,
        look,
        commit,
    } = request;
    let mut run = cx.step_run();
    let event = run.look_at_ci(issue, look, commit).await;
    run.voice.answer(event)
}

/// `UpdateBranch`: the branch brought up to date after the agent's repair.
pub(super) async fn update_branch(cx: Context<'_>, request: UpdateBranch) -> Answer {
    let mut run = cx.step_run();
    let event = run.update_branch(request.issue, request.commit).await;
    run.voice.answer(event)
}

/// A step's or a round's agent call (`name`) starts: it takes its share of the fleet's
/// money, which the call may spend (the event that answers instead when the fleet has none
/// for it), and `status` shows it.
fn call_started(
    fleet: Option<&Link>,
    shell: &Shell,
    call: AgentCallStart<'_>,
) -> Result<Option<u64>, Event> {
    let money = fleet_link::share(fleet, call.money_left_micros)?;
    crate::stats::step();
    shell.live.step_started(call.issue, call.name, call.attempt);
    Ok(money)
}

/// What an agent call that starts is: its issue, its name on `status`, its attempt, and the
/// money the machine leaves it.
struct AgentCallStart<'n> {
    pub issue: u32,
    pub name: &'n str,
    pub attempt: u32,
    pub money_left_micros: Option<u64>,
}

/// A step's or a round's call ended: `status` stops showing it and, whatever ended it, its
/// share of the fleet's money is given back with what it spent.
fn call_ended(fleet: Option<&Link>, shell: &Shell, voice: &Voice<'_>, event: Event) -> Event {
    shell.live.step_ended();
    if let Some(warning) = shell.live.take_warning() {
        voice.log(&warning);
    }
    let micros = event.usage().map_or(0, |u| u.cost_micros);
    fleet_link::tell(fleet, |worker| sdlc_machine::fleet::Report::Spent {
        worker,
        micros,
    });
    event
}
