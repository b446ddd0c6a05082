//! The two schedules of waits a config may set: the backoff after a transient failure, and
//! the pauses between monitorCI's looks at CI. Each is an initial pause doubling up to a cap,
//! and each checks that its cap is no lower than its first pause.

use super::d;
use super::{count, join, Obj, Walker};
use schemars::JsonSchema;
use serde::Serialize;

config_object! {
/// Exponential backoff for rate limits and overloads: initial, doubling, capped.
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackoffFile =>
/// `backoff`: the exponential wait after a transient failure, `initial_seconds` doubling up
/// to `max_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// Its two keys are described by the object (a doc comment would add to the schema).
#[allow(missing_docs)]
pub struct Backoff {
    #[serde(default = "d::backoff_initial_seconds")]
    #[schemars(range(min = 1, max = 604_800))]
    pub initial_seconds: u32 => u32 = count,
    #[serde(default = "d::backoff_max_seconds")]
    #[schemars(range(min = 1, max = 604_800))]
    pub max_seconds: u32 => u32 = count,
}
}

/// `backoff`: its keys, and a cap no lower than the first wait.
/// (A rule of its own here, beside the object it checks: the rules in `walker/rules.rs` know
/// no declared type.)
pub(super) fn backoff(w: &mut Walker, o: &Obj, key: &str) -> Backoff {
    let backoff = Backoff::member(w, o, key);
    cap_not_below_first(w, o, key, backoff.initial_seconds, backoff.max_seconds);
    backoff
}

/// A schedule's `maxSeconds` below its `initialSeconds` is refused, naming both.
fn cap_not_below_first(w: &mut Walker, o: &Obj, key: &str, initial: u32, max: u32) {
    if max < initial {
        w.err(
            join(&o.path(key), "maxSeconds"),
            format!("{max} is less than {key}.initialSeconds ({initial})"),
        );
    }
}

config_object! {
/// The pauses between monitorCI's looks at CI while it is pending: initial, doubling, capped.
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CiPollFile =>
/// `ciPoll`: the pause before monitorCI looks at CI again while it is pending,
/// `initial_seconds` doubling up to `max_seconds`, all within monitorCI's `timeoutMin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CiPoll {
    /// The first pause before monitorCI looks at pending CI again; each next pause doubles.
    #[serde(default = "d::ci_poll_initial_seconds")]
    #[schemars(range(min = 1, max = 3_600))]
    pub initial_seconds: u32 => u32 = count,
    /// The longest pause between two looks at pending CI.
    #[serde(default = "d::ci_poll_max_seconds")]
    #[schemars(range(min = 1, max = 3_600))]
    pub max_seconds: u32 => u32 = count,
}
}

/// `ciPoll`: its keys, and a cap no lower than the first pause.
pub(super) fn ci_poll(w: &mut Walker, o: &Obj, key: &str) -> CiPoll {
    let poll = CiPoll::member(w, o, key);
    cap_not_below_first(w, o, key, poll.initial_seconds, poll.max_seconds);
    poll
}
