//! The offline forge: origin plays GitHub. A branch with its own work merged into
//! `origin/<main>` is a merged PR; CI is the optional local command ([`LocalCi`]).
//!
//! Open PRs are records (`<pulls>/<n>.json`) when the runner opens them itself (builtin
//! createPR). When an agent opens them instead it has no way to write a record, so without
//! a records directory a pushed branch stands for its open PR.

use super::ci::LocalCi;
use crate::forge::{CiState, ForgeError, Pr, PrState, ReviewKind};
use crate::git::repo::Repo;
use crate::ports::forge::TrainTree;
use crate::ports::git::CallEnd;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One local pull request.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    number: u32,
    branch: String,
    title: String,
    body: String,
    created_at: String,
}

fn records(pulls: &Path) -> Result<Vec<Record>, ForgeError> {
    let entries = match std::fs::read_dir(pulls) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(io_error(pulls, "cannot list the local PRs", source)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let bytes = crate::safe_fs::read_no_follow(&path)
            .map_err(|source| io_error(&path, "cannot read a local PR", source))?;
        let record: Record = serde_json::from_slice(&bytes).map_err(|e| ForgeError::Parse {
            command: format!("read {}", path.display()),
            detail: format!("{e}; remove the file if it is not a PR record"),
        })?;
        out.push(record);
    }
    out.sort_by_key(|r| r.number);
    Ok(out)
}

fn io_error(path: &Path, what: &str, source: std::io::Error) -> ForgeError {
    ForgeError::Command {
        command: format!("{what} ({})", path.display()),
        ended: CallEnd::Otherwise,
        stderr: source.to_string(),
        hint: "check the permissions of the runner's state directory",
        kind: crate::call_failure::CallFailureKind::of_io(&source),
    }
}

fn url(branch: &str, number: u32) -> String {
    if number == 0 {
        format!("local:{branch}")
    } else {
        format!("local:{branch}#{number}")
    }
}

pub(crate) fn pr_for_branch(
    repo: &Repo,
    pulls: Option<&Path>,
    branch: &str,
) -> Result<Option<Pr>, ForgeError> {
    let record = match pulls {
        Some(dir) => records(dir)?.into_iter().rev().find(|r| r.branch == branch),
        None => None,
    };
    let number = record.as_ref().map_or(0, |r| r.number);
    if repo.branch_has_own_work(branch)? && repo.merged_into_main(branch)? {
        return Ok(Some(Pr {
            number,
            url: url(branch, number),
            state: PrState::Merged,
        }));
    }
    let open = match pulls {
        Some(_) => record.is_some(),
        None => repo.branch_pushed(branch)?,
    };
    Ok(open.then(|| Pr {
        number,
        url: url(branch, number),
        state: PrState::Open,
    }))
}

pub(crate) fn create_pr(
    pulls: Option<&Path>,
    branch: &str,
    title: &str,
    body: &str,
) -> Result<Pr, ForgeError> {
    let Some(dir) = pulls else {
        // An agent-run createPR: pushing the branch was opening the PR.
        return Ok(Pr {
            number: 0,
            url: url(branch, 0),
            state: PrState::Open,
        });
    };
    crate::safe_fs::create_private_dir(dir).map_err(|e| ForgeError::Command {
        command: format!("create {}", dir.display()),
        ended: CallEnd::Otherwise,
        kind: crate::call_failure::CallFailureKind::Permission,
        stderr: e.to_string(),
        hint: "check the runner's state directory",
    })?;
    let number = records(dir)?.last().map_or(1, |r| r.number + 1);
    let record = Record {
        number,
        branch: branch.to_string(),
        title: title.to_string(),
        body: body.to_string(),
        created_at: chrono::Utc::now().to_rfc3339(),
    };
    let path = dir.join(format!("{number}.json"));
    let bytes = serde_json::to_vec_pretty(&record).map_err(|e| ForgeError::Parse {
        command: format!("write {}", path.display()),
        detail: e.to_string(),
    })?;
    crate::safe_fs::write_new(&path, &bytes)
        .map_err(|source| io_error(&path, "cannot write the local PR", source))?;
    Ok(Pr {
        number,
        url: url(branch, number),
        state: PrState::Open,
    })
}

