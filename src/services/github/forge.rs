//! The GitHub forge, through the `gh` CLI: every call has a hard time limit, never prompts,
//! and its JSON is parsed by functions that hostile-input tests can reach directly.

mod ci;
mod queue;
mod reviews;

use crate::ports::git::CallEnd;
use ci::api_get;
pub use ci::parse_checks;
pub(crate) use ci::{ci_state_of, failing_checks_of};
pub(crate) use queue::queue_state;
pub use queue::{parse_queue_look, queue_state_of, QueueLook};
pub(crate) use reviews::review_state;
pub use reviews::{check_reviews_readable, login_of, parse_review_state, Lists, ReviewsReadable};

use crate::call_failure::{path_segment, CallFailureKind, HttpAnswer};
use crate::forge::{ForgeError, Pr, PrState};
use crate::services::github::gh::{self, Gh, GhError};
pub use crate::services::github::version::{
    check_gh_version, older_gh, parse_gh_version, GH_MINIMUM,
};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A pull request as GitHub's REST API lists it (`GET repos/{owner}/{repo}/pulls`).
#[derive(Deserialize)]
struct RestPr {
    number: u32,
    #[serde(default)]
    html_url: String,
    state: String,
    #[serde(default)]
    merged_at: Option<String>,
}

/// The PR whose head is `branch` (see [`parse_prs`] for which one wins):
/// `GET repos/{owner}/{repo}/pulls?head=<owner>:<branch>&state=all`. The owner is the one
/// gh resolves for the repository (`{owner}`): the runner pushes its branches to that
/// repository, never to a fork.
pub(crate) fn pr_for_branch(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    branch: &str,
) -> Result<Option<Pr>, ForgeError> {
    let endpoint = format!(
        "repos/{{owner}}/{{repo}}/pulls?head={{owner}}:{}&state=all&per_page=100",
        path_segment(branch)
    );
    let answer = api_get(gh, repo_dir, &endpoint)?;
    parse_prs(&answer.body).map_err(|detail| ForgeError::Parse {
        command: command_text(gh, &["api", &endpoint]),
        detail,
    })
}

