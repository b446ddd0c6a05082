//! The services the runner talks to, one folder each: `github/` holds the one way the runner
//! runs `gh`; `gitlab/` GitLab's API client, tracker and forge; `linear/` Linear's client and
//! tracker. No service names another: what they share (the selection rule, claim notes, the
//! escalation text) is `shared/`, and below them the HTTP client (`api_client/`),
//! `call_failure` and the ports (`tests/it/layering.rs`, `no_service_names_another`).

pub mod github;
pub mod gitlab;
pub mod linear;
pub mod local;
pub(crate) mod shared;
