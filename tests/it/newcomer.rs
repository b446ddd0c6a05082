//! A newcomer's first hour, through the real binary: a fresh project, `init`, two issues made
//! with `issue new`, `doctor`, `run` with the scripted agent (both merged on the first run);
//! then a forced escalation whose printed recovery commands, run exactly as printed, bring
//! the issue back and the next run merges it. Every command runs with its `--config`
//! defaulting to `./sdlc-config.json`, from the project directory, as a person would type it.

use crate::e2e;

use e2e::{git, merged_issues, BIN};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Newcomer {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    origin: PathBuf,
    script: PathBuf,
}

impl Newcomer {
    /// A clone of a bare origin with one commit, nothing else: no config, no issues.
    fn new() -> Newcomer {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        sdlc_runner::commands::demo::init_repository(&root).expect("git repository");
        let script = root.join("script.json");
        std::fs::write(&script, "{}").expect("script");
        Newcomer {
            project: root.join("project"),
            origin: root.join("origin.git"),
            script,
            root,
            _tmp: tmp,
        }
    }

    /// `sdlc-runner ARGS` in the project directory, with the scripted agent's script and a
    /// state directory of its own.
    fn sdlc(&self, args: &[&str]) -> Output {
        self.sdlc_with(BIN, args)
    }

    fn sdlc_with(&self, program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .current_dir(&self.project)
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("SDLC_FAKE_AGENT_SCRIPT", &self.script)
            .env("SDLC_FAKE_AGENT_LOG", self.root.join("agent.log"))
            .output()
            .expect("run sdlc-runner")
    }

    fn config(&self) -> PathBuf {
        self.project.join("sdlc-config.json")
    }

    fn issue(&self, n: u32) -> Value {
        let path = self.project.join("issues").join(format!("{n}.json"));
        serde_json::from_str(&std::fs::read_to_string(&path).expect("issue file")).expect("json")
    }