/// The PR GitHub's REST list of one branch's pull requests describes
/// (`[{"number", "html_url", "state": "open"|"closed", "merged_at"}]`, a closed PR with
/// `merged_at` being merged): with several (a closed one and its reopened successor), an
/// open PR wins over a merged one over a closed one, then the newest. Errors describe the
/// problem without quoting the bytes.
pub fn parse_prs(json: &[u8]) -> Result<Option<Pr>, String> {
    let prs: Vec<RestPr> = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let rank = |s: PrState| match s {
        PrState::Open => 2,
        PrState::Merged => 1,
        PrState::Closed => 0,
    };
    let mut best: Option<Pr> = None;
    for p in prs {
        let merged = p.merged_at.as_deref().is_some_and(|m| !m.is_empty());
        let state = match p.state.to_ascii_lowercase().as_str() {
            "open" => PrState::Open,
            "closed" if merged => PrState::Merged,
            "closed" => PrState::Closed,
            other => {
                let shown: String = other.chars().take(20).collect();
                return Err(format!("unknown PR state {shown:?}"));
            }
        };
        let pr = Pr {
            number: p.number,
            url: p.html_url,
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
pub(crate) fn run_gh(
    gh: &PathBuf,
    dir: &PathBuf,
    args: &[&str],
) -> Result<std::process::Output, ForgeError> {
    run_gh_with(gh, dir, args, None)
}

/// [`run_gh`] with `stdin` as gh's standard input, through the one gh runner
/// ([`Gh::run`]).
fn run_gh_with(
    gh: &PathBuf,
    dir: &PathBuf,
    args: &[&str],
    stdin: Option<Vec<u8>>,
) -> Result<std::process::Output, ForgeError> {
    let printed = Gh {
        program: gh,
        dir,
        timeout: gh::TIMEOUT,
    }
    .run(args, stdin)
    .map_err(|e| forge_error(gh, e))?;
    Ok(std::process::Output {
        status: printed.status,
        stdout: printed.stdout,
        stderr: printed.stderr.into_bytes(),
    })
}

/// A gh call that gave nothing to read, as the forge's error.
fn forge_error(gh: &Path, e: GhError) -> ForgeError {
    let kind = e.kind();
    match e {
        GhError::Stopped { command, why } => ForgeError::Stopped { command, why },
        GhError::CannotStart { source, .. } => ForgeError::Spawn {
            program: gh.display().to_string(),
            source,
        },
        GhError::TimedOut { command, limit } => ForgeError::Command {
            command,
            ended: CallEnd::Otherwise,
            stderr: format!("no answer within {} s; stopped", limit.as_secs()),
            hint: "check the network and `gh auth status`",
            kind,
        },
        GhError::NoAnswer {
            command,
            code,
            stderr,
            ..
        } => ForgeError::Command {
            command,
            ended: CallEnd::of_exit(code),
            kind,
            stderr,
            hint: "check `gh auth status` and that the project's remote is a GitHub repository",
        },
    }
}

pub(crate) fn command_text(gh: &Path, args: &[&str]) -> String {
    Gh {
        program: gh,
        dir: Path::new("."),
        timeout: gh::TIMEOUT,
    }
    .command_text(args)
}

pub(crate) fn gh_failed(gh: &Path, args: &[&str], out: &std::process::Output) -> ForgeError {
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    ForgeError::Command {
        command: command_text(gh, args),
        ended: CallEnd::of_exit(out.status.code()),
        kind: CallFailureKind::of_gh(&stderr),
        stderr,
        hint: "check `gh auth status` and that the project's remote is a GitHub repository",
    }
}

/// `gh api --include [-X method] <endpoint> [--input -]` with `body` as the request's JSON
/// on gh's standard input: GitHub's answer whatever its status, with the arguments and
/// gh's output (for the caller's error), or an error when gh got no answer at all
/// (classified from what gh printed).
fn api_call(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    method: &str,
    endpoint: &str,
    body: Option<&serde_json::Value>,
) -> Result<(HttpAnswer, Vec<String>, std::process::Output), ForgeError> {
    let a = Gh {
        program: gh,
        dir: repo_dir,
        timeout: gh::TIMEOUT,
    }
    .api(method, endpoint, body)
    .map_err(|e| forge_error(gh, e))?;
    let out = std::process::Output {
        status: a.status,
        stdout: Vec::new(),
        stderr: a.stderr.into_bytes(),
    };
    Ok((a.answer, a.args, out))
}

/// The error of a failed answer: its kind from the status and headers (a rate limit among
/// them), its words GitHub's message (or the status).
fn refused(
    gh: &Path,
    args: &[String],
    answer: &HttpAnswer,
    out: &std::process::Output,
) -> ForgeError {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut error = gh_failed(gh, &argv, out);
    if let ForgeError::Command { kind, stderr, .. } = &mut error {
        *kind = answer.failure_kind(now_epoch_secs());
        let message = github_message(answer);
        *stderr = match (message.is_empty(), stderr.is_empty()) {
            (false, _) => format!("HTTP {}: {message}", answer.status),
            (true, false) => format!("HTTP {}; {stderr}", answer.status),
            (true, true) => format!("HTTP {}", answer.status),
        };
    }
    error
}

fn now_epoch_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// GitHub's `message` (and the first error's) in a failed answer's body, shortened.
fn github_message(answer: &HttpAnswer) -> String {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&answer.body) else {
        return String::new();
    };
    let mut text = v["message"].as_str().unwrap_or_default().to_string();
    if let Some(first) = v["errors"][0]["message"].as_str() {
        text = format!("{text} ({first})");
    }
    text.chars().take(500).collect()
}

/// `POST repos/{owner}/{repo}/pulls`: the body goes in the request's JSON on gh's standard
/// input, so a long one never meets the kernel's limit on one argument. The PR is read from
/// GitHub's answer (201), so opening one costs this one request: nothing is read before it,
/// as a read of the branch's PRs before the runner's own would be a counted request (its
/// answer changes with the PR, so the next read is no 304). A branch that has a PR already
/// (a person opened it, or a run killed after the request) is answered 422 ("A pull request
/// already exists for …"): then the branch's PR is read, and an open or merged one is the
/// answer; without one the refusal stands.
pub(crate) fn create_pr(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    base: &str,
    branch: &str,
    title: &str,
    body: &str,
) -> Result<Pr, ForgeError> {
    let request = serde_json::json!({"title": title, "body": body, "head": branch, "base": base});
    let (answer, args, out) = api_call(gh, repo_dir, "POST", CREATE_PR, Some(&request))?;
    if answer.ok() {
        return match parse_prs(&[b"[", answer.body.as_slice(), b"]"].concat()) {
            Ok(Some(pr)) => Ok(pr),
            _ => pr_for_branch(gh, repo_dir, branch)?.ok_or_else(|| ForgeError::Parse {
                command: command_text(gh, &["api", "-X", "POST", CREATE_PR]),
                detail: "the PR just created is neither in the answer nor listed".to_string(),
            }),
        };
    }
    if answer.status == 422 {
        if let Some(pr) =
            pr_for_branch(gh, repo_dir, branch)?.filter(|pr| pr.state != PrState::Closed)
        {
            return Ok(pr);
        }
    }
    Err(refused(gh, &args, &answer, &out))
}

/// Where a pull request is opened.
const CREATE_PR: &str = "repos/{owner}/{repo}/pulls";

/// What GitHub's REST API says of an open PR's mergeability (`GET …/pulls/N`).
#[derive(Deserialize)]
struct RestMergeGate {
    #[serde(default)]
    mergeable_state: Option<String>,
    #[serde(default)]
    draft: Option<bool>,
}

/// The rule named by GitHub's `reviewDecision` (GraphQL) when the PR is blocked.
fn blocked_by(review_decision: Option<&str>) -> &'static str {
    match review_decision
        .unwrap_or_default()
        .to_ascii_uppercase()
        .as_str()
    {
        "REVIEW_REQUIRED" => "an approving review is required by branch protection",
        "CHANGES_REQUESTED" => "a reviewer requested changes",
        _ => "required status checks or another branch protection rule are not satisfied",
    }
}

/// The base branch's rule that keeps the PR from merging, from GitHub's REST answer for the
/// PR (`mergeable_state`, `draft`) and, for a blocked PR, the review decision
/// (`reviewDecision`, which only GraphQL tells: REST's reviews list cannot say whether a
/// review is required); `None` when nothing does as far as GitHub can tell: clean, only
/// non-required checks failing (`unstable`), not computed yet (`unknown`), a conflict
/// (`dirty`), which the merge itself meets as one, or a branch behind the base branch
/// (`behind`, [`merge_behind`]), which the runner brings up to date.
pub fn merge_refusal(
    pull: &[u8],
    review_decision: Option<&str>,
) -> Result<Option<&'static str>, String> {
    let gate: RestMergeGate = serde_json::from_slice(pull).map_err(|e| e.to_string())?;
    let state = gate
        .mergeable_state
        .unwrap_or_default()
        .to_ascii_lowercase();
    if gate.draft == Some(true) || state == "draft" {
        return Ok(Some(
            "the pull request is a draft (a person marks it ready for review)",
        ));
    }
    Ok((state == "blocked").then(|| blocked_by(review_decision)))
}

