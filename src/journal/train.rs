//! The journal of a fleet's merge train: `<runner dir>/train-journal.json`, the coordinator's
//! train ([`TrainRecord`]: positions, trees, verdicts, the cars settled) with what the workers
//! build its trees from (each car's commit and merge message, each epoch's main), replaced
//! atomically and fsync'd whenever it changes and before the orders of that change are carried
//! out. A fleet run again starts from it (`Coordinator::restore_train`): the order of landing
//! and the verdicts given stand, and only the runs that were under way are tested again. Its
//! loss costs CI runs, never main's greenness: a merge builds the commit main will hold and
//! lands it only with CI's verdict on it.

use sdlc_machine::fleet::TrainRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's name in the project's runner directory.
pub const TRAIN_JOURNAL: &str = "train-journal.json";

/// What the train's journal holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrainJournal {
    /// The coordinator's train.
    pub record: TrainRecord,
    /// Each car's commit CI passed on its branch and its merge's message, by issue.
    pub cars: BTreeMap<u32, (String, String)>,
    /// The main each train epoch's trees are built on, by epoch.
    pub bases: BTreeMap<u32, String>,
    /// When each car's PR asked to merge and joined the train, by issue: its time waiting
    /// outlives a restart. (Journals written before lack it: the cars wait anew.)
    #[serde(default)]
    pub joined: BTreeMap<u32, chrono::DateTime<chrono::Utc>>,
}

/// The train's journal in `runner_dir`.
pub fn train_journal(runner_dir: &Path) -> PathBuf {
    runner_dir.join(TRAIN_JOURNAL)
}

impl TrainJournal {
    /// Reads the journal at `path` (never through a link); `Ok(None)` when there is none.
    pub fn read(path: &Path) -> Result<Option<TrainJournal>, String> {
        let bytes = match crate::safe_fs::read_no_follow(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "{}: cannot read the merge train's journal: {e}; check its permissions",
                    path.display()
                ))
            }
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            format!(
                "{}: the merge train's journal does not read: {e}; remove it to start the train afresh (main stays green: every merge is tested again as the tree main will hold)",
                path.display()
            )
        })
    }

    /// Replaces the journal at `path` with this one (atomically, fsync'd).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        crate::safe_fs::write_atomic(path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sdlc_machine::fleet::{Coordinator, FleetLimits, Report, TrainLimits};

    #[test]
    fn the_trains_journal_reads_back_what_was_written_and_a_damaged_one_is_named() {
        let limits = FleetLimits {
            workers: 2,
            max_consecutive_escalations: 3,
            session_budget_micros: None,
            day_budget_left_micros: None,
            session_spent_before_micros: 0,
            train: Some(TrainLimits {
                max_parallel: 2,
                max_length: 4,
                batch: 1,
            }),
            at_work: None,
        };
        let mut c = Coordinator::new(limits);
        c.handle(Report::WantsIssue {
            worker: 0,
            issue: 7,
        });
        c.handle(Report::WantsMerge { worker: 0 });
        let journal = TrainJournal {
            record: c.train_record().expect("a train"),
            cars: BTreeMap::from([(7, ("abc".to_string(), "Merge issue #7".to_string()))]),
            bases: BTreeMap::from([(0, "def".to_string())]),
            joined: BTreeMap::from([(7, chrono::DateTime::UNIX_EPOCH)]),
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let path = train_journal(dir.path());
        assert_eq!(TrainJournal::read(&path), Ok(None));
        journal.write(&path).expect("written");
        assert_eq!(TrainJournal::read(&path), Ok(Some(journal)));
        // A journal of an earlier version, without the times joined, still reads.
        let mut old: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("written")).expect("JSON");
        old.as_object_mut().expect("an object").remove("joined");
        std::fs::write(&path, old.to_string()).expect("old");
        let read = TrainJournal::read(&path)
            .expect("reads")
            .expect("a journal");
        assert!(read.joined.is_empty(), "{read:?}");
        std::fs::write(&path, b"{").expect("damaged");
        let err = TrainJournal::read(&path).expect_err("damaged");
        assert!(
            err.contains("train-journal.json") && err.contains("remove it"),
            "{err}"
        );
    }
}
