//! sdlc-runner: a sans-IO state machine that drives an AI coding agent through the software
//! lifecycle, and the tokio shell that performs its effects. See ARCHITECTURE.md.

// The pure core is its own crate (crates/sdlc-machine); its modules keep their paths here.
pub use sdlc_machine::{failure, machine, step};

#[macro_use]
pub mod console;
pub mod agent;
pub mod agents;
pub mod builtin;
pub mod call_failure;
pub mod claims;
pub mod classify;
pub mod cleanup;
pub mod cli;
pub mod commands;
pub mod config;
pub mod decision_file;
pub mod diagram;
pub mod driver;
pub mod failpoint;
pub mod fake_agent;
pub mod files;
pub mod forge;
pub mod http;
pub mod journal;
pub mod live_status;
pub mod logging;
pub mod logs;
pub mod network;
pub mod notify;
pub mod ports;
pub mod probe;
pub mod process;
pub mod progress;
pub mod redact;
pub mod repo;
pub mod runner_dir;
pub mod runtime;
pub mod safe_fs;
pub mod sanitize;
pub mod stats;
pub mod stream;
pub mod tracker;
