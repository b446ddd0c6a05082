//! GitHub, reached through its CLI `gh`: [`gh`] runs it, for the tracker's calls and the
//! forge's alike; [`version`] says which `gh` will do; [`requests`] how many requests each
//! kind of call makes at most.

pub mod forge;
pub mod gh;
pub mod port;
pub mod requests;
pub mod tracker;
pub mod version;

pub use port::GitHubForge;
pub use tracker::GitHub;