/// Whether the PR's `mergeable_state` is `blocked`: the one state whose rule the review
/// decision names.
fn blocked(pull: &[u8]) -> bool {
    serde_json::from_slice::<RestMergeGate>(pull).is_ok_and(|gate| {
        gate.mergeable_state
            .is_some_and(|s| s.eq_ignore_ascii_case("blocked"))
    })
}

/// Whether GitHub's fields say the base branch's protection wants the branch up to date with
/// it before the merge, and it is not (`mergeable_state: behind`).
pub fn merge_behind(pull: &[u8]) -> bool {
    serde_json::from_slice::<RestMergeGate>(pull).is_ok_and(|gate| {
        gate.mergeable_state
            .is_some_and(|s| s.eq_ignore_ascii_case("behind"))
    })
}

/// Whether GitHub's fields say the PR conflicts with its base (`mergeable_state: dirty`).
fn merge_dirty(pull: &[u8]) -> bool {
    serde_json::from_slice::<RestMergeGate>(pull).is_ok_and(|gate| {
        gate.mergeable_state
            .is_some_and(|s| s.eq_ignore_ascii_case("dirty"))
    })
}

/// Whether GitHub's words refusing a merge name a rule of the base branch rather than a
/// conflict (`At least 1 approving review is required…`, `Required status check … is
/// expected`): the fallback when GitHub's fields say nothing of the refusal.
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

