//! The repository layer against real git: a bare `origin` and a clone with `main`, a fake `gh`
//! script for the GitHub forge.

use crate::e2e;

use e2e::git;
use sdlc_runner::artifacts::StateFile as Hint;
use sdlc_runner::artifacts::{self, StateFile};
use sdlc_runner::forge::{CiState, ForgeError, PrState};
use sdlc_runner::git::exclude::exclude_artifacts;
use sdlc_runner::git::repo::{Repo, RepoError};
use sdlc_runner::ports::ForgePort;
use sdlc_runner::services::github::GitHubForge;
use sdlc_runner::services::local::LocalForge;
use sdlc_runner::step::{Check, Step};
use sdlc_runner::steps::checks::{self as probe, Detected, ProbeError, StepContext};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

struct Fixture {
    _root: tempfile::TempDir,
    work: PathBuf,
    /// A second clone, playing the person or bot that merges on origin.
    other: PathBuf,
    gh_dir: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let origin = root.path().join("origin.git");
        let work = root.path().join("work");
        let other = root.path().join("other");
        let gh_dir = root.path().join("gh");
        fs::create_dir_all(&gh_dir).unwrap();
        git(
            root.path(),
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                origin.to_str().unwrap(),
            ],
        );
        git(
            root.path(),
            &[
                "clone",
                "-q",
                origin.to_str().unwrap(),
                work.to_str().unwrap(),
            ],
        );
        configure(&work);
        fs::write(work.join("README.md"), "hello\n").unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-qm", "initial"]);
        git(&work, &["push", "-q", "-u", "origin", "main"]);
        git(
            root.path(),
            &[
                "clone",
                "-q",
                origin.to_str().unwrap(),
                other.to_str().unwrap(),
            ],
        );
        configure(&other);
        exclude_artifacts(&work).unwrap();
        Fixture {
            _root: root,
            work,
            other,
            gh_dir,
        }
    }

    fn repo(&self) -> Repo {
        Repo::open(&self.work).unwrap()
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.work.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn commit(&self, rel: &str, text: &str) {
        self.write(rel, text);
        git(&self.work, &["add", "-A"]);
        git(&self.work, &["commit", "-qm", &format!("change {rel}")]);
    }

    fn branch(&self, name: &str) {
        git(&self.work, &["checkout", "-q", "-b", name]);
    }

    fn push(&self) {
        git(&self.work, &["push", "-q", "-u", "origin", "HEAD"]);
    }

    fn write_specs(&self, dir: &str) {
        for f in [
            "requirements.md",
            "design.md",
            "tasks.md",
            "feature.gherkin",
        ] {
            self.write(&format!("specs/{dir}/{f}"), "content\n");
        }
    }

    /// Merges `branch` into main on origin from the other clone, as GitHub's merge button would.
    fn merge_on_origin(&self, branch: &str) {
        git(&self.other, &["fetch", "-q", "origin"]);
        git(&self.other, &["checkout", "-q", "main"]);
        git(&self.other, &["pull", "-q", "--ff-only"]);
        git(
            &self.other,
            &[
                "merge",
                "-q",
                "--no-ff",
                "-m",
                "merge",
                &format!("origin/{branch}"),
            ],
        );
        git(&self.other, &["push", "-q", "origin", "main"]);
    }

    /// A fake `gh`: the pull requests' list (`api --include …/pulls?head=…`) is
    /// gh/pr-list.json (gh/pr-list.rc: gh reached no API and exited so); `pr checks` prints gh/checks.json,
    /// gh/checks.err on stderr, and exits with gh/checks.rc. Every call is logged.
    fn gh(&self, require_checks: bool) -> GitHubForge {
        let d = self.gh_dir.display();
        let script = format!(
            r#"#!/bin/sh
echo "$@" >> "{d}/calls.log"
case "$1 $2" in
  "pr list") cat "{d}/pr-list.json"; exit $(cat "{d}/pr-list.rc" 2>/dev/null || echo 0) ;;
  "api --include")
    case "$3" in *"/pulls?"*)
      rc=$(cat "{d}/pr-list.rc" 2>/dev/null || echo 0)
      if [ "$rc" != 0 ]; then echo "error connecting to api.github.com" >&2; exit "$rc"; fi
      printf 'HTTP/2.0 200 OK\r\n\r\n'; cat "{d}/pr-list.json"; exit 0 ;;
    esac
    case "$3" in *check-runs*) cat "{d}/check-runs.http" ;; *) cat "{d}/status.http" ;; esac
    exit $(cat "{d}/api.rc" 2>/dev/null || echo 0) ;;
  "pr checks")
    case "$*" in *bucket*) if [ -f "{d}/no-bucket" ]; then echo 'Unknown JSON field: "bucket"' >&2; exit 1; fi ;; esac
    cat "{d}/checks.json" 2>/dev/null; cat "{d}/checks.err" >&2 2>/dev/null
    exit $(cat "{d}/checks.rc" 2>/dev/null || echo 0) ;;
esac
echo "unexpected gh call: $*" >&2; exit 2
"#
        );
        let path = self.gh_dir.join("gh");
        fs::write(&path, script).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        self.prs("[]");
        GitHubForge {
            gh: path,
            repo_dir: self.work.clone(),
            require_checks,
            authority: Default::default(),
            repo: self.repo(),
        }
    }

    fn prs(&self, json: &str) {
        fs::write(self.gh_dir.join("pr-list.json"), json).unwrap();
    }

    /// The checks as `gh pr checks --json` lists them (`json`, `err`, `rc`), and the same
    /// checks as GitHub's REST API answers `gh api --include` for the commit's check runs and
    /// statuses (a `Bad credentials` error: HTTP 401).
    fn checks(&self, json: &str, err: &str, rc: i32) {
        fs::write(self.gh_dir.join("checks.json"), json).unwrap();
        fs::write(self.gh_dir.join("checks.err"), err).unwrap();
        fs::write(self.gh_dir.join("checks.rc"), rc.to_string()).unwrap();
        let listed: Vec<serde_json::Value> = serde_json::from_str(json).unwrap_or_default();
        let runs: Vec<serde_json::Value> = listed
            .iter()
            .map(|c| {
                let how = c["bucket"]
                    .as_str()
                    .or(c["state"].as_str())
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let (status, conclusion) = match how.as_str() {
                    "pass" | "success" => ("completed", Some("success")),
                    "fail" | "failure" => ("completed", Some("failure")),
                    "skipping" | "skipped" => ("completed", Some("skipped")),
                    _ => ("in_progress", None),
                };
                serde_json::json!({"name": c["name"], "status": status, "conclusion": conclusion})
            })
            .collect();
        let (head, api_rc, runs_body, status_body) = if err.contains("HTTP 401") {
            let body = r#"{"message":"Bad credentials"}"#.to_string();
            ("HTTP/2.0 401 Unauthorized", 1, body.clone(), body)
        } else {
            (
                "HTTP/2.0 200 OK",
                0,
                serde_json::json!({"total_count": runs.len(), "check_runs": runs}).to_string(),
                r#"{"state":"pending","statuses":[],"total_count":0}"#.to_string(),
            )
        };
        let answer = |body: &str| {
            format!("{head}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n{body}\n")
        };
        fs::write(self.gh_dir.join("check-runs.http"), answer(&runs_body)).unwrap();
        fs::write(self.gh_dir.join("status.http"), answer(&status_body)).unwrap();
        fs::write(self.gh_dir.join("api.rc"), api_rc.to_string()).unwrap();
    }

    fn gh_calls(&self) -> String {
        fs::read_to_string(self.gh_dir.join("calls.log")).unwrap_or_default()
    }
}

