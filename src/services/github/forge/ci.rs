//! CI of one commit on GitHub, through the REST API every `gh` release answers (`gh api`):
//! the commit's check runs (`commits/<sha>/check-runs`) and its commit statuses
//! (`commits/<sha>/status`). `gh pr checks --json` would be shorter, but gh accepts `--json`
//! there only from 2.50 on, and it reports the PR's head, which may have moved past the
//! commit the runner verified. Every call is `gh api --include`, so a failure is classified
//! from GitHub's status and headers (a rate limit among them), not from gh's prose.

use super::{api_call, command_text, refused, run_gh};
use crate::call_failure::{path_segment, HttpAnswer};
use crate::forge::{CiState, ForgeError};
use crate::services::github::requests;
use serde::Deserialize;
use std::path::PathBuf;

/// GitHub lists at most 100 check runs per page; a commit with more (a large matrix) is read
/// page by page, so a failing check on a later page is never missed.
const PER_PAGE: usize = 100;

#[derive(Deserialize)]
struct CheckRuns {
    #[serde(default)]
    check_runs: Vec<CheckRun>,
}

/// Whether another page of check runs follows one of `on_page` runs, `seen` read so far of
/// the `total` GitHub counts (without a count, a full page may have a successor).
fn more_runs(total: Option<usize>, seen: usize, on_page: usize) -> bool {
    on_page == PER_PAGE && total.is_none_or(|t| seen < t)
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

/// Every page of the commit's check runs, as one body `parse_checks` reads.
fn all_check_runs(gh: &PathBuf, repo_dir: &PathBuf, base: &str) -> Result<Vec<u8>, ForgeError> {
    let mut runs: Vec<serde_json::Value> = Vec::new();
    for page in 1.. {
        let endpoint = format!("{base}/check-runs?per_page={PER_PAGE}&page={page}");
        let answer = api_get(gh, repo_dir, &endpoint)?;
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            total_count: Option<usize>,
            #[serde(default)]
            check_runs: Vec<serde_json::Value>,
        }
        let one: Page = serde_json::from_slice(&answer.body).map_err(|e| ForgeError::Parse {
            command: command_text(gh, &["api", &endpoint]),
            detail: format!("check runs: {e}"),
        })?;
        let on_page = one.check_runs.len();
        runs.extend(one.check_runs);
        if !more_runs(one.total_count, runs.len(), on_page) {
            break;
        }
    }
    Ok(
        serde_json::json!({"total_count": runs.len(), "check_runs": runs})
            .to_string()
            .into_bytes(),
    )
}

/// `gh api --include <endpoint>`: GitHub's answer with its status and headers. A failed
/// answer is an error whose kind its status and headers decide; no answer at all (gh could
/// not reach the API) is classified from what gh printed.
pub(crate) fn api_get(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    endpoint: &str,
) -> Result<HttpAnswer, ForgeError> {
    let (answer, args, out) = api_call(gh, repo_dir, "GET", endpoint, None)?;
    if answer.ok() {
        Ok(answer)
    } else {
        Err(refused(gh, &args, &answer, &out))
    }
}

/// The commit's check runs (every page, as one body) and its combined status.
fn both(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    git_ref: &str,
) -> Result<(Vec<u8>, HttpAnswer, String), ForgeError> {
    let base = format!("repos/{{owner}}/{{repo}}/commits/{}", path_segment(git_ref));
    let runs = all_check_runs(gh, repo_dir, &base)?;
    let statuses = api_get(gh, repo_dir, &format!("{base}/status"))?;
    Ok((runs, statuses, base))
}

/// CI of `git_ref`: a commit (the one the runner verified) or a branch name (its head on
/// GitHub).
pub(crate) fn ci_state_of(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    git_ref: &str,
) -> Result<CiState, ForgeError> {
    let (runs, statuses, base) = both(gh, repo_dir, git_ref)?;
    parse_checks(&runs, &statuses.body).map_err(|detail| ForgeError::Parse {
        command: command_text(gh, &["api", &base]),
        detail,
    })
}

/// Lines of a failed job's log kept for the repair context.
const LOG_TAIL_LINES: usize = 60;

/// The failing checks of `git_ref` with their links, each of the first
/// `requests::MAX_FAILED_JOB_LOGS` with the end of its job log when the link is a GitHub
/// Actions job (`…/actions/runs/<run>/job/<job>`).
pub(crate) fn failing_checks_of(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    git_ref: &str,
) -> Result<String, ForgeError> {
    let (runs, statuses, base) = both(gh, repo_dir, git_ref)?;
    let (runs, statuses) =
        parse_both(&runs, &statuses.body).map_err(|detail| ForgeError::Parse {
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
    let mut logs = 0;
    for (name, link) in failing {
        text.push_str(&format!("failing check: {name} {link}\n"));
        // Each log is requests of its own: the first few failures tell the repair enough.
        let job = actions_job(link).filter(|_| logs < requests::MAX_FAILED_JOB_LOGS);
        if let Some(job) = job {
            logs += 1;
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
    fn check_runs_are_read_until_githubs_count_is_reached() {
        assert!(more_runs(Some(150), 100, 100), "page 2 of 150");
        assert!(!more_runs(Some(150), 150, 50), "a short page is the last");
        assert!(!more_runs(Some(100), 100, 100), "exactly one full page");
        assert!(
            more_runs(None, 100, 100),
            "no count: a full page may have more"
        );
        assert!(!more_runs(None, 40, 40));
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