    fn agent_calls(&self) -> usize {
        std::fs::read_to_string(self.root.join("agent.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }
}

fn all(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(out: &Output, what: &str) -> String {
    let text = all(out);
    assert_eq!(out.status.code(), Some(0), "{what}: {text}");
    text
}

/// The newcomer's edit of the config `init` wrote: the scripted agent instead of Claude.
fn use_scripted_agent(config: &Path) {
    let text = std::fs::read_to_string(config).expect("config");
    let mut cfg: Value = serde_json::from_str(&text).expect("init writes JSON");
    // The scripted agent runs as the newcomer's own process: unsandboxed, by choice, so that
    // doctor has nothing to warn about whether or not bubblewrap is installed.
    cfg["agent"] = json!({"command": BIN, "args": ["fake-agent"], "sandbox": {"kind": "none"}});
    std::fs::write(config, serde_json::to_string_pretty(&cfg).expect("json")).expect("write");
}

#[test]
fn init_issue_new_doctor_run_then_the_printed_recovery_works() {
    let n = Newcomer::new();
    ok(&n.sdlc(&["init"]), "init");
    use_scripted_agent(&n.config());

    let body = n.root.join("body.md");
    std::fs::write(&body, "Add a greeting to the README.\n").expect("body");
    let first = ok(
        &n.sdlc(&[
            "issue",
            "new",
            "Greet the reader",
            "--body-file",
            body.to_str().expect("utf8"),
        ]),
        "issue new",
    );
    assert!(first.starts_with("1\n"), "{first}");
    ok(
        &n.sdlc(&["issue", "new", "Say goodbye", "--depends-on", "1"]),
        "issue new --depends-on",
    );
    assert_eq!(n.issue(2)["body"], "Depends on: #1\n");
    assert_eq!(n.issue(2)["labels"], json!(["automatable"]));
    let list = ok(&n.sdlc(&["issue", "list"]), "issue list");
    assert!(
        list.contains("#1") && list.contains("Greet the reader") && list.contains("#2"),
        "{list}"
    );

    // Right after init, doctor has nothing to warn about and nothing fails.
    let doctor = ok(&n.sdlc(&["doctor"]), "doctor");
    assert!(!doctor.contains("warn "), "{doctor}");
    assert!(!doctor.contains("fail "), "{doctor}");

    // The first run merges both: the tracker's files and the runner's writes to them are
    // never dirt.
    let run = ok(&n.sdlc(&["run"]), "first run");
    assert_eq!(merged_issues(&n.origin), vec![1, 2], "{run}");
    assert_eq!(n.issue(1)["state"], "closed");
    assert_eq!(n.issue(2)["state"], "closed");
    assert_eq!(git(&n.project, &["status", "--porcelain"]), "");
    // startIssue is the runner's in the config `init` writes: writeSpecs, implement,
    // simplify and verify are the agent's.
    assert_eq!(n.agent_calls(), 8, "4 agent steps per issue: {run}");

    // A forced escalation: every verify of issue 3 fails the same way.
    ok(&n.sdlc(&["issue", "new", "Fix the typo"]), "issue new");
    std::fs::write(
        &n.script,
        json!({"steps": {"3:verify": ["fail-test", "fail-test", "fail-test"]}}).to_string(),
    )
    .expect("script");
    let halted = n.sdlc(&["run"]);
    let text = all(&halted);
    assert_eq!(halted.status.code(), Some(1), "{text}");
    assert_eq!(n.issue(3)["escalated"], true, "{text}");
    let recovery: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("and run again:"))
        .skip(1)
        .take_while(|l| l.starts_with("  sdlc-runner "))
        .collect();
    let config = n.config();
    let config = config.display();
    assert_eq!(
        recovery,
        vec![
            format!("  sdlc-runner release 3 --config {config}"),
            format!("  sdlc-runner run --config {config}")
        ],
        "{text}"
    );

    // The agent is fixed; the printed commands, run exactly as printed, merge issue 3.
    std::fs::write(&n.script, "{}").expect("script");
    let mut outputs = Vec::new();
    for line in &recovery {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "sdlc-runner");
        outputs.push(ok(&n.sdlc_with(BIN, &words[1..]), line));
    }
    assert_eq!(n.issue(3)["escalated"], false, "{outputs:?}");
    assert_eq!(merged_issues(&n.origin), vec![1, 2, 3], "{outputs:?}");
    assert_eq!(git(&n.project, &["status", "--porcelain"]), "");
}

/// A project after `init` with the scripted agent and the given issues (`issue new` args).
fn initialised(issues: &[&[&str]]) -> Newcomer {
    let n = Newcomer::new();
    ok(&n.sdlc(&["init"]), "init");
    use_scripted_agent(&n.config());
    for args in issues {
        let mut all = vec!["issue", "new"];
        all.extend_from_slice(args);
        ok(&n.sdlc(&all), "issue new");
    }
    n
}

#[test]
fn a_missing_issue_is_a_usage_error_without_a_session() {
    let n = initialised(&[&["Only one"]]);
    let out = n.sdlc(&["run", "--issue", "99"]);
    let text = all(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("#99 does not exist"), "{text}");
    let journal = n.project.join(".git/sdlc-runner/journal.jsonl");
    let recorded = std::fs::read_to_string(&journal).unwrap_or_default();
    assert!(!recorded.contains("sessionStart"), "{recorded}");
}

/// Runs `sdlc-runner ARGS`; while it refuses (exit 2) naming a command to run first, runs
/// that command exactly as printed (following its own refusals the same way), then again.
fn follow(n: &Newcomer, args: &[&str], said: &mut Vec<String>) -> String {
    for _ in 0..3 {
        let out = n.sdlc(args);
        let text = all(&out);
        if out.status.code() == Some(0) {
            return text;
        }
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains("precondition"), "{text}");
        let command = text
            .split('`')
            .find(|c| c.starts_with("sdlc-runner run "))
            .unwrap_or_else(|| panic!("no command to run in: {text}"))
            .to_string();
        assert!(said.len() < 10, "{said:?}");
        said.push(command.clone());
        let words: Vec<&str> = command.split_whitespace().collect();
        follow(n, &words[1..], said);
    }
    panic!("{args:?} never became runnable: {said:?}");
}

#[test]
fn a_step_that_cannot_run_says_what_to_do_and_doing_it_works() {
    let n = initialised(&[&["Step by step"]]);
    let mut said = Vec::new();
    // verify on a fresh issue: each refusal names the step that makes its precondition hold.
    let text = follow(&n, &["run", "--step", "verify"], &mut said);
    assert!(text.contains("verify"), "{text}");
    let steps: Vec<&str> = said.iter().filter_map(|c| c.rsplit(' ').next()).collect();
    assert_eq!(steps, ["startIssue", "implement", "writeSpecs"], "{said:?}");
}

#[test]
fn an_issue_without_the_label_is_named_not_skipped_silently() {
    let n = initialised(&[&["Not yet", "--label", "later"]]);
    let out = n.sdlc(&["run"]);
    let text = ok(&out, "run");
    assert!(text.contains("#1 lack the label automatable"), "{text}");
    let list = ok(&n.sdlc(&["issue", "list"]), "issue list");
    assert!(list.contains("lacks the label automatable"), "{list}");
}

#[test]
fn dry_run_needs_no_agent_and_names_the_binary_it_would_run() {
    let n = initialised(&[&["Plan it"]]);
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(n.config()).expect("config")).expect("json");
    cfg["agent"] = json!({"command": "no-such-agent-installed"});
    std::fs::write(n.config(), cfg.to_string()).expect("config");
    let text = ok(&n.sdlc(&["run", "--dry-run"]), "dry run");
    assert!(text.contains("would work on issue #1"), "{text}");
    assert!(
        text.contains("step 3 writeSpecs: no-such-agent-installed"),
        "{text}"
    );
    assert!(
        text.contains("a clean issue: 4 agent invocation(s) and 6 builtin action(s)"),
        "{text}"
    );
    // Builtin steps are not agent calls: the plan's worst case counts them apart.
    assert!(
        text.contains("worst case: 620 agent invocations between merges, 0 before a halt if nothing succeeds; 1120 step attempts"),
        "{text}"
    );
    // A real run still refuses before anything starts.
    assert_eq!(n.sdlc(&["run"]).status.code(), Some(2));
}

