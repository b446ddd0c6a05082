//! The GitHub forge, through the `gh` CLI: every call has a hard time limit, never prompts,
//! and its JSON is parsed by functions that hostile-input tests can reach directly.

use super::{CiState, ForgeError, Pr, PrState};
use crate::call_failure::{CallFailureKind, Kinded};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Deserialize)]
struct GhPr {
    number: u32,
    url: String,
    state: String,
}

#[derive(Deserialize)]
struct GhCheck {
    #[serde(default)]
    bucket: Option<String>,
    #[serde(default)]
    state: Option<String>,
}

/// The PR whose head is `branch` (see [`parse_prs`] for which one wins).
pub(super) fn pr_for_branch(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    branch: &str,
) -> Result<Option<Pr>, ForgeError> {
    let args = [
        "pr",
        "list",
        "--head",
        branch,
        "--state",
        "all",
        "--json",
        "number,url,state",
    ];
    let out = run_gh(gh, repo_dir, &args)?;
    if !out.status.success() {
        return Err(gh_failed(gh, &args, &out));
    }
    parse_prs(&out.stdout).map_err(|detail| ForgeError::Parse {
        command: command_text(gh, &args),
        detail,
    })
}

/// `gh pr checks` exits 1 on failing checks and 8 on pending ones (a defect of the older
/// runner, docs/design-notes.md), so the JSON on stdout is read whatever the exit code, and
/// only its absence is an error.
pub(super) fn ci_state(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    branch: &str,
) -> Result<CiState, ForgeError> {
    let mut out = None;
    // `bucket` is missing from older gh; the raw `state` is enough to classify.
    for fields in ["name,state,bucket", "name,state"] {
        let args = ["pr", "checks", branch, "--json", fields];
        let o = run_gh(gh, repo_dir, &args)?;
        let stderr = String::from_utf8_lossy(&o.stderr).to_ascii_lowercase();
        if stderr.contains("no checks reported") {
            return Ok(CiState::NoneConfigured);
        }
        if stderr.contains("unknown json field") && fields.contains("bucket") {
            continue;
        }
        out = Some((o, args));
        break;
    }
    let Some((out, args)) = out else {
        return Err(ForgeError::Parse {
            command: command_text(gh, &["pr", "checks", branch]),
            detail: "gh accepted no JSON field set".to_string(),
        });
    };
    match parse_checks(&out.stdout) {
        Ok(state) => Ok(state),
        Err(detail) if out.status.success() => Err(ForgeError::Parse {
            command: command_text(gh, &args),
            detail,
        }),
        Err(_) => Err(gh_failed(gh, &args, &out)),
    }
}

/// The PR `gh pr list --json number,url,state` describes for one branch: with several (a
/// closed one and its reopened successor), an open PR wins over a merged one over a closed
/// one, then the newest. Errors describe the problem without quoting the bytes.
pub fn parse_prs(json: &[u8]) -> Result<Option<Pr>, String> {
    let prs: Vec<GhPr> = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let rank = |s: PrState| match s {
        PrState::Open => 2,
        PrState::Merged => 1,
        PrState::Closed => 0,
    };
    let mut best: Option<Pr> = None;
    for p in prs {
        let state = match p.state.to_ascii_uppercase().as_str() {
            "OPEN" => PrState::Open,
            "MERGED" => PrState::Merged,
            "CLOSED" => PrState::Closed,
            other => {
                let shown: String = other.chars().take(20).collect();
                return Err(format!("unknown PR state {shown:?}"));
            }
        };
        let pr = Pr {
            number: p.number,
            url: p.url,
            state,
        };
        let better = best
            .as_ref()
            .is_none_or(|b| (rank(pr.state), pr.number) > (rank(b.state), b.number));
        if better {
            best = Some(pr);
        }
    }
    Ok(best)
}