fn configure(dir: &Path) {
    git(dir, &["config", "user.email", "t@example.com"]);
    git(dir, &["config", "user.name", "Test"]);
}

fn precondition(
    r: &Repo,
    forge: &dyn ForgePort,
    step: Step,
    c: &StepContext,
) -> Result<Result<(), Check>, ProbeError> {
    probe::precondition(r, forge, step, c)
}

fn post_check(
    r: &Repo,
    forge: &dyn ForgePort,
    step: Step,
    c: &StepContext,
) -> Result<Result<(), String>, ProbeError> {
    probe::post_check(r, forge, step, c)
}

fn already_done(
    r: &Repo,
    forge: &dyn ForgePort,
    step: Step,
    c: &StepContext,
) -> Result<bool, ProbeError> {
    probe::already_done(r, forge, step, c)
}

fn detect_progress(
    r: &Repo,
    forge: &dyn ForgePort,
    hint: Option<&Hint>,
) -> Result<Option<Detected>, ProbeError> {
    probe::detect_progress(r, forge, hint, None)
}

/// The local forge without CI, reviews or PR records, on `repo`.
fn local(repo: &Repo) -> LocalForge {
    LocalForge {
        require_checks: false,
        pulls: None,
        ci: None,
        reviews: None,
        repo: repo.clone(),
    }
}

fn ctx(issue: Option<u32>) -> StepContext {
    StepContext {
        issue,
        feature: None,
        verified: None,
        pushed_weakened: false,
        builtin: false,
        gate: None,
        ci_by_train: false,
    }
}

fn pre(f: &Fixture, forge: &dyn ForgePort, step: Step, issue: Option<u32>) -> Result<(), Check> {
    precondition(&f.repo(), forge, step, &ctx(issue)).unwrap()
}

/// A pull request as GitHub's REST list names it; `state` OPEN, CLOSED or MERGED.
fn open_pr(n: u32, state: &str) -> String {
    let (rest, merged_at) = match state {
        "OPEN" => ("open", "null"),
        "MERGED" => ("closed", "\"2026-01-01T00:00:00Z\""),
        _ => ("closed", "null"),
    };
    format!(
        r#"{{"number":{n},"html_url":"https://github.com/o/r/pull/{n}","state":"{rest}","merged_at":{merged_at}}}"#
    )
}

#[test]
fn open_detects_main_and_rejects_non_repositories() {
    let f = Fixture::new();
    assert_eq!(f.repo().main, "main");
    // origin/HEAD wins when set.
    git(&f.work, &["branch", "-q", "trunk"]);
    git(&f.work, &["push", "-q", "origin", "trunk"]);
    git(
        &f.work,
        &[
            "symbolic-ref",
            "refs/remotes/origin/HEAD",
            "refs/remotes/origin/trunk",
        ],
    );
    assert_eq!(f.repo().main, "trunk");

    let plain = tempfile::tempdir().unwrap();
    git(plain.path(), &["init", "-q", "-b", "master"]);
    configure(plain.path());
    fs::write(plain.path().join("a"), "a").unwrap();
    git(plain.path(), &["add", "-A"]);
    git(plain.path(), &["commit", "-qm", "a"]);
    assert_eq!(Repo::open(plain.path()).unwrap().main, "master");

    let not_git = tempfile::tempdir().unwrap();
    let err = Repo::open(not_git.path()).unwrap_err();
    assert!(matches!(err, RepoError::NotARepo { .. }), "{err:?}");
    assert!(err
        .to_string()
        .contains(&not_git.path().display().to_string()));
    assert!(Repo::open(&not_git.path().join("missing")).is_err());
}

#[test]
fn branch_cleanliness_and_feature_branch_lookup() {
    let f = Fixture::new();
    let r = f.repo();
    assert_eq!(r.current_branch().unwrap().as_deref(), Some("main"));
    assert!(r.is_clean().unwrap());
    // Runner artifacts are excluded; anything else is dirt.
    artifacts::create_auto_mode(&f.work).unwrap();
    artifacts::write_state(&f.work, &StateFile::default()).unwrap();
    assert!(r.is_clean().unwrap());
    f.write("notes/new.txt", "x");
    assert!(!r.is_clean().unwrap());
    fs::remove_file(f.work.join("notes/new.txt")).unwrap();
    f.write("README.md", "changed\n");
    assert!(!r.is_clean().unwrap());
    git(&f.work, &["checkout", "-q", "--", "README.md"]);

    for b in ["4-small", "42-answer", "420-big"] {
        git(&f.work, &["branch", b]);
    }
    assert_eq!(r.feature_branch(4).unwrap().as_deref(), Some("4-small"));
    assert_eq!(r.feature_branch(42).unwrap().as_deref(), Some("42-answer"));
    assert_eq!(r.feature_branch(5).unwrap(), None);
    git(&f.work, &["branch", "42-another"]);
    git(&f.work, &["checkout", "-q", "42-answer"]);
    assert_eq!(r.feature_branch(42).unwrap().as_deref(), Some("42-answer"));
    git(&f.work, &["checkout", "-q", "--detach"]);
    assert_eq!(r.current_branch().unwrap(), None);
}

#[test]
fn start_issue_needs_a_clean_tree_on_main() {
    let f = Fixture::new();
    assert_eq!(pre(&f, &local(&f.repo()), Step::StartIssue, None), Ok(()));
    f.write("stray.txt", "x");
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::StartIssue, None),
        Err(Check::CleanWorkingTree)
    );
    fs::remove_file(f.work.join("stray.txt")).unwrap();
    f.branch("7-login");
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::StartIssue, None),
        Err(Check::OnMainBranch)
    );
    // Steps without a precondition always pass.
    for s in [Step::StartCycle, Step::Simplify, Step::CommitPush] {
        assert_eq!(pre(&f, &local(&f.repo()), s, None), Ok(()));
    }
}