/// The review decision of PR `number` (`gh api graphql --include`, so a limit on it is
/// classified like any other answer's; `None` when GitHub gives none) and whether its base
/// branch takes its merges through a merge queue (asked only `with_queue`).
fn review_decision(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    number: u32,
    with_queue: bool,
) -> Result<(Option<String>, bool), ForgeError> {
    // The merge queue's field only where the merge asks (GitHub Enterprise Server before 3.8
    // knows no such field): the review gate's look asks for the decision alone.
    let query = if with_queue {
        "query PullRequestReviewDecision($owner: String!, $repo: String!, $number: Int!) { repository(owner: $owner, name: $repo) { pullRequest(number: $number) { reviewDecision isMergeQueueEnabled } } }"
    } else {
        "query PullRequestReviewDecision($owner: String!, $repo: String!, $number: Int!) { repository(owner: $owner, name: $repo) { pullRequest(number: $number) { reviewDecision } } }"
    };
    let args = crate::call_failure::gh_graphql_args(query, number);
    let answer = graphql_answer(gh, repo_dir, &args)?;
    let v: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
    let pull = &v["data"]["repository"]["pullRequest"];
    let queue = pull["isMergeQueueEnabled"].as_bool().unwrap_or(false);
    Ok((pull["reviewDecision"].as_str().map(str::to_string), queue))
}

/// `gh api --include graphql` with `args`: GitHub's answer, counted, or the error of a call
/// that failed or an answer that holds GraphQL errors (a rate limit among them).
pub(super) fn graphql_answer(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    args: &[String],
) -> Result<HttpAnswer, ForgeError> {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_gh(gh, repo_dir, &argv)?;
    let Some(answer) = HttpAnswer::parse(&out.stdout) else {
        return Err(gh_failed(gh, &argv, &out));
    };
    crate::call_failure::conditional::count(&answer);
    if !answer.graphql_ok() {
        return Err(refused(gh, args, &answer, &out));
    }
    Ok(answer)
}

/// The open PR of `branch`: its number, or an error naming the branch when it has none.
fn open_pr_number(gh: &PathBuf, repo_dir: &PathBuf, branch: &str) -> Result<u32, ForgeError> {
    match pr_for_branch(gh, repo_dir, branch)? {
        Some(pr) if pr.state == PrState::Open => Ok(pr.number),
        _ => Err(ForgeError::Command {
            command: command_text(gh, &["api", "repos/{owner}/{repo}/pulls"]),
            ended: CallEnd::Otherwise,
            stderr: format!("no open pull request for {branch}"),
            hint: "the runner opens it in createPR; check the repository's pull requests",
            kind: CallFailureKind::NotFound,
        }),
    }
}

