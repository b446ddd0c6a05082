//! The session-level coordinator of `run --workers N`: pure like the machine (reports in,
//! orders out, no clock: times are passed in), it owns what is global to the workers.
//!
//! - **One issue, one worker.** A worker asks before it starts an issue; an issue another
//!   worker holds, or one escalated in this session, is refused.
//! - **Consecutive escalations** are counted across workers in the order they complete; a merge
//!   anywhere resets the count, and reaching the limit halts every worker.
//! - **The session budget** is the sum of every worker's spend.
//! - **Rate limits and quotas** are the account's, not a worker's: a wait one worker reports
//!   pauses every worker's next dispatch until it ends. Only such waits are reported
//!   ([`wait_pauses_fleet`]): a worker waiting for its own CI, review or person waits alone.
//! - **Money**: calls at once share what the fleet has left ([`Coordinator::share`]).
//! - **The halt is sticky and global**: once any worker halts, or the coordinator halts the
//!   fleet, no worker may dispatch again.
//! - **One merge at a time**: the merge turn goes to one worker; the others queue for it in
//!   the order they asked, so each waits for at most `workers - 1` merges.
//!
//! Beside the coordinator, two pure policies every runner follows around a merge, fleet or
//! not: how long it waits for the merge lease ([`LeaseWait`]), and how a merge that lost a push
//! race is retried ([`Contention`]): as contention on main, not as a failed attempt.
//!
//! The merge train ([`Train`]): ready PRs tested together, up to `max_parallel` trees at once,
//! each as main plus the PRs ahead of it plus itself; the head lands when it passes, a failing
//! one is returned (bisected out of a failing batch) and those behind it are rebuilt.

mod coordinator;
mod merge_policy;
#[cfg(test)]
mod tests;
mod train;
mod vocabulary;

pub use coordinator::*;
pub use merge_policy::*;
pub use train::*;
pub use vocabulary::*;

use crate::machine::State;

/// Whether a worker's wait in `state` (the machine's state as it asks for the wait) is the
/// account's or the environment's, which every worker waits out with it: a backoff for a
/// provider's rate limit, overload, quota or the network, or a wait for GitHub's rate limit
/// or the network before a runner call. A wait for the worker's own CI, its PR's review, a
/// person's decision, the merge turn or the fleet itself is that worker's alone.
pub fn wait_pauses_fleet(state: &State) -> bool {
    matches!(
        state,
        State::BackingOff { .. } | State::WaitingForNetwork { .. }
    )
}