/// What `gh pr checks --json …` says about CI: no checks, pending, failed or passed.
pub fn parse_checks(json: &[u8]) -> Result<CiState, String> {
    let checks: Vec<GhCheck> = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    if checks.is_empty() {
        return Ok(CiState::NoneConfigured);
    }
    let mut pending = false;
    for c in &checks {
        match classify_check(c) {
            CiState::Failed => return Ok(CiState::Failed),
            CiState::Pending => pending = true,
            _ => {}
        }
    }
    Ok(if pending {
        CiState::Pending
    } else {
        CiState::Passed
    })
}

fn classify_check(c: &GhCheck) -> CiState {
    if let Some(bucket) = &c.bucket {
        return match bucket.to_ascii_lowercase().as_str() {
            "pass" | "skipping" => CiState::Passed,
            "pending" => CiState::Pending,
            _ => CiState::Failed, // fail, cancel, and anything newer we cannot vouch for
        };
    }
    match c
        .state
        .as_deref()
        .unwrap_or("")
        .to_ascii_uppercase()
        .as_str()
    {
        "SUCCESS" | "SKIPPED" | "NEUTRAL" => CiState::Passed,
        "PENDING" | "QUEUED" | "IN_PROGRESS" | "WAITING" | "REQUESTED" | "EXPECTED" => {
            CiState::Pending
        }
        _ => CiState::Failed,
    }
}

/// A hung `gh` must not hang an unattended run: every call has a hard timeout.
const GH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

fn run_gh(gh: &PathBuf, dir: &PathBuf, args: &[&str]) -> Result<std::process::Output, ForgeError> {
    let mut cmd = Command::new(gh);
    cmd.args(args)
        .current_dir(dir)
        // gh must never stop to ask a question in an unattended run.
        .env("GH_PROMPT_DISABLED", "1")
        .env("NO_COLOR", "1");
    crate::process::output_within(cmd, GH_TIMEOUT)
        .map_err(|source| match crate::process::stopped(&source) {
            Some(why) => ForgeError::Stopped {
                command: command_text(gh, args),
                why,
            },
            None => ForgeError::Spawn {
                program: gh.display().to_string(),
                source,
            },
        })?
        .ok_or_else(|| ForgeError::Command {
            command: command_text(gh, args),
            status: None,
            stderr: format!("no answer within {} s; stopped", GH_TIMEOUT.as_secs()),
            hint: "check the network and `gh auth status`",
            kind: CallFailureKind::TimedOut,
        })
}

fn command_text(gh: &Path, args: &[&str]) -> String {
    format!("{} {}", gh.display(), args.join(" "))
}

fn gh_failed(gh: &Path, args: &[&str], out: &std::process::Output) -> ForgeError {
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    ForgeError::Command {
        command: command_text(gh, args),
        status: out.status.code(),
        kind: CallFailureKind::of_gh(&stderr),
        stderr,
        hint: "check `gh auth status` and that the project's remote is a GitHub repository",
    }
}

/// `gh pr create`: the body goes as an argument (no shell is involved, so nothing in it is
/// interpreted).
pub(super) fn create_pr(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    base: &str,
    branch: &str,
    title: &str,
    body: &str,
) -> Result<(), ForgeError> {
    let args = [
        "pr", "create", "--head", branch, "--base", base, "--title", title, "--body", body,
    ];
    let out = run_gh(gh, repo_dir, &args)?;
    if !out.status.success() {
        return Err(gh_failed(gh, &args[..6], &out));
    }
    Ok(())
}

/// What GitHub says of a PR's mergeability (`gh pr view --json …`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GhMergeGate {
    #[serde(default)]
    merge_state_status: Option<String>,
    #[serde(default)]
    review_decision: Option<String>,
    #[serde(default)]
    is_draft: Option<bool>,
}

/// The fields [`merge_refusal`] reads.
const MERGE_GATE_FIELDS: &str = "mergeStateStatus,reviewDecision,isDraft,mergeable";

