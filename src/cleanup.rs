//! Process cleanup (docs/persistence.md signals, "never kills the runner itself or its ancestors"):
//! killing an agent's process group, and killing stray processes whose command line matches
//! one of `cleanup.processPatterns`.
//!
//! Everything here reads `/proc` directly instead of spawning `pgrep`, so a pattern can never
//! match the helper that searches for it, and every process is identified by pid *and* start
//! time, so a pid recycled between the scan and the signal is never hit.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::thread;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{kill_process, test_kill_process_group, Pid, Signal};

/// How long [`kill_matching`] waits after SIGTERM before it sends SIGKILL.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(5);

/// How often liveness is polled while waiting for processes to exit.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// After SIGKILL the kernel needs a moment to tear a process down; this caps how long a
/// caller blocks on that before giving up (a process in uninterruptible sleep can take longer).
const AFTER_KILL_WAIT: Duration = Duration::from_secs(2);

/// The fields of `/proc/<pid>/stat` this module needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    /// One-letter state (`R`, `S`, `Z`, ...).
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    /// Clock ticks since boot; together with the pid it identifies one process for good.
    pub start_time: u64,
    /// A thread of the kernel's own (`PF_KTHREAD`): no command line, no environment, never
    /// a step's.
    pub kernel_thread: bool,
}

impl ProcStat {
    /// A zombie has exited; it only waits for its parent to reap it.
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Reads `/proc/<pid>/stat`; `None` when the process does not exist (or the line is odd).
/// The file is opened by its path, in one call: a scan reads it for every process there is.
pub fn read_stat(pid: i32) -> Option<ProcStat> {
    use procfs::FromRead;
    let file = fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    let stat = procfs::process::Stat::from_read(file).ok()?;
    Some(ProcStat::from(stat))
}

/// `PF_KTHREAD` of `<linux/sched.h>`, in the flags field of `/proc/<pid>/stat`.
const PF_KTHREAD: u32 = 0x0020_0000;

impl From<procfs::process::Stat> for ProcStat {
    fn from(stat: procfs::process::Stat) -> Self {
        ProcStat {
            pid: stat.pid,
            state: stat.state,
            ppid: stat.ppid,
            pgrp: stat.pgrp,
            session: stat.session,
            start_time: stat.starttime,
            kernel_thread: stat.flags & PF_KTHREAD != 0,
        }
    }
}

/// The command line of `pid` with its NUL separators turned into spaces; `None` for a
/// process that is gone or has no command line (kernel threads, zombies). Read here rather
/// than through `procfs`, whose `cmdline()` refuses a command line that is not UTF-8: such a
/// process must still be matched by a pattern.
pub fn read_cmdline(pid: i32) -> Option<String> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let trimmed = raw.strip_suffix(&[0]).unwrap_or(&raw);
    if trimmed.is_empty() {
        return None;
    }
    let joined: Vec<u8> = trimmed
        .iter()
        .map(|&b| if b == 0 { b' ' } else { b })
        .collect();
    Some(String::from_utf8_lossy(&joined).into_owned())
}

/// Every pid listed in `/proc`: the names of its entries, nothing opened (`procfs`'s listing
/// opens each process's directory).
pub(crate) fn all_pids() -> io::Result<Vec<i32>> {
    Ok(fs::read_dir("/proc")?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect())
}

/// The environment `pid` was started with (`/proc/<pid>/environ`: `NAME=value` entries, each
/// ended by a NUL); `None` when it cannot be read (gone, or not ours).
pub(crate) fn read_environ(pid: i32) -> Option<Vec<u8>> {
    fs::read(format!("/proc/{pid}/environ")).ok()
}

/// The value of `name` in `environ` (as [`read_environ`] returns it), its first entry as
/// `getenv` would find it.
pub(crate) fn environ_var<'a>(environ: &'a [u8], name: &str) -> Option<&'a [u8]> {
    environ
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(name.as_bytes())?.strip_prefix(b"="))
}

/// Whether `/proc/<pid>` belongs to `uid` (one `statx`; `procfs` opens the directory first).
fn owned_by(pid: i32, uid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(format!("/proc/{pid}")).is_ok_and(|meta| meta.uid() == uid)
}

/// Whether `pid` is running (exists and is not a zombie). A zombie is treated as gone: on
/// systems whose pid 1 does not reap orphans, zombies linger forever but hold nothing.
pub fn process_alive(pid: i32) -> bool {
    read_stat(pid).is_some_and(|s| !s.is_zombie())
}

