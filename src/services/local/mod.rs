//! No remote service: issues as JSON files in a directory ([`tracker`]), origin itself as the
//! forge ([`forge`]) with an optional CI command run in a clean worktree ([`ci`]).

pub mod ci;
pub mod claims;
pub mod forge;
pub mod port;
pub mod tracker;

pub use ci::LocalCi;
pub use claims::LocalClaims;
pub use port::LocalForge;
pub use tracker::Local;
