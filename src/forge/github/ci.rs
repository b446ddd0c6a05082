//! CI of one commit on GitHub, through the REST API every `gh` release answers (`gh api`):
//! the commit's check runs (`commits/<sha>/check-runs`) and its commit statuses
//! (`commits/<sha>/status`). `gh pr checks --json` would be shorter, but gh accepts `--json`
//! there only from 2.50 on, and it reports the PR's head, which may have moved past the
//! commit the runner verified. Every call is `gh api --include`, so a failure is classified
//! from GitHub's status and headers (a rate limit among them), not from gh's prose.

use super::super::{CiState, ForgeError};
use super::{command_text, gh_failed, run_gh};
use crate::call_failure::{path_segment, HttpAnswer};
use serde::Deserialize;
use std::path::PathBuf;

/// GitHub lists at most 100 check runs per page; a commit with more is rare enough that the
/// first 100 (the newest of each name, GitHub's default `filter=latest`) decide.
const CHECK_RUNS: &str = "check-runs?per_page=100";

#[derive(Deserialize)]
struct CheckRuns {
    #[serde(default)]
    check_runs: Vec<CheckRun>,
}

#[derive(Deserialize)]
struct CheckRun {
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
}

#[derive(Deserialize)]
struct CombinedStatus {
    #[serde(default)]
    statuses: Vec<CommitStatus>,
}

#[derive(Deserialize)]
struct CommitStatus {
    #[serde(default)]
    context: String,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    target_url: Option<String>,
}

fn run_state(r: &CheckRun) -> CiState {
    let lower = |s: &Option<String>| s.as_deref().unwrap_or("").to_ascii_lowercase();
    if lower(&r.status) != "completed" {
        return CiState::Pending;
    }
    match lower(&r.conclusion).as_str() {
        "success" | "neutral" | "skipped" => CiState::Passed,
        // failure, cancelled, timed_out, action_required, stale, and anything newer.
        _ => CiState::Failed,
    }
}

fn status_state(s: &CommitStatus) -> CiState {
    match s
        .state
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase()
        .as_str()
    {
        "success" => CiState::Passed,
        "pending" => CiState::Pending,
        _ => CiState::Failed,
    }
}

/// What a commit's check runs and commit statuses (the bodies of GitHub's
/// `commits/<sha>/check-runs` and `commits/<sha>/status`) say about its CI: none configured,
/// pending, failed or passed. Errors describe the problem without quoting the bytes.
pub fn parse_checks(check_runs: &[u8], statuses: &[u8]) -> Result<CiState, String> {
    let (runs, statuses) = parse_both(check_runs, statuses)?;
    let states: Vec<CiState> = runs
        .iter()
        .map(run_state)
        .chain(statuses.iter().map(status_state))
        .collect();
    if states.is_empty() {
        return Ok(CiState::NoneConfigured);
    }
    Ok(if states.contains(&CiState::Failed) {
        CiState::Failed
    } else if states.contains(&CiState::Pending) {
        CiState::Pending
    } else {
        CiState::Passed
    })
}

fn parse_both(
    check_runs: &[u8],
    statuses: &[u8],
) -> Result<(Vec<CheckRun>, Vec<CommitStatus>), String> {
    let runs: CheckRuns =
        serde_json::from_slice(check_runs).map_err(|e| format!("check runs: {e}"))?;
    let status: CombinedStatus =
        serde_json::from_slice(statuses).map_err(|e| format!("commit statuses: {e}"))?;
    Ok((runs.check_runs, status.statuses))
}

