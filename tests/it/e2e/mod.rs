//! A real project for end-to-end tests: a bare `origin`, a clone with one commit on `main`,
//! a local tracker, and the runner binary itself as the scripted fake agent.
#![allow(dead_code)]

pub mod fake_gitlab;
pub mod fake_linear;
pub mod github_api;
pub mod shared_tracker;
pub mod template;
pub mod wire;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_sdlc-runner");

/// Every file under `dir`, subfolders included, in a stable order; nothing for a missing `dir`.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The `steps` object that makes the five model-free steps builtin.
pub fn builtin_steps() -> Value {
    json!({
        "startCycle": {"run": "builtin"},
        "commitPush": {"run": "builtin"},
        "createPR": {"run": "builtin"},
        "monitorCI": {"run": "builtin"},
        "merge": {"run": "builtin"},
    })
}

/// Waits until the runner's agent logged an invocation of `step`, then kills the runner with
/// SIGKILL and reaps it.
pub fn kill_at_step(runner: &mut Child, agent_log: &Path, step: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !invocations_in(agent_log).iter().any(|(_, s)| s == step) {
        assert!(Instant::now() < deadline, "the runner never reached {step}");
        std::thread::sleep(Duration::from_millis(50));
    }
    runner.kill().expect("kill -9");
    let _ = runner.wait();
}

/// Another runner of the same project: its own clone, config and agent log.
pub struct Runner {
    pub config: PathBuf,
    pub agent_log: PathBuf,
}

/// `(issue, step)` of every agent invocation in a fake agent's log.
pub fn invocations_in(log: &Path) -> Vec<(u32, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            // `12`, or a tracker's identifier `ENG-12`.
            let issue = w.next()?;
            let number = issue.rsplit_once('-').map_or(issue, |(_, n)| n);
            Some((number.parse().ok()?, w.next()?.to_string()))
        })
        .collect()
}

/// Issue numbers of the `Merge issue #N…` commits on origin's main, ascending.
pub fn merged_issues(origin: &Path) -> Vec<u32> {
    let log = git(origin, &["log", "--format=%s", "main"]);
    let mut merged: Vec<u32> = log
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Merge issue #")?;
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect();
    merged.sort_unstable();
    merged
}

pub struct Project {
    pub _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub project: PathBuf,
    pub origin: PathBuf,
    pub issues: PathBuf,
    pub config: PathBuf,
    pub script: PathBuf,
    pub agent_log: PathBuf,
    /// Extra environment for every runner process (e.g. a PATH with a fake `gh` first).
    pub env: Vec<(String, std::ffi::OsString)>,
}

