//! The project's working tree between steps: the machine's `AutoCommit` (what an agent left
//! uncommitted) and `CheckoutMain` (back on the default branch). Neither answers: a failure is
//! narrated, and the next step's checks see the tree as it is.

use super::context::Context;
use crate::machine::CommitKind;
use crate::narration as say;
use crate::ports::World;

/// `AutoCommit`: commits what the tree holds under the kind's message; what it narrates.
pub(super) async fn auto_commit(cx: Context<'_>, kind: CommitKind) -> Vec<String> {
    let io = &cx.shell.io;
    let message = kind.message();
    match io.call(move |w| w.git.auto_commit(&message)).await {
        Ok(true) => vec![say::committed(&kind.message())],
        Ok(false) => Vec::new(),
        Err(e) => vec![say::auto_commit_skipped(&e)],
    }
}

/// `CheckoutMain`: checks the default branch (`main`) out; what it narrates.
pub(super) async fn checkout_main(cx: Context<'_>) -> Vec<String> {
    let (main, io) = (&cx.run.main, &cx.shell.io);
    // A post-checkout hook that hangs must not hold off a signal.
    let checkout = |w: &World| crate::process::cancellable(|| w.git.checkout_main());
    match io.call(checkout).await {
        Ok(()) => Vec::new(),
        Err(e) => vec![say::cannot_check_out(main, &e)],
    }
}