#[test]
fn write_specs_needs_the_issue_branch_and_number() {
    let f = Fixture::new();
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::WriteSpecs, Some(7)),
        Err(Check::FeatureBranchExists)
    );
    f.branch("8-other");
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::WriteSpecs, Some(7)),
        Err(Check::FeatureBranchExists),
        "another issue's branch is not this issue's feature branch"
    );
    f.branch("7-login");
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::WriteSpecs, None),
        Err(Check::IssueNumberKnown)
    );
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::WriteSpecs, Some(7)),
        Ok(())
    );
}

#[test]
fn implement_needs_this_issues_spec_files() {
    let f = Fixture::new();
    f.branch("7-login");
    let r = f.repo();
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::Implement, Some(7)),
        Err(Check::SpecFilesExist)
    );
    // Another issue's complete specs never satisfy this issue (docs/design-notes.md).
    f.write_specs("99-old");
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::Implement, Some(7)),
        Err(Check::SpecFilesExist)
    );
    assert_eq!(r.spec_dir(7, Some("99-old")), None);
    assert_eq!(
        r.spec_files_ok(7, None),
        Err(vec!["feature directory".to_string()])
    );

    f.write_specs("7-login");
    f.write("specs/7-login/design.md", "");
    fs::remove_file(f.work.join("specs/7-login/feature.gherkin")).unwrap();
    assert_eq!(
        r.spec_files_ok(7, None),
        Err(vec!["design.md".to_string(), "feature.gherkin".to_string()])
    );
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::Implement, Some(7)),
        Err(Check::SpecFilesExist)
    );
    f.write_specs("7-login");
    assert_eq!(pre(&f, &local(&f.repo()), Step::Implement, Some(7)), Ok(()));
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::Implement, None),
        Err(Check::SpecFilesExist)
    );
    assert_eq!(r.spec_dir(7, None), Some(f.work.join("specs/7-login")));
}

#[test]
fn spec_dir_follows_the_recorded_feature_name_or_the_issue_declaration() {
    let f = Fixture::new();
    let r = f.repo();
    f.write_specs("feature-login");
    assert_eq!(r.spec_dir(7, None), None);
    assert_eq!(
        r.spec_dir(7, Some("feature-login")),
        Some(f.work.join("specs/feature-login"))
    );
    f.write(
        "specs/feature-login/requirements.md",
        "# Login\n\n**Issues**: #70, #7\n",
    );
    assert_eq!(
        r.spec_dir(7, None),
        Some(f.work.join("specs/feature-login"))
    );
    assert_eq!(
        r.spec_dir(70, None),
        Some(f.work.join("specs/feature-login"))
    );
    f.write("specs/feature-login/requirements.md", "**Issue**: #71\n");
    assert_eq!(r.spec_dir(7, None), None, "#71 is not #7");
    assert_eq!(r.spec_dir(7, Some("../..")), None);
}

#[test]
fn verify_needs_the_feature_branch_with_commits() {
    let f = Fixture::new();
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::Verify, Some(7)),
        Err(Check::OnFeatureBranch)
    );
    f.branch("7-login");
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::Verify, Some(7)),
        Err(Check::CommitsExistOnBranch)
    );
    f.commit("src/login.rs", "fn login() {}\n");
    assert_eq!(pre(&f, &local(&f.repo()), Step::Verify, Some(7)), Ok(()));
    assert_eq!(f.repo().commits_ahead_of_main("7-login").unwrap(), 1);
}

#[test]
fn create_pr_needs_everything_pushed() {
    let f = Fixture::new();
    f.branch("7-login");
    f.commit("src/login.rs", "fn login() {}\n");
    let r = f.repo();
    assert!(!r.branch_pushed("7-login").unwrap());
    assert_eq!(r.unpushed_commits("7-login").unwrap(), 1);
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::CreatePr, Some(7)),
        Err(Check::BranchPushedToRemote)
    );
    f.push();
    assert_eq!(pre(&f, &local(&f.repo()), Step::CreatePr, Some(7)), Ok(()));
    f.commit("src/login.rs", "fn login() { todo() }\n");
    assert_eq!(r.unpushed_commits("7-login").unwrap(), 1);
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::CreatePr, Some(7)),
        Err(Check::BranchPushedToRemote)
    );
}

#[test]
fn monitor_ci_needs_a_pr_local_and_github() {
    let f = Fixture::new();
    f.branch("7-login");
    f.commit("src/login.rs", "fn login() {}\n");
    assert_eq!(
        pre(&f, &local(&f.repo()), Step::MonitorCi, Some(7)),
        Err(Check::PrExists)
    );
    f.push();
    assert_eq!(pre(&f, &local(&f.repo()), Step::MonitorCi, Some(7)), Ok(()));

    let gh = f.gh(false);
    assert_eq!(pre(&f, &gh, Step::MonitorCi, Some(7)), Err(Check::PrExists));
    f.prs(&format!("[{}]", open_pr(3, "CLOSED")));
    assert_eq!(pre(&f, &gh, Step::MonitorCi, Some(7)), Err(Check::PrExists));
    f.prs(&format!(
        "[{},{}]",
        open_pr(3, "CLOSED"),
        open_pr(5, "OPEN")
    ));
    assert_eq!(pre(&f, &gh, Step::MonitorCi, Some(7)), Ok(()));
    let pr = gh.pr_for_branch("7-login").unwrap().unwrap();
    assert_eq!((pr.number, pr.state), (5, PrState::Open));
    assert_eq!(pr.url, "https://github.com/o/r/pull/5");
    assert!(f
        .gh_calls()
        .contains("api --include repos/{owner}/{repo}/pulls?head={owner}:7-login&state=all"));
}