/// The base branch's rule that keeps the PR from merging, from what
/// `gh pr view --json mergeStateStatus,reviewDecision,isDraft,mergeable` printed; `None` when
/// nothing does as far as GitHub can tell: clean, only non-required checks failing
/// (`UNSTABLE`), not computed yet (`UNKNOWN`), or a conflict (`DIRTY`), which the merge
/// itself meets as one.
pub fn merge_refusal(json: &[u8]) -> Result<Option<&'static str>, String> {
    let gate: GhMergeGate = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let status = gate
        .merge_state_status
        .unwrap_or_default()
        .to_ascii_uppercase();
    if gate.is_draft == Some(true) || status == "DRAFT" {
        return Ok(Some(
            "the pull request is a draft (a person marks it ready for review)",
        ));
    }
    Ok(match status.as_str() {
        "BLOCKED" => Some(
            match gate
                .review_decision
                .unwrap_or_default()
                .to_ascii_uppercase()
                .as_str()
            {
                "REVIEW_REQUIRED" => "an approving review is required by branch protection",
                "CHANGES_REQUESTED" => "a reviewer requested changes",
                _ => "required status checks or another branch protection rule are not satisfied",
            },
        ),
        "BEHIND" => {
            Some("branch protection requires the branch to be up to date with the base branch")
        }
        _ => None,
    })
}

/// Whether gh's words refusing a merge name a rule of the base branch rather than a conflict
/// (`Pull request #3 is not mergeable: the base branch policy prohibits the merge`): the
/// fallback when GitHub's fields said nothing before the merge.
pub fn refused_by_policy(stderr: &str) -> bool {
    let text = stderr.to_ascii_lowercase();
    [
        "base branch policy prohibits the merge",
        "protected branch",
        "review is required",
        "approving review",
        "changes requested",
        "required status check",
        "is in draft",
        "is still a draft",
    ]
    .iter()
    .any(|rule| text.contains(rule))
}

/// `gh pr merge --merge`: a merge commit, as the reference runner's agents made;
/// `--match-head-commit`: only while the PR's head is `commit`, the one CI passed (GitHub
/// refuses the merge if a push moved it meanwhile). GitHub's fields are asked first, so a rule
/// of the base branch (a required review, required checks, a draft) is an answer of its own
/// (`CallFailureKind::Policy`), never a conflict. No `--delete-branch`: gh would check out
/// the default branch, pull and delete the local branch in the project's clone, which is the
/// runner's; the branch is deleted on origin by the runner's own git after the merge.
pub(super) fn merge_pr(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    branch: &str,
    commit: &str,
) -> Result<(), ForgeError> {
    let view = ["pr", "view", branch, "--json", MERGE_GATE_FIELDS];
    let out = run_gh(gh, repo_dir, &view)?;
    if out.status.success() {
        if let Ok(Some(rule)) = merge_refusal(&out.stdout) {
            return Err(ForgeError::Command {
                command: command_text(gh, &view),
                status: out.status.code(),
                stderr: format!("GitHub refuses the merge of {branch}: {rule}"),
                hint: "have a person satisfy the rule or change the base branch's protection, then run again",
                kind: CallFailureKind::Policy,
            });
        }
    } else {
        let failed = gh_failed(gh, &view, &out);
        // Without GitHub's fields (an older gh, a field it lacks) the merge's own answer
        // decides; a network failure is the machine's to wait out.
        if failed.kind().is_transient() {
            return Err(failed);
        }
    }
    let args = [
        "pr",
        "merge",
        branch,
        "--merge",
        "--match-head-commit",
        commit,
    ];
    let out = run_gh(gh, repo_dir, &args)?;
    if !out.status.success() {
        return Err(match gh_failed(gh, &args, &out) {
            ForgeError::Command {
                command,
                status,
                stderr,
                ..
            } if refused_by_policy(&stderr) => ForgeError::Command {
                command,
                status,
                stderr,
                hint: "have a person satisfy the rule or change the base branch's protection, then run again",
                kind: CallFailureKind::Policy,
            },
            other => other,
        });
    }
    Ok(())
}