/// The pids and process-group leaders that cleanup must never signal: this process, every
/// ancestor up to pid 1, and the process group and session leaders of all of them (a
/// pipeline `producer | sdlc-runner` makes `producer` our group leader without being an
/// ancestor; the session leader is usually the operator's shell).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectSet {
    pids: BTreeSet<i32>,
}

impl ProtectSet {
    /// The protect set of the running process.
    pub fn current() -> ProtectSet {
        ProtectSet::for_pid(std::process::id() as i32)
    }

    /// The protect set of `pid` (walks its `/proc/<pid>/stat` ppid chain up to 1).
    pub fn for_pid(pid: i32) -> ProtectSet {
        let mut set = ProtectSet::default();
        set.pids.insert(pid);
        let mut current = pid;
        // A bound on the walk guards against a cycle in a corrupted or racing /proc read.
        for _ in 0..4096 {
            let Some(stat) = read_stat(current) else {
                break;
            };
            set.pids.insert(stat.pgrp);
            set.pids.insert(stat.session);
            if stat.ppid <= 1 || stat.ppid == current {
                break;
            }
            set.pids.insert(stat.ppid);
            current = stat.ppid;
        }
        // pid 0 is the kernel's placeholder for "no parent / no group"; 1 is init.
        set.pids.insert(1);
        set.pids.remove(&0);
        set
    }

    pub fn contains(&self, pid: i32) -> bool {
        self.pids.contains(&pid)
    }
}

/// Sends `signal` to every member of process group `pgid`. `ESRCH` (group empty) is `Ok`.
pub fn signal_group(pgid: i32, signal: Signal) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process group {pgid}"),
        ));
    }
    // pgid > 1 was checked above, so it can never mean "our own group" (0) or "every
    // process" (-1 / 1).
    let Some(group) = Pid::from_raw(pgid) else {
        return Ok(());
    };
    match rustix::process::kill_process_group(group, signal) {
        Ok(()) | Err(Errno::SRCH) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// Whether process group `pgid` still has a member that is not a zombie.
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // Signal 0 only checks for existence and permission; nothing is delivered.
    let Some(group) = Pid::from_raw(pgid) else {
        return false;
    };
    if test_kill_process_group(group) == Err(Errno::SRCH) {
        return false;
    }
    // killpg succeeds while zombies remain in the group; only a live member counts.
    match all_pids() {
        Ok(pids) => pids
            .into_iter()
            .any(|pid| read_stat(pid).is_some_and(|s| s.pgrp == pgid && !s.is_zombie())),
        Err(_) => true,
    }
}

/// What [`kill_process_group`] had to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKill {
    /// The group had no live member.
    AlreadyGone,
    /// Every member exited within the grace period after SIGTERM.
    Terminated,
    /// Some member outlived SIGTERM and was sent SIGKILL.
    Killed,
    /// The group is protected (ours or an ancestor's) or not ours to signal; nothing was sent.
    Refused,
}

/// Stops every process in group `pgid`: SIGTERM, up to `grace` for them to exit, then
/// SIGKILL. Blocks the calling thread for at most `grace` plus a short wait after SIGKILL.
/// The runner's own group and its ancestors' groups are refused.
pub fn kill_process_group(pgid: i32, grace: Duration) -> GroupKill {
    end_group(pgid, Instant::now() + grace, false)
}

/// The one escalating killer: SIGTERM (unless `term_sent`, when the caller already sent it
/// and only the SIGKILL deadline is left), wait until every member is gone or `kill_at`
/// passes, then SIGKILL and a bounded wait. Blocking; async callers run it on a blocking
/// thread.
pub fn end_group(pgid: i32, kill_at: Instant, term_sent: bool) -> GroupKill {
    if pgid <= 1 || ProtectSet::current().contains(pgid) {
        return GroupKill::Refused;
    }
    if !group_alive(pgid) {
        return GroupKill::AlreadyGone;
    }
    if !term_sent {
        if let Err(err) = signal_group(pgid, Signal::TERM) {
            tracing::warn!("[CLEANUP] could not send SIGTERM to process group {pgid}: {err}");
            return GroupKill::Refused;
        }
    }
    if wait_until(kill_at.saturating_duration_since(Instant::now()), || {
        !group_alive(pgid)
    }) {
        return GroupKill::Terminated;
    }
    if let Err(err) = signal_group(pgid, Signal::KILL) {
        tracing::warn!("[CLEANUP] could not send SIGKILL to process group {pgid}: {err}");
    }
    wait_until(AFTER_KILL_WAIT, || !group_alive(pgid));
    GroupKill::Killed
}

