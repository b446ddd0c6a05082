//! What reaches main is the commit CI verified, and a person's move during CI is an event the
//! runner answers: the real binary on real git with the local forge, whose CI command blocks
//! until the test has acted (a force-push, commits on top, a merge by hand).

use crate::e2e;

use e2e::{code, git, text, Project};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// A project whose builtin monitorCI runs a CI command that records the commit it tests and,
/// on its first run, waits until the test opens the gate.
struct Gated {
    p: Project,
    started: PathBuf,
    gate: PathBuf,
    runs: PathBuf,
}

fn gated() -> Gated {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let started = p.root.join("ci-started");
    let gate = p.root.join("ci-gate");
    let runs = p.root.join("ci-runs.log");
    let script = format!(
        "git rev-parse HEAD >> {runs}; touch {started}; while [ ! -e {gate} ]; do sleep 0.05; done",
        runs = runs.display(),
        started = started.display(),
        gate = gate.display()
    );
    let mut extra = json!({ "steps": e2e::builtin_steps() });
    extra["localCi"] = json!({"command": ["sh", "-c", script], "timeoutMin": 1});
    p.set_config(extra);
    Gated {
        p,
        started,
        gate,
        runs,
    }
}

impl Gated {
    /// Starts the runner and waits until CI runs on the branch: (runner, branch, the commit
    /// the runner pushed).
    fn start_until_ci(&self) -> (Child, String, String) {
        let child = self.p.spawn(&[]);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.started.exists() {
            assert!(Instant::now() < deadline, "CI never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        let heads = git(
            &self.p.origin,
            &[
                "for-each-ref",
                "--format=%(refname:short) %(objectname)",
                "refs/heads",
            ],
        );
        let (branch, sha) = heads
            .lines()
            .filter_map(|l| l.split_once(' '))
            .find(|(b, _)| b.starts_with("1-"))
            .map(|(b, s)| (b.to_string(), s.to_string()))
            .expect("the issue's branch on origin");
        (child, branch, sha)
    }

    /// A person's clone of origin with `branch` checked out.
    fn person(&self, branch: &str) -> PathBuf {
        let dir = self.p.root.join("person");
        git(
            &self.p.root,
            &[
                "clone",
                "--quiet",
                self.p.origin.to_str().expect("utf8"),
                "person",
            ],
        );
        for (k, v) in [("user.name", "A Person"), ("user.email", "person@invalid")] {
            git(&dir, &["config", k, v]);
        }
        git(&dir, &["checkout", "--quiet", branch]);
        dir
    }

    fn open_gate_and_wait(&self, child: Child) -> std::process::Output {
        std::fs::write(&self.gate, "go").expect("gate");
        e2e::wait_output(child, Duration::from_secs(120))
    }

    fn ci_runs(&self) -> Vec<String> {
        std::fs::read_to_string(&self.runs)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

fn commit_file(dir: &Path, name: &str, body: &str, message: &str) -> String {
    std::fs::write(dir.join(name), body).expect("write");
    git(dir, &["add", name]);
    git(dir, &["commit", "--quiet", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// A person force-pushes the branch while CI tests the runner's commit: the rewritten head,
/// which CI never checked, is not merged, the issue is neither closed nor escalated, and the
/// run stops naming the branch and both commits.
#[test]
fn a_force_push_during_ci_is_not_merged_and_blames_no_issue() {
    let g = gated();
    let (child, branch, ours) = g.start_until_ci();
    let person = g.person(&branch);
    git(&person, &["reset", "--quiet", "--hard", "HEAD~1"]);
    let theirs = commit_file(&person, "rewritten.txt", "a person's version\n", "rewrite");
    git(&person, &["push", "--quiet", "--force", "origin", &branch]);

    let out = g.open_gate_and_wait(child);
    let all = text(&out);
    assert_eq!(code(&out), 1, "the run stops: {all}");
    let main_log = git(&g.p.origin, &["log", "--format=%H %s", "main"]);
    assert!(
        !main_log.contains(&theirs),
        "the rewritten head reached main: {main_log}"
    );
    assert!(!main_log.contains("Merge issue #1"), "{main_log}");
    let issue = g.p.issue(1);
    assert_eq!(issue["state"], "open", "{issue}");
    assert_eq!(issue["escalated"], false, "{issue}");
    for named in [branch.as_str(), &ours[..12], &theirs[..12]] {
        assert!(all.contains(named), "the stop names {named}: {all}");
    }
    assert!(
        all.contains("escalated issues this session: none") && all.contains("no issue was blamed"),
        "no issue is blamed: {all}"
    );
    // The person's rewrite stays on origin: nothing of the runner's overwrote it.
    let head = git(&g.p.origin, &["rev-parse", &format!("refs/heads/{branch}")]);
    assert_eq!(head, theirs);
}

/// A person pushes a commit on top of the runner's while CI tests the runner's: CI runs again
/// on the new head, and that head, the one CI passed, is what is merged.
#[test]
fn commits_pushed_on_top_during_ci_are_tested_again_then_merged() {
    let g = gated();
    let (child, branch, ours) = g.start_until_ci();
    let person = g.person(&branch);
    let theirs = commit_file(&person, "more.txt", "a person's addition\n", "add more");
    git(&person, &["push", "--quiet", "origin", &branch]);

    let out = g.open_gate_and_wait(child);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(
        g.ci_runs(),
        vec![ours, theirs.clone()],
        "CI ran on both heads: {all}"
    );
    let merge = git(&g.p.origin, &["log", "-1", "--format=%s %P", "main"]);
    assert!(merge.starts_with("Merge issue #1"), "{merge}");
    assert!(
        merge.ends_with(&theirs),
        "the merge's second parent is the tested head: {merge}"
    );
    assert_eq!(g.p.issue(1)["state"], "closed");
}

/// A person merges the branch into main while CI runs: the runner sees it, records the issue
/// merged once and merges nothing a second time.
#[test]
fn a_persons_merge_during_ci_is_recorded_once_and_not_merged_again() {
    let g = gated();
    let (child, branch, _ours) = g.start_until_ci();
    let person = g.person(&branch);
    git(&person, &["checkout", "--quiet", "main"]);
    git(
        &person,
        &[
            "merge",
            "--quiet",
            "--no-ff",
            "-m",
            "Merged by hand",
            &format!("origin/{branch}"),
        ],
    );
    git(&person, &["push", "--quiet", "origin", "main"]);
    let merged_by_hand = git(&person, &["rev-parse", "HEAD"]);

    let out = g.open_gate_and_wait(child);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let origin_main = git(&g.p.origin, &["rev-parse", "main"]);
    assert_eq!(
        origin_main, merged_by_hand,
        "nothing was merged after the person's merge: {all}"
    );
    assert_eq!(g.p.issue(1)["state"], "closed", "{all}");
    let records =
        g.p.journal()
            .iter()
            .filter(|l| l["effect"]["effect"] == "recordMerged")
            .count();
    assert_eq!(records, 1, "the issue was closed once");
}

/// An agent-run merge that reports success without merging: the issue is not recorded merged
/// (the commit CI passed is not on origin's main), the attempt fails, and the next attempt's
/// merge lands that commit.
#[test]
fn an_agent_merge_that_did_not_land_the_verified_commit_is_not_recorded_merged() {
    let mut steps = e2e::builtin_steps();
    steps["merge"] = json!({});
    let p = Project::new(
        &[(1, "First issue", "Do one thing.")],
        json!({"steps": {"merge": ["no-branch", "ok"]}}),
        json!({ "steps": steps }),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(
        all.contains("merge reported success, but") && all.contains("is not on origin's main"),
        "the first merge is not taken at its word: {all}"
    );
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
}

/// Main moves after the PR opened: while CI tests the runner's commit a person pushes a change
/// to the same file on main, so the merge conflicts. The conflict is an answer of its own
/// (`mergeConflict`, naming the file) that the machine meets with one repair by the agent;
/// the repair does not resolve it (the agent changes nothing), the runner's update meets the
/// same conflict, and the issue escalates naming the file. Nothing reaches main, and no
/// commit of the runner holds conflict markers.
#[test]
fn a_conflict_after_the_pr_opened_gets_one_repair_then_escalates_naming_the_file() {
    let g = gated();
    g.p.set_script(json!({"steps": {
        "implement": ["write-shared"],
        "merge": ["no-branch"],
    }}));
    let (child, branch, _ours) = g.start_until_ci();
    let person = g.person(&branch);
    git(&person, &["checkout", "--quiet", "main"]);
    commit_file(
        &person,
        "shared.txt",
        "a person's shared line\n",
        "person: shared",
    );
    git(&person, &["push", "--quiet", "origin", "main"]);

    let out = g.open_gate_and_wait(child);
    let all = text(&out);
    let main_log = git(&g.p.origin, &["log", "--format=%H %s", "main"]);
    assert!(!main_log.contains("Merge issue #1"), "{main_log}\n{all}");
    let issue = g.p.issue(1);
    assert_eq!(issue["escalated"], true, "{issue}\n{all}");
    let diagnostic = issue["escalation"].as_str().unwrap_or_default();
    assert!(
        diagnostic.contains("shared.txt"),
        "the escalation names the conflicting file: {diagnostic}"
    );
    let journal = g.p.journal();
    let conflicts: Vec<&serde_json::Value> = journal
        .iter()
        .filter(|r| r["event"]["event"] == "mergeConflict")
        .collect();
    assert_eq!(conflicts.len(), 2, "the merge's and the update's: {all}");
    for c in &conflicts {
        assert_eq!(c["event"]["paths"], json!(["shared.txt"]), "{c}");
    }
    let repairs: Vec<String> =
        g.p.invocations()
            .into_iter()
            .filter(|l| l.contains(" merge "))
            .collect();
    assert_eq!(
        repairs.len(),
        1,
        "one repair by the agent: {repairs:?}\n{all}"
    );
    let refs = git(&g.p.origin, &["for-each-ref", "--format=%(refname)"]);
    for r in refs.lines() {
        let grep = std::process::Command::new("git")
            .args(["grep", "-l", "-e", "^<<<<<<< ", r])
            .current_dir(&g.p.origin)
            .output()
            .expect("git grep");
        let marked = String::from_utf8_lossy(&grep.stdout);
        assert!(
            marked.trim().is_empty(),
            "conflict markers on {r}: {marked}"
        );
    }
}

/// The CI check of the main-is-green tests: a file may say `issue 1:` only if no other does
/// (two files defining the same setting), unless the tree holds the agent's `ci-fixed`.
/// Every run appends the commit it tests to `runs`, and waits until `gate` exists.
fn one_setting_ci(p: &Project, runs: &Path, gate: &Path) -> String {
    let started = p.root.join("ci-started");
    format!(
        "git rev-parse HEAD >> {runs}; touch {started}; while [ ! -e {gate} ]; do sleep 0.05; done; \
         n=$(grep -rls --exclude-dir=.git '^issue 1:' . | wc -l); \
         if [ \"$n\" -gt 1 ] && [ ! -e ci-fixed ]; then echo \"setting 'issue 1' defined in $n files\"; exit 1; fi",
        runs = runs.display(),
        started = started.display(),
        gate = gate.display()
    )
}

/// Whether commit `sha` of `repo` passes [`one_setting_ci`]'s check.
fn passes_one_setting(repo: &Path, sha: &str) -> bool {
    let grep = std::process::Command::new("git")
        .args(["grep", "-l", "-e", "^issue 1:", sha])
        .current_dir(repo)
        .output()
        .expect("git grep");
    let defined = String::from_utf8_lossy(&grep.stdout).lines().count();
    let fixed = std::process::Command::new("git")
        .args(["cat-file", "-e", &format!("{sha}:ci-fixed")])
        .current_dir(repo)
        .status()
        .expect("git cat-file")
        .success();
    defined <= 1 || fixed
}

/// Every commit on origin's main's first-parent history that fails the check.
fn red_on_main(origin: &Path) -> Vec<String> {
    git(origin, &["rev-list", "--first-parent", "main"])
        .lines()
        .filter(|sha| !passes_one_setting(origin, sha))
        .map(str::to_string)
        .collect()
}

/// A person pushes to main, while CI tests the issue's branch, a change that merges cleanly
/// but breaks together with the issue's (a second file defining the same setting). CI passes
/// the branch alone; the merge builds the commit main would hold, CI fails it, and main never
/// holds it: the failure goes back to the issue's cycle as monitorCI's, in words that name the
/// combination, and the agent's repair then lands (CI passing the repaired branch merged onto
/// that main, the exact commit main then holds).
#[test]
fn a_persons_push_to_main_that_breaks_with_the_branch_never_reaches_main() {
    let p = Project::new(
        &[(1, "First issue", "Do one thing.")],
        json!({"steps": {"monitorCI": ["fix-ci"]}}),
        json!({}),
    );
    let runs = p.root.join("ci-runs.log");
    let gate = p.root.join("ci-gate");
    let mut extra = json!({ "steps": e2e::builtin_steps() });
    extra["localCi"] =
        json!({"command": ["sh", "-c", one_setting_ci(&p, &runs, &gate)], "timeoutMin": 1});
    p.set_config(extra);
    let g = Gated {
        started: p.root.join("ci-started"),
        p,
        gate,
        runs,
    };
    let (child, branch, _ours) = g.start_until_ci();
    let person = g.person(&branch);
    git(&person, &["checkout", "--quiet", "main"]);
    let theirs = commit_file(
        &person,
        "person.conf",
        "issue 1: set by a person\n",
        "person: the same setting",
    );
    git(&person, &["push", "--quiet", "origin", "main"]);

    let out = g.open_gate_and_wait(child);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(red_on_main(&g.p.origin), Vec::<String>::new(), "{all}");
    let combination = format!("CI failed on {branch} merged onto main {}", &theirs[..12]);
    assert!(all.contains(&combination), "{combination}: {all}");
    let prompts = std::fs::read_to_string(g.p.root.join("prompts.log")).unwrap_or_default();
    assert!(
        prompts.contains("merged onto main") && prompts.contains("defined in 2 files"),
        "the repair is handed the combination's failure: {prompts}"
    );
    let journal = g.p.journal();
    assert!(
        journal
            .iter()
            .any(|r| r["event"]["event"] == "ciFailedTogether"),
        "{all}"
    );
    assert_eq!(g.p.issue(1)["state"], "closed", "{all}");
    assert_eq!(g.p.issue(1)["escalated"], false, "{all}");
    // Main holds exactly a commit CI passed: its merge of the repaired branch onto the
    // person's main.
    let landed = git(&g.p.origin, &["rev-parse", "main"]);
    assert!(g.ci_runs().contains(&landed), "CI ran on {landed}: {all}");
    let parents = git(&g.p.origin, &["log", "-1", "--format=%P", "main"]);
    assert!(parents.starts_with(&theirs), "{parents}");
}

/// Main did not move after CI passed the branch: the merge's tree is the one CI passed, and CI
/// runs once, on the branch, not again on the merge.
#[test]
fn when_main_did_not_move_ci_runs_once() {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let runs = p.root.join("ci-runs.log");
    let gate = p.root.join("ci-gate");
    std::fs::write(&gate, "open").expect("gate");
    let mut extra = json!({ "steps": e2e::builtin_steps() });
    extra["localCi"] =
        json!({"command": ["sh", "-c", one_setting_ci(&p, &runs, &gate)], "timeoutMin": 1});
    p.set_config(extra);
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    let ran = std::fs::read_to_string(&runs).expect("CI ran");
    assert_eq!(ran.lines().count(), 1, "{ran}\n{all}");
}

/// The runner is killed after CI passed the commit main would hold (a person's compatible push
/// to main during CI) and before main moved. The restart builds the same commit again (a
/// merge is dated by its parents), finds CI's verdict on it, and pushes it: CI does not run on
/// the combination twice, and main holds exactly the commit it passed.
#[test]
fn a_kill_after_ci_passed_the_combination_lands_it_without_testing_it_again() {
    let g = gated();
    let all = ["run", "--config", g.p.config.to_str().expect("utf8")];
    let child =
        g.p.command(&all)
            .env(
                sdlc_runner::failpoint::CRASH_AT_ENV,
                "merge: combination tested",
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn runner");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !g.started.exists() {
        assert!(Instant::now() < deadline, "CI never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let branch = git(
        &g.p.origin,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
    )
    .lines()
    .find(|b| b.starts_with("1-"))
    .expect("the issue's branch on origin")
    .to_string();
    let person = g.person(&branch);
    git(&person, &["checkout", "--quiet", "main"]);
    let theirs = commit_file(&person, "person.txt", "unrelated\n", "person: unrelated");
    git(&person, &["push", "--quiet", "origin", "main"]);
    let killed = g.open_gate_and_wait(child);
    assert_ne!(code(&killed), 0, "{}", text(&killed));
    assert_eq!(
        git(&g.p.origin, &["rev-parse", "main"]),
        theirs,
        "not merged yet"
    );
    let tested = g.ci_runs();
    assert_eq!(
        tested.len(),
        2,
        "the branch, then the combination: {tested:?}"
    );
    // A restart a second later or more: a merge dated by the clock would be another commit.
    std::thread::sleep(Duration::from_millis(1_100));

    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(g.ci_runs(), tested, "CI ran again: {all}");
    assert_eq!(git(&g.p.origin, &["rev-parse", "main"]), tested[1], "{all}");
    assert_eq!(g.p.issue(1)["state"], "closed", "{all}");
}

/// The last check for conflict markers before the merge is git's own, with the project's
/// attributes: a person's commit that adds a literal `<<<<<<<` line to a file whose
/// `conflict-marker-size` is 32 (as the auto-commit's check already allowed) is merged, not
/// refused as a conflict in which the forge names no file.
#[test]
fn a_line_the_projects_conflict_marker_size_allows_is_merged() {
    let g = gated();
    let (child, branch, _) = g.start_until_ci();
    let person = g.person(&branch);
    commit_file(
        &person,
        ".gitattributes",
        "*.md conflict-marker-size=32\n",
        "markers in docs are longer",
    );
    let theirs = commit_file(
        &person,
        "git.md",
        "How a conflict looks:\n<<<<<<< HEAD\nours\n>>>>>>> theirs\n",
        "document conflicts",
    );
    git(&person, &["push", "--quiet", "origin", &branch]);

    let out = g.open_gate_and_wait(child);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(!all.contains("names no file"), "{all}");
    let merge = git(&g.p.origin, &["log", "-1", "--format=%s %P", "main"]);
    assert!(
        merge.starts_with("Merge issue #1") && merge.ends_with(&theirs),
        "{merge}\n{all}"
    );
}

/// A real conflict marker in a person's commit is refused before the merge (by the check of
/// the branch's own commits, which runs first), and the refusal names the file and the line.
#[test]
fn a_conflict_marker_before_the_merge_is_refused_naming_its_file_and_line() {
    let g = gated();
    let (child, branch, _) = g.start_until_ci();
    let person = g.person(&branch);
    commit_file(
        &person,
        "left.txt",
        "one\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> other\n",
        "a half-resolved merge",
    );
    git(&person, &["push", "--quiet", "origin", &branch]);

    let out = g.open_gate_and_wait(child);
    let all = text(&out);
    assert!(all.contains("left.txt:2"), "names the file and line: {all}");
    assert!(!all.contains("names no file"), "{all}");
}

/// A branch of the issue's name was on origin before the run (a person started the issue
/// there, or a runner on another clone pushed it and its journal is gone): the runner sees it
/// at startIssue, says so naming the branch and its head, and builds on it; it is neither
/// pushed over nor reported as a person rewriting the branch, and the person's commit is in
/// what merges.
#[test]
fn a_branch_of_the_issue_already_on_origin_is_taken_as_the_starting_point_and_said() {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let mut steps = e2e::builtin_steps();
    steps["startIssue"] = json!({"run": "builtin"});
    p.set_config(json!({ "steps": steps }));
    // A person's clone pushes the issue's branch with a commit of theirs.
    let theirs = p.root.join("theirs");
    git(
        &p.root,
        &[
            "clone",
            "--quiet",
            p.origin.to_str().expect("utf8"),
            "theirs",
        ],
    );
    git(&theirs, &["checkout", "--quiet", "-b", "1-first-issue"]);
    std::fs::write(theirs.join("started.txt"), "a person's start\n").expect("write");
    git(&theirs, &["add", "started.txt"]);
    git(
        &theirs,
        &[
            "-c",
            "user.name=P",
            "-c",
            "user.email=p@example.com",
            "commit",
            "--quiet",
            "-m",
            "a person's start",
        ],
    );
    git(&theirs, &["push", "--quiet", "origin", "1-first-issue"]);
    let head = git(&theirs, &["rev-parse", "HEAD"]);
    let head = &head.trim()[..12];

    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), vec![1], "{all}");
    assert!(!all.contains("rewrote"), "{all}");
    assert!(
        all.contains(&format!(
            "origin already had the branch 1-first-issue at {head}"
        )),
        "{all}"
    );
    let merged = git(&p.origin, &["show", "main:started.txt"]);
    assert_eq!(
        merged.trim(),
        "a person's start",
        "their commit merged with the runner's work"
    );
}