#[test]
fn decide_with_nothing_pending_has_its_own_code() {
    let n = initialised(&[]);
    let out = n.sdlc(&["decide", "retry"]);
    assert_eq!(out.status.code(), Some(3), "{}", all(&out));
    assert!(all(&out).contains("nothing to decide"), "{}", all(&out));
}

#[test]
fn the_demo_on_your_own_repository_never_touches_it_or_its_origin() {
    let mine = Newcomer::new();
    let before_project = git(&mine.project, &["for-each-ref"]);
    let before_origin = git(&mine.origin, &["for-each-ref"]);
    let demo_dir = mine.root.join("demo");
    let out = Command::new(BIN)
        .args(["demo", "--repo"])
        .arg(&mine.project)
        .arg("--dir")
        .arg(&demo_dir)
        .output()
        .expect("demo");
    let text = ok(&out, "demo --repo");
    assert!(
        text.contains("agent calls: 16 for 3 merged issue(s)"),
        "{text}"
    );
    assert_eq!(merged_issues(&demo_dir.join("origin.git")), vec![1, 2, 3]);
    assert_eq!(git(&mine.project, &["for-each-ref"]), before_project);
    assert_eq!(git(&mine.origin, &["for-each-ref"]), before_origin);
    assert_eq!(git(&mine.project, &["status", "--porcelain"]), "");
    // The copy holds the repository's own history under the demo's merges.
    let log = git(&demo_dir.join("project"), &["log", "--format=%s", "main"]);
    assert!(log.contains("initial commit"), "{log}");
}

