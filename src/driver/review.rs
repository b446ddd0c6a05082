//! `LookAtReview`: the PR's review read through the forge port, answered with what its
//! reviewers decide. Whether that lets the PR merge, and how long to wait, is the machine's.

use super::*;
use crate::machine::ReviewDecision;

impl Driver {
    /// Reads the review of `issue`'s PR once.
    pub(super) async fn look_at_review(&mut self, issue: u32, look: u32) -> Event {
        self.know_issue(issue).await;
        let Some(branch) = self.issue.branch.clone() else {
            self.say(format!(
                "issue #{issue}: its feature branch cannot be found, so its PR's review cannot be read; check `git branch --list '{issue}-*'` in {}",
                self.cfg.project_path.display()
            ));
            return Event::WorkspaceUnfit { step: Step::Merge };
        };
        let read = branch.clone();
        let answer = self
            .patiently("reading the PR's review", move |w| {
                w.forge.review_state(&read, None)
            })
            .await;
        let state = match answer {
            network::Patient::Done(Ok(state)) => state,
            network::Patient::Done(Err(e)) => {
                self.say(format!(
                    "issue #{issue}: cannot read the review of {branch}'s PR: {e}"
                ));
                return Event::WorkspaceUnfit { step: Step::Merge };
            }
            network::Patient::GaveUp(event) | network::Patient::Cancelled(event) => return event,
        };
        let decision = state.decision;
        let said = match decision {
            ReviewDecision::Approved => "approved",
            ReviewDecision::ChangesRequested => "changes requested",
            ReviewDecision::None => "no approval or request for changes",
        };
        self.log(&format!(
            "issue #{issue}: look {look} at the review of {branch}: {said} ({} review(s) and comment(s))",
            state.feedback.len()
        ));
        Event::ReviewLooked { decision }
    }
}
