//! The fleet's merge train as the workers share it: journaled whenever it changes
//! (`journal/train.rs`), started again from its journal when the fleet runs again, and shown
//! to `status` (`train.json`).

use super::{locked, Shared};
use crate::journal::TrainJournal;
use crate::live_status::{TrainCar, TrainSnapshot};
use sdlc_machine::fleet::{Coordinator, Verdict, Worker};

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
            joined: locked(&self.joined).clone(),
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
    pub(crate) fn resume(
        &self,
        journal: Option<TrainJournal>,
        resumed: &[(Worker, u32)],
    ) -> Option<String> {
        let mut c = locked(&self.coordinator);
        for (worker, issue) in resumed.iter().copied() {
            c.resume(worker, issue);
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
        // Each PR still in the train has waited since it first asked, not since the restart.
        *locked(&self.joined) = journal.joined;
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

#[cfg(test)]
mod tests {
    use super::super::{locked, Link, Shared};
    use crate::journal::{train_journal, TrainJournal};
    use sdlc_machine::fleet::{Coordinator, FleetLimits, Report, TrainLimits};
    use std::path::Path;
    use std::sync::Arc;

    fn shared(dir: &Path) -> Shared {
        Shared::new(
            Coordinator::new(FleetLimits {
                workers: 2,
                max_consecutive_escalations: 3,
                session_budget_micros: None,
                day_budget_left_micros: None,
                session_spent_before_micros: 0,
                train: Some(TrainLimits {
                    max_parallel: 1,
                    max_length: 4,
                    batch: 1,
                }),
                at_work: None,
            }),
            dir.to_path_buf(),
        )
    }

    /// Polls `news` once: whether it resolved.
    async fn woken(news: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>) -> bool {
        use std::future::Future;
        let mut news = news;
        std::future::poll_fn(|cx| std::task::Poll::Ready(news.as_mut().poll(cx).is_ready())).await
    }

    #[tokio::test]
    async fn an_ask_for_the_turn_wakes_no_paused_worker_and_a_merge_that_ended_wakes_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let shared = Arc::new(shared(dir.path()));
        let other = Link {
            shared: shared.clone(),
            worker: 1,
        };
        other.report(Report::WantsIssue {
            worker: 1,
            issue: 8,
        });
        let news = shared.turn_news.notified();
        tokio::pin!(news);
        news.as_mut().enable();
        // Were an ask news, every paused worker woken by it would ask and wake the others.
        other.ask(Report::WantsMerge { worker: 1 });
        assert!(!woken(news.as_mut()).await, "an ask woke a paused worker");
        other.ask(Report::MergeDone { worker: 1 });
        assert!(woken(news.as_mut()).await, "a merge that ended is news");
    }

    #[test]
    fn a_pr_waiting_in_the_train_keeps_the_time_it_joined_across_a_restart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let link = Link {
            shared: Arc::new(shared(dir.path())),
            worker: 0,
        };
        assert_eq!(
            link.report(Report::WantsIssue {
                worker: 0,
                issue: 7
            }),
            Some(true)
        );
        let then = chrono::DateTime::from_timestamp(1_000_000, 0).expect("a time");
        link.board(7, "abc".to_string(), "Merge issue #7: x".to_string(), then);
        link.ask(Report::WantsMerge { worker: 0 });
        // The fleet is killed; run again, it starts from the train's journal.
        let journal = TrainJournal::read(&train_journal(dir.path()))
            .expect("reads")
            .expect("journaled");
        let again = shared(dir.path());
        assert!(again.resume(Some(journal), &[(0, 7)]).is_some());
        let c = locked(&again.coordinator);
        let shown = again.snapshot(&c).expect("a train");
        let joined: Vec<_> = shown
            .cars
            .iter()
            .map(|car| (car.issue, car.joined_at))
            .collect();
        assert_eq!(joined, vec![(7, Some(then))], "{shown:?}");
    }
}
