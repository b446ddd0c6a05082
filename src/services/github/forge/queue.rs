//! GitHub's merge queue. A base branch whose rules require one refuses a direct merge (its PRs
//! read `blocked`, and `PUT …/merge` answers 405 "Changes must be made through the merge
//! queue"): the runner puts the PR in the queue instead, carrying the commit CI verified
//! (GraphQL `enqueuePullRequest` with `expectedHeadOid`), and looks at it, one GraphQL request
//! a look, until GitHub merges it (the tree the queue's CI passed) or takes it out (its CI
//! failed on the merge group, or a person dequeued or closed it).

use super::command_text;
use crate::call_failure::{CallFailureKind, HttpAnswer};
use crate::forge::ForgeError;
use crate::ports::forge::QueueState;
use crate::ports::git::CallEnd;
use serde::Deserialize;
use std::path::PathBuf;

/// The newest PR of a branch and where it stands in the merge queue, and the last removal
/// from the queue with GitHub's reason.
const LOOK: &str = "query PullRequestQueue($owner: String!, $repo: String!, $branch: String!) { repository(owner: $owner, name: $repo) { pullRequests(headRefName: $branch, last: 1) { nodes { id number state isInMergeQueue isMergeQueueEnabled timelineItems(last: 1, itemTypes: [REMOVED_FROM_MERGE_QUEUE_EVENT]) { nodes { ... on RemovedFromMergeQueueEvent { reason actor { login } } } } } } } }";

/// The PR put in its base branch's merge queue, only while its head is `$head`.
const ENQUEUE: &str = "mutation PullRequestEnqueue($id: ID!, $head: GitObjectID!) { enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $head}) { mergeQueueEntry { position } } }";

/// What the look read of a branch's newest PR.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueLook {
    /// The PR's node id, which the enqueue names.
    pub id: String,
    /// Its number.
    pub number: u32,
    /// `OPEN`, `MERGED` or `CLOSED`.
    pub state: String,
    /// Whether it is in the merge queue now.
    #[serde(default)]
    pub is_in_merge_queue: bool,
    /// Whether its base branch has a merge queue.
    #[serde(default)]
    pub is_merge_queue_enabled: bool,
    /// The last removal from the queue: GitHub's reason and who removed it.
    #[serde(default, deserialize_with = "last_removal")]
    #[serde(rename = "timelineItems")]
    pub removal: Option<(String, String)>,
}

fn last_removal<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<(String, String)>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(v["nodes"].as_array().and_then(|n| n.last()).map(|n| {
        let reason = n["reason"].as_str().unwrap_or_default().to_string();
        let actor = n["actor"]["login"].as_str().unwrap_or_default().to_string();
        (reason, actor)
    }))
}

