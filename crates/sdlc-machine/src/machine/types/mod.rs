//! Everything that crosses the boundary of the pure core: limits in, events in, effects out.
//! Effects are plain `Copy` data; events too but for a look at a review, which carries what
//! the reviewers wrote.

mod commit;
mod effect;
mod event;
mod limits;
mod notice;
mod reasons;

pub use commit::*;
pub use effect::*;
pub use event::*;
pub use limits::*;
pub use notice::*;
pub use reasons::*;