/// Stops what is left of an agent's process group recorded by an earlier runner: the group
/// whose leader was `pgid`, started at `start_ticks`. A live process `pgid` that started at
/// another time is a reused pid and is left alone; with the leader gone, the kernel does not
/// hand out `pgid` again while members of the group live, so those members are the agent's.
pub fn kill_recorded_group(pgid: i32, start_ticks: u64, grace: Duration) -> GroupKill {
    if let Some(leader) = read_stat(pgid) {
        if leader.start_time != start_ticks && !leader.is_zombie() {
            return GroupKill::Refused;
        }
    }
    kill_process_group(pgid, grace)
}

/// Polls `done` until it holds or `limit` passes; returns whether it held.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(POLL_INTERVAL);
    }
}

/// One process found by a scan, pinned by its start time.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pid: i32,
    start_time: u64,
    cmdline: String,
}

impl Target {
    /// Still the same process (not exited, not a recycled pid) and not yet a zombie.
    fn still_running(&self) -> bool {
        read_stat(self.pid).is_some_and(|s| s.start_time == self.start_time && !s.is_zombie())
    }

    /// Sends `signal` if the pid still names the scanned process. ESRCH counts as done;
    /// any other error is logged and skipped so one stubborn process never aborts the rest.
    pub(crate) fn signal(&self, signal: Signal) -> bool {
        if !self.still_running() {
            return false;
        }
        // pid > 1 is guaranteed by the scan.
        let Some(pid) = Pid::from_raw(self.pid) else {
            return false;
        };
        let Err(err) = kill_process(pid, signal) else {
            return true;
        };
        if err != Errno::SRCH {
            tracing::warn!(
                "[CLEANUP] could not signal pid {} ({}): {err}",
                self.pid,
                self.cmdline
            );
        }
        false
    }
}

/// Kills (SIGTERM, then SIGKILL after [`DEFAULT_KILL_GRACE`]) every process of this user whose
/// command line contains one of `patterns`, except the protected ones. Returns the pid and
/// command line of each process that was signalled.
///
/// Matching is a **plain, case-sensitive substring** test against the command line with its
/// arguments joined by single spaces: no regular expressions, no globbing. Empty patterns are
/// ignored (they would match everything). Processes of other users, kernel threads and
/// zombies are never candidates.
pub fn kill_matching(patterns: &[String], protect: &ProtectSet) -> Vec<(i32, String)> {
    kill_matching_with_grace(patterns, protect, DEFAULT_KILL_GRACE)
}

/// [`kill_matching`] with an explicit grace period between SIGTERM and SIGKILL.
pub fn kill_matching_with_grace(
    patterns: &[String],
    protect: &ProtectSet,
    grace: Duration,
) -> Vec<(i32, String)> {
    end_targets(&find_matching(patterns, protect), grace)
}

/// SIGTERM to every target still running, up to `grace` for them to exit, then SIGKILL to
/// those left. Returns the pid and command line of each process that was signalled.
pub(crate) fn end_targets(targets: &[Target], grace: Duration) -> Vec<(i32, String)> {
    let mut signalled = Vec::new();
    for target in targets {
        if target.signal(Signal::TERM) {
            signalled.push((target.pid, target.cmdline.clone()));
        }
    }
    if signalled.is_empty() {
        return signalled;
    }
    if !wait_until(grace, || targets.iter().all(|t| !t.still_running())) {
        for target in targets {
            target.signal(Signal::KILL);
        }
        wait_until(AFTER_KILL_WAIT, || {
            targets.iter().all(|t| !t.still_running())
        });
    }
    signalled
}

/// The processes `kill_matching` would signal, without signalling them.
fn find_matching(patterns: &[String], protect: &ProtectSet) -> Vec<Target> {
    let patterns: Vec<&str> = patterns
        .iter()
        .map(String::as_str)
        .filter(|p| !p.is_empty())
        .collect();
    if patterns.is_empty() {
        return Vec::new();
    }
    find_where(protect, |stat| {
        read_cmdline(stat.pid).is_some_and(|cmdline| patterns.iter().any(|p| cmdline.contains(p)))
    })
}

