//! Every journal of a project: its own, and the clone of each fleet worker (`run --workers
//! N` keeps one under the runner's directory), for what spans them all: the status page's
//! feed and the day's spend.

use std::path::{Path, PathBuf};

/// Where the journals of a run are: the project's own, and each fleet worker's clone.
#[derive(Debug, Clone)]
pub struct Journals {
    /// The project's journal.
    pub journal: Option<PathBuf>,
    /// Where the fleet's workers keep their clones.
    pub workers_dir: Option<PathBuf>,
}

impl Journals {
    /// Located once, when the server starts (git tells where the runner's directory is): the
    /// server's polls then read files only, and never wait for a child on its runtime.
    pub fn of(project: &Path) -> Journals {
        let dir = crate::runner_dir::RunnerDir::locate(project).ok();
        Journals {
            journal: dir.as_ref().map(|d| d.journal()),
            workers_dir: dir.map(|d| d.dir.join("workers")),
        }
    }

    /// The journals under a runner directory: its own and its fleet workers'.
    pub fn in_dir(dir: &crate::runner_dir::RunnerDir) -> Journals {
        Journals {
            journal: Some(dir.journal()),
            workers_dir: Some(dir.dir.join("workers")),
        }
    }

    /// Every journal's path, the project's first.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.list().into_iter().map(|(_, path)| path).collect()
    }

    /// `(worker, journal)`: `runner` for the project's journal, `w<k>` for each clone's.
    pub fn list(&self) -> Vec<(String, PathBuf)> {
        let mut all = Vec::new();
        if let Some(path) = &self.journal {
            all.push(("runner".to_string(), path.clone()));
        }
        let Some(dir) = &self.workers_dir else {
            return all;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return all;
        };
        let mut workers: Vec<(u32, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let k = e.file_name().to_str()?.strip_prefix('w')?.parse().ok()?;
                Some((k, e.path()))
            })
            .collect();
        workers.sort();
        for (k, clone) in workers {
            // The fleet makes plain clones: each one's git directory is the `.git` inside it,
            // found without asking git (the server polls on its runtime's thread).
            let git_dir = clone.join(".git");
            if git_dir.is_dir() {
                let dir = crate::runner_dir::RunnerDir {
                    dir: git_dir.join(crate::runner_dir::DIR_NAME),
                };
                all.push((format!("w{k}"), dir.journal()));
            }
        }
        all
    }
}
