//! Manual approval: the decision file, the notification, and waiting for `sdlc-runner decide`.

use super::Driver;
use crate::decision_file::{self, read_answer};
use crate::machine::Event;
use crate::notify::Severity;
use crate::step::Step;
use std::time::Duration;

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
        // How long is the machine's (its limits, journaled with the session); a session begun
        // before the machine kept it waits the config's.
        let wait = match self.core.runner().limits.decision_wait_secs {
            0 => self.cfg.decision_timeout,
            secs => Duration::from_secs(secs),
        };
        let deadline = chrono::TimeDelta::from_std(wait)
            .ok()
            .and_then(|d| self.clock.now().checked_add_signed(d))
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
        loop {
            if let Some(option) = read_answer(&path) {
                let _ = std::fs::remove_file(&path);
                self.log(&format!("decision: {}", option.name()));
                return Event::Decided { option };
            }
            if self.clock.now() >= deadline {
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
