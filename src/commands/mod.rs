//! One module per subcommand; each returns the process exit code.

pub mod bounds;
pub mod config;
pub mod decide;
pub mod demo;
pub mod diagram;
pub mod replay;
pub mod run;
pub mod status;
