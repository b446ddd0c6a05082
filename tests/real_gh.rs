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
    /// Runs the runner to a clean end through `limits` rate limits, each waited out and
    /// named; its output and the API's request log.
    fn run_waiting_out_limits(&self, limits: usize) -> (String, Vec<String>) {
        let out = self.p.run(&[]);
        let all = text(&out);
        let requests = self.api.requests();
        assert_eq!(code(&out), 0, "{all}\n{requests:#?}");
        assert_eq!(self.api.with(|a| a.limited.len()), limits, "{requests:#?}");
        assert_eq!(
            all.matches("GitHub rate limit: waiting").count(),
            limits,
            "{limits} waits, each named: {all}"
        );
        (all, requests)
    }

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
                    closed_by_runner: false,
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
            == &format!(
                "GET /repos/{OWNER}/{REPO}/commits/{merged_head}/check-runs?per_page=100&page=1"
            )),
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
    let (all, requests) = g.run_waiting_out_limits(3);
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

/// A primary rate limit on the selection's search of issues and the pull request's own calls
/// through the real gh (`gh issue list`, `gh pr create`, `gh pr merge`, which print only
/// GitHub's words): the runner asks GitHub's
/// account of the limit (`/rate_limit`), waits until it lifts and makes the same call again.
/// The issue merges, no attempt is spent and nothing is blamed or halted as a permission.
#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn rate_limits_on_the_pull_requests_calls_are_waited_out_through_the_real_gh() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(&[(1, "Add a greeting", "Say hello.")], json!({}));
    g.api.with(|a| {
        a.limits = vec![
            // Two seconds: GitHub's account, asked right after, still says the budget is spent.
            ("IssueSearch".into(), Limit::Primary { reset_in_secs: 2 }),
            (
                "PullRequestCreate".into(),
                Limit::Primary { reset_in_secs: 2 },
            ),
            (
                "PullRequestMerge".into(),
                Limit::Primary { reset_in_secs: 2 },
            ),
        ]
    });
    let (all, _) = g.run_waiting_out_limits(3);
    let pulls = g.api.with(|a| a.pulls.clone());
    assert_eq!(pulls.len(), 1, "one pull request: {pulls:#?}");
    assert_eq!(pulls[0].state, "MERGED", "{all}");
    assert!(!all.contains("escalat"), "nothing escalated: {all}");
    assert!(!all.contains("attempt 2"), "no attempt spent: {all}");
    assert!(!all.contains("PERMISSION"), "{all}");
}

/// GitHub leaves the issue open after the merge (a token that cannot write issues, a base
/// that is not the default branch): the runner reads it back through the real gh, comments
/// why and closes it.
#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn an_issue_github_left_open_after_the_merge_is_closed_by_the_runner_through_the_real_gh() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(&[(1, "Add a greeting", "Say hello.")], json!({}));
    g.api.with(|a| a.close_on_merge = false);
    let out = g.p.run(&[]);
    let all = text(&out);
    let requests = g.api.requests();
    assert_eq!(code(&out), 0, "{all}\n{requests:#?}");
    assert!(g.unknown_requests().is_empty(), "{requests:#?}");
    let issue = g
        .api
        .with(|a| a.issues.iter().find(|i| i.number == 1).cloned())
        .expect("issue 1");
    assert!(!issue.open && issue.closed_by_runner, "{issue:?}\n{all}");
    assert!(
        issue
            .comments
            .iter()
            .any(|c| c.contains("left the issue open")),
        "{issue:?}"
    );
}