/// Every running process of this user, other than the protected ones, zombies and the
/// kernel's threads, that `pick` selects, each pinned by its start time. Only a process
/// picked has its command line read (for the log): most a scan passes never do.
pub(crate) fn find_where(
    protect: &ProtectSet,
    mut pick: impl FnMut(&ProcStat) -> bool,
) -> Vec<Target> {
    let pids = match all_pids() {
        Ok(pids) => pids,
        Err(err) => {
            tracing::warn!("[CLEANUP] could not list /proc to find processes to stop: {err}");
            return Vec::new();
        }
    };
    let my_uid = rustix::process::geteuid().as_raw();
    let mut targets = Vec::new();
    for pid in pids {
        if pid <= 1 || protect.contains(pid) || !owned_by(pid, my_uid) {
            continue;
        }
        let Some(stat) = read_stat(pid) else {
            continue;
        };
        if stat.is_zombie() || stat.kernel_thread {
            continue;
        }
        if !pick(&stat) {
            continue;
        }
        targets.push(Target {
            pid,
            start_time: stat.start_time,
            cmdline: read_cmdline(pid).unwrap_or_default(),
        });
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, Stdio};

    fn unique_marker(tag: &str) -> String {
        use std::collections::hash_map::RandomState;
        use std::hash::{BuildHasher, Hasher};
        let random = RandomState::new().build_hasher().finish();
        format!("sdlc-cleanup-test-{tag}-{}-{random:x}", std::process::id())
    }

    /// Processes whose argv[0] is `marker` (the bash wrappers only carry it in their
    /// environment, so they never match).
    fn marked(marker: &str) -> Vec<Target> {
        find_matching(&[marker.to_string()], &ProtectSet::current())
            .into_iter()
            .filter(|t| t.cmdline.starts_with(marker))
            .collect()
    }

    /// A `sleep` whose argv[0] is `marker` (bash's `exec -a`); the marker reaches bash
    /// through the environment so the wrapper's own command line never contains it.
    fn sleeper(marker: &str, ignore_term: bool) -> Child {
        let script = if ignore_term {
            "trap '' TERM; exec -a \"$MARKER\" sleep 300"
        } else {
            "exec -a \"$MARKER\" sleep 300"
        };
        let child = Command::new("bash")
            .args(["-c", script])
            .env("MARKER", marker)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        assert!(wait_until(Duration::from_secs(5), || read_cmdline(pid)
            .is_some_and(|c| c.starts_with(marker))));
        child
    }

    #[test]
    fn parses_stat_with_parens_and_spaces_in_the_name() {
        use procfs::FromRead;
        let line = concat!(
            "1234 (we (ir) d) S 10 1234 1234 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 987654 ",
            "3133440 383 18446744073709551615 94129052884992 94129052904873 140728705925648 ",
            "0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94129052920880 94129052922496 94130068983808 ",
            "140728705927906 140728705927926 140728705927926 140728705929195 0",
        );
        let stat = ProcStat::from(procfs::process::Stat::from_read(line.as_bytes()).unwrap());
        assert_eq!(stat.pid, 1234);
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.ppid, 10);
        assert_eq!(stat.pgrp, 1234);
        assert_eq!(stat.session, 1234);
        assert_eq!(stat.start_time, 987654);
        assert!(!stat.kernel_thread);
        assert!(procfs::process::Stat::from_read("garbage".as_bytes()).is_err());
        // kthreadd's own line: flags 0x208040, PF_KTHREAD among them.
        let kernel = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 5 0 0 20 0 1 0 1 0 0 \
            18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
        let kernel = ProcStat::from(procfs::process::Stat::from_read(kernel.as_bytes()).unwrap());
        assert!(kernel.kernel_thread);
    }

    #[test]
    fn an_environment_variable_is_its_first_entry_and_only_under_its_own_name() {
        let env = b"A=1\0SDLC_X_LONGER=no\0NOEQUALS\0SDLC_X=7.3\0SDLC_X=later\0EMPTY=\0";
        assert_eq!(environ_var(env, "SDLC_X"), Some(&b"7.3"[..]));
        assert_eq!(environ_var(env, "A"), Some(&b"1"[..]));
        assert_eq!(environ_var(env, "EMPTY"), Some(&b""[..]));
        assert_eq!(environ_var(env, "NOEQUALS"), None);
        assert_eq!(environ_var(env, "SDLC"), None);
        assert_eq!(environ_var(b"", "A"), None);
    }

    #[test]
    fn this_processs_environment_is_read_from_proc() {
        let env = read_environ(std::process::id() as i32).expect("own environ");
        let path = std::env::var("PATH").expect("PATH");
        assert_eq!(environ_var(&env, "PATH"), Some(path.as_bytes()));
        assert_eq!(read_environ(i32::MAX), None);
    }

    #[test]
    fn a_scan_lists_this_process_and_no_thread_of_the_kernel() {
        let me = std::process::id() as i32;
        assert!(all_pids().expect("/proc").contains(&me));
        let everyone = find_where(&ProtectSet::default(), |_| true);
        assert!(everyone.iter().any(|t| t.pid == me), "{everyone:?}");
        for target in &everyone {
            assert!(
                read_stat(target.pid).is_none_or(|s| !s.kernel_thread),
                "{target:?}"
            );
        }
    }

    #[test]
    fn protect_set_holds_self_and_every_ancestor() {
        let set = ProtectSet::current();
        let me = std::process::id() as i32;
        assert!(set.contains(me));
        assert!(set.contains(1));
        let mut pid = me;
        while let Some(stat) = read_stat(pid) {
            assert!(
                set.contains(stat.pgrp),
                "group leader {} protected",
                stat.pgrp
            );
            if stat.ppid <= 1 {
                break;
            }
            assert!(set.contains(stat.ppid), "ancestor {} protected", stat.ppid);
            pid = stat.ppid;
        }
    }

    #[test]
    fn kill_matching_kills_marked_processes_and_nothing_else() {
        let marker = unique_marker("match");
        let other = unique_marker("other");
        let mut a = sleeper(&marker, false);
        let mut b = sleeper(&format!("{marker}-second"), false);
        let mut bystander = sleeper(&other, false);

        let killed = kill_matching_with_grace(
            std::slice::from_ref(&marker),
            &ProtectSet::current(),
            Duration::from_secs(5),
        );
        let pids: BTreeSet<i32> = killed.iter().map(|(p, _)| *p).collect();
        assert_eq!(
            pids,
            BTreeSet::from([a.id() as i32, b.id() as i32]),
            "{killed:?}"
        );
        assert!(killed.iter().all(|(_, cmd)| cmd.contains(&marker)));
        assert!(a.wait().unwrap().code().is_none());
        assert!(b.wait().unwrap().code().is_none());
        assert!(process_alive(bystander.id() as i32), "bystander untouched");
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }

    #[test]
    fn kill_matching_escalates_to_sigkill() {
        let marker = unique_marker("stubborn");
        let mut child = sleeper(&marker, true);
        let started = Instant::now();
        let killed = kill_matching_with_grace(
            std::slice::from_ref(&marker),
            &ProtectSet::current(),
            Duration::from_millis(300),
        );
        assert_eq!(killed.len(), 1);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(Signal::KILL.as_raw()));
        assert!(started.elapsed() < Duration::from_secs(4));
    }

    #[test]
    fn kill_matching_never_touches_protected_processes() {
        let marker = unique_marker("protected");
        let mut child = sleeper(&marker, false);
        let mut protect = ProtectSet::current();
        protect.pids.insert(child.id() as i32);
        let killed = kill_matching(std::slice::from_ref(&marker), &protect);
        assert!(killed.is_empty());
        assert!(process_alive(child.id() as i32));
        child.kill().unwrap();
        child.wait().unwrap();

        // A pattern that matches the test binary itself (its own argv) never picks it. Only
        // looked for, not signalled: the pattern matches every other process started from
        // this binary too (a test re-run in a process of its own, another run of the suite).
        let own = read_cmdline(std::process::id() as i32).unwrap();
        let picked = find_matching(&[own], &ProtectSet::current());
        assert!(picked.iter().all(|t| t.pid != std::process::id() as i32));
    }

    #[test]
    fn empty_patterns_match_nothing() {
        assert!(kill_matching(&[String::new()], &ProtectSet::current()).is_empty());
        assert!(kill_matching(&[], &ProtectSet::current()).is_empty());
    }

    #[test]
    fn kill_process_group_kills_every_member_even_if_it_ignores_sigterm() {
        let marker = unique_marker("group");
        let script = "trap '' TERM; (exec -a \"$MARKER\" sleep 300) & \
                      (trap '' TERM; exec -a \"$MARKER\" sleep 300) & wait";
        let mut leader = Command::new("bash")
            .args(["-c", script])
            .env("MARKER", &marker)
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = leader.id() as i32;
        assert!(wait_until(Duration::from_secs(5), || marked(&marker).len() == 2));
        assert!(group_alive(pgid));
        let outcome = kill_process_group(pgid, Duration::from_millis(300));
        assert_eq!(outcome, GroupKill::Killed);
        leader.wait().unwrap();
        assert!(!group_alive(pgid));
        assert!(marked(&marker).is_empty());
        assert_eq!(
            kill_process_group(pgid, Duration::ZERO),
            GroupKill::AlreadyGone
        );
    }

    #[test]
    fn kill_process_group_refuses_our_own_group() {
        let own = read_stat(std::process::id() as i32).unwrap().pgrp;
        assert_eq!(kill_process_group(own, Duration::ZERO), GroupKill::Refused);
        assert_eq!(kill_process_group(1, Duration::ZERO), GroupKill::Refused);
        assert_eq!(kill_process_group(0, Duration::ZERO), GroupKill::Refused);
    }
}