#[test]
fn merge_needs_passing_ci_with_distinct_states() {
    let f = Fixture::new();
    f.branch("7-login");
    let gh = f.gh(false);
    let strict = f.gh(true);
    let r = f.repo();

    f.checks("", "no checks reported on the '7-login' branch\n", 1);
    assert_eq!(gh.ci_state("7-login").unwrap(), CiState::NoneConfigured);
    assert_eq!(pre(&f, &gh, Step::Merge, Some(7)), Ok(()));
    assert_eq!(
        pre(&f, &strict, Step::Merge, Some(7)),
        Err(Check::CiChecksPassing)
    );

    f.checks(
        r#"[{"name":"test","state":"FAILURE","bucket":"fail"},{"name":"lint","state":"PENDING","bucket":"pending"}]"#,
        "",
        1,
    );
    assert_eq!(gh.ci_state("7-login").unwrap(), CiState::Failed);
    assert_eq!(
        pre(&f, &gh, Step::Merge, Some(7)),
        Err(Check::CiChecksPassing)
    );
    // With a fleet's merge train CI's verdict is the train's, on the tree main would hold:
    // the merge's precondition asks nothing of CI on the branch alone.
    let by_train = StepContext {
        ci_by_train: true,
        ..ctx(Some(7))
    };
    let calls = f.gh_calls().len();
    assert_eq!(
        precondition(&f.repo(), &gh, Step::Merge, &by_train).unwrap(),
        Ok(())
    );
    assert_eq!(f.gh_calls().len(), calls, "no look at CI: {}", f.gh_calls());

    f.checks(
        r#"[{"name":"fail-fast","state":"IN_PROGRESS","bucket":"pending"},{"name":"b","state":"SUCCESS","bucket":"pass"}]"#,
        "",
        8,
    );
    assert_eq!(gh.ci_state("7-login").unwrap(), CiState::Pending);
    assert_eq!(
        pre(&f, &gh, Step::Merge, Some(7)),
        Err(Check::CiChecksPassing)
    );

    f.checks(
        r#"[{"name":"fail-fast","state":"SUCCESS","bucket":"pass"},{"name":"docs","state":"SKIPPED","bucket":"skipping"}]"#,
        "",
        0,
    );
    assert_eq!(gh.ci_state("7-login").unwrap(), CiState::Passed);
    assert_eq!(pre(&f, &gh, Step::Merge, Some(7)), Ok(()));
    assert_eq!(pre(&f, &strict, Step::Merge, Some(7)), Ok(()));

    // CI is asked through the REST API every gh answers, never `gh pr checks --json`.
    f.checks(r#"[{"name":"t","state":"FAILURE"}]"#, "", 1);
    assert_eq!(gh.ci_state("7-login").unwrap(), CiState::Failed);
    assert!(f
        .gh_calls()
        .contains("api --include repos/{owner}/{repo}/commits/7-login/check-runs"));
    assert!(!f.gh_calls().contains("pr checks"));

    // Neither JSON nor a known message: an error that names the command.
    f.checks("", "HTTP 401: Bad credentials", 1);
    let err = gh.ci_state("7-login").unwrap_err().to_string();
    assert!(
        err.contains("commits/7-login/check-runs") && err.contains("HTTP 401"),
        "{err}"
    );

    assert_eq!(
        local(&r).ci_state("7-login").unwrap(),
        CiState::NoneConfigured
    );
    assert!(local(&r).ci_ok(CiState::NoneConfigured));
    assert!(!strict.ci_ok(CiState::NoneConfigured));
}

#[test]
fn gh_failures_and_garbage_are_errors_that_name_the_command() {
    let f = Fixture::new();
    let gh = f.gh(false);
    f.prs("not json");
    let err = gh.pr_for_branch("7-x").unwrap_err();
    assert!(matches!(err, ForgeError::Parse { .. }), "{err:?}");
    assert!(err.to_string().contains("pulls?head={owner}:7-x"));
    fs::write(f.gh_dir.join("pr-list.rc"), "4").unwrap();
    let err = gh.pr_for_branch("7-x").unwrap_err().to_string();
    assert!(
        err.contains("exit 4") && err.contains("gh auth status"),
        "{err}"
    );

    let missing = GitHubForge {
        gh: f.gh_dir.join("no-such-gh"),
        repo_dir: f.work.clone(),
        require_checks: false,
        authority: Default::default(),
        repo: f.repo(),
    };
    let err = missing.pr_for_branch("7-x").unwrap_err();
    assert!(matches!(err, ForgeError::Spawn { .. }), "{err:?}");
}

#[test]
fn post_checks_observe_the_step_outcome() {
    let f = Fixture::new();
    let r = f.repo();
    let c = ctx(Some(7));
    let err = post_check(&r, &local(&r), Step::StartIssue, &c)
        .unwrap()
        .unwrap_err();
    assert!(
        err.contains("HEAD is on main") && err.contains("7-<slug>"),
        "{err}"
    );
    f.branch("7-login");
    assert_eq!(
        post_check(&r, &local(&r), Step::StartIssue, &c).unwrap(),
        Ok(())
    );
    assert_eq!(
        post_check(&r, &local(&r), Step::StartIssue, &ctx(None)).unwrap(),
        Ok(())
    );

    let err = post_check(&r, &local(&r), Step::WriteSpecs, &c)
        .unwrap()
        .unwrap_err();
    assert!(err.contains("feature directory"), "{err}");
    f.write_specs("7-login");
    f.write("specs/7-login/tasks.md", "");
    let err = post_check(&r, &local(&r), Step::WriteSpecs, &c)
        .unwrap()
        .unwrap_err();
    assert!(
        err.contains("tasks.md") && !err.contains("design.md"),
        "{err}"
    );
    f.write_specs("7-login");
    assert_eq!(
        post_check(&r, &local(&r), Step::WriteSpecs, &c).unwrap(),
        Ok(())
    );

    let err = post_check(&r, &local(&r), Step::CommitPush, &c)
        .unwrap()
        .unwrap_err();
    assert!(err.contains("uncommitted"), "{err}");
    git(&f.work, &["add", "-A"]);
    git(&f.work, &["commit", "-qm", "specs"]);
    let err = post_check(&r, &local(&r), Step::CommitPush, &c)
        .unwrap()
        .unwrap_err();
    assert!(err.contains("not on origin"), "{err}");
    f.push();
    f.commit("src/a.rs", "a");
    let err = post_check(&r, &local(&r), Step::CommitPush, &c)
        .unwrap()
        .unwrap_err();
    assert!(err.contains("1 commit(s)"), "{err}");
    f.push();
    assert_eq!(
        post_check(&r, &local(&r), Step::CommitPush, &c).unwrap(),
        Ok(())
    );

    assert_eq!(
        post_check(&r, &local(&r), Step::MonitorCi, &c).unwrap(),
        Ok(())
    );
    let gh = f.gh(false);
    f.checks(r#"[{"name":"t","state":"FAILURE","bucket":"fail"}]"#, "", 1);
    let err = post_check(&r, &gh, Step::MonitorCi, &c)
        .unwrap()
        .unwrap_err();
    assert!(err.contains("failing"), "{err}");
    f.checks("", "no checks reported on the '7-login' branch", 1);
    assert_eq!(post_check(&r, &gh, Step::MonitorCi, &c).unwrap(), Ok(()));
    let err = post_check(&r, &f.gh(true), Step::MonitorCi, &c)
        .unwrap()
        .unwrap_err();
    assert!(err.contains("requireChecks"), "{err}");
}

#[test]
fn auto_commit_commits_only_real_work_and_never_on_main() {
    let f = Fixture::new();
    let r = f.repo();
    f.write("src/x.rs", "x");
    let err = r.auto_commit("feat: implement issue #7").unwrap_err();
    assert!(matches!(err, RepoError::CommitOnMain { .. }), "{err:?}");
    f.branch("7-login");
    assert!(r.auto_commit("feat: implement issue #7").unwrap());
    assert_eq!(
        git(&f.work, &["log", "-1", "--format=%s"]),
        "feat: implement issue #7"
    );
    assert!(r.is_clean().unwrap());
    assert!(!r.auto_commit("nothing").unwrap());
    artifacts::write_state(&f.work, &StateFile::default()).unwrap();
    artifacts::create_auto_mode(&f.work).unwrap();
    assert!(!r.auto_commit("only artifacts").unwrap());
    assert_eq!(
        git(&f.work, &["log", "-1", "--format=%s"]),
        "feat: implement issue #7"
    );
    assert!(!git(&f.work, &["ls-files"]).contains(".claude"));
}

#[test]
fn idempotency_of_side_effecting_steps() {
    let f = Fixture::new();
    f.branch("7-login");
    let r = f.repo();
    let c = ctx(Some(7));
    // Created and pushed with nothing in it (as `gh issue develop` does): not a done commitPush.
    f.push();
    assert!(!already_done(&r, &local(&r), Step::CommitPush, &c).unwrap());
    f.commit("src/a.rs", "a");
    assert!(!already_done(&r, &local(&r), Step::CommitPush, &c).unwrap());
    f.push();
    assert!(already_done(&r, &local(&r), Step::CommitPush, &c).unwrap());
    f.write("src/b.rs", "b");
    assert!(!already_done(&r, &local(&r), Step::CommitPush, &c).unwrap());
    git(&f.work, &["checkout", "-q", "--", "."]);
    fs::remove_file(f.work.join("src/b.rs")).unwrap();

    let gh = f.gh(false);
    assert!(!already_done(&r, &gh, Step::CreatePr, &c).unwrap());
    f.prs(&format!("[{}]", open_pr(9, "OPEN")));
    assert!(already_done(&r, &gh, Step::CreatePr, &c).unwrap());
    // The builtin createPR keeps the PR its own request finds: nothing is read before it.
    let builtin = StepContext {
        builtin: true,
        ..c.clone()
    };
    assert!(!already_done(&r, &gh, Step::CreatePr, &builtin).unwrap());
    assert!(!already_done(&r, &gh, Step::Merge, &c).unwrap());
    f.prs(&format!("[{}]", open_pr(9, "MERGED")));
    assert!(already_done(&r, &gh, Step::Merge, &c).unwrap());

    assert!(already_done(&r, &local(&r), Step::CreatePr, &c).unwrap());
    assert!(!already_done(&r, &local(&r), Step::Merge, &c).unwrap());
    f.merge_on_origin("7-login");
    r.fetch().unwrap();
    assert!(r.merged_into_main("7-login").unwrap());
    assert!(already_done(&r, &local(&r), Step::Merge, &c).unwrap());
    // Steps without an outside outcome are never skipped.
    assert!(!already_done(&r, &local(&r), Step::Verify, &c).unwrap());
}

/// A runner killed between its agent's push and the test-weakening check: the pushed head is
/// checked when the restart asks whether commitPush is done (and by the probe that adopts a
/// branch the journal does not know), not taken as done; a head the check let through is
/// not checked again.
#[test]
fn a_pushed_head_the_weakening_check_has_not_let_through_is_not_commit_push_done() {
    let f = Fixture::new();
    let test = "#[test]\nfn parses_empty_input() {\n    assert_eq!(\"\".len(), 0);\n}\n";
    f.commit("tests/parse.rs", test);
    git(&f.work, &["push", "-q", "origin", "main"]);
    f.branch("7-login");
    f.write_specs("7-login");
    f.commit("tests/parse.rs", &format!("#[ignore]\n{test}"));
    f.push();
    let r = f.repo();
    let gate = sdlc_runner::steps::weakening::Gate::default();
    let gated = StepContext {
        gate: Some(gate.clone()),
        ..ctx(Some(7))
    };
    assert!(already_done(&r, &local(&r), Step::CommitPush, &ctx(Some(7))).unwrap());
    assert!(!already_done(&r, &local(&r), Step::CommitPush, &gated).unwrap());
    let verified = hint(7, Step::Verify);
    let next = |gate: Option<&sdlc_runner::steps::weakening::Gate>| {
        probe::detect_progress(&r, &local(&r), Some(&verified), gate)
            .unwrap()
            .map(|d| d.next)
    };
    assert_eq!(next(None), Some(Step::Merge));
    assert_eq!(next(Some(&gate)), Some(Step::CommitPush));
    // The test put back: the head is let through and recorded.
    f.commit("tests/parse.rs", test);
    f.push();
    assert!(already_done(&r, &local(&r), Step::CommitPush, &gated).unwrap());
    let record = fs::read_to_string(f.work.join(".git/sdlc-runner/weakening/7")).unwrap();
    let head = git(&f.work, &["rev-parse", "HEAD"]);
    assert_eq!(record, format!("7-login {}\n", head.trim()));
    assert_eq!(next(Some(&gate)), Some(Step::Merge));
}

#[test]
fn fetch_and_checkout_main_tolerate_no_remote_and_fast_forward() {
    let f = Fixture::new();
    f.branch("7-login");
    f.commit("src/a.rs", "a");
    f.push();
    f.merge_on_origin("7-login");
    let r = f.repo();
    r.fetch().unwrap();
    r.checkout_main().unwrap();
    assert_eq!(r.current_branch().unwrap().as_deref(), Some("main"));
    assert!(
        f.work.join("src/a.rs").is_file(),
        "main fast-forwarded to origin"
    );

    git(&f.work, &["remote", "remove", "origin"]);
    let r = f.repo();
    r.fetch().unwrap();
    assert_eq!(r.unpushed_commits("main").unwrap(), 3);
}

fn detect(f: &Fixture, forge: &dyn ForgePort, hint: Option<&StateFile>) -> Option<(Step, bool)> {
    detect_progress(&f.repo(), forge, hint)
        .unwrap()
        .map(|d| (d.next, d.merged))
}

fn hint(issue: u32, last: Step) -> StateFile {
    StateFile {
        current_issue: Some(issue),
        last_completed_step: last.number(),
        ..StateFile::default()
    }
}

#[test]
fn detect_progress_through_the_lifecycle_local_forge() {
    let f = Fixture::new();
    assert_eq!(
        detect(&f, &local(&f.repo()), None),
        None,
        "main: nothing in progress"
    );
    git(&f.work, &["checkout", "-q", "-b", "feature-x"]);
    assert_eq!(
        detect(&f, &local(&f.repo()), None),
        None,
        "not an issue branch"
    );
    git(&f.work, &["checkout", "-q", "main"]);

    f.branch("7-login");
    assert_eq!(
        detect(&f, &local(&f.repo()), None),
        Some((Step::WriteSpecs, false))
    );
    f.write_specs("7-login");
    assert_eq!(
        detect(&f, &local(&f.repo()), None),
        Some((Step::Implement, false))
    );
    let d = detect_progress(&f.repo(), &local(&f.repo()), None)
        .unwrap()
        .unwrap();
    assert_eq!((d.issue, d.branch.as_str()), (7, "7-login"));
    assert_eq!(d.feature.as_deref(), Some("7-login"));

    git(&f.work, &["add", "-A"]);
    git(&f.work, &["commit", "-qm", "specs"]);
    f.commit("src/login.rs", "fn login() {}\n");
    assert_eq!(
        detect(&f, &local(&f.repo()), None),
        Some((Step::Simplify, false))
    );
    let simplified = hint(7, Step::Simplify);
    assert_eq!(
        detect(&f, &local(&f.repo()), Some(&simplified)),
        Some((Step::Verify, false))
    );

    // Pushed, but nothing says verify ran: verify is not skipped.
    f.push();
    assert_eq!(
        detect(&f, &local(&f.repo()), None),
        Some((Step::Simplify, false))
    );
    assert_eq!(
        detect(&f, &local(&f.repo()), Some(&hint(8, Step::Verify))),
        Some((Step::Simplify, false)),
        "another issue's state file is ignored"
    );
    // With verify recorded, a pushed branch is a PR for the local forge and has no CI.
    assert_eq!(
        detect(&f, &local(&f.repo()), Some(&hint(7, Step::Verify))),
        Some((Step::Merge, false))
    );
    // Unpushed work after verify: commitPush is next.
    f.commit("src/login.rs", "fn login() { /* fixed */ }\n");
    assert_eq!(
        detect(&f, &local(&f.repo()), Some(&hint(7, Step::Verify))),
        Some((Step::CommitPush, false))
    );
    f.push();

    f.merge_on_origin("7-login");
    assert_eq!(
        detect(&f, &local(&f.repo()), None),
        Some((Step::StartCycle, true))
    );
}

#[test]
fn detect_progress_with_github_pr_and_ci() {
    let f = Fixture::new();
    let gh = f.gh(false);
    f.branch("7-login");
    f.write_specs("7-login");
    git(&f.work, &["add", "-A"]);
    git(&f.work, &["commit", "-qm", "specs"]);
    f.push();
    let verified = hint(7, Step::Verify);
    assert_eq!(
        detect(&f, &gh, Some(&verified)),
        Some((Step::CreatePr, false))
    );
    f.prs(&format!("[{}]", open_pr(4, "OPEN")));
    f.checks(
        r#"[{"name":"t","state":"PENDING","bucket":"pending"}]"#,
        "",
        8,
    );
    assert_eq!(
        detect(&f, &gh, Some(&verified)),
        Some((Step::MonitorCi, false))
    );
    // An open PR without a state file does not vouch for verify.
    assert_eq!(detect(&f, &gh, None), Some((Step::Simplify, false)));
    f.checks(r#"[{"name":"t","state":"SUCCESS","bucket":"pass"}]"#, "", 0);
    assert_eq!(detect(&f, &gh, Some(&verified)), Some((Step::Merge, false)));
    // The spec files gone: the chain stops there whatever the PR says.
    fs::remove_dir_all(f.work.join("specs")).unwrap();
    assert_eq!(
        detect(&f, &gh, Some(&verified)),
        Some((Step::WriteSpecs, false))
    );
    f.prs(&format!("[{}]", open_pr(4, "MERGED")));
    assert_eq!(detect(&f, &gh, None), Some((Step::StartCycle, true)));
}

#[test]
fn a_signal_shutdown_wip_push_is_not_a_commit_push() {
    let f = Fixture::new();
    f.branch("7-login");
    f.write_specs("7-login");
    f.commit("src/login.rs", "fn login() {}\n");
    // The runner was stopped during commitPush: verify was done, then the signal handler
    // committed and pushed the work in progress.
    f.write("src/login.rs", "fn login() { /* wip */ }\n");
    git(&f.work, &["add", "-A"]);
    git(
        &f.work,
        &["commit", "-qm", "chore: save work on signal SIGTERM"],
    );
    f.push();
    let mut state = hint(7, Step::Verify);
    assert_eq!(
        detect(&f, &local(&f.repo()), Some(&state)),
        Some((Step::Merge, false)),
        "without the record the WIP push looks like a finished commitPush"
    );
    state.signal_shutdown = Some("SIGTERM".into());
    assert_eq!(
        detect(&f, &local(&f.repo()), Some(&state)),
        Some((Step::CommitPush, false))
    );
    // Stopped during implement: the pushed WIP does not even count as implemented.
    state.last_completed_step = Step::WriteSpecs.number();
    assert_eq!(
        detect(&f, &local(&f.repo()), Some(&state)),
        Some((Step::Implement, false))
    );
    state.last_completed_step = 0;
    assert_eq!(
        detect(&f, &local(&f.repo()), Some(&state)),
        Some((Step::WriteSpecs, false))
    );
}

/// The demo project's clone and a second clone of its origin (the other party that pushes).
fn project_and_other(root: &Path) -> (PathBuf, PathBuf) {
    sdlc_runner::commands::demo::init_repository(root).expect("repository");
    let origin = root.join("origin.git");
    git(
        root,
        &["clone", "--quiet", origin.to_str().expect("utf8"), "other"],
    );
    let other = root.join("other");
    configure(&other);
    (root.join("project"), other)
}

/// A commit of `file` holding `text`, with `text` as its message.
fn commit(dir: &Path, file: &str, text: &str) {
    fs::write(dir.join(file), text).expect("write");
    git(dir, &["add", file]);
    git(dir, &["commit", "--quiet", "-m", text]);
}

/// A runner killed between its merge commit and the push leaves main one merge ahead of
/// origin; once origin moved on, main cannot fast-forward. checkout_main drops such unpushed
/// runner merges (they are redone from the branch) and nothing else.
#[test]
fn checkout_main_drops_only_an_unpushed_runner_merge_when_origin_moved_on() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = project_and_other(tmp.path());
    // a: a feature branch merged into main locally, the push never happened.
    git(&a, &["checkout", "--quiet", "-b", "1-x"]);
    commit(&a, "x.txt", "feat: x");
    git(&a, &["checkout", "--quiet", "main"]);
    git(
        &a,
        &[
            "merge",
            "--no-ff",
            "--quiet",
            "-m",
            "Merge issue #1: x",
            "1-x",
        ],
    );
    // b: origin's main moves on.
    commit(&b, "y.txt", "feat: y");
    git(&b, &["push", "--quiet", "origin", "main"]);

    let repo = Repo::open(&a).expect("repo");
    repo.fetch().expect("fetch");
    repo.checkout_main().expect("main follows origin again");
    assert_eq!(
        git(&a, &["rev-parse", "main"]),
        git(&a, &["rev-parse", "origin/main"])
    );
    assert!(
        git(&a, &["branch", "--list", "1-x"]).contains("1-x"),
        "the branch stays"
    );

    // Work of someone else on main is never dropped.
    commit(&a, "mine.txt", "my own work on main");
    commit(&b, "z.txt", "feat: z");
    git(&b, &["push", "--quiet", "origin", "main"]);
    repo.fetch().expect("fetch");
    assert!(repo.checkout_main().is_err());
    assert_eq!(
        git(&a, &["log", "-1", "--format=%s", "main"]),
        "my own work on main"
    );
}

/// A person pushed to the branch on origin, and the clone's branch lacks that commit (the
/// runner looked at it, CI passed it, but nothing fetched it into the branch): the update,
/// leased on origin's head, brings it in beside main, so the push is a fast-forward that keeps
/// the person's commit. A person's push after the look refuses the push.
#[test]
fn an_update_leased_on_origins_head_keeps_a_persons_commit_and_refuses_a_later_push() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = project_and_other(tmp.path());
    git(&a, &["checkout", "--quiet", "-b", "1-x"]);
    commit(&a, "x.txt", "feat: x");
    git(&a, &["push", "--quiet", "-u", "origin", "1-x"]);
    git(&b, &["fetch", "--quiet", "origin"]);
    git(&b, &["checkout", "--quiet", "-b", "1-x", "origin/1-x"]);
    commit(&b, "person.txt", "a person's commit");
    git(&b, &["push", "--quiet", "origin", "1-x"]);
    let persons = git(&b, &["rev-parse", "HEAD"]);
    git(&b, &["checkout", "--quiet", "main"]);
    commit(&b, "y.txt", "feat: y");
    git(&b, &["push", "--quiet", "origin", "main"]);

    let repo = Repo::open(&a).expect("repo");
    repo.bring_up_to_date("1-x", Some(&persons))
        .expect("up to date");
    git(&a, &["merge-base", "--is-ancestor", &persons, "1-x"]);
    git(&a, &["merge-base", "--is-ancestor", "origin/main", "1-x"]);
    let on_origin = git(&a, &["ls-remote", "origin", "refs/heads/1-x"]);
    assert!(
        on_origin.starts_with(&git(&a, &["rev-parse", "1-x"])),
        "the update is pushed: {on_origin}"
    );

    // The lease is what the caller looked at: a push since then is never overwritten.
    let looked = git(&a, &["rev-parse", "1-x"]);
    git(&b, &["fetch", "--quiet", "origin"]);
    git(&b, &["checkout", "--quiet", "-B", "1-x", "origin/1-x"]);
    commit(&b, "later.txt", "a later push");
    git(&b, &["push", "--quiet", "origin", "1-x"]);
    let later = git(&b, &["rev-parse", "HEAD"]);
    commit(&a, "z.txt", "feat: z");
    assert!(repo.push_branch("1-x", Some(&looked)).is_err());
    let on_origin = git(&a, &["ls-remote", "origin", "refs/heads/1-x"]);
    assert!(on_origin.starts_with(&later), "{on_origin}");
}

/// Before a merge: main follows origin again (an agent's unpushed merge of this branch, with
/// any subject, is dropped: the branch holds its work), origin's main is merged into the
/// branch and the branch pushed; a conflict is named and aborted; a failed merge is a lost
/// race only when origin's main moved and the branch is not in it.
#[test]
fn a_branch_is_brought_up_to_date_before_its_merge_and_a_lost_race_is_told_apart() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = project_and_other(tmp.path());
    git(&a, &["checkout", "--quiet", "-b", "1-x"]);
    commit(&a, "x.txt", "feat: x");
    git(&a, &["push", "--quiet", "-u", "origin", "1-x"]);
    // An agent merged the branch on main, then its push lost to b's.
    git(&a, &["checkout", "--quiet", "main"]);
    git(
        &a,
        &[
            "merge",
            "--no-ff",
            "--quiet",
            "-m",
            "an agent's merge",
            "1-x",
        ],
    );
    commit(&b, "y.txt", "feat: y");
    git(&b, &["push", "--quiet", "origin", "main"]);

    let repo = Repo::open(&a).expect("repo");
    let base = repo.bring_up_to_date("1-x", None).expect("up to date");
    assert_eq!(base, Some(git(&a, &["rev-parse", "origin/main"])));
    assert_eq!(git(&a, &["rev-parse", "main"]), base.clone().expect("base"));
    assert_eq!(git(&a, &["rev-parse", "--abbrev-ref", "HEAD"]), "1-x");
    git(&a, &["merge-base", "--is-ancestor", "origin/main", "1-x"]);
    assert_eq!(
        git(&a, &["rev-parse", "1-x"]),
        git(&a, &["rev-parse", "origin/1-x"]),
        "the updated branch is pushed"
    );
    assert!(
        !repo.lost_race("1-x", base.as_deref()).expect("race?"),
        "nothing moved"
    );
    commit(&b, "z.txt", "feat: z");
    git(&b, &["push", "--quiet", "origin", "main"]);
    // b is someone outside the runner (no child of its process runner): the runner's fetch a
    // moment ago stands for one now until FRESH_FOR has passed.
    std::thread::sleep(sdlc_runner::git::repo::FRESH_FOR);
    assert!(
        repo.lost_race("1-x", base.as_deref()).expect("race?"),
        "main moved, 1-x not in it"
    );

    // A conflict with main: named, aborted, the tree clean.
    commit(&a, "z.txt", "a different z");
    let err = repo
        .bring_up_to_date("1-x", None)
        .expect_err("conflict")
        .to_string();
    assert!(err.contains("merge conflict in: z.txt"), "{err}");
    assert!(repo.is_clean().expect("clean"));
    let classified = sdlc_runner::agent::classify::classify_builtin(
        "merge",
        &err,
        sdlc_runner::call_failure::CallFailureKind::Conflict,
        false,
    );
    assert_eq!(
        classified.class,
        sdlc_runner::failure::FailureClass::MergeConflict
    );
}

