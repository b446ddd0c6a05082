//! One module per subcommand; each returns the process exit code.

pub mod bounds;
pub mod completions;
pub mod config;
pub mod decide;
pub mod demo;
pub mod diagram;
pub mod doctor;
pub mod init;
pub mod issue;
pub mod man;
pub mod release;
pub mod replay;
pub mod run;
pub mod status;
pub mod watch;

/// Load a config for a command, or print every error (naming file and key) and give the
/// exit code 2 of docs/interfaces.md.
pub fn load_config(path: &std::path::Path) -> Result<crate::config::Config, i32> {
    crate::config::Config::load(path).map_err(|e| {
        for line in e.lines() {
            say!("{line}");
        }
        2
    })
}
