//! The real `gh` (the distribution's: 2.23 on Debian 12) against the fake GitHub API of
//! `tests/e2e/github_api.rs`, driven by the real binary on a real git repository whose origin
//! is a local bare repository (the fake API merges there).
//!
//! These tests need gh installed: they are `#[ignore]`d, and `.ci/run` installs gh and runs
//! them with `cargo test -- --ignored`, where a missing gh fails them.

mod e2e;

use e2e::github_api::{Api, CheckRun, GitHubApi, Issue, Limit, OWNER, REPO};
use e2e::{code, git, text, Project};
use serde_json::json;

/// Every test here needs gh: they are `#[ignore]`d, so that a newcomer's `cargo test` needs
/// only Rust and git, and `.ci/run` runs them (`cargo test -- --ignored`) after installing
/// gh. Run, they fail when gh is missing (never skip).
fn real_gh_wanted() -> bool {
    assert!(
        which::which("gh").is_ok(),
        "gh is not on PATH; install it (`apt-get install -y gh`, 2.23 or later)"
    );
    true
}

struct RealGh {
    p: Project,
    api: GitHubApi,
}

impl RealGh {
    /// `issues`: (number, title, body), open and labelled `automatable`; every commit's CI
    /// passes (one check run) unless a test says otherwise.
    fn new(issues: &[(u32, &str, &str)], extra: serde_json::Value) -> RealGh {
        let mut config = json!({"tracker": {"kind": "github"}, "forge": "github",
            "steps": e2e::builtin_steps()});
        if let (Some(c), Some(more)) = (config.as_object_mut(), extra.as_object()) {
            c.extend(more.clone());
        }
        let mut p = Project::new(&[], json!({}), config);
        let api = GitHubApi::start(Api {
            origin: p.origin.clone(),
            issues: issues
                .iter()
                .map(|(n, title, body)| Issue {
                    number: *n,
                    title: (*title).into(),
                    body: (*body).into(),
                    open: true,
                    labels: vec!["automatable".into()],
                    comments: vec![],
                })
                .collect(),
            labels: vec!["automatable".into()],
            default_checks: vec![CheckRun::passed("unit-tests")],
            ..Api::default()
        });
        // gh finds the repository among the clone's remotes by host; origin stays the bare
        // repository the runner pushes to.
        git(
            &p.project,
            &[
                "remote",
                "add",
                "github",
                &format!("https://github.localhost/{OWNER}/{REPO}.git"),
            ],
        );
        let config_dir = p.root.join("gh-config");
        std::fs::create_dir_all(&config_dir).expect("gh config dir");
        p.env.extend(api.env(&config_dir));
        RealGh { p, api }
    }

    fn issue_open(&self, n: u32) -> bool {
        self.api
            .with(|a| a.issues.iter().find(|i| i.number == n).map(|i| i.open))
            .expect("issue")
    }

    fn unknown_requests(&self) -> Vec<String> {
        self.api
            .requests()
            .into_iter()
            .filter(|r| r.starts_with("UNKNOWN"))
            .collect()
    }
}

#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn a_full_cycle_through_the_real_gh_merges_the_verified_commit() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(&[(1, "Add a greeting", "Say hello.")], json!({}));
    let out = g.p.run(&[]);
    let all = text(&out);
    let requests = g.api.requests();
    assert_eq!(code(&out), 0, "{all}\n{requests:#?}");
    assert!(g.unknown_requests().is_empty(), "{requests:#?}");
    let pulls = g.api.with(|a| a.pulls.clone());
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert_eq!(pulls[0].state, "MERGED", "{pulls:?}\n{all}");
    assert!(!g.issue_open(1), "the merge closed the issue: {all}");
    // CI was asked about the commit that was merged, not about a branch or a PR.
    let merged_head = git(&g.p.origin, &["rev-parse", "main^2"]);
    assert!(
        requests.iter().any(|r| r
            == &format!("GET /repos/{OWNER}/{REPO}/commits/{merged_head}/check-runs?per_page=100")),
        "{requests:#?}"
    );
    assert!(
        !requests.iter().any(|r| r.contains("pr checks")),
        "{requests:#?}"
    );
}

#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn the_fake_api_serves_rate_limits_the_way_github_does() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(&[(1, "x", "y")], json!({}));
    g.api.with(|a| {
        a.limits = vec![
            ("check-runs".into(), Limit::Primary { reset_in_secs: 90 }),
            (
                "check-runs".into(),
                Limit::Secondary {
                    retry_after: Some(7),
                },
            ),
        ]
    });
    let gh = |path: &str| {
        let mut cmd = std::process::Command::new("gh");
        cmd.args(["api", "--include", path])
            .current_dir(&g.p.project)
            .envs(g.p.env.iter().map(|(k, v)| (k, v)));
        cmd.output().expect("gh runs")
    };
    let path = format!("repos/{OWNER}/{REPO}/commits/main/check-runs");
    let first = gh(&path);
    let head = String::from_utf8_lossy(&first.stdout).to_string();
    assert!(!first.status.success());
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(head.contains("X-Ratelimit-Remaining: 0"), "{head}");
    let second = String::from_utf8_lossy(&gh(&path).stdout).to_string();
    assert!(second.contains("Retry-After: 7"), "{second}");
    let third = gh(&path);
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
}

/// A primary limit (403, `X-RateLimit-Remaining: 0`) and a secondary one (`Retry-After`) on
/// the looks at CI, and a primary limit on the very first call of the run (the selection's):
/// each is waited out until it lifts, the issue merges, no attempt is spent and nothing is
/// escalated or blamed.
#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn rate_limits_during_the_run_and_at_start_are_waited_out_and_blame_nobody() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(&[(1, "Add a greeting", "Say hello.")], json!({}));
    g.api.with(|a| {
        a.limits = vec![
            ("milestones".into(), Limit::Primary { reset_in_secs: 1 }),
            ("check-runs".into(), Limit::Primary { reset_in_secs: 1 }),
            (
                "check-runs".into(),
                Limit::Secondary {
                    retry_after: Some(1),
                },
            ),
        ]
    });
    let out = g.p.run(&[]);
    let all = text(&out);
    let requests = g.api.requests();
    assert_eq!(code(&out), 0, "{all}\n{requests:#?}");
    assert_eq!(g.api.with(|a| a.limited.len()), 3, "{requests:#?}");
    assert_eq!(
        all.matches("GitHub rate limit: waiting").count(),
        3,
        "three waits, each named: {all}"
    );
    let pulls = g.api.with(|a| a.pulls.clone());
    assert_eq!(pulls[0].state, "MERGED", "{all}");
    assert!(!g.issue_open(1), "{all}");
    assert!(!all.contains("escalat"), "nothing escalated: {all}");
    assert!(!all.contains("attempt 2"), "no attempt spent: {all}");
    assert!(g.unknown_requests().is_empty(), "{requests:#?}");
    // The waits are journaled like every other.
    let journal = g.p.journal();
    let limited = journal
        .iter()
        .filter(|r| r["event"]["event"] == "rateLimited")
        .count();
    assert_eq!(limited, 3, "{journal:#?}");
}
