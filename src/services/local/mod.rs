//! No remote service: issues as JSON files in a directory ([`tracker`]), origin itself as the
//! forge ([`forge`]) with an optional CI command run in a clean worktree ([`ci`]).

pub mod ci;
pub mod forge;
pub mod tracker;
