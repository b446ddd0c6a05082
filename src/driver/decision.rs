//! Manual approval: the decision file, the notification, and a look for the answer of
//! `sdlc-runner decide` (the machine waits between looks and decides when to give up).

use super::context::Context;
use super::request::{AskDecision, LookForDecision};
use super::Answer;
use crate::decision_file::{self, read_answer};
use crate::machine::Event;
use crate::narration as say;
use crate::notify::Severity;
use crate::runner_dir::RunnerDir;

/// `AskDecision`: writes the decision file, tells the person, and looks once for the
/// answer. How long the answer is waited for, and how often looked for, is the machine's.
pub(super) fn ask(cx: Context<'_>, request: AskDecision) -> Answer {
    let AskDecision {
        step,
        issue,
        budget_spent_micros,
    } = request;
    let (run, core, notifier) = (cx.run, cx.core, &*cx.shell.notifier);
    let path = run.runner_dir.decision();
    let signature = core
        .runner()
        .last_failure
        .filter(|f| f.step == step)
        .map(|f| f.signature.to_string())
        .unwrap_or_default();
    // The issue's budget reached (`budget.onExceeded: ask`) is what the person decides on.
    let budget = budget_spent_micros.map(say::issue_budget_reached);
    let last = budget.clone().or_else(|| {
        core.failure(step)
            .map(|c| format!("{} ({signature}): {}", c.class, c.summary))
    });
    // What the person decides on: the budget, the tests the branch weakens, or one more try.
    let weakened = budget.is_none() && core.runner().weakening_asked;
    let why = budget
        .as_deref()
        .or(weakened.then_some(say::WEAKENING_ASKED));
    let reason = say::decision_reason(issue, step.key(), budget.as_deref(), weakened);
    let asked = (issue, step.key());
    let request = decision_file::Request::new(&run.session, asked, reason, last, &run.cfg.file);
    if let Err(e) = decision_file::write_request(&path, &request) {
        return Answer::of(Event::DecisionTimedOut).narrated(say::cannot_write_file(&path, &e));
    }
    notifier.send(
        Severity::Warning,
        &say::decision_needed(issue, step.key(), why, &run.cfg.file),
    );
    look_in(&run.runner_dir)
}

/// `LookForDecision` (and the end of `AskDecision`): a person's answer, or `DecisionPending`.
pub(super) fn look(cx: Context<'_>, _: LookForDecision) -> Answer {
    look_in(&cx.run.runner_dir)
}

/// A person's answer in the decision file of `runner_dir`, or `DecisionPending`.
fn look_in(runner_dir: &RunnerDir) -> Answer {
    let path = runner_dir.decision();
    match read_answer(&path) {
        Some(option) => {
            let _ = std::fs::remove_file(&path);
            Answer::of(Event::Decided { option }).narrated(say::decided(option.name()))
        }
        None => Answer::of(Event::DecisionPending),
    }
}