/// GitHub's rate limit refuses the close right after the runner's comment on an issue GitHub
/// left open: the wait is followed by the same request, which closes the issue without saying
/// the same thing twice.
#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn a_rate_limit_between_the_comment_and_the_close_comments_once_through_the_real_gh() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(&[(1, "Add a greeting", "Say hello.")], json!({}));
    g.api.with(|a| {
        a.close_on_merge = false;
        a.limits = vec![(
            format!("PATCH /repos/{OWNER}/{REPO}/issues/1"),
            Limit::Primary { reset_in_secs: 1 },
        )];
    });
    let out = g.p.run(&[]);
    let all = text(&out);
    let requests = g.api.requests();
    assert_eq!(code(&out), 0, "{all}\n{requests:#?}");
    assert_eq!(g.api.with(|a| a.limited.len()), 1, "{requests:#?}");
    let issue = g
        .api
        .with(|a| a.issues.iter().find(|i| i.number == 1).cloned())
        .expect("issue 1");
    assert!(!issue.open && issue.closed_by_runner, "{issue:?}\n{all}");
    let said = issue
        .comments
        .iter()
        .filter(|c| c.contains("left the issue open"))
        .count();
    assert_eq!(said, 1, "one comment: {issue:?}\n{all}");
}

/// A dependency merged, then its dependent, in one run through the real gh: the dependent
/// is not held back by its dependency's state on GitHub.
#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn a_dependency_is_merged_then_its_dependent_through_the_real_gh() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(
        &[
            (1, "Add a greeting", "Say hello."),
            (2, "Greet loudly", "Depends on: #1"),
        ],
        json!({}),
    );
    let out = g.p.run(&[]);
    let all = text(&out);
    let requests = g.api.requests();
    assert_eq!(code(&out), 0, "{all}\n{requests:#?}");
    assert!(!all.contains("all issues blocked"), "{all}");
    let merged: Vec<String> = g.api.with(|a| {
        a.pulls
            .iter()
            .filter(|p| p.state == "MERGED")
            .map(|p| p.head.clone())
            .collect()
    });
    assert_eq!(merged.len(), 2, "{merged:?}\n{all}");
    assert!(
        merged[0].starts_with("1-") && merged[1].starts_with("2-"),
        "{merged:?}"
    );
    assert!(!g.issue_open(1) && !g.issue_open(2), "{all}");
    assert!(g.unknown_requests().is_empty(), "{requests:#?}");
}

/// Branch protection at the merge (GitHub's fields: BLOCKED, a review required), through the
/// real gh: the run halts naming the rule, the PR is not merged, no agent repairs anything
/// and no issue is blamed.
#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn branch_protection_at_the_merge_halts_naming_the_rule_through_the_real_gh() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(&[(1, "Add a greeting", "Say hello.")], json!({}));
    g.api
        .with(|a| a.merge_gate = Some(("BLOCKED".into(), "REVIEW_REQUIRED".into())));
    let out = g.p.run(&[]);
    let all = text(&out);
    let requests = g.api.requests();
    assert_ne!(code(&out), 0, "{all}");
    assert!(all.contains("an approving review is required"), "{all}");
    assert!(!all.contains("MERGE_CONFLICT"), "{all}");
    let pulls = g.api.with(|a| a.pulls.clone());
    assert_eq!(pulls[0].state, "OPEN", "{pulls:?}\n{all}");
    assert!(
        !requests.iter().any(|r| r.contains("PullRequestMerge")),
        "{requests:#?}"
    );
    let labels = g
        .api
        .with(|a| {
            a.issues
                .iter()
                .find(|i| i.number == 1)
                .map(|i| i.labels.clone())
        })
        .expect("issue 1");
    assert!(
        !labels.iter().any(|l| l == "sdlc-escalated"),
        "{labels:?}\n{all}"
    );
    assert_eq!(g.p.count("1 merge"), 0, "{:?}", g.p.invocations());
}