/// `PUT …/pulls/N/merge` with `{"sha": commit, "merge_method": "merge"}`: a merge commit, as
/// the reference runner's agents made, only while the PR's head is `commit`, the one CI
/// passed (GitHub answers 409 if a push moved it meanwhile: `LostRace`, after which the
/// runner's look finds the person's move). GitHub's fields are asked first, so a rule of the
/// base branch (a required review, required checks, a draft) is an answer of its own
/// (`CallFailureKind::Policy`), never a conflict; a 405 after them is told from the fields
/// read again (a conflict, a rule, a branch behind). The branch is deleted on origin by the
/// runner's own git after the merge; the project's clone is never touched.
pub(crate) fn merge_pr(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    branch: &str,
    commit: &str,
) -> Result<(), ForgeError> {
    let number = open_pr_number(gh, repo_dir, branch)?;
    let pull = format!("repos/{{owner}}/{{repo}}/pulls/{number}");
    let fields = api_get(gh, repo_dir, &pull)?;
    if let Some(refusal) = gate_refusal(gh, repo_dir, branch, number, &pull, &fields)? {
        return Err(through_queue(gh, repo_dir, (branch, commit), refusal));
    }
    let request = serde_json::json!({"sha": commit, "merge_method": "merge"});
    let endpoint = format!("{pull}/merge");
    let (answer, args, out) = api_call(gh, repo_dir, "PUT", &endpoint, Some(&request))?;
    if answer.ok() {
        return Ok(());
    }
    let mut error = refused(gh, &args, &answer, &out);
    if let ForgeError::Command { kind, stderr, .. } = &mut error {
        match answer.status {
            // The head is no longer the commit CI passed.
            409 => *kind = CallFailureKind::LostRace,
            405 | 422 => {
                // Not mergeable: GitHub's fields, read again, say why where they can.
                if queue::needs_the_queue(stderr) {
                    return Err(queue::enqueue(gh, repo_dir, branch, commit));
                }
                let fields = api_get(gh, repo_dir, &pull)?;
                if let Some(refusal) = gate_refusal(gh, repo_dir, branch, number, &pull, &fields)? {
                    return Err(through_queue(gh, repo_dir, (branch, commit), refusal));
                }
                *kind = if merge_dirty(&fields.body) {
                    CallFailureKind::Conflict
                } else if refused_by_policy(stderr) {
                    CallFailureKind::Policy
                } else {
                    match CallFailureKind::of_gh(stderr) {
                        CallFailureKind::Permission | CallFailureKind::NotFound => {
                            CallFailureKind::Other
                        }
                        other => other,
                    }
                };
            }
            _ => {}
        }
    }
    if let ForgeError::Command { hint, kind, .. } = &mut error {
        if *kind == CallFailureKind::Policy {
            *hint = POLICY_HINT;
        }
    }
    Err(error)
}

/// [`merge_pr`]'s first look alone, for a merge an agent makes: GitHub's fields of the
/// branch's PR, `Err` when they say the branch is behind its base (`Behind`) or a rule
/// refuses the merge (`Policy`).
pub(crate) fn merge_gate(gh: &PathBuf, repo_dir: &PathBuf, branch: &str) -> Result<(), ForgeError> {
    let number = open_pr_number(gh, repo_dir, branch)?;
    let pull = format!("repos/{{owner}}/{{repo}}/pulls/{number}");
    let fields = api_get(gh, repo_dir, &pull)?;
    match gate_refusal(gh, repo_dir, branch, number, &pull, &fields)? {
        Some(refusal) => Err(refusal),
        None => Ok(()),
    }
}

/// A refusal of the merge as it is: when it says the base branch takes its merges through a
/// merge queue, the PR put in the queue with `commit` (the answer of kind `Queued`).
fn through_queue(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    (branch, commit): (&str, &str),
    refusal: ForgeError,
) -> ForgeError {
    match refusal {
        ForgeError::Command {
            kind: CallFailureKind::Queued,
            ..
        } => queue::enqueue(gh, repo_dir, branch, commit),
        other => other,
    }
}

const POLICY_HINT: &str =
    "have a person satisfy the rule or change the base branch's protection, then run again";

