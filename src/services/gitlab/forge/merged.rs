//! GitLab's merged results pipelines. A project that runs them (`merge_pipelines_enabled`,
//! Premium) runs a merge request's pipeline on its merged result: a merge commit GitLab makes
//! of the source branch's head onto the target branch's (ref `refs/merge-requests/:iid/merge`,
//! first parent the target's head, last parent the source's). The pipeline's `sha` is that
//! merge commit, so a look by the head's `sha` finds none. The verdict on a head `H` is then
//! the newest pipeline of the merge request on its merge ref whose commit's last parent is `H`
//! (`GET repository/commits/:sha`, `parent_ids`). It is looked for only when `H` has no
//! pipeline of its own: a project without merged results makes the requests it made before.

use super::GitLabForge;
use crate::ports::forge::ForgeError;
use crate::services::gitlab::models::{self, Commit, MergeRequest, Pipeline};
use serde_json::Value;

/// The merge request pipelines one look reads: GitLab lists the newest first.
const LISTED: usize = 20;
/// The most merged-result pipelines whose commit one look reads, newest first: an older one
/// than these ran on an older head (each push makes a new merged result).
const MAX_CANDIDATES: usize = 3;

/// The pipelines among `list` (a merge request's) that ran on merge request `iid`'s merged
/// result, newest first, at most [`MAX_CANDIDATES`].
pub fn merged_result_candidates(list: &[Value], iid: u64) -> Vec<Pipeline> {
    let merge_ref = format!("refs/merge-requests/{iid}/merge");
    let mut on_ref: Vec<Pipeline> = list
        .iter()
        .map(models::one::<Pipeline>)
        .filter(|p| p.git_ref.as_deref() == Some(merge_ref.as_str()) && p.id.is_some())
        .collect();
    on_ref.sort_by_key(|p| std::cmp::Reverse(p.id));
    on_ref.truncate(MAX_CANDIDATES);
    on_ref
}

/// Whether `commit` is a merged result of `head`: a merge whose last parent is `head`.
pub fn merges_head(commit: &Commit, head: &str) -> bool {
    commit.parent_ids.len() >= 2 && commit.parent_ids.last().map(String::as_str) == Some(head)
}

impl GitLabForge {
    /// The newest pipeline of the open merge request `mr` that ran on a merged result of
    /// `head`; `None` without a merge request or such a pipeline.
    pub(super) fn merged_result_of(
        &self,
        mr: Option<&MergeRequest>,
        head: &str,
    ) -> Result<Option<Pipeline>, ForgeError> {
        let Some(iid) = mr.and_then(|m| m.iid) else {
            return Ok(None);
        };
        let at = self
            .at()
            .fixed("merge_requests")
            .segment(iid)
            .fixed("pipelines")
            .query("per_page", LISTED);
        let list = self.json("GET", &at, None)?;
        let list = list.as_array().map(Vec::as_slice).unwrap_or_default();
        for p in merged_result_candidates(list, iid) {
            let Some(sha) = p.sha.as_deref().filter(|sha| *sha != head) else {
                continue;
            };
            let at = self.at().fixed("repository/commits").segment(sha);
            let commit: Commit = models::one(&self.json("GET", &at, None)?);
            if merges_head(&commit, head) {
                return Ok(Some(p));
            }
        }
        Ok(None)
    }

    /// The pipeline whose verdict is `commit`'s, the head of `branch`: its own newest, else
    /// the newest that ran on a merged result of it.
    pub(super) fn verdict_pipeline(
        &self,
        branch: &str,
        commit: &str,
    ) -> Result<Option<Pipeline>, ForgeError> {
        if let Some(p) = self.pipeline_of(commit)? {
            return Ok(Some(p));
        }
        self.merged_result_of(self.open_mr(branch)?.as_ref(), commit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_newest_merge_ref_pipelines_are_the_candidates() {
        let list = vec![
            json!({"id": 5, "sha": "m2", "ref": "refs/merge-requests/3/merge"}),
            json!({"id": 9, "sha": "h", "ref": "refs/merge-requests/3/head"}),
            json!({"id": 7, "sha": "m3", "ref": "refs/merge-requests/3/merge"}),
            json!({"id": 8, "sha": "t", "ref": "refs/merge-requests/3/train"}),
            json!({"id": 2, "sha": "m1", "ref": "refs/merge-requests/3/merge"}),
            json!({"id": 1, "sha": "m0", "ref": "refs/merge-requests/3/merge"}),
            json!({"id": 6, "sha": "x", "ref": "refs/merge-requests/4/merge"}),
            json!("not a pipeline"),
        ];
        let ids: Vec<_> = merged_result_candidates(&list, 3)
            .iter()
            .map(|p| p.id)
            .collect();
        assert_eq!(ids, vec![Some(7), Some(5), Some(2)]);
    }

    #[test]
    fn a_merged_result_has_the_head_as_its_last_parent() {
        let commit =
            |parents: Value| models::one::<Commit>(&json!({"id": "m", "parent_ids": parents}));
        assert!(merges_head(&commit(json!(["target", "head"])), "head"));
        assert!(!merges_head(&commit(json!(["head", "target"])), "head"));
        assert!(!merges_head(&commit(json!(["head"])), "head"));
        assert!(!merges_head(&commit(json!(null)), "head"));
    }
}