/// A primary limit on the close and a secondary one on the comment, the tracker writes after
/// a merge GitHub left open: both waited out, the issue closed with its comment, nothing
/// escalated and no halt.
#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn rate_limits_on_the_trackers_writes_are_waited_out_through_the_real_gh() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(&[(1, "Add a greeting", "Say hello.")], json!({}));
    g.api.with(|a| {
        a.close_on_merge = false;
        a.limits = vec![
            (
                format!("POST /repos/{OWNER}/{REPO}/issues/1/comments"),
                Limit::Secondary {
                    retry_after: Some(1),
                },
            ),
            (
                format!("PATCH /repos/{OWNER}/{REPO}/issues/1"),
                Limit::Primary { reset_in_secs: 1 },
            ),
        ]
    });
    let (all, requests) = g.run_waiting_out_limits(2);
    assert!(!g.issue_open(1), "{all}");
    assert!(!all.contains("escalat") && !all.contains("HALT"), "{all}");
    assert!(g.unknown_requests().is_empty(), "{requests:#?}");
}

/// 150 check runs on the verified commit, the one failing on the second page: CI has failed
/// (before, the first 100 passing runs let it merge), the agent's repair is told that check,
/// and when the repair leaves CI failing the issue is escalated through the real gh (the
/// label created and added, the comment written), never merged.
#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn a_failing_check_on_the_second_page_of_check_runs_is_not_missed_through_the_real_gh() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(&[(1, "Add a greeting", "Say hello.")], json!({}));
    g.api.with(|a| {
        a.default_checks = (0..150)
            .map(|i| {
                let name = format!("check-{i}");
                if i == 120 {
                    CheckRun::failed(&name)
                } else {
                    CheckRun::passed(&name)
                }
            })
            .collect()
    });
    let out = g.p.run(&[]);
    let all = text(&out);
    let requests = g.api.requests();
    assert!(all.contains("monitorCI: failed"), "{all}");
    let pulls = g.api.with(|a| a.pulls.clone());
    assert_eq!(pulls[0].state, "OPEN", "never merged: {all}");
    let prompt = g.p.prompt(1, "monitorCI", 2).expect("the repair prompt");
    assert!(prompt.contains("check-120"), "{prompt}");
    assert!(
        requests
            .iter()
            .any(|r| r.ends_with("check-runs?per_page=100&page=2")),
        "{requests:#?}"
    );
    let issue = g
        .api
        .with(|a| a.issues.iter().find(|i| i.number == 1).cloned())
        .expect("issue 1");
    assert!(
        issue.labels.iter().any(|l| l == "sdlc-escalated"),
        "{issue:?}\n{all}"
    );
    assert!(g
        .api
        .with(|a| a.labels.contains(&"sdlc-escalated".to_string())));
    assert!(
        issue.comments.iter().any(|c| c.contains("TEST_ASSERTION")),
        "{issue:?}"
    );
    assert!(g.unknown_requests().is_empty(), "{requests:#?}");
}

/// A rate limit that outlasts every allowed wait halts naming GitHub's rate limit, when it
/// lifts and what to do, not the network; nothing is worked or blamed.
#[test]
#[ignore = "needs gh; .ci/run installs it: cargo test -- --ignored"]
fn a_rate_limit_that_outlasts_the_waits_halts_naming_it_through_the_real_gh() {
    if !real_gh_wanted() {
        return;
    }
    let g = RealGh::new(
        &[(1, "Add a greeting", "Say hello.")],
        json!({"maxNetworkWaits": 1}),
    );
    g.api.with(|a| {
        a.limits = vec![
            ("milestones".into(), Limit::Primary { reset_in_secs: 1 }),
            ("milestones".into(), Limit::Primary { reset_in_secs: 600 }),
        ]
    });
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(
        all.contains("ENVIRONMENT FAILURE: GITHUB RATE LIMIT"),
        "{all}"
    );
    assert!(!all.contains("ENVIRONMENT FAILURE: NETWORK"), "{all}");
    assert!(all.contains("the rate limit lifts at: "), "{all}");
    assert!(
        all.contains("lifts in 600 s") || all.contains("lifts in 599 s"),
        "the last refusal's wait: {all}"
    );
    assert!(all.contains("--ack-halt"), "what to do: {all}");
    assert_eq!(g.p.count("1 "), 0, "{:?}", g.p.invocations());
}
