//! The services the runner talks to, one folder each, each implementing the tracker, forge and
//! claim ports it serves itself (`port.rs`): `github/` holds the one way the runner runs `gh`;
//! `gitlab/` GitLab's API client, tracker and forge; `linear/` Linear's client and tracker;
//! `local/` the issue files, their claims and the offline forge. No service names another nor
//! a module above it: the claim notes they share are `shared/`, and below them lie what every
//! tracker or forge shares (`tracker/`, `forge/`), the HTTP client (`api_client/`),
//! `call_failure` and the ports; `wiring.rs` alone chooses one (`tests/it/layering.rs`,
//! `the_service_folders_keep_their_layers`).

pub mod github;
pub mod gitlab;
pub mod linear;
pub mod local;
pub(crate) mod shared;
