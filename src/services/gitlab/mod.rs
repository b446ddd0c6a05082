//! GitLab through its REST API v4 (docs/gitlab.md): [`client`] builds the one API client from
//! the config, [`tracker`] works the project's issues (`claims.rs`: the claims kept as their notes)
//! and [`forge`] its merge requests and pipelines.

mod access;
mod claims;
pub mod client;
pub mod forge;
pub(crate) mod models;
pub mod port;
pub mod tracker;

pub use forge::GitLabForge;
pub use port::GitLabPort;
pub use tracker::GitLab;
