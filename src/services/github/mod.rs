//! GitHub, reached through its CLI `gh`: [`gh`] runs it, for the tracker's calls and the
//! forge's alike; [`version`] says which `gh` will do.

pub mod forge;
pub mod gh;
pub mod port;
pub mod tracker;
pub mod version;

pub use port::GitHubForge;
pub use tracker::GitHub;
