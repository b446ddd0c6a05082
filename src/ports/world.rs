//! The ports whose calls block (they start git, gh or the tracker's commands, or write the
//! tracker's files), as the driver holds them: behind [`Io`], whose only way in is
//! [`Io::call`], which makes the call on tokio's blocking pool. The driver's async code
//! therefore cannot block its runtime in a child process, whatever a hook or a network does:
//! its timers, its signal task and the other workers of a fleet go on while the call runs.
//!
//! A call keeps its caller's stop scope (`process::Scope`): a call made cancellable or
//! within a step's deadline is stopped on the pool thread exactly as on the caller's.

use super::{ClaimPort, ForgePort, GitPort, TrackerPort};
use std::sync::Arc;

/// The claim store as the world holds it: any [`ClaimPort`].
pub type ClaimStore = Box<dyn ClaimPort>;

/// Every blocking port of one runner.
pub struct World {
    /// The project's git repository.
    pub git: Box<dyn GitPort>,
    /// Pull requests and CI.
    pub forge: Box<dyn ForgePort>,
    /// Issues: selection, reads, closing and quarantine.
    pub tracker: Box<dyn TrackerPort>,
    /// Issue claims and the merge lease, for a runner with a worker id.
    pub claims: Option<ClaimStore>,
}

/// The driver's handle on its [`World`]: calls are made off the async runtime.
#[derive(Clone)]
pub struct Io(Arc<World>);

impl Io {
    /// The handle on `world`.
    pub fn new(world: World) -> Io {
        Io(Arc::new(world))
    }

    /// Makes `call` on the blocking pool, in the caller's stop scope, and waits for it
    /// without blocking the runtime. A panic of the call is the caller's panic.
    pub async fn call<T: Send + 'static>(
        &self,
        call: impl FnOnce(&World) -> T + Send + 'static,
    ) -> T {
        let world = Arc::clone(&self.0);
        let scope = crate::process::Scope::current();
        let run = move || crate::process::off_runtime(|| scope.enter(|| call(&world)));
        match tokio::task::spawn_blocking(run).await {
            Ok(value) => value,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // Only a runtime shutting down cancels a blocking task before it starts, and
                // then nobody awaits this call any more.
                Err(e) => panic!("a port call was cancelled by the runtime's shutdown: {e}"),
            },
        }
    }
}
