//! sdlc-runner: a sans-IO state machine that drives an AI coding agent through the software
//! lifecycle, and the tokio shell that performs its effects. See ARCHITECTURE.md.
#![warn(missing_docs)]

// The pure core is its own crate (crates/sdlc-machine); its modules keep their paths here.
pub use sdlc_machine::{failure, machine, step};

#[macro_use]
mod console;
pub mod agent;
pub mod api_client;
pub mod artifacts;
pub mod authority;
pub mod call_failure;
mod cleanup;
// clap turns doc comments into help text, so cli's types are documented by their help.
#[allow(missing_docs)]
pub mod cli;
pub mod commands;
pub mod config;
mod decision_file;
mod diagram;
pub mod driver;
pub mod egress;
// The driver on the in-memory ports: in-process tests of the shell's plumbing.
#[cfg(test)]
mod driver_on_ports;
pub mod failpoint;
mod fake_agent;
pub mod forge;
pub mod git;
mod http;
pub mod journal;
mod launch;
mod live_status;
pub mod logging;
pub mod logs;
mod narration;
pub mod notify;
pub mod ports;
mod process;
mod process_bounds;
mod progress;
pub mod prompt;
pub mod redact;
pub mod report;
mod runner_dir;
mod runtime;
mod safe_fs;
mod sanitize;
pub mod services;
pub mod stats;
pub mod steps;
pub mod tracker;
pub mod weakening;
pub mod wiring;
