//! [`ChildSpec`]: the one way the runner describes and starts a child process, whether the
//! child is a short git or gh call run to completion ([`super::run_tracked`]) or the agent
//! streamed for hours ([`super::streaming`]). Whatever starts it, a child gets the same
//! treatment: an argument vector (never a shell string), its own process group (so a group
//! kill ends what it started), SIGKILL when the runner dies if it may run long, the step's
//! mark in its environment, and the same retry of a spawn that meets a script still open for
//! writing (ETXTBSY). `tests/it/layering.rs` (`processes_start_only_in_process`) fails on a
//! process started anywhere else.

use std::ffi::OsStr;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::reaper::Mark;

/// What to run, and how: the program, its arguments, directory and environment, and whether
/// it dies with the runner.
#[derive(Debug)]
pub struct ChildSpec {
    pub(super) cmd: Command,
    die_with_parent: bool,
}

/// How often a spawn that meets ETXTBSY is tried again, and how long apart.
const BUSY_TRIES: u32 = 10;
const BUSY_NAP: Duration = Duration::from_millis(20);

impl ChildSpec {
    /// `program`, found on PATH unless it is a path.
    pub fn new(program: impl AsRef<OsStr>) -> ChildSpec {
        ChildSpec {
            cmd: Command::new(program),
            die_with_parent: false,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut ChildSpec {
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut ChildSpec
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut ChildSpec {
        self.cmd.current_dir(dir);
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut ChildSpec {
        self.cmd.env(key, value);
        self
    }

    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut ChildSpec
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.cmd.envs(vars);
        self
    }

    /// The child starts with no variable but those set on this spec.
    pub fn env_clear(&mut self) -> &mut ChildSpec {
        self.cmd.env_clear();
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut ChildSpec {
        self.cmd.env_remove(key);
        self
    }

    /// SIGKILL to the child when the runner dies (see [`super::die_with_parent`]): for a
    /// long child only (the local CI, the agent), since it costs a fork.
    pub fn dies_with_parent(&mut self) -> &mut ChildSpec {
        self.die_with_parent = true;
        self
    }

    pub fn get_program(&self) -> &OsStr {
        self.cmd.get_program()
    }

    pub fn get_current_dir(&self) -> Option<&Path> {
        self.cmd.get_current_dir()
    }

    /// The command made ready to start: stdin piped (when there is a payload) or closed,
    /// stdout and stderr piped, its own process group, the step's mark.
    fn prepared(mut self, stdin: bool, mark: Option<Mark>) -> Command {
        self.cmd
            .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // What the child leaves behind outside its group (a hook's daemon) ends with the step.
        if let Some(mark) = mark {
            let dir = self.cmd.get_current_dir().map(Path::to_path_buf);
            self.cmd.envs(mark.vars(dir.as_deref()));
        }
        if self.die_with_parent {
            super::die_with_parent(&mut self.cmd);
        }
        self.cmd
    }

    /// Starts the child for a caller that waits on a thread ([`super::run_tracked`]).
    pub(super) fn spawn_blocking(
        self,
        stdin: bool,
        mark: Option<Mark>,
    ) -> io::Result<std::process::Child> {
        let mut cmd = self.prepared(stdin, mark);
        let mut tries = 0;
        loop {
            match super::reaper::spawned(|| cmd.spawn(), |c| Some(c.id())) {
                Err(e) if busy(&e) && tries < BUSY_TRIES => {
                    tries += 1;
                    std::thread::sleep(BUSY_NAP);
                }
                other => {
                    if other.is_ok() {
                        super::children::child_started();
                        let git = Path::new(cmd.get_program()) == super::git_program();
                        crate::stats::spawned(git);
                    }
                    return other;
                }
            }
        }
    }

    /// Starts the child for a caller that streams it on the runtime ([`super::streaming`]);
    /// it is killed if its handle is dropped.
    pub(super) async fn spawn_async(self, mark: Mark) -> io::Result<tokio::process::Child> {
        let mut cmd = tokio::process::Command::from(self.prepared(false, Some(mark)));
        cmd.kill_on_drop(true);
        let mut tries = 0;
        loop {
            match super::reaper::spawned(|| cmd.spawn(), tokio::process::Child::id) {
                Err(e) if busy(&e) && tries < BUSY_TRIES => {
                    tries += 1;
                    tokio::time::sleep(BUSY_NAP).await;
                }
                other => {
                    if other.is_ok() {
                        super::children::child_started();
                    }
                    return other;
                }
            }
        }
    }
}

/// Writing a script and executing it while another thread forks can fail with ETXTBSY for
/// a moment: that is a race of the runner's own, not a reason to lose a call.
fn busy(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::TXTBSY.raw_os_error())
}