/// What GitHub's fields (`answer`, to `GET …/pulls/N`) say keeps PR `number` from merging:
/// the branch behind its base (`Behind`), a rule (`Policy`) or the base branch's merge queue
/// (`Queued`: the PR goes through it); `None` when nothing does.
fn gate_refusal(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    branch: &str,
    number: u32,
    pull: &str,
    answer: &HttpAnswer,
) -> Result<Option<ForgeError>, ForgeError> {
    let command = command_text(gh, &["api", pull]);
    if merge_behind(&answer.body) {
        return Ok(Some(ForgeError::Command {
            command,
            ended: CallEnd::Http(answer.status),
            stderr: format!(
                "GitHub wants {branch} up to date with the base branch before the merge"
            ),
            hint: "the runner brings the branch up to date and CI passes it first",
            kind: CallFailureKind::Behind,
        }));
    }
    let (decision, queue) = if blocked(&answer.body) {
        review_decision(gh, repo_dir, number, true)?
    } else {
        (None, false)
    };
    if queue {
        // Blocked because the base branch merges only through its queue: no rule refuses.
        return Ok(Some(ForgeError::Command {
            command,
            ended: CallEnd::Http(answer.status),
            stderr: format!("{branch}'s base branch takes its merges through a merge queue"),
            hint: "the runner puts the pull request in the queue",
            kind: CallFailureKind::Queued,
        }));
    }
    Ok(match merge_refusal(&answer.body, decision.as_deref()) {
        Ok(Some(rule)) => Some(ForgeError::Command {
            command,
            ended: CallEnd::Http(answer.status),
            stderr: format!("GitHub refuses the merge of {branch}: {rule}"),
            hint: POLICY_HINT,
            kind: CallFailureKind::Policy,
        }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_fields_name_the_rule_that_keeps_a_pr_from_merging() {
        let rule = |json: &str, decision: Option<&str>| {
            merge_refusal(json.as_bytes(), decision).expect("json")
        };
        assert_eq!(
            rule(r#"{"mergeable_state":"clean","draft":false}"#, None),
            None
        );
        for open in ["unstable", "unknown", "dirty", "has_hooks", "behind"] {
            let json = format!(r#"{{"mergeable_state":"{open}","draft":false}}"#);
            assert_eq!(rule(&json, None), None, "{open}");
        }
        let draft = rule(r#"{"mergeable_state":"draft","draft":true}"#, None);
        assert!(draft.is_some_and(|r| r.contains("draft")), "{draft:?}");
        let blocked = r#"{"mergeable_state":"blocked","draft":false}"#;
        let review = rule(blocked, Some("REVIEW_REQUIRED"));
        assert!(
            review.is_some_and(|r| r.contains("approving review")),
            "{review:?}"
        );
        let changes = rule(blocked, Some("CHANGES_REQUESTED"));
        assert!(
            changes.is_some_and(|r| r.contains("requested changes")),
            "{changes:?}"
        );
        for decision in [Some("APPROVED"), None] {
            let checks = rule(blocked, decision);
            assert!(checks.is_some_and(|r| r.contains("checks")), "{checks:?}");
        }
        assert!(blocked_pr(blocked));
        assert!(merge_behind(br#"{"mergeable_state":"behind"}"#));
        assert!(!merge_behind(br#"{"mergeable_state":"clean"}"#));
        assert!(!merge_behind(b"not json"));
        assert!(merge_dirty(br#"{"mergeable_state":"dirty"}"#));
        assert!(merge_refusal(b"not json", None).is_err());
    }

    fn blocked_pr(json: &str) -> bool {
        blocked(json.as_bytes())
    }

    #[test]
    fn githubs_rest_list_of_a_branchs_prs_names_the_one_that_counts() {
        let list = br#"[
            {"number": 3, "html_url": "u3", "state": "closed", "merged_at": null},
            {"number": 5, "html_url": "u5", "state": "closed", "merged_at": "2026-01-01T00:00:00Z"},
            {"number": 7, "html_url": "u7", "state": "open", "merged_at": null}
        ]"#;
        let pr = parse_prs(list).expect("json").expect("a PR");
        assert_eq!(
            (pr.number, pr.state, pr.url.as_str()),
            (7, PrState::Open, "u7")
        );
        assert!(
            parse_prs(&list[..list.len() - 1]).is_err(),
            "a cut list is no JSON"
        );
        let merged = parse_prs(
            br#"[{"number": 3, "html_url": "u3", "state": "closed", "merged_at": null},
                {"number": 5, "html_url": "u5", "state": "closed", "merged_at": "2026-01-01T00:00:00Z"}]"#,
        )
        .expect("json")
        .expect("a PR");
        assert_eq!((merged.number, merged.state), (5, PrState::Merged));
        assert_eq!(parse_prs(b"[]"), Ok(None));
        assert!(parse_prs(br#"[{"number": 1, "state": "weird"}]"#).is_err());
    }

    #[test]
    fn gh_words_of_a_rule_are_not_a_conflict() {
        assert!(refused_by_policy(
            "HTTP 405: At least 1 approving review is required by reviewers with write access."
        ));
        assert!(refused_by_policy(
            "GraphQL: At least 1 approving review is required by reviewers with write access. (mergePullRequest)"
        ));
        assert!(!refused_by_policy(
            "HTTP 405: Pull Request is not mergeable"
        ));
    }
}
