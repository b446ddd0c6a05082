//! The rule that no child process blocks async code, checked where every captured child
//! starts. A thread that drives async code (a tokio runtime's, or one inside its context) may
//! not wait for a child: it would freeze the timers, the signal task and every other task of
//! that runtime for as long as the child (a hanging hook, a dead network) takes. The driver's
//! calls reach children through `ports::Io`, which runs them on the blocking pool marked
//! [`off_runtime`]; startup runs before the runtime drives anything, outside its context.
//!
//! Debug builds (every test, and the binary the end-to-end tests run) panic at a child
//! started against the rule, naming it; release builds do not pay for the check.

use std::cell::Cell;

thread_local! {
    static OFF_RUNTIME: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` as a call made off the runtime (on the blocking pool): it may wait for children.
pub fn off_runtime<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            OFF_RUNTIME.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(OFF_RUNTIME.with(|c| c.replace(true)));
    f()
}

/// Whether this thread may wait for a child: it is marked off the runtime, or no runtime's
/// context is entered on it.
pub fn may_block() -> bool {
    OFF_RUNTIME.with(Cell::get) || tokio::runtime::Handle::try_current().is_err()
}

/// Panics (debug builds) when `program` is about to be run on a thread that drives async code.
pub(super) fn check(program: &str, args: &str) {
    debug_assert!(
        may_block(),
        "`{program} {args}` would block async code: make the call through ports::Io (or before the runtime starts)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_runtime_thread_outside_a_marked_call_may_not_block() {
        assert!(may_block(), "a plain thread may block");
        let rt = crate::runtime::build(None).expect("runtime");
        rt.block_on(async {
            assert!(!may_block(), "async code may not block");
            assert!(off_runtime(may_block), "a marked call may");
            assert!(!may_block(), "the mark ends with the call");
            let pooled = tokio::task::spawn_blocking(|| off_runtime(may_block)).await;
            assert!(pooled.expect("pool"));
        });
    }
}
