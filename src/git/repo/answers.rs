//! Answers to git queries that read refs (`symbolic-ref`, `for-each-ref`, `rev-parse`,
//! `merge-base`, `log`, `rev-list`, `remote`), kept for the moment in which nothing can have
//! changed them: the runner's probes around one step ask the same few questions several
//! times in a row, and each answer is a git spawn (about a millisecond).
//!
//! A command that prints a fact on the side may leave it here as the answer to the query that
//! asks it ([`learn`]): `git status --branch` tells the checked-out branch. A fetch of origin
//! is kept for such a moment too ([`fetch_once`]), under a stricter rule, since nothing on
//! disk shows what origin holds.
//!
//! An answer is forgotten as soon as this process starts any other child (a git command that
//! is not such a query, the agent, a CI command, `gh`: anything that may move a ref; a git
//! that only reads the tree or the index, [`moves_no_ref`], is no such child), as soon
//! as the files git keeps refs in look different ([`RefStamp`]: HEAD, packed-refs and the
//! ref directories, whose times change with every ref written in them), and in any case after
//! [`FRESH_FOR`], so that a person acting on the clone in a way the stamp cannot see (a branch
//! in a nested ref directory) is seen no later than if the question had been asked that much
//! earlier.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::process::children;

/// How long an answer is reused at most.
pub const FRESH_FOR: Duration = Duration::from_millis(500);

type Key = (PathBuf, Vec<String>);

/// What the files holding refs looked like: (path, inode, size, modification time in ns) of
/// each that exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefStamp(Vec<(u64, u64, i128)>);

impl RefStamp {
    /// The stamp of a clone whose own git directory is `git_dir` (a linked work tree's keeps
    /// its HEAD there) and whose shared refs live in `common_dir`.
    pub fn of(git_dir: &Path, common_dir: &Path) -> RefStamp {
        use std::os::unix::fs::MetadataExt;
        let paths = [
            git_dir.join("HEAD"),
            common_dir.join("packed-refs"),
            common_dir.join("refs/heads"),
            common_dir.join("refs/remotes/origin"),
            common_dir.join("refs/tags"),
        ];
        RefStamp(
            paths
                .iter()
                .map(|p| match std::fs::metadata(p) {
                    Ok(m) => (
                        m.ino(),
                        m.size(),
                        i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
                    ),
                    Err(_) => (0, 0, 0),
                })
                .collect(),
        )
    }
}

struct Answer {
    epoch: u64,
    at: Instant,
    stamp: RefStamp,
    output: Output,
}

static ANSWERS: Mutex<Option<HashMap<Key, Answer>>> = Mutex::new(None);

/// Whether `args` only read refs (and so may be answered again from memory).
pub fn is_query(args: &[&str]) -> bool {
    matches!(
        args.first().copied(),
        Some("symbolic-ref" | "for-each-ref" | "rev-parse" | "merge-base" | "log" | "rev-list")
    ) || args == ["remote"]
}

/// Whether `args` read the work tree or the index without writing any ref (`status`, `diff`,
/// `ls-files`, `show`): not remembered, since files change under them unseen, but starting
/// one forgets no answer. (`status` may refresh the index's stat data; refs stay as they are.)
pub fn moves_no_ref(args: &[&str]) -> bool {
    matches!(
        args.first().copied(),
        Some("status" | "diff" | "ls-files" | "show")
    )
}

/// Runs `run` (the start of a git that moves no ref, see [`moves_no_ref`]) without
/// forgetting the answers kept.
pub fn keeping_answers<T>(run: impl FnOnce() -> T) -> T {
    children::quietly(run)
}

/// The moment an answer is read in: the epoch and what the ref files looked like at its
/// start.
pub struct Moment {
    epoch: u64,
    stamp: RefStamp,
}

impl Moment {
    /// Now, with the ref files looking like `stamp`.
    pub fn now(stamp: RefStamp) -> Moment {
        Moment {
            epoch: children::epoch(),
            stamp,
        }
    }
}

fn key(dir: &Path, args: &[&str]) -> Key {
    (
        dir.to_path_buf(),
        args.iter().map(|a| a.to_string()).collect(),
    )
}