/// The merge of `commit` on `branch`, by the rule that main holds only trees CI passed: the
/// commit main would hold is built on origin's main and CI's verdict on its tree is read
/// (the merge train's, or the branch's when the tree is `commit`'s own; CI runs on it when it
/// has none). A failure is the combination's ([`ForgeError::CiFailedTogether`]), or the
/// branch's own when the tree is `commit`'s ([`ForgeError::CiFailedAlone`]); nothing is
/// merged. Main then moves to exactly that commit, leased on the main it was built on.
pub(crate) fn merge_pr(
    repo: &Repo,
    ci: Option<&LocalCi>,
    branch: &str,
    commit: &str,
    message: &str,
) -> Result<(), ForgeError> {
    let built = repo.build_merge(branch, commit, message)?;
    if let Some(ci) = ci.filter(|_| built.same_tree) {
        if ci.state_of(repo, commit)? != CiState::Passed {
            return Err(ForgeError::CiFailedAlone {
                branch: branch.to_string(),
                main: repo.main.clone(),
                commit: short(commit).to_string(),
                checks: ci.failing_of(commit)?,
            });
        }
    }
    if let Some(ci) = ci.filter(|_| !built.same_tree) {
        if ci.state_of(repo, &built.merge)? != CiState::Passed {
            return Err(ForgeError::CiFailedTogether {
                branch: branch.to_string(),
                main: repo.main.clone(),
                base: short(&built.base).to_string(),
                merged: short(&built.merge).to_string(),
                checks: ci.failing_of(&built.merge)?,
            });
        }
        crate::failpoint::point("merge: combination tested");
    }
    repo.push_merge(branch, commit, &built)
}

/// One tree of the merge train on the local forge: each of `merges` merged in order onto
/// `base` (origin's main after a fetch, when `None`) exactly as [`merge_pr`] will merge it,
/// so that the landing builds the commit tested here; then CI on the last merge (on the
/// commit itself, where the merge's tree is that commit's: CI passed it already). Merges
/// that conflict do not pass. Origin's main neither `base` nor one of the merges: main moved
/// without the train.
pub(crate) fn test_train(
    repo: &Repo,
    ci: Option<&LocalCi>,
    base: Option<&str>,
    merges: &[(String, String)],
) -> Result<TrainTree, ForgeError> {
    repo.fetch()?;
    let main = repo.origin_main()?.unwrap_or_default();
    let base = base.map_or_else(|| main.clone(), str::to_string);
    let mut chain = vec![base.clone()];
    let mut tested = None;
    for (commit, message) in merges {
        let onto = chain.last().cloned().unwrap_or_default();
        match repo.build_merge_onto(&onto, commit, commit, message) {
            Ok(built) => {
                tested = Some(if built.same_tree {
                    commit.clone()
                } else {
                    built.merge.clone()
                });
                chain.push(built.merge);
            }
            Err(e @ (ForgeError::MergeConflict { .. } | ForgeError::ConflictMarkers { .. })) => {
                tracing::debug!("the train's tree does not build: {e}");
                return Ok(TrainTree::Tested {
                    base,
                    merge: None,
                    passed: false,
                });
            }
            Err(e) => return Err(e),
        }
    }
    if !chain.contains(&main) {
        return Ok(TrainTree::MainMoved { main });
    }
    let passed = match (ci, &tested) {
        (Some(ci), Some(sha)) => ci.state_of(repo, sha)? == CiState::Passed,
        _ => true,
    };
    Ok(TrainTree::Tested {
        base,
        merge: chain.last().cloned().filter(|_| !merges.is_empty()),
        passed,
    })
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// The reviews of one issue's PR, oldest first: `<dir>/<issue>.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct ReviewsFile {
    #[serde(default)]
    reviews: Vec<crate::forge::Feedback>,
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

fn reviews_path(dir: &Path, issue: u32) -> std::path::PathBuf {
    dir.join(format!("{issue}.json"))
}

fn read_reviews(dir: &Path, issue: u32) -> Result<ReviewsFile, ForgeError> {
    let path = reviews_path(dir, issue);
    let bytes = match crate::safe_fs::read_no_follow(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ReviewsFile::default()),
        Err(source) => return Err(io_error(&path, "cannot read the local reviews", source)),
    };
    serde_json::from_slice(&bytes).map_err(|e| ForgeError::Parse {
        command: format!("read {}", path.display()),
        detail: format!(
            "{e}; expected {{\"reviews\": [{{\"id\", \"author\", \"time\", \"body\", \"kind\"}}, …]}}: repair or remove the file"
        ),
    })
}