/// A runner killed in the middle of checking out its branch leaves the branch's files
/// untracked on main, the last one cut short (empty): the update before the merge finishes
/// that checkout, since each file holds the branch's content or the start of it. A file
/// that holds anything else is the operator's and stops it.
#[test]
fn a_checkout_a_kill_cut_short_mid_file_is_finished_and_nothing_else_is_overwritten() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, _b) = project_and_other(tmp.path());
    git(&a, &["checkout", "--quiet", "-b", "1-x"]);
    std::fs::create_dir_all(a.join("specs")).expect("specs");
    std::fs::write(a.join("specs/design.md"), "# Design\n\nA change.\n").expect("write");
    std::fs::write(a.join("specs/requirements.md"), "# Requirements\n").expect("write");
    git(&a, &["add", "specs"]);
    git(&a, &["commit", "--quiet", "-m", "docs: specs"]);
    git(&a, &["push", "--quiet", "-u", "origin", "1-x"]);
    git(&a, &["checkout", "--quiet", "main"]);
    // What the killed checkout of 1-x left: one file whole, one created but not yet written.
    std::fs::create_dir_all(a.join("specs")).expect("specs");
    std::fs::write(a.join("specs/design.md"), "# Design\n\nA change.\n").expect("write");
    std::fs::write(a.join("specs/requirements.md"), "").expect("write");

    let repo = Repo::open(&a).expect("repo");
    repo.bring_up_to_date("1-x", None)
        .expect("the cut checkout is finished");
    assert_eq!(git(&a, &["rev-parse", "--abbrev-ref", "HEAD"]), "1-x");
    assert_eq!(
        std::fs::read_to_string(a.join("specs/requirements.md")).expect("read"),
        "# Requirements\n"
    );

    // The operator's own file in the way is never overwritten.
    git(&a, &["checkout", "--quiet", "main"]);
    std::fs::create_dir_all(a.join("specs")).expect("specs");
    std::fs::write(a.join("specs/requirements.md"), "my notes\n").expect("write");
    assert!(repo.bring_up_to_date("1-x", None).is_err());
    assert_eq!(
        std::fs::read_to_string(a.join("specs/requirements.md")).expect("read"),
        "my notes\n"
    );
}