/// The kept answer to `git args` in `dir` when it is still valid at `now`, without asking.
pub fn recall(dir: &Path, args: &[&str], now: &Moment) -> Option<Output> {
    let answers = lock();
    let known = answers.as_ref()?.get(&key(dir, args))?;
    (known.epoch == now.epoch && known.at.elapsed() < FRESH_FOR && known.stamp == now.stamp)
        .then(|| known.output.clone())
}

/// Keeps `output` as the answer to `git args` in `dir`, read at `since` (by that command, or
/// on the side by another that printed the same fact, as `git status --branch` prints the
/// checked-out branch), unless a child started by another thread meanwhile or anyone writing
/// a ref (the files look like `stamp_now` no more like `since`) may have changed it.
pub fn learn(dir: &Path, args: &[&str], output: &Output, since: Moment, stamp_now: &RefStamp) {
    if children::epoch() != since.epoch || *stamp_now != since.stamp {
        return;
    }
    let mut answers = lock();
    let answers = answers.get_or_insert_with(HashMap::new);
    answers.retain(|_, a| a.epoch == since.epoch);
    answers.insert(
        key(dir, args),
        Answer {
            epoch: since.epoch,
            at: Instant::now(),
            stamp: since.stamp,
            output: output.clone(),
        },
    );
}

/// The answer to `git args` in `dir`, from memory when still valid, else from `ask` (which
/// runs the git), remembered when it came back. `stamp` tells what the ref files look like.
pub fn answer<E>(
    dir: &Path,
    args: &[&str],
    stamp: impl Fn() -> RefStamp,
    ask: impl FnOnce() -> Result<Output, E>,
) -> Result<Output, E> {
    let now = Moment::now(stamp());
    if let Some(known) = recall(dir, args, &now) {
        return Ok(known);
    }
    let output = keeping_answers(ask)?;
    learn(dir, args, &output, now, &stamp());
    Ok(output)
}

/// A fetch of origin into one clone: the epoch it ended in, when it started and what the
/// ref files looked like after it.
struct Fetched {
    epoch: u64,
    at: Instant,
    stamp: RefStamp,
}

static FETCHES: Mutex<Option<HashMap<PathBuf, Fetched>>> = Mutex::new(None);

/// Runs `fetch` (a fetch of origin into the clone at `dir`) unless one ended a moment ago
/// that is still as good as a new one: the checks around a step each fetch before they look,
/// several within a few milliseconds, and each fetch is a round trip to the forge (four
/// processes and about 6 ms of CPU even against a local origin).
///
/// A fetch is as good as a new one while this process has started no child that may change
/// something and answered no service request that may have written (the epoch is the same),
/// no such child was running when that fetch began (so none ran at any time since), the
/// clone's ref files look as they did after it, and [`FRESH_FOR`] has not passed: then only someone outside this
/// process can have pushed meanwhile, and what the skipped fetch would have seen of that is
/// what a fetch at most that much earlier sees. A fetch that overlapped another thread's
/// child or request is not kept, so a worker told in-process that another one pushed always
/// fetches what it pushed.
pub fn fetch_once<E>(
    dir: &Path,
    stamp: impl Fn() -> RefStamp,
    fetch: impl FnOnce() -> Result<(), E>,
) -> Result<(), E> {
    let this_process = Process {
        epoch: &children::epoch,
        alone: &|| !crate::process::reaper::changing_child_running(),
        fetches: &FETCHES,
    };
    this_process.fetch_once(dir, stamp, fetch)
}

/// What [`fetch_once`] reads of a process, apart so that its tests can be its process.
struct Process<'a> {
    /// The epoch ([`children::epoch`]).
    epoch: &'a dyn Fn() -> u64,
    /// No child that may change something runs.
    alone: &'a dyn Fn() -> bool,
    fetches: &'a Mutex<Option<HashMap<PathBuf, Fetched>>>,
}

