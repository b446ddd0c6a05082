//! Everything that crosses the boundary of the pure core: limits in, events in, effects out.
//! Effects and events are plain `Copy` data so that a steady-state `handle` never allocates.

mod commit;
mod effect;
mod event;
mod limits;
mod reasons;

pub use commit::*;
pub use effect::*;
pub use event::*;
pub use limits::*;
pub use reasons::*;