#[derive(Deserialize)]
struct FailingCheck {
    name: String,
    #[serde(default)]
    bucket: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    link: Option<String>,
}

/// Lines of a failed job's log kept for the repair context.
const LOG_TAIL_LINES: usize = 60;

/// The failing checks' names and links, each with the end of its job log when the link is
/// a GitHub Actions job (`…/actions/runs/<run>/job/<job>`).
pub(super) fn failing_checks(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    branch: &str,
) -> Result<String, ForgeError> {
    let args = ["pr", "checks", branch, "--json", "name,state,bucket,link"];
    let out = run_gh(gh, repo_dir, &args)?;
    let checks: Vec<FailingCheck> =
        serde_json::from_slice(&out.stdout).map_err(|e| ForgeError::Parse {
            command: command_text(gh, &args),
            detail: e.to_string(),
        })?;
    let mut text = String::new();
    for c in checks {
        let probe = GhCheck {
            bucket: c.bucket.clone(),
            state: c.state.clone(),
        };
        if classify_check(&probe) != CiState::Failed {
            continue;
        }
        let link = c.link.unwrap_or_default();
        text.push_str(&format!("failing check: {} {link}\n", c.name));
        let job = link
            .split("/job/")
            .nth(1)
            .map(|j| {
                j.split(['/', '?', '#'])
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .filter(|j| !j.is_empty() && j.chars().all(|ch| ch.is_ascii_digit()));
        if let Some(job) = job {
            let log_args = ["run", "view", "--job", job.as_str(), "--log-failed"];
            if let Ok(log) = run_gh(gh, repo_dir, &log_args) {
                let log = String::from_utf8_lossy(&log.stdout);
                let lines: Vec<&str> = log.lines().collect();
                let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
                for line in tail {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_fields_name_the_rule_that_keeps_a_pr_from_merging() {
        let rule = |json: &str| merge_refusal(json.as_bytes()).expect("json");
        assert_eq!(
            rule(r#"{"mergeStateStatus":"CLEAN","isDraft":false}"#),
            None
        );
        for open in ["UNSTABLE", "UNKNOWN", "DIRTY", "HAS_HOOKS"] {
            let json = format!(r#"{{"mergeStateStatus":"{open}","reviewDecision":null}}"#);
            assert_eq!(rule(&json), None, "{open}");
        }
        let draft = rule(r#"{"mergeStateStatus":"DRAFT","isDraft":true}"#);
        assert!(draft.is_some_and(|r| r.contains("draft")), "{draft:?}");
        let review = rule(r#"{"mergeStateStatus":"BLOCKED","reviewDecision":"REVIEW_REQUIRED"}"#);
        assert!(review.is_some_and(|r| r.contains("review")), "{review:?}");
        let checks = rule(r#"{"mergeStateStatus":"BLOCKED","reviewDecision":"APPROVED"}"#);
        assert!(checks.is_some_and(|r| r.contains("checks")), "{checks:?}");
        let behind = rule(r#"{"mergeStateStatus":"BEHIND"}"#);
        assert!(
            behind.is_some_and(|r| r.contains("up to date")),
            "{behind:?}"
        );
        assert!(merge_refusal(b"not json").is_err());
    }

    #[test]
    fn gh_words_of_a_rule_are_not_a_conflict() {
        assert!(refused_by_policy(
            "X Pull request #3 is not mergeable: the base branch policy prohibits the merge."
        ));
        assert!(refused_by_policy(
            "GraphQL: At least 1 approving review is required by reviewers with write access. (mergePullRequest)"
        ));
        assert!(!refused_by_policy(
            "X Pull request #3 is not mergeable: the merge commit cannot be cleanly created."
        ));
    }
}
