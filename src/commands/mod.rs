//! One module per subcommand; each returns the process exit code.

pub mod diagram;
