//! What a run was started with and on, fixed for its whole length, and where it restarts.

use super::RunOptions;
use crate::config::Config;
use crate::machine::{Effect, Event};
use std::path::PathBuf;

/// The run's givens: read by every handler, changed by none (a review round swaps the config
/// for its agent's while it runs).
pub(super) struct RunContext {
    /// The validated config this run was started with.
    pub cfg: Config,
    /// The command-line flags beyond the config.
    pub opts: RunOptions,
    /// The agent binary, resolved on PATH once at startup.
    pub program: PathBuf,
    /// The default branch's name, as the git port found it at startup.
    pub main: String,
    /// Whether the forge is the local one (the runner merges; on GitHub the forge does).
    pub forge_local: bool,
    /// The journal's session id this run records under (continued or new).
    pub session: String,
    /// Where the journal, the lock and the decision file live.
    pub runner_dir: crate::runner_dir::RunnerDir,
}

impl RunContext {
    /// How the tracker and the forge name issues and changes (`#12`, `ENG-12`, `!34`).
    pub fn refs(&self) -> crate::config::IssueRefs {
        crate::config::IssueRefs::of(&self.cfg)
    }
}

/// Where this run begins, used once before the loop.
pub(super) struct Restart {
    /// The restart event (`Start`, or `ModeChanged` when this run's mode differs).
    pub first: Event,
    /// This run continues a session whose runner stopped without ending it (killed, crashed):
    /// git locks its git commands left behind are its own to clear.
    pub recovering: bool,
    /// Side effects of the last recorded batch, to complete before anything else (a crash may
    /// have cut them short; each is idempotent).
    pub redo: Vec<Effect>,
}