#[test]
fn the_release_an_issue_run_prints_for_a_quarantined_issue_works_as_printed() {
    let n = initialised(&[&["Hard one"]]);
    std::fs::write(
        &n.script,
        json!({"steps": {"1:verify": ["fail-test", "fail-test", "fail-test"]}}).to_string(),
    )
    .expect("script");
    let out = n.sdlc(&["run", "--issue", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert_eq!(n.issue(1)["escalated"], true);
    let note = n.issue(1)["escalation"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(note.contains("sdlc-runner release 1"), "{note}");

    let out = n.sdlc(&["run", "--issue", "1"]);
    let text = all(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let command = text
        .split('`')
        .find(|c| c.starts_with("sdlc-runner release "))
        .unwrap_or_else(|| panic!("no release command in: {text}"))
        .to_string();
    std::fs::write(&n.script, "{}").expect("script");
    let words: Vec<&str> = command.split_whitespace().collect();
    ok(&n.sdlc(&words[1..]), &command);
    let shown = ok(&n.sdlc(&["issue", "show", "1"]), "issue show");
    assert!(shown.contains("selectable"), "{shown}");
    ok(
        &n.sdlc(&["run", "--issue", "1"]),
        "run --issue 1 after release",
    );
    assert_eq!(merged_issues(&n.origin), vec![1]);
}

/// The README's `issue new --body-file spec.md` with spec.md in the project: `run` would
/// refuse to start over the untracked file, so `doctor` fails naming it and `--dry-run` warns
/// before its plan; once it is gone (or the body comes on stdin, as the README now shows),
/// doctor is ready again.
#[test]
fn a_body_file_left_in_the_tree_is_named_by_doctor_and_the_dry_run_before_run_refuses_it() {
    let n = initialised(&[]);
    let spec = n.project.join("spec.md");
    std::fs::write(&spec, "Add a health endpoint.\n").expect("spec");
    ok(
        &n.sdlc(&[
            "issue",
            "new",
            "Add a health endpoint",
            "--body-file",
            "spec.md",
        ]),
        "issue new",
    );
    let doctor = n.sdlc(&["doctor"]);
    let said = all(&doctor);
    assert_ne!(doctor.status.code(), Some(0), "{said}");
    assert!(
        said.lines().any(|l| l.starts_with("fail  tree")
            && l.contains("?? spec.md")
            && l.contains("git stash")),
        "doctor names the file and the fix: {said}"
    );
    let plan = ok(&n.sdlc(&["run", "--dry-run"]), "dry run");
    assert!(
        plan.contains(
            "warning: the working tree has changes that are no issue's work (?? spec.md)"
        ),
        "{plan}"
    );
    let run = n.sdlc(&["run"]);
    assert!(
        all(&run).contains("?? spec.md"),
        "run refuses what doctor named: {}",
        all(&run)
    );
    std::fs::remove_file(&spec).expect("remove spec.md");
    let mut stdin_body = Command::new(BIN)
        .args(["issue", "new", "Say goodbye", "--body-file", "-"])
        .current_dir(&n.project)
        .env("XDG_STATE_HOME", n.root.join("state"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("issue new");
    {
        use std::io::Write;
        let mut input = stdin_body.stdin.take().expect("stdin");
        input
            .write_all(b"Print a farewell.\n")
            .expect("write the body");
    }
    let out = stdin_body.wait_with_output().expect("issue new");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(n.issue(2)["body"], "Print a farewell.\n");
    let doctor = all(&n.sdlc(&["doctor"]));
    assert!(
        doctor.lines().any(|l| l.starts_with("ok    tree")),
        "{doctor}"
    );
}

/// `config check` reads `./sdlc-config.json` as every command does, and a missing config file
/// points at `init`.
#[test]
fn config_check_reads_the_default_file_and_a_missing_one_suggests_init() {
    let n = Newcomer::new();
    let missing = n.sdlc(&["run"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        all(&missing).contains("sdlc-runner init"),
        "{}",
        all(&missing)
    );
    let missing = n.sdlc(&["config", "check"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        all(&missing).contains("sdlc-runner init"),
        "{}",
        all(&missing)
    );
    ok(&n.sdlc(&["init"]), "init");
    let checked = ok(&n.sdlc(&["config", "check"]), "config check");
    assert!(checked.contains("sdlc-config.json: ok"), "{checked}");
}