/// `gh api --include <endpoint>`: GitHub's answer with its status and headers. A failed
/// answer is an error whose kind its status and headers decide; no answer at all (gh could
/// not reach the API) is classified from what gh printed.
pub(in crate::forge) fn api_get(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    endpoint: &str,
) -> Result<HttpAnswer, ForgeError> {
    let args = ["api", "--include", endpoint];
    let out = run_gh(gh, repo_dir, &args)?;
    let Some(answer) = HttpAnswer::parse(&out.stdout) else {
        return Err(gh_failed(gh, &args, &out));
    };
    if answer.ok() {
        return Ok(answer);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut error = gh_failed(gh, &args, &out);
    if let ForgeError::Command { kind, stderr, .. } = &mut error {
        *kind = answer.failure_kind(now);
        if stderr.is_empty() {
            *stderr = format!("HTTP {}", answer.status);
        }
    }
    Err(error)
}

fn both(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    git_ref: &str,
) -> Result<(HttpAnswer, HttpAnswer, String), ForgeError> {
    let base = format!("repos/{{owner}}/{{repo}}/commits/{}", path_segment(git_ref));
    let runs = api_get(gh, repo_dir, &format!("{base}/{CHECK_RUNS}"))?;
    let statuses = api_get(gh, repo_dir, &format!("{base}/status"))?;
    Ok((runs, statuses, base))
}

/// CI of `git_ref`: a commit (the one the runner verified) or a branch name (its head on
/// GitHub).
pub(in crate::forge) fn ci_state_of(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    git_ref: &str,
) -> Result<CiState, ForgeError> {
    let (runs, statuses, base) = both(gh, repo_dir, git_ref)?;
    parse_checks(&runs.body, &statuses.body).map_err(|detail| ForgeError::Parse {
        command: command_text(gh, &["api", &base]),
        detail,
    })
}

/// Lines of a failed job's log kept for the repair context.
const LOG_TAIL_LINES: usize = 60;

/// The failing checks of `git_ref` with their links, each with the end of its job log when
/// the link is a GitHub Actions job (`…/actions/runs/<run>/job/<job>`).
pub(in crate::forge) fn failing_checks_of(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    git_ref: &str,
) -> Result<String, ForgeError> {
    let (runs, statuses, base) = both(gh, repo_dir, git_ref)?;
    let (runs, statuses) =
        parse_both(&runs.body, &statuses.body).map_err(|detail| ForgeError::Parse {
            command: command_text(gh, &["api", &base]),
            detail,
        })?;
    let failing = runs
        .iter()
        .filter(|r| run_state(r) == CiState::Failed)
        .map(|r| (r.name.as_str(), r.html_url.as_deref().unwrap_or_default()))
        .chain(
            statuses
                .iter()
                .filter(|s| status_state(s) == CiState::Failed)
                .map(|s| {
                    (
                        s.context.as_str(),
                        s.target_url.as_deref().unwrap_or_default(),
                    )
                }),
        );
    let mut text = String::new();
    for (name, link) in failing {
        text.push_str(&format!("failing check: {name} {link}\n"));
        if let Some(job) = actions_job(link) {
            let log_args = ["run", "view", "--job", job.as_str(), "--log-failed"];
            if let Ok(log) = run_gh(gh, repo_dir, &log_args) {
                let log = String::from_utf8_lossy(&log.stdout);
                let lines: Vec<&str> = log.lines().collect();
                for line in &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..] {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    Ok(text)
}

/// The job id of a GitHub Actions job link, if `link` is one.
fn actions_job(link: &str) -> Option<String> {
    link.split("/job/")
        .nth(1)
        .map(|j| {
            j.split(['/', '?', '#'])
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .filter(|j| !j.is_empty() && j.chars().all(|ch| ch.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_runs_and_statuses_decide_together() {
        let none = br#"{"total_count":0,"check_runs":[]}"#;
        let no_status = br#"{"state":"pending","statuses":[],"total_count":0}"#;
        assert_eq!(parse_checks(none, no_status), Ok(CiState::NoneConfigured));
        let passed = br#"{"check_runs":[{"name":"a","status":"completed","conclusion":"success"},{"name":"b","status":"completed","conclusion":"skipped"}]}"#;
        assert_eq!(parse_checks(passed, no_status), Ok(CiState::Passed));
        let running = br#"{"check_runs":[{"name":"a","status":"in_progress","conclusion":null}]}"#;
        assert_eq!(parse_checks(running, no_status), Ok(CiState::Pending));
        let failed_status = br#"{"statuses":[{"context":"ci/x","state":"failure"}]}"#;
        assert_eq!(parse_checks(running, failed_status), Ok(CiState::Failed));
        let pending_status = br#"{"statuses":[{"context":"ci/x","state":"pending"}]}"#;
        assert_eq!(parse_checks(passed, pending_status), Ok(CiState::Pending));
        let cancelled =
            br#"{"check_runs":[{"name":"a","status":"completed","conclusion":"cancelled"}]}"#;
        assert_eq!(parse_checks(cancelled, no_status), Ok(CiState::Failed));
        assert!(parse_checks(b"not json", no_status).is_err());
    }

    #[test]
    fn a_branch_name_is_one_path_segment() {
        assert_eq!(path_segment("7-fix/x y"), "7-fix%2Fx%20y");
        assert_eq!(path_segment("0123abc"), "0123abc");
        assert_eq!(
            actions_job("https://github.com/o/r/actions/runs/5/job/77?pr=3"),
            Some("77".to_string())
        );
        assert_eq!(actions_job("https://ci.example/build/5"), None);
    }
}
