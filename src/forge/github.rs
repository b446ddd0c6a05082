//! The GitHub forge, through the `gh` CLI: every call has a hard time limit, never prompts,
//! and its JSON is parsed by functions that hostile-input tests can reach directly.

mod ci;

pub use ci::parse_checks;
pub(super) use ci::{ci_state_of, failing_checks_of};

use super::{ForgeError, Pr, PrState};
use crate::call_failure::{http_answer, CallFailureKind, Kinded};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Deserialize)]
struct GhPr {
    number: u32,
    url: String,
    state: String,
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
        return Err(gh_refused(gh, repo_dir, &args, &out));
    }
    parse_prs(&out.stdout).map_err(|detail| ForgeError::Parse {
        command: command_text(gh, &args),
        detail,
    })
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

/// A hung `gh` must not hang an unattended run: every call has a hard timeout.
const GH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

pub(super) fn run_gh(
    gh: &PathBuf,
    dir: &PathBuf,
    args: &[&str],
) -> Result<std::process::Output, ForgeError> {
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

pub(super) fn command_text(gh: &Path, args: &[&str]) -> String {
    format!("{} {}", gh.display(), args.join(" "))
}

/// `gh_failed` for a gh command that prints only GitHub's words (`gh pr …`): where those could
/// be a rate limit's (a refusal, or words the runner does not know), GitHub's own account of
/// the budget (`gh api --include rate_limit`, which costs none of it) decides: a spent budget
/// is `RateLimited` until it resets, whatever the words said.
pub(super) fn gh_refused(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    args: &[&str],
    out: &std::process::Output,
) -> ForgeError {
    let mut error = gh_failed(gh, args, out);
    if let ForgeError::Command { kind, .. } = &mut error {
        if matches!(kind, CallFailureKind::Permission | CallFailureKind::Other) {
            if let Some(wait_secs) = budget_spent(gh, repo_dir) {
                *kind = CallFailureKind::RateLimited { wait_secs };
            }
        }
    }
    error
}

/// Seconds until GitHub's spent budget resets, from `GET /rate_limit`; `None` when nothing is
/// spent or GitHub could not be asked.
fn budget_spent(gh: &PathBuf, repo_dir: &PathBuf) -> Option<u64> {
    let out = run_gh(gh, repo_dir, &http_answer::BUDGET_ARGS).ok()?;
    http_answer::budget_spent_now(&out.stdout)
}

pub(super) fn gh_failed(gh: &Path, args: &[&str], out: &std::process::Output) -> ForgeError {
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
        return Err(gh_refused(gh, repo_dir, &args[..6], &out));
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
/// (`UNSTABLE`), not computed yet (`UNKNOWN`), a conflict (`DIRTY`), which the merge itself
/// meets as one, or a branch behind the base branch (`BEHIND`, [`merge_behind`]), which the
/// runner brings up to date.
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
        _ => None,
    })
}

/// Whether GitHub's fields say the base branch's protection wants the branch up to date with
/// it before the merge, and it is not (`mergeStateStatus: BEHIND`).
pub fn merge_behind(json: &[u8]) -> bool {
    serde_json::from_slice::<GhMergeGate>(json).is_ok_and(|gate| {
        gate.merge_state_status
            .is_some_and(|s| s.eq_ignore_ascii_case("BEHIND"))
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
        if merge_behind(&out.stdout) {
            return Err(ForgeError::Command {
                command: command_text(gh, &view),
                status: out.status.code(),
                stderr: format!(
                    "GitHub wants {branch} up to date with the base branch before the merge"
                ),
                hint: "the runner brings the branch up to date and CI passes it first",
                kind: CallFailureKind::Behind,
            });
        }
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
        let failed = gh_refused(gh, repo_dir, &view, &out);
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
        return Err(match gh_refused(gh, repo_dir, &args, &out) {
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

/// The oldest `gh` the adapters' calls work with: every call they make is answered by gh
/// 2.23.0 (Debian 12's) and later. Newer releases only add what the runner does not need.
pub const GH_MINIMUM: (u32, u32, u32) = (2, 23, 0);

/// The version `gh --version` printed (`gh version 2.23.0 (2023-02-27 …)`).
pub fn parse_gh_version(text: &str) -> Option<(u32, u32, u32)> {
    let word = text.lines().next()?.split_whitespace().nth(2)?;
    let core = word.trim_start_matches('v');
    let core = core.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// `gh --version` of `gh`: its version when it is [`GH_MINIMUM`] or later, or what is wrong in
/// an operator's words (the version found and the one needed, or why none was read).
pub fn check_gh_version(gh: &Path, dir: &Path) -> Result<String, String> {
    let (a, b, c) = GH_MINIMUM;
    let mut cmd = Command::new(gh);
    cmd.arg("--version")
        .current_dir(dir)
        .env("GH_PROMPT_DISABLED", "1");
    let out = match crate::process::output_within(cmd, std::time::Duration::from_secs(20)) {
        Ok(Some(out)) => out,
        Ok(None) => {
            return Err(format!(
                "`{} --version` gave no answer within 20 s",
                gh.display()
            ))
        }
        Err(e) => {
            return Err(format!(
                "`{} --version` cannot be started: {e}",
                gh.display()
            ))
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    match parse_gh_version(&text) {
        Some(v) if v >= GH_MINIMUM => Ok(format!("{}.{}.{}", v.0, v.1, v.2)),
        Some(v) => Err(format!(
            "gh {}.{}.{} is older than {a}.{b}.{c}, the oldest gh the runner works with",
            v.0, v.1, v.2
        )),
        None => Err(format!(
            "`{} --version` printed no version the runner can read (it needs gh {a}.{b}.{c} or later)",
            gh.display()
        )),
    }
}

/// What is wrong when `gh` answers with a version older than [`GH_MINIMUM`]; `None` when it
/// is recent enough or gave no version (a missing gh is `doctor`'s to report).
pub fn older_gh(gh: &Path, dir: &Path) -> Option<String> {
    check_gh_version(gh, dir)
        .err()
        .filter(|why| why.contains(" is older than "))
}

#[cfg(test)]
mod version_tests {
    use super::*;

    #[test]
    fn gh_versions_are_read_as_gh_prints_them() {
        let debian =
            "gh version 2.23.0 (2023-02-27 Debian 2.23.0+dfsg1-1)\nhttps://github.com/cli/cli/releases/tag/v2.23.0\n";
        assert_eq!(parse_gh_version(debian), Some((2, 23, 0)));
        assert_eq!(
            parse_gh_version("gh version 2.63.2 (2024-12-05)"),
            Some((2, 63, 2))
        );
        assert_eq!(parse_gh_version("gh version 2.4.0-rc1"), Some((2, 4, 0)));
        assert_eq!(parse_gh_version("Logged in"), None);
        assert!((2, 22, 1) < GH_MINIMUM && (2, 23, 0) >= GH_MINIMUM && (3, 0, 0) > GH_MINIMUM);
    }
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
        assert_eq!(
            rule(r#"{"mergeStateStatus":"BEHIND"}"#),
            None,
            "not a rule's refusal"
        );
        assert!(merge_behind(br#"{"mergeStateStatus":"BEHIND"}"#));
        assert!(!merge_behind(br#"{"mergeStateStatus":"CLEAN"}"#));
        assert!(!merge_behind(b"not json"));
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
