//! One module per subcommand; each returns the process exit code.

pub mod bounds;
pub mod config;
pub mod diagram;
