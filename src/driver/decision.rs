//! Manual approval: the decision file, the notification, and a look for the answer of
//! `sdlc-runner decide` (the machine waits between looks and decides when to give up).

use super::Driver;
use crate::decision_file::{self, read_answer};
use crate::machine::Event;
use crate::notify::Severity;
use crate::step::Step;

impl Driver {
    /// `AskDecision`: writes the decision file, tells the person, and looks once for the
    /// answer. How long the answer is waited for, and how often looked for, is the machine's.
    pub(super) fn ask_decision(
        &mut self,
        step: Step,
        issue: u32,
        budget_spent_micros: Option<u64>,
    ) -> Event {
        let path = self.run.runner_dir.decision();
        let signature = self
            .core
            .runner()
            .last_failure
            .filter(|f| f.step == step)
            .map(|f| f.signature.to_string())
            .unwrap_or_default();
        // The issue's budget reached (`budget.onExceeded: ask`) is what the person decides on.
        let budget = budget_spent_micros.map(|spent| {
            format!(
                "the issue's budget is reached: ${:.2} spent of budget.perIssueUsd; retry grants it once more",
                spent as f64 / 1e6
            )
        });
        let last = budget.clone().or_else(|| {
            self.core
                .failure(step)
                .map(|c| format!("{} ({signature}): {}", c.class, c.summary))
        });
        let request =
            decision_file::Request::new(&self.run.session, issue, step.key(), last, &self.run.cfg.file);
        if let Err(e) = decision_file::write_request(&path, &request) {
            self.log(&format!("cannot write {}: {e}", path.display()));
            return Event::DecisionTimedOut;
        }
        self.shell.notifier.send(
            Severity::Warning,
            &format!(
                "decision needed: issue #{issue} step {}{} — answer with `sdlc-runner decide <retry|skip|halt> --config {}`",
                step.key(),
                budget.map(|b| format!(": {b}")).unwrap_or_default(),
                self.run.cfg.file.display()
            ),
        );
        self.look_for_decision()
    }

    /// `LookForDecision` (and the end of `AskDecision`): a person's answer, or `DecisionPending`.
    pub(super) fn look_for_decision(&mut self) -> Event {
        let path = self.run.runner_dir.decision();
        match read_answer(&path) {
            Some(option) => {
                let _ = std::fs::remove_file(&path);
                self.log(&format!("decision: {}", option.name()));
                Event::Decided { option }
            }
            None => Event::DecisionPending,
        }
    }
}
