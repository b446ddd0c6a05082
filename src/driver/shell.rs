//! The driver's hands: the ports it reaches the world through and the runner's own files.

use super::shutdown::Shutdown;
use crate::artifacts::StateFile;
use crate::journal::Journal;
use crate::logs::Logs;
use crate::ports::{AgentPort, Clock, Io, NotifierPort};

/// The ports (one of each kind) and the runner's own files of one run.
pub(crate) struct Shell {
    /// The blocking ports (git, the forge, the tracker, the claim store), reached only through
    /// [`Io::call`]: every call runs off the runtime, so no child process blocks it.
    pub io: Io,
    /// Chat, webhook and command channels; deduplicated and redacted: the notifier port.
    pub notifier: std::sync::Arc<dyn NotifierPort>,
    /// Runs one agent attempt: the agent port.
    pub agent: Box<dyn AgentPort>,
    /// "Now" and every wait: the clock port.
    pub clock: std::sync::Arc<dyn Clock>,
    /// The orchestration log, live logs and per-attempt archives.
    pub logs: Logs,
    /// `None` in a dry run, which must not touch the project.
    pub journal: Option<Journal>,
    /// Held for the whole run so that no second runner works on the project; checked before
    /// every event (`check_runner_files`).
    pub lock: Option<crate::runner_dir::lock::Lock>,
    /// The operator's stop request; every wait and the agent watch it.
    pub shutdown: Shutdown,
    /// The `.claude` state file mirrored for tools that read the Node runner's format.
    pub state: StateFile,
    /// The running step and the current wait, for `status` (`live.json`).
    pub live: crate::live_status::LiveStatus,
}

impl Shell {
    /// The shell of a run on `ports`, with the runner's files startup opened for it.
    pub(crate) fn on(
        ports: crate::ports::Ports,
        logs: Logs,
        journal: Option<Journal>,
        lock: Option<crate::runner_dir::lock::Lock>,
        state: StateFile,
        runner_dir: &crate::runner_dir::RunnerDir,
    ) -> Shell {
        Shell {
            io: Io::new(crate::ports::World {
                git: ports.git,
                forge: ports.forge,
                tracker: ports.tracker,
                claims: ports.claims,
            }),
            notifier: std::sync::Arc::from(ports.notifier),
            agent: ports.agent,
            clock: ports.clock,
            logs,
            journal,
            lock,
            shutdown: Shutdown::new(),
            state,
            live: crate::live_status::LiveStatus::new(&runner_dir.dir),
        }
    }

    /// Writes the state file, stamped with the clock's now; what it narrates (a warning when
    /// the file cannot be written).
    pub fn save_state(&mut self, project: &std::path::Path) -> Option<String> {
        self.state.last_transition_at = Some(self.clock.now().to_rfc3339());
        let written = crate::artifacts::write_state(project, &self.state);
        written
            .err()
            .map(|e| crate::narration::cannot_write_state(&e))
    }

    /// The state file's count of failed attempts per step follows the events the machine took:
    /// a failure counts, a success clears it, and a lost push race (no attempt) leaves it be.
    pub fn mirror_retries(&mut self, event: &crate::machine::Event) {
        match *event {
            crate::machine::Event::StepFailed { step, .. } => {
                *self
                    .state
                    .retries
                    .entry(step.key().to_string())
                    .or_default() += 1;
            }
            crate::machine::Event::StepSucceeded { step, .. } => {
                self.state.retries.remove(step.key());
            }
            _ => {}
        }
    }
}
