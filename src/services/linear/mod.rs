//! Linear through its GraphQL API (docs/gitlab.md, "Linear"): [`client`] builds the API
//! client from the config, [`tracker`] works the team's issues (`claims.rs`: the claims kept as
//! their comments).

mod claims;
pub mod client;
mod models;
mod port;
pub mod tracker;

pub use tracker::{Linear, TeamFacts};
