//! The ports: the only way the driver reaches the world. Each trait says what one outside
//! party does for the runner (git, the issue tracker, the forge, the claims on issues, the
//! agent, the notification channels, the clock), with one error type per port whose failures
//! are classified once, at the adapter, into a
//! [`CallFailureKind`](crate::call_failure::CallFailureKind).
//!
//! The production adapters live beside the code they wrap (`git/`, each service's folder
//! under `services/`, `agent/`, `notify/`, [`clock::TokioClock`]) and are put together in the composition root,
//! `crate::wiring`; nothing here names an adapter, so a port is read without them. The
//! in-memory fakes in `fake`, compiled for the crate's own tests only, let tests run the
//! driver in-process, with no git, gh or agent process and no real sleep.

pub mod agent;
pub mod claims;
pub mod clock;
// Test-only: the product ships no fake, so nothing on the run path can pick one.
#[cfg(test)]
pub mod fake;
pub mod forge;
pub mod git;
pub mod notifier;
pub mod tracker;
pub mod world;

pub use agent::AgentPort;
pub use claims::ClaimPort;
pub use clock::Clock;
pub use forge::ForgePort;
pub use git::GitPort;
pub use notifier::NotifierPort;
pub use tracker::TrackerPort;
pub use world::{ClaimStore, Io, World};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, so that the async ports can be called through `dyn`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Everything the driver calls outside itself, one adapter per port.
pub struct Ports {
    /// The project's git repository.
    pub git: Box<dyn GitPort>,
    /// Pull requests and CI.
    pub forge: Box<dyn ForgePort>,
    /// Issues: selection, reads, closing and quarantine.
    pub tracker: Box<dyn TrackerPort>,
    /// Issue claims and the merge lease, shared with the other runners of the tracker; `None`
    /// where none was built (a run without a worker id claims nothing, whatever is here).
    pub claims: Option<ClaimStore>,
    /// The coding agent: one attempt per call.
    pub agent: Box<dyn AgentPort>,
    /// Chat, webhook and command channels.
    pub notifier: Box<dyn NotifierPort>,
    /// "Now" and every wait.
    pub clock: Arc<dyn Clock>,
}
