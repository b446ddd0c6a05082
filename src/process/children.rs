//! How many children this process has started that may have changed something on disk: the
//! epoch a cache of git answers (`git::repo::answers`) is valid in. Every spawn of a
//! `ChildSpec` (the agent's included) ends the epoch, except the spawn of a read-only query run
//! inside [`quietly`]. It lives here, below git, because the process runner counts the spawns.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts the children started that may have changed a ref.
static EPOCH: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set while this thread starts a query's own git, which changes nothing.
    static QUERYING: Cell<bool> = const { Cell::new(false) };
}

/// A child process was started: unless it is a query's own (inside [`quietly`]), the epoch
/// ends.
pub fn child_started() {
    if !is_quiet() {
        EPOCH.fetch_add(1, Ordering::SeqCst);
    }
}

/// A request to a service was answered that may have written where git reads (a forge's API
/// merging a pull request moves origin's main without any child of this process): the epoch
/// ends, as for a child.
pub fn service_written() {
    EPOCH.fetch_add(1, Ordering::SeqCst);
}

/// Whether this thread is starting a query's own git now (inside [`quietly`]).
pub fn is_quiet() -> bool {
    QUERYING.with(Cell::get)
}

/// The current epoch: an answer given in it is valid while it lasts.
pub fn epoch() -> u64 {
    EPOCH.load(Ordering::SeqCst)
}

/// Runs `ask`, whose children this thread starts change no ref (a read-only query's git, or
/// one that reads only the tree or the index); nested calls keep the outer setting.
pub fn quietly<T>(ask: impl FnOnce() -> T) -> T {
    let was = QUERYING.with(|q| q.replace(true));
    let asked = ask();
    QUERYING.with(|q| q.set(was));
    asked
}