/// A git killed mid-fetch or mid-prune leaves ref locks (`packed-refs.lock`, a ref's own
/// `.lock`) that make every later fetch fail: they are found with the index's, and a killed
/// runner's are removed once no git works in the clone.
#[test]
fn ref_locks_a_killed_git_left_are_found() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, _b) = project_and_other(tmp.path());
    let repo = Repo::open(&a).expect("repo");
    assert!(repo.locks_of_a_dead_git().is_empty());
    let git_dir = a.join(".git");
    std::fs::create_dir_all(git_dir.join("refs/remotes/origin")).expect("refs");
    let ref_lock = git_dir.join("refs/remotes/origin/2-issue-2.lock");
    let packed = git_dir.join("packed-refs.lock");
    std::fs::write(&ref_lock, "").expect("lock");
    std::fs::write(&packed, "").expect("lock");
    let mut found = repo.locks_of_a_dead_git();
    found.sort();
    let mut expected = vec![packed.clone(), ref_lock.clone()];
    expected.sort();
    assert_eq!(found, expected);
    // Young locks are no workspace fault yet: git holds its locks for milliseconds.
    assert!(repo
        .stale_locks(std::time::Duration::from_secs(30))
        .is_empty());
}

/// On its branch with a clean tree, the update before a merge moves main to origin's without
/// checking anything out (no post-checkout hook runs, no file is rewritten): main only behind
/// origin's is set to it; main with a commit of its own still goes through the checkouts.
#[test]
fn main_behind_origin_is_moved_beside_the_checked_out_branch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = project_and_other(tmp.path());
    git(&a, &["checkout", "--quiet", "-b", "1-x"]);
    commit(&a, "x.txt", "feat: x");
    commit(&b, "y.txt", "feat: y");
    git(&b, &["push", "--quiet", "origin", "main"]);
    let hook = a.join(".git/hooks/post-checkout");
    let ran = tmp.path().join("checkouts");
    fs::write(
        &hook,
        format!("#!/bin/sh\necho \"$3\" >> '{}'\n", ran.display()),
    )
    .expect("hook");
    fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");

    let repo = Repo::open(&a).expect("repo");
    let base = repo.bring_up_to_date("1-x", None).expect("up to date");
    assert_eq!(base, Some(git(&a, &["rev-parse", "origin/main"])));
    assert_eq!(
        git(&a, &["rev-parse", "main"]),
        git(&a, &["rev-parse", "origin/main"])
    );
    assert_eq!(git(&a, &["rev-parse", "--abbrev-ref", "HEAD"]), "1-x");
    git(&a, &["merge-base", "--is-ancestor", "origin/main", "1-x"]);
    assert!(!ran.exists(), "checked out: {:?}", fs::read_to_string(&ran));

    // A commit of main's own that origin lacks: the checkouts decide, as before.
    git(&a, &["checkout", "--quiet", "main"]);
    commit(&a, "own.txt", "main's own");
    git(&a, &["checkout", "--quiet", "1-x"]);
    fs::remove_file(&ran).expect("reset the record");
    let _ = repo.bring_up_to_date("1-x", None);
    assert!(ran.exists(), "main with work of its own is checked out");
}