impl Process<'_> {
    fn fetch_once<E>(
        &self,
        dir: &Path,
        stamp: impl Fn() -> RefStamp,
        fetch: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(known) = locked(self.fetches).as_ref().and_then(|f| f.get(dir)) {
            if known.epoch == (self.epoch)()
                && known.at.elapsed() < FRESH_FOR
                && known.stamp == stamp()
            {
                return Ok(());
            }
        }
        // In this order: a child is registered before its start ends the epoch, so one
        // started by another thread is either running at `alone` or started after `before`.
        let (before, at) = ((self.epoch)(), Instant::now());
        let alone = (self.alone)();
        fetch()?;
        let after = (self.epoch)();
        // The fetch's own start is the one child of the epoch's step from `before` to `after`.
        if alone && after == before + 1 {
            let mut fetches = locked(self.fetches);
            let fetches = fetches.get_or_insert_with(HashMap::new);
            fetches.retain(|_, f| f.epoch == after);
            let stamp = stamp();
            fetches.insert(
                dir.to_path_buf(),
                Fetched {
                    epoch: after,
                    at,
                    stamp,
                },
            );
        }
        Ok(())
    }
}

fn lock() -> std::sync::MutexGuard<'static, Option<HashMap<Key, Answer>>> {
    locked(&ANSWERS)
}