/// The look's answer (`data.repository.pullRequests.nodes`): the branch's newest PR, `None`
/// when it has none. Errors describe the problem without quoting the bytes.
pub fn parse_queue_look(json: &[u8]) -> Result<Option<QueueLook>, String> {
    let v: serde_json::Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let nodes = &v["data"]["repository"]["pullRequests"]["nodes"];
    let Some(nodes) = nodes.as_array() else {
        return Err("no pull requests in GitHub's answer".to_string());
    };
    match nodes.last() {
        Some(node) => serde_json::from_value(node.clone())
            .map(Some)
            .map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// Where the look's PR stands: merged, still queued, closed, or out of the queue because its
/// CI failed on the merge group (GitHub's reason names failing checks or a failure) or
/// because a person took it out (any other reason).
pub fn queue_state_of(look: &QueueLook) -> QueueState {
    match look.state.to_ascii_uppercase().as_str() {
        "MERGED" => QueueState::Merged,
        "CLOSED" => QueueState::Removed("closed the pull request"),
        _ if look.is_in_merge_queue => QueueState::Queued,
        _ => {
            let (reason, _) = look.removal.clone().unwrap_or_default();
            let words = reason.to_ascii_lowercase();
            if words.contains("fail") || words.contains("check") {
                QueueState::ChecksFailed(reason)
            } else {
                QueueState::Removed("took the pull request out of the merge queue")
            }
        }
    }
}

/// `gh api --include graphql` with `query` and string variables `vars` (the owner and the
/// repository filled by gh): GitHub's answer, counted, or the error of a failed one.
fn graphql(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    query: &str,
    vars: &[(&str, &str)],
) -> Result<HttpAnswer, ForgeError> {
    let mut args: Vec<String> = ["api", "--include", "graphql", "-F", "owner={owner}", "-F"]
        .into_iter()
        .map(String::from)
        .collect();
    args.push("repo={repo}".to_string());
    for (name, value) in vars {
        args.push("-f".to_string());
        args.push(format!("{name}={value}"));
    }
    args.push("-f".to_string());
    args.push(format!("query={query}"));
    super::graphql_answer(gh, repo_dir, &args)
}

/// The look at `branch`'s newest PR: one GraphQL request.
pub(super) fn look(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    branch: &str,
) -> Result<QueueLook, ForgeError> {
    let answer = graphql(gh, repo_dir, LOOK, &[("branch", branch)])?;
    match parse_queue_look(&answer.body) {
        Ok(Some(look)) => Ok(look),
        Ok(None) => Err(ForgeError::Command {
            command: command_text(gh, &["api", "graphql", "PullRequestQueue"]),
            ended: CallEnd::Otherwise,
            stderr: format!("no pull request for {branch}"),
            hint: "the runner opens it in createPR; check the repository's pull requests",
            kind: CallFailureKind::NotFound,
        }),
        Err(detail) => Err(ForgeError::Parse {
            command: command_text(gh, &["api", "graphql", "PullRequestQueue"]),
            detail,
        }),
    }
}

/// [`ForgePort::queue_state`](crate::ports::ForgePort::queue_state) on GitHub.
pub(crate) fn queue_state(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    branch: &str,
) -> Result<QueueState, ForgeError> {
    look(gh, repo_dir, branch).map(|l| queue_state_of(&l))
}

/// Puts `branch`'s PR in its base branch's merge queue, only while its head is `commit` (the
/// one CI passed); a PR already in the queue is left there. The answer is the error of kind
/// `Queued` that tells the machine to wait for the queue; a refused enqueue is the refusal.
pub(super) fn enqueue(gh: &PathBuf, repo_dir: &PathBuf, branch: &str, commit: &str) -> ForgeError {
    let pr = match look(gh, repo_dir, branch) {
        Ok(pr) => pr,
        Err(e) => return e,
    };
    if !pr.is_in_merge_queue {
        let vars = [("id", pr.id.as_str()), ("head", commit)];
        if let Err(mut e) = graphql(gh, repo_dir, ENQUEUE, &vars) {
            if let ForgeError::Command { kind, .. } = &mut e {
                // The head moved since the look: a person's push, as for a direct merge.
                if *kind == CallFailureKind::Other {
                    *kind = CallFailureKind::LostRace;
                }
            }
            return e;
        }
    }
    queued(gh, &pr, commit)
}

fn queued(gh: &std::path::Path, pr: &QueueLook, commit: &str) -> ForgeError {
    let short: String = commit.chars().take(12).collect();
    ForgeError::Command {
        command: command_text(gh, &["api", "graphql", "PullRequestEnqueue"]),
        ended: CallEnd::Otherwise,
        stderr: format!(
            "the base branch takes its merges through GitHub's merge queue: PR #{} is in it at {short}, and the runner waits for the queue's CI and merge",
            pr.number
        ),
        hint: "nothing to do: the queue merges it, or takes it out naming why",
        kind: CallFailureKind::Queued,
    }
}

/// Whether GitHub's words refusing a merge say the base branch takes its merges through the
/// merge queue (`Changes must be made through the merge queue`).
pub fn needs_the_queue(stderr: &str) -> bool {
    stderr.to_ascii_lowercase().contains("merge queue")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(json: &str) -> QueueLook {
        parse_queue_look(json.as_bytes())
            .expect("json")
            .expect("a PR")
    }

    #[test]
    fn githubs_queue_look_tells_merged_queued_failed_and_a_persons_dequeue_apart() {
        let pr = |state: &str, queued: bool, removal: &str| {
            format!(
                r#"{{"data":{{"repository":{{"pullRequests":{{"nodes":[{{"id":"PR_1","number":7,
                "state":"{state}","isInMergeQueue":{queued},"isMergeQueueEnabled":true,
                "timelineItems":{{"nodes":[{removal}]}}}}]}}}}}}}}"#
            )
        };
        assert_eq!(
            queue_state_of(&look(&pr("MERGED", false, ""))),
            QueueState::Merged
        );
        assert_eq!(
            queue_state_of(&look(&pr("OPEN", true, ""))),
            QueueState::Queued
        );
        let failed = r#"{"reason":"Failed status checks","actor":{"login":"github-merge-queue"}}"#;
        assert_eq!(
            queue_state_of(&look(&pr("OPEN", false, failed))),
            QueueState::ChecksFailed("Failed status checks".into())
        );
        let manual = r#"{"reason":"Manually removed","actor":{"login":"alice"}}"#;
        let removed = queue_state_of(&look(&pr("OPEN", false, manual)));
        assert!(
            matches!(&removed, QueueState::Removed(w) if w.contains("merge queue")),
            "{removed:?}"
        );
        assert!(matches!(
            queue_state_of(&look(&pr("CLOSED", false, ""))),
            QueueState::Removed(_)
        ));
        let l = look(&pr("OPEN", true, ""));
        assert_eq!((l.id.as_str(), l.number), ("PR_1", 7));
        assert!(l.is_merge_queue_enabled);
        let none = r#"{"data":{"repository":{"pullRequests":{"nodes":[]}}}}"#;
        assert_eq!(parse_queue_look(none.as_bytes()), Ok(None));
        assert!(parse_queue_look(b"{}").is_err());
        assert!(needs_the_queue(
            "HTTP 405: Changes must be made through the merge queue"
        ));
        assert!(!needs_the_queue("HTTP 405: Pull Request is not mergeable"));
    }
}