pub fn git(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        cwd.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Project {
    /// A pre-push hook in the project that rejects every push (a host's policy).
    pub fn reject_every_push(&self) {
        use std::os::unix::fs::PermissionsExt;
        let hook = self.project.join(".git/hooks/pre-push");
        std::fs::write(
            &hook,
            "#!/bin/sh\necho 'push rejected by policy' >&2\nexit 1\n",
        )
        .expect("hook");
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// `issues`: (number, title, body). `script`: the fake agent's script. `extra`: config keys
    /// merged over the defaults of the test config.
    pub fn new(issues: &[(u32, &str, &str)], script: Value, extra: Value) -> Project {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        let origin = root.join("origin.git");
        let project = root.join("project");
        let issue_dir = root.join("issues");
        std::fs::create_dir_all(&issue_dir).expect("issues dir");
        template::fresh_repository(&root);
        for (n, title, body) in issues {
            let v = json!({"number": n, "title": title, "body": body, "state": "open",
                "labels": ["automatable"], "milestone": null, "escalated": false});
            std::fs::write(issue_dir.join(format!("{n}.json")), v.to_string()).expect("issue");
        }
        let script_path = root.join("script.json");
        let agent_log = root.join("agent.log");
        let p = Project {
            _tmp: tmp,
            config: root.join("sdlc-config.json"),
            root,
            project,
            origin,
            issues: issue_dir,
            script: script_path,
            agent_log,
            env: Vec::new(),
        };
        p.set_script(script);
        p.set_config(extra);
        p
    }

    pub fn set_script(&self, script: Value) {
        std::fs::write(&self.script, script.to_string()).expect("script");
    }

    pub fn set_config(&self, extra: Value) {
        let mut cfg = json!({
            "projectPath": "project",
            "logDir": "logs",
            "agent": {"command": BIN, "args": ["fake-agent", "--script", self.script.to_str().expect("utf8")]},
            "tracker": {"kind": "local", "dir": "issues"},
            "forge": "local",
            "backoff": {"initialSeconds": 1, "maxSeconds": 1},
            // The fakes (CI, reviews, the forges' APIs) move by looks, not by time: the
            // runner looks every 2 s, not 10.
            "ciPoll": {"initialSeconds": 2},
        });
        if let (Some(base), Some(more)) = (cfg.as_object_mut(), extra.as_object()) {
            for (k, v) in more {
                base.insert(k.clone(), v.clone());
            }
        }
        std::fs::write(&self.config, cfg.to_string()).expect("config");
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("SDLC_FAKE_AGENT_LOG", &self.agent_log)
            .env("SDLC_FAKE_AGENT_PROMPT_LOG", self.root.join("prompts.log"))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.root);
        cmd
    }

    /// `sdlc-runner run --config C ARGS`, waiting at most two minutes.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_env(args, &[])
    }

    /// [`Project::run`] with more environment (e.g. a crash point).
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut all = vec!["run", "--config", self.config.to_str().expect("utf8")];
        all.extend_from_slice(args);
        let child = self
            .command(&all)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn runner");
        wait_output(child, Duration::from_secs(120))
    }

    /// `sdlc-runner review ISSUE ARGS --config C`: a person reviewing the local PR.
    pub fn review(&self, issue: u32, args: &[&str]) -> Output {
        let number = issue.to_string();
        let mut all = vec!["review", number.as_str()];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--config", self.config.to_str().expect("utf8")]);
        self.command(&all)
            .output()
            .expect("sdlc-runner review runs")
    }

    /// The local reviews of `issue`'s PR as stored (`{"reviews": […]}`), or null.
    pub fn reviews(&self, issue: u32) -> Value {
        std::fs::read_to_string(self.issues.join(format!("reviews/{issue}.json")))
            .map(|t| serde_json::from_str(&t).expect("reviews file is JSON"))
            .unwrap_or(Value::Null)
    }

    /// Another clone of origin for another runner on the same tracker: its config is this
    /// project's with its own projectPath and logDir, and `extra` merged over it.
    pub fn add_runner(&self, name: &str, extra: &Value) -> Runner {
        let clone = self.root.join(name);
        git(
            &self.root,
            &[
                "clone",
                "--quiet",
                self.origin.to_str().expect("utf8"),
                name,
            ],
        );
        for (k, v) in [
            ("user.name", "t"),
            ("user.email", "t@t"),
            ("commit.gpgsign", "false"),
        ] {
            git(&clone, &["config", k, v]);
        }
        let text = std::fs::read_to_string(&self.config).expect("config");
        let mut cfg: Value = serde_json::from_str(&text).expect("config json");
        cfg["projectPath"] = json!(name);
        cfg["logDir"] = json!(format!("logs-{name}"));
        if let (Some(base), Some(more)) = (cfg.as_object_mut(), extra.as_object()) {
            for (k, v) in more {
                base.insert(k.clone(), v.clone());
            }
        }
        let config = self.root.join(format!("{name}.json"));
        std::fs::write(&config, cfg.to_string()).expect("config");
        Runner {
            config,
            agent_log: self.root.join(format!("{name}-agent.log")),
        }
    }

    /// Runners on this tracker at once, one per name (each its own clone, `extra` merged into
    /// its config), as workers `{prefix}0`, `{prefix}1`, …: the runners and their outputs once
    /// every one has exited.
    pub fn run_side_by_side(
        &self,
        names: &[&str],
        extra: &Value,
        prefix: &str,
    ) -> (Vec<Runner>, Vec<std::process::Output>) {
        let runners: Vec<Runner> = names
            .iter()
            .map(|n| self.add_runner(&format!("clone-{n}"), extra))
            .collect();
        let children: Vec<Child> = runners
            .iter()
            .enumerate()
            .map(|(i, r)| self.spawn_runner(r, &format!("{prefix}{i}")))
            .collect();
        let outs = children
            .into_iter()
            .map(|c| wait_output(c, std::time::Duration::from_secs(180)))
            .collect();
        (runners, outs)
    }

    /// `run --worker-id WORKER` for a runner made by [`Project::add_runner`].
    pub fn spawn_runner(&self, r: &Runner, worker: &str) -> Child {
        Command::new(BIN)
            .args([
                "run",
                "--config",
                r.config.to_str().expect("utf8"),
                "--worker-id",
                worker,
            ])
            .env("SDLC_FAKE_AGENT_LOG", &r.agent_log)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.root)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn runner")
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        let mut all = vec!["run", "--config", self.config.to_str().expect("utf8")];
        all.extend_from_slice(args);
        self.command(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn runner")
    }

    /// Lines `<issue> <step> <attempt> <outcome> ...` the fake agent logged.
    pub fn invocations(&self) -> Vec<String> {
        std::fs::read_to_string(&self.agent_log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The prompt the fake agent got for `<issue> <step> <attempt>`.
    pub fn prompt(&self, issue: u32, step: &str, attempt: u32) -> Option<String> {
        let text = std::fs::read_to_string(self.root.join("prompts.log")).ok()?;
        let head = format!("== {issue} {step} {attempt}\n");
        let start = text.find(&head)? + head.len();
        let rest = &text[start..];
        Some(rest[..rest.find("\n== ").map_or(rest.len(), |i| i + 1)].to_string())
    }

    /// Pids of the fake agents and of the children they started, from the invocation log.
    pub fn agent_pids(&self) -> Vec<i32> {
        self.invocations()
            .iter()
            .filter_map(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                match words.as_slice() {
                    ["child", pid, "of", _] => pid.parse().ok(),
                    [.., pid] => pid.parse().ok(),
                    [] => None,
                }
            })
            .collect()
    }

    pub fn count(&self, prefix: &str) -> usize {
        self.invocations()
            .iter()
            .filter(|l| l.starts_with(prefix))
            .count()
    }

    pub fn issue(&self, n: u32) -> Value {
        let text =
            std::fs::read_to_string(self.issues.join(format!("{n}.json"))).expect("issue file");
        serde_json::from_str(&text).expect("issue json")
    }

    pub fn claude(&self, name: &str) -> PathBuf {
        self.project.join(".claude").join(name)
    }

    pub fn origin_main_log(&self) -> String {
        git(&self.origin, &["log", "--oneline", "main"])
    }

    pub fn branch(&self) -> String {
        git(&self.project, &["rev-parse", "--abbrev-ref", "HEAD"])
    }

    /// Wait until the fake agent logged a line starting with `prefix`.
    pub fn wait_for_invocation(&self, prefix: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.count(prefix) > 0 {
                std::thread::sleep(Duration::from_millis(200));
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "no invocation {prefix:?} within {timeout:?}; log: {:?}",
            self.invocations()
        );
    }

    /// Wait until the journal holds `needle` (a record's text).
    pub fn wait_for_journal(&self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if std::fs::read_to_string(self.journal_path()).is_ok_and(|j| j.contains(needle)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the journal never held {needle:?} within {timeout:?}");
    }

    /// The runner's journal, under the clone's git directory.
    pub fn journal_path(&self) -> PathBuf {
        self.project.join(".git/sdlc-runner/journal.jsonl")
    }

    /// `sdlc-runner decide OPTION` for this project.
    pub fn decide(&self, option: &str) -> Output {
        self.command(&[
            "decide",
            option,
            "--config",
            self.config.to_str().expect("utf8"),
        ])
        .output()
        .expect("decide")
    }

    /// Checks that `replay` reproduces the journal exactly and that it holds one session
    /// (continued across every kill); returns its records.
    pub fn replays_exactly(&self) -> Vec<Value> {
        let journal = self.journal_path();
        let replay = self
            .command(&["replay", journal.to_str().expect("utf8")])
            .output()
            .expect("replay");
        assert_eq!(code(&replay), 0, "replay: {}", text(&replay));
        let lines = self.journal();
        let starts = lines.iter().filter(|l| l["kind"] == "sessionStart").count();
        assert_eq!(starts, 1, "one session across every kill");
        lines
    }

    /// `run` with the failpoint armed at `point` (a label, or the N-th point reached);
    /// checks that the runner died there (no exit code).
    pub fn killed_at(&self, point: &str) -> Output {
        let out = self
            .command(&["run", "--config", self.config.to_str().expect("utf8")])
            .env(sdlc_runner::failpoint::CRASH_AT_ENV, point)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), None, "killed at {point}: {}", text(&out));
        out
    }

    /// `run` to its end with every failpoint it reaches logged: its output, and the points
    /// by number and label, in order.
    pub fn crash_points(&self) -> (Output, Vec<(u64, String)>) {
        let points = self.root.join("points.log");
        let out = self
            .command(&["run", "--config", self.config.to_str().expect("utf8")])
            .env(sdlc_runner::failpoint::CRASH_LOG_ENV, &points)
            .output()
            .expect("run");
        let log = std::fs::read_to_string(&points).unwrap_or_default();
        let numbered = log
            .lines()
            .filter_map(|l| {
                let (n, label) = l.split_once(' ')?;
                Some((n.parse().ok()?, label.to_string()))
            })
            .collect();
        (out, numbered)
    }

    /// Origin gets `master`, one commit ahead of `main`, as its HEAD; the project forgets
    /// `origin/HEAD` and fetches.
    pub fn make_master_origins_default(&self) {
        let other = self.root.join("teammate");
        git(
            &self.root,
            &[
                "clone",
                "-q",
                self.origin.to_str().expect("utf8"),
                other.to_str().expect("utf8"),
            ],
        );
        git(&other, &["checkout", "-q", "-b", "master"]);
        std::fs::write(other.join("moved.txt"), "the project moved to master\n").expect("write");
        git(&other, &["add", "moved.txt"]);
        git(
            &other,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "-m",
                "master moves on",
            ],
        );
        git(&other, &["push", "-q", "origin", "master"]);
        git(&self.origin, &["symbolic-ref", "HEAD", "refs/heads/master"]);
        let _ = Command::new("git")
            .args(["remote", "set-head", "origin", "-d"])
            .current_dir(&self.project)
            .output();
        git(&self.project, &["fetch", "-q", "origin"]);
        assert!(Command::new("git")
            .args(["symbolic-ref", "-q", "refs/remotes/origin/HEAD"])
            .current_dir(&self.project)
            .status()
            .is_ok_and(|s| !s.success()));
    }

    pub fn journal(&self) -> Vec<Value> {
        std::fs::read_to_string(self.journal_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// Writes the fake `gh` (tests/fake_gh.py) as `bin/fake_gh.py` and `bin/gh`, an executable
/// that imports it. The `#!` line names the interpreter `python3` resolves to, found once per
/// test binary: `#!/usr/bin/env python3` went through a version manager's shim on each of a
/// run's hundreds of calls (about twenty processes per call), which made these tests several
/// times slower. Imported, the script is compiled once and its bytecode kept in
/// `bin/__pycache__` (whatever PYTHONDONTWRITEBYTECODE says); run as the script itself, Python parsed and compiled its 500 lines on
/// every call, most of each call's CPU. Fails when python3 is missing: the tests that call
/// this are ignored by a newcomer's `cargo test` and run by `.ci/run` after it installs
/// python3.
pub fn install_fake_gh(bin: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let python = PYTHON.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect(
                "python3 is not on PATH (tests/fake_gh.py needs it): apt-get install -y python3",
            );
        assert!(out.status.success(), "python3 failed: {}", text(&out));
        let exe = String::from_utf8_lossy(&out.stdout).trim().to_string();
        // A path a `#!` line cannot carry keeps the lookup through PATH.
        if exe.is_empty() || exe.contains(char::is_whitespace) {
            "/usr/bin/env python3".to_string()
        } else {
            format!("{exe} -S")
        }
    });
    let script = include_str!("../../fake_gh.py");
    let body = script
        .strip_prefix("#!/usr/bin/env python3\n")
        .expect("tests/fake_gh.py starts with its #! line");
    std::fs::create_dir_all(bin).expect("bin dir");
    std::fs::write(bin.join("fake_gh.py"), body).expect("write fake_gh.py");
    let gh = bin.join("gh");
    // The script's own directory is first on Python's path, so the import finds it there;
    // the bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE
    // is common in containers).
    let stub = format!("#!{python}\nimport sys\nsys.dont_write_bytecode = False\nimport fake_gh\n");
    std::fs::write(&gh, stub).expect("write gh");
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("chmod gh");
    gh
}

