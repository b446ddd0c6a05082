//! Facts the runner owns, checked before a step and before a post-step check so that their
//! failures are reported as the environment's and never blamed on an issue: git lock files a
//! dead process left behind, changes in the tree that are no cycle's work, and a person's own
//! decision about the issue (closed, relabelled, marked escalated).

use super::{network, Driver};
use crate::machine::{Event, Mode};
use crate::step::Step;
use std::time::Duration;

/// A git lock file older than this is taken as left behind by a process that died: git holds
/// its locks for milliseconds.
const STALE_LOCK_AGE: Duration = Duration::from_secs(30);

impl Driver {
    /// After a runner died mid-git (killed, a broken pipe): the lock files its git left that
    /// no process holds are removed, so the continued session does not fail on its own
    /// leftovers. Anything else stays for the workspace check to name.
    pub(super) async fn clear_locks_of_a_killed_runner(&mut self) {
        for lock in self.io.call(|w| w.git.locks_of_a_dead_git()).await {
            match std::fs::remove_file(&lock) {
                Ok(()) => self.log(&format!(
                    "removed {}, left by the previous runner's git (no process holds it)",
                    lock.display()
                )),
                Err(e) => self.log(&format!("warning: cannot remove {}: {e}", lock.display())),
            }
        }
    }

    /// `Some(WorkspaceUnfit)` when a fact the runner owns is wrong. `with_tree`: also the
    /// tree, which must hold nothing but the runner's own files before a cycle's first step.
    pub(super) async fn workspace_check(&mut self, step: Step, with_tree: bool) -> Option<Event> {
        let locks = self.io.call(|w| w.git.stale_locks(STALE_LOCK_AGE)).await;
        if let Some(lock) = locks.first() {
            let said = format!(
                "the git lock file {} is left over (older than {} s): git commands in {} fail while it exists.\nfix: make sure no git process is running in the project, then remove it: rm {}",
                lock.display(),
                STALE_LOCK_AGE.as_secs(),
                self.cfg.project_path.display(),
                lock.display()
            );
            self.log(&format!("workspace: {}", said.replace('\n', "; ")));
            self.say(said);
            return Some(Event::WorkspaceUnfit { step });
        }
        if !with_tree {
            return None;
        }
        match self.io.call(|w| w.git.foreign_changes()).await {
            Ok(changes) if !changes.is_empty() => {
                let shown: Vec<&str> = changes.iter().take(10).map(String::as_str).collect();
                let more = changes.len().saturating_sub(shown.len());
                let said = format!(
                    "the working tree of {} has changes that are no issue's work before {} (the runner never works over them):\n{}{}\nfix: commit, stash or remove them (git stash --include-untracked), or add the paths to .git/info/exclude if they belong to a tool",
                    self.cfg.project_path.display(),
                    step.key(),
                    shown.join("\n"),
                    if more > 0 { format!("\n… and {more} more") } else { String::new() }
                );
                self.log(&format!("workspace: {}", said.replace('\n', "; ")));
                self.say(said);
                Some(Event::WorkspaceUnfit { step })
            }
            _ => None,
        }
    }

    /// Reads the issue from the tracker: `Ok(Some(IssueWithdrawn))` when a person closed it,
    /// took its automatable label away (not under `--issue`, which names it explicitly) or
    /// marked it escalated; `Err(event)` when the tracker could not be asked for the network.
    /// Any other failure to read leaves the decision to the step's own checks.
    pub(super) async fn withdrawn_by_a_person(&mut self) -> Result<Option<Event>, Event> {
        let Some(issue) = self.core.runner().issue else {
            return Ok(None);
        };
        let what = format!("reading issue #{issue} from the tracker");
        let read = self.patiently(&what, move |w| {
            w.tracker
                .get(issue)
                .map(|found| (w.tracker.selectable(&found), found))
        });
        let read = match read.await {
            network::Patient::Done(read) => read,
            network::Patient::GaveUp(event) | network::Patient::Cancelled(event) => {
                return Err(event)
            }
        };
        let (selectable, found) = match read {
            Ok(read) => read,
            Err(e) => {
                self.log(&format!("warning: {what}: {e}"));
                return Ok(None);
            }
        };
        let explicit = matches!(self.core.runner().mode, Mode::SingleIssue(_));
        let why = if !found.state_open {
            "closed"
        } else if found.escalated {
            "marked escalated"
        } else if !explicit && !selectable {
            "no longer labelled for automation"
        } else {
            return Ok(None);
        };
        self.say(format!(
            "issue #{issue} was {why} by a person during the cycle"
        ));
        self.log(&format!(
            "issue #{issue} was {why} in the tracker while the runner worked on it: the cycle is dropped (branch kept), nothing is merged or written to the issue"
        ));
        Ok(Some(Event::IssueWithdrawn { issue }))
    }
}
