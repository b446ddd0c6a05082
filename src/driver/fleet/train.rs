//! The fleet's merge train as the workers share it: journaled whenever it changes
//! (`journal/train.rs`), started again from its journal when the fleet runs again, and shown
//! to `status` (`train.json`).

use super::{locked, Shared};
use crate::journal::TrainJournal;
use crate::live_status::{TrainCar, TrainSnapshot};
use sdlc_machine::fleet::{Coordinator, Report, Verdict, Worker};

impl Shared {
    /// Journals the train when it changed (`c`, locked by the caller, then the cars and the
    /// bases): before any order of the change is carried out. A write that fails costs CI
    /// runs after a kill, never a tree untested: it is said, and the fleet goes on.
    pub(super) fn journal(&self, c: &Coordinator) {
        let Some(record) = c.train_record() else {
            return;
        };
        let cars = locked(&self.cars).clone();
        let now = TrainJournal {
            record,
            cars,
            bases: locked(&self.bases).clone(),
        };
        let mut last = locked(&self.journaled);
        if last.as_ref() == Some(&now) {
            return;
        }
        let path = crate::journal::train_journal(&self.runner_dir);
        if let Err(e) = now.write(&path) {
            say!("{}", crate::narration::train_not_journaled(&path, &e));
        }
        *last = Some(now);
    }

    /// The fleet starts: each worker that resumes an issue holds it again, and the train
    /// starts from its journal (`journal`) with the cars such a worker holds. What it says.
    pub(super) fn resume(
        &self,
        journal: Option<TrainJournal>,
        resumed: &[(Worker, u32)],
    ) -> Option<String> {
        let mut c = locked(&self.coordinator);
        for (worker, issue) in resumed.iter().copied() {
            c.handle(Report::WantsIssue { worker, issue });
        }
        let journal = journal?;
        let held = |issue| resumed.iter().any(|(_, i)| *i == issue);
        if !c.restore_train(journal.record, held) {
            return Some(crate::narration::train_not_restored(
                &crate::journal::train_journal(&self.runner_dir),
            ));
        }
        *locked(&self.cars) = journal.cars;
        *locked(&self.bases) = journal.bases;
        self.journal(&c);
        let cars: Vec<u32> = c.train().map(|t| t.cars().map(|(car, _)| car).collect())?;
        let settled: Vec<u32> = c.settled().collect();
        Some(crate::narration::train_restored(&cars, &settled))
    }
}

impl Shared {
    /// The coordinator's train, as `status` shows it; cars whose issue no worker holds any
    /// more are forgotten by the waiting times.
    pub(super) fn snapshot(&self, c: &Coordinator) -> Option<TrainSnapshot> {
        let train = c.train()?;
        let mut joined = locked(&self.joined);
        joined.retain(|issue, _| c.holder(*issue).is_some());
        let cars = train
            .cars()
            .enumerate()
            .map(|(position, (issue, verdict))| TrainCar {
                issue,
                position,
                tree: train.tree_for(issue).map(|t| t.cars).unwrap_or_default(),
                verdict: match verdict {
                    Verdict::Untested => "untested",
                    Verdict::Testing(_) => "testing",
                    Verdict::Passed(_) => "passed",
                    Verdict::Failed(_) => "failed",
                }
                .to_string(),
                joined_at: joined.get(&issue).copied(),
                waiting_seconds: None,
            })
            .collect();
        Some(TrainSnapshot {
            pid: std::process::id(),
            cars,
            settled: c.settled().collect(),
            runs: train.runs(),
        })
    }
}