pub fn wait_output(mut child: Child, timeout: Duration) -> Output {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait().expect("try_wait") {
            Some(_) => return child.wait_with_output().expect("output"),
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let out = child.wait_with_output().expect("output");
                panic!(
                    "runner did not finish within {timeout:?}\nstdout:\n{}\nstderr:\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

pub fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// Whether `pid` is a live process (a zombie waiting for its reaper counts as gone).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Waits up to `limit` for every pid in `pids` to be gone; returns the survivors.
pub fn survivors(pids: &[i32], limit: Duration) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGKILL to each of `pids` (processes a test left running on purpose).
pub fn kill_pids(pids: &[i32]) {
    for &pid in pids {
        // SAFETY: kill(2) on pids the test's own fake agent logged; no memory is shared.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

pub fn signal(child: &Child, sig: i32) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on a pid we spawned; no memory is shared.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// A pseudo-terminal of 120 columns: (master, slave).
pub fn openpty() -> (std::fs::File, std::os::fd::OwnedFd) {
    let mut master = -1;
    let mut slave = -1;
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors into the ints we pass and reads `size`.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened for us and are owned by nothing else.
    unsafe {
        (
            <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(master),
            <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(slave),
        )
    }
}

/// The head the runner's update of the branch pushed (`…, is pushed at <12 hex>`), checked to
/// be one CI passed before anything after it: what a merge after the update may merge.
#[allow(dead_code)]
pub fn updated_head_passed_ci(all: &str) -> String {
    let head = all
        .split(", is pushed at ")
        .nth(1)
        .and_then(|rest| rest.get(..12))
        .expect("the update's push is reported")
        .to_string();
    let after = all
        .split(&format!("pushed at {head}"))
        .nth(1)
        .unwrap_or_default();
    assert!(
        after.contains(&format!("CI checks let {head} merge")),
        "CI passed the updated head {head} before the merge: {all}"
    );
    head
}