fn locked<T>(map: &Mutex<Option<T>>) -> std::sync::MutexGuard<'_, Option<T>> {
    // A panic while holding the map leaves nothing half-written that matters: start afresh.
    map.lock().unwrap_or_else(|poisoned| {
        let mut guard = poisoned.into_inner();
        *guard = None;
        guard
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::children::child_started;
    use std::cell::Cell;
    use std::os::unix::process::ExitStatusExt;

    fn out(text: &str) -> Output {
        Output {
            status: std::process::ExitStatus::from_raw(0),
            stdout: text.as_bytes().to_vec(),
            stderr: Vec::new(),
        }
    }

    fn ask_counting<'a>(
        count: &'a Cell<u32>,
        text: &'a str,
    ) -> impl FnOnce() -> Result<Output, ()> + 'a {
        move || {
            count.set(count.get() + 1);
            Ok(out(text))
        }
    }

    #[test]
    fn a_query_asked_twice_runs_once_until_a_child_starts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let asked = Cell::new(0);
        let args = ["symbolic-ref", "--quiet", "--short", "HEAD"];
        let first = answer(
            dir.path(),
            &args,
            || RefStamp::of(dir.path(), dir.path()),
            ask_counting(&asked, "main"),
        )
        .expect("answer");
        let again = answer(
            dir.path(),
            &args,
            || RefStamp::of(dir.path(), dir.path()),
            ask_counting(&asked, "other"),
        )
        .expect("answer");
        // Other threads' tests may start children in between; then the second is asked too,
        // and what matters is that a remembered answer is never one from before a child.
        if asked.get() == 1 {
            assert_eq!(again.stdout, first.stdout);
        }
        child_started();
        let after = answer(
            dir.path(),
            &args,
            || RefStamp::of(dir.path(), dir.path()),
            ask_counting(&asked, "feature"),
        )
        .expect("answer");
        assert_eq!(after.stdout, b"feature", "a child may have moved HEAD");
    }

    #[test]
    fn an_answer_goes_stale_with_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let asked = Cell::new(0);
        let args = ["for-each-ref", "refs/heads/"];
        answer(
            dir.path(),
            &args,
            || RefStamp::of(dir.path(), dir.path()),
            ask_counting(&asked, "a"),
        )
        .expect("answer");
        std::thread::sleep(FRESH_FOR + Duration::from_millis(20));
        let later = answer(
            dir.path(),
            &args,
            || RefStamp::of(dir.path(), dir.path()),
            ask_counting(&asked, "b"),
        )
        .expect("answer");
        assert_eq!(later.stdout, b"b");
        assert_eq!(asked.get(), 2);
    }

    #[test]
    fn a_ref_written_by_anyone_is_seen_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("refs/heads")).expect("refs");
        let asked = Cell::new(0);
        let args = ["rev-parse", "--verify", "--quiet", "refs/heads/7-login"];
        let stamp = || RefStamp::of(dir.path(), dir.path());
        answer(dir.path(), &args, stamp, ask_counting(&asked, "")).expect("answer");
        // What `git branch` from another process does: a new file in refs/heads.
        std::fs::write(dir.path().join("refs/heads/7-login"), "0123\n").expect("ref");
        let after = answer(dir.path(), &args, stamp, ask_counting(&asked, "0123")).expect("answer");
        assert_eq!(after.stdout, b"0123");
        assert_eq!(asked.get(), 2);
    }

    #[test]
    fn only_ref_reads_are_queries() {
        assert!(is_query(&["rev-parse", "--verify", "HEAD"]));
        assert!(is_query(&["remote"]));
        assert!(!is_query(&["remote", "add", "origin", "x"]));
        for mutating in [
            "fetch", "push", "checkout", "commit", "reset", "merge", "status",
        ] {
            assert!(!is_query(&[mutating]), "{mutating} is not a query");
        }
    }

    /// A process for `Process::fetch_once` whose children are counted by the test alone
    /// (the real one is shared with every other test of this binary).
    struct Fake {
        epoch: Cell<u64>,
        running: Cell<bool>,
        fetches: Mutex<Option<HashMap<PathBuf, Fetched>>>,
        fetched: Cell<u32>,
    }

    impl Fake {
        fn new() -> Fake {
            Fake {
                epoch: Cell::new(0),
                running: Cell::new(false),
                fetches: Mutex::new(None),
                fetched: Cell::new(0),
            }
        }

        fn child_started(&self) {
            self.epoch.set(self.epoch.get() + 1);
        }

        /// A fetch as `Repo::fetch` asks for one; `during` happens while its git runs.
        fn fetch(&self, dir: &Path, during: impl FnOnce()) {
            let epoch = || self.epoch.get();
            let alone = || !self.running.get();
            let process = Process {
                epoch: &epoch,
                alone: &alone,
                fetches: &self.fetches,
            };
            let stamp = || RefStamp::of(dir, dir);
            let fetch = || {
                self.child_started();
                during();
                self.fetched.set(self.fetched.get() + 1);
                Ok::<(), ()>(())
            };
            process.fetch_once(dir, stamp, fetch).expect("fetch");
        }

        /// How many of the two fetches around `between` ran.
        fn twice(&self, dir: &Path, between: impl FnOnce()) -> u32 {
            self.child_started();
            let before = self.fetched.get();
            self.fetch(dir, || {});
            between();
            self.fetch(dir, || {});
            self.fetched.get() - before
        }
    }

    #[test]
    fn a_fetch_right_after_a_fetch_is_skipped_until_anything_could_have_moved_origin() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = Fake::new();
        assert_eq!(
            fake.twice(dir.path(), || {}),
            1,
            "nothing in between: one fetch"
        );
        assert_eq!(fake.twice(dir.path(), || fake.child_started()), 2);
        // What `children::service_written` does: a merge through a forge's API.
        assert_eq!(fake.twice(dir.path(), || fake.child_started()), 2);
        assert_eq!(
            fake.twice(dir.path(), || std::thread::sleep(
                FRESH_FOR + Duration::from_millis(20)
            )),
            2,
            "after FRESH_FOR, origin is fetched again"
        );
        // Someone wrote a ref of the clone (a person's `git push` updates origin's branch).
        std::fs::create_dir_all(dir.path().join("refs/remotes/origin")).expect("refs");
        let write = || std::fs::write(dir.path().join("refs/remotes/origin/main"), "0123\n");
        assert_eq!(fake.twice(dir.path(), || write().expect("ref")), 2);
        assert_eq!(fake.twice(dir.path(), || {}), 1);
    }

    #[test]
    fn a_fetch_that_another_child_overlapped_is_not_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = Fake::new();
        // A child started before the fetch that ends while it runs: it may have pushed after
        // the fetch read origin.
        fake.child_started();
        fake.running.set(true);
        fake.fetch(dir.path(), || fake.running.set(false));
        fake.fetch(dir.path(), || {});
        assert_eq!(fake.fetched.get(), 2);
        // Another thread's child started while the fetch ran.
        fake.child_started();
        fake.fetch(dir.path(), || fake.child_started());
        fake.fetch(dir.path(), || {});
        assert_eq!(fake.fetched.get(), 4);
        assert_eq!(fake.twice(dir.path(), || {}), 1);
    }

    #[test]
    fn a_failed_ask_is_not_remembered() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = ["rev-list", "--count", "HEAD"];
        assert!(answer(
            dir.path(),
            &args,
            || RefStamp::of(dir.path(), dir.path()),
            || Err::<Output, &str>("spawn failed")
        )
        .is_err());
        let asked = Cell::new(0);
        answer(
            dir.path(),
            &args,
            || RefStamp::of(dir.path(), dir.path()),
            ask_counting(&asked, "3"),
        )
        .expect("answer");
        assert_eq!(asked.get(), 1);
    }
}
