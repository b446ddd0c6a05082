//! sdlc-runner: a sans-IO state machine that drives an AI coding agent through the software
//! lifecycle, and the tokio shell that performs its effects. See ARCHITECTURE.md.

pub mod failure;
pub mod machine;
pub mod step;
pub mod diagram;
pub mod cli;
pub mod commands;
pub mod stream;
pub mod classify;