/// Every review and comment on issue `issue`'s PR, oldest first.
pub(crate) fn reviews_of(
    dir: &Path,
    issue: u32,
) -> Result<Vec<crate::forge::Feedback>, ForgeError> {
    Ok(read_reviews(dir, issue)?.reviews)
}

/// Stores a review of issue `issue`'s PR by `author` in `dir` (created if missing), with
/// the next id and the time `time` (RFC 3339), and returns it. The file is replaced
/// atomically, so a reader never sees half a review.
pub fn record_review(
    dir: &Path,
    issue: u32,
    author: &str,
    kind: ReviewKind,
    body: &str,
    time: &str,
) -> Result<crate::forge::Feedback, ForgeError> {
    crate::safe_fs::create_private_dir(dir).map_err(|e| ForgeError::Command {
        command: format!("create {}", dir.display()),
        ended: CallEnd::Otherwise,
        kind: crate::call_failure::CallFailureKind::Permission,
        stderr: e.to_string(),
        hint: "check the permissions of the tracker's directory",
    })?;
    let mut file = read_reviews(dir, issue)?;
    let review = crate::forge::Feedback {
        id: format!("local-{issue}-{}", file.reviews.len() + 1),
        author: author.to_string(),
        time: time.to_string(),
        body: body.to_string(),
        kind,
        path: None,
        line: None,
    };
    file.reviews.push(review.clone());
    let path = reviews_path(dir, issue);
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| ForgeError::Parse {
        command: format!("write {}", path.display()),
        detail: e.to_string(),
    })?;
    bytes.push(b'\n');
    crate::safe_fs::write_atomic(&path, &bytes)
        .map_err(|source| io_error(&path, "cannot write the local reviews", source))?;
    Ok(review)
}

#[cfg(test)]
mod review_tests {
    use super::*;
    use crate::forge::{ReviewDecision, ReviewState};

    fn review(dir: &Path, author: &str, kind: ReviewKind, time: &str) {
        record_review(dir, 3, author, kind, "text", time).unwrap();
    }

    #[test]
    fn a_request_for_changes_stands_until_its_reviewer_approves() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("reviews");
        assert_eq!(reviews_of(&dir, 3).unwrap(), vec![]);
        review(&dir, "ann", ReviewKind::Approve, "2026-01-01T00:00:00Z");
        review(
            &dir,
            "bob",
            ReviewKind::RequestChanges,
            "2026-01-01T01:00:00Z",
        );
        review(&dir, "bob", ReviewKind::Comment, "2026-01-01T02:00:00Z");
        let all = reviews_of(&dir, 3).unwrap();
        assert_eq!(ReviewState::decide(&all), ReviewDecision::ChangesRequested);
        let ids: Vec<_> = all.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["local-3-1", "local-3-2", "local-3-3"]);
        review(&dir, "bob", ReviewKind::Approve, "2026-01-01T03:00:00Z");
        let state = ReviewState::of(reviews_of(&dir, 3).unwrap(), Some("2026-01-01T01:30:00Z"));
        assert_eq!(state.decision, ReviewDecision::Approved);
        assert_eq!(state.feedback.len(), 2, "{state:?}");
        assert_eq!(reviews_of(&dir, 4).unwrap(), vec![]);
    }

    #[test]
    fn an_unreadable_reviews_file_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("3.json"), "{not json").unwrap();
        let e = reviews_of(tmp.path(), 3).unwrap_err().to_string();
        assert!(e.contains("3.json") && e.contains("remove the file"), "{e}");
    }
}
