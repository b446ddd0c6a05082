//! The services the runner talks to, one folder each. `github/` holds the one way the
//! runner runs `gh`.

pub mod github;
