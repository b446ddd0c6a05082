//! Manual approval: the decision file, the notification, and waiting for `sdlc-runner decide`.

use super::Driver;
use crate::decision_file::{self, read_answer};
use crate::machine::Event;
use crate::notify::Severity;
use crate::step::Step;
use std::time::{Duration, Instant};

impl Driver {
    pub(super) async fn ask_decision(&mut self, step: Step, issue: u32) -> Event {
        let path = self.runner_dir.decision();
        let signature = self
            .core
            .runner()
            .last_failure
            .filter(|f| f.step == step)
            .map(|f| f.signature.to_string())
            .unwrap_or_default();
        let last = self
            .core
            .failure(step)
            .map(|c| format!("{} ({signature}): {}", c.class, c.summary));
        let request =
            decision_file::Request::new(&self.session, issue, step.key(), last, &self.cfg.file);
        if let Err(e) = decision_file::write_request(&path, &request) {
            self.log(&format!("cannot write {}: {e}", path.display()));
            return Event::DecisionTimedOut;
        }
        self.notifier.send(
            Severity::Warning,
            &format!(
                "decision needed: issue #{issue} step {} — answer with `sdlc-runner decide <retry|skip|halt> --config {}`",
                step.key(),
                self.cfg.file.display()
            ),
        );
        let deadline = Instant::now() + self.cfg.decision_timeout;
        loop {
            if let Some(option) = read_answer(&path) {
                let _ = std::fs::remove_file(&path);
                self.log(&format!("decision: {}", option.name()));
                return Event::Decided { option };
            }
            if Instant::now() >= deadline {
                let _ = std::fs::remove_file(&path);
                return Event::DecisionTimedOut;
            }
            tokio::select! {
                _ = self.clock.sleep(Duration::from_millis(250)) => {}
                _ = self.shutdown.wait() => return self.shutdown.event(),
            }
        }
    }
}
