//! What a run was started with and on, fixed for its whole length, and where it restarts.

use crate::config::Config;
use crate::machine::{Effect, Event};
use crate::step::Step;
use std::path::PathBuf;

/// The run's givens: read by every handler, changed by none (a review round's agent runs
/// with the round's config, handed to it in its `AgentCall`).
pub(crate) struct RunContext {
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
pub(crate) struct Restart {
    /// The restart event (`Start`, or `ModeChanged` when this run's mode differs).
    pub first: Event,
    /// This run continues a session whose runner stopped without ending it (killed, crashed):
    /// git locks its git commands left behind are its own to clear.
    pub recovering: bool,
    /// Side effects of the last recorded batch, to complete before anything else (a crash may
    /// have cut them short; each is idempotent).
    pub redo: Vec<Effect>,
}

/// Flags of `sdlc-runner run` beyond the config.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--dry-run`: print what would run, change nothing.
    pub dry_run: bool,
    /// `--issue N`: work on this issue only.
    pub issue: Option<u32>,
    /// `--step N`: run this one step only.
    pub step: Option<Step>,
    /// `--discord-channel`: overrides the config's `discordChannelId`.
    pub discord_channel: Option<String>,
    /// `--ack-halt`: the operator has seen the sticky halt; a new session may start.
    pub ack_halt: bool,
    /// This runner's name for issue claims; claims are off without it.
    pub worker_id: Option<String>,
    /// Issues worked at once (`--workers`, else the config's `workers`).
    pub workers: Option<u32>,
    /// What the project spent over the last 24 hours, read once by the fleet for all its
    /// workers (each worker's own runner directory holds only its clone's journal); `None`:
    /// the runner reads it itself when `budget.perDayUsd` is set.
    pub spent_today_micros: Option<u64>,
}

impl RunOptions {
    /// The run mode the flags ask for: one step, one issue, or every issue.
    pub(crate) fn mode(&self) -> crate::machine::Mode {
        use crate::machine::Mode;
        match (self.step, self.issue) {
            (Some(step), _) => Mode::SingleStep(step),
            (None, Some(n)) => Mode::SingleIssue(n),
            (None, None) => Mode::Continuous,
        }
    }
}