/// Own work is what left from this clone: a commit pushed from here, and every commit before
/// it, is; a teammate's commit a fetch brought is not, even after the local branch was reset
/// onto it and away again (the branch's own reflog then holds it).
#[test]
fn pushed_from_here_knows_the_clones_pushes_from_a_teammates_commit_it_only_fetched() {
    let f = Fixture::new();
    f.branch("7-issue");
    f.commit("a.txt", "a\n");
    let first = git(&f.work, &["rev-parse", "HEAD"]);
    f.commit("b.txt", "b\n");
    let mine = git(&f.work, &["rev-parse", "HEAD"]);
    let repo = f.repo();
    repo.push_branch("7-issue", None).unwrap();
    assert!(repo.pushed_from_here("7-issue", &mine).unwrap());
    assert!(repo.pushed_from_here("7-issue", &first).unwrap());
    // A teammate's commit on top, fetched, checked out on the branch, then dropped.
    git(&f.other, &["fetch", "-q", "origin"]);
    git(&f.other, &["checkout", "-q", "7-issue"]);
    fs::write(f.other.join("theirs.txt"), "theirs\n").unwrap();
    git(&f.other, &["add", "-A"]);
    git(&f.other, &["commit", "-qm", "theirs"]);
    git(&f.other, &["push", "-q", "origin", "7-issue"]);
    let theirs = git(&f.other, &["rev-parse", "HEAD"]);
    git(&f.work, &["fetch", "-q", "origin"]);
    git(&f.work, &["reset", "-q", "--hard", "origin/7-issue"]);
    git(&f.work, &["reset", "-q", "--hard", &mine]);
    assert!(!repo.pushed_from_here("7-issue", &theirs).unwrap());
    // Once a push from here carries it (under a commit of this clone's), it is this clone's
    // too.
    git(&f.work, &["merge", "-q", "--ff-only", &theirs]);
    f.commit("c.txt", "c\n");
    repo.push_branch("7-issue", Some(&theirs)).unwrap();
    assert!(repo.pushed_from_here("7-issue", &theirs).unwrap());
    // A branch never pushed from here holds nothing of this clone's.
    assert!(!repo.pushed_from_here("8-other", &first).unwrap());
}
