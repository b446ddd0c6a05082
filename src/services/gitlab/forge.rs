//! Merge requests and pipelines of a GitLab project through GitLab's REST API v4. The branch
//! is pushed by the runner's git as on GitHub; the merge request targets the base branch and
//! its description names the issue (`Closes #N`), so GitLab closes the issue on merge.
//!
//! CI is read for one commit only: the newest pipeline whose `sha` is that commit, or where it
//! has none, the newest that ran on a merged result of it (`forge/merged.rs`). A merge
//! request's `head_pipeline` for another commit is no verdict on ours (it says only that the
//! project has CI, so ours is still to come: pending). GitLab creates a push's pipeline a
//! moment after the push: no pipeline yet is pending too, and the project has no CI only when
//! its CI configuration file is absent at that commit. The merge names the verified commit
//! (`sha`), which GitLab refuses once the head moved; why a merge is refused is read from the
//! merge request's fields (`detailed_merge_status`, `has_conflicts`, `draft`, `sha`) as the
//! merge request's own endpoint gives them (the list does not refresh the merge status),
//! never from the message. A project with merge trains merges through its train instead
//! (`forge/train.rs`).

mod merged;
mod reviews;
mod train;

use crate::api_client::{ApiClient, Endpoint, Failure};
use crate::call_failure::CallFailureKind;
use crate::ports::forge::{CiState, ForgeError, Pr, PrState};
use crate::ports::git::CallEnd;
use crate::services::gitlab::models::{self, Branch, Job, MergeRequest, Pipeline, Project};
use serde_json::{json, Value};

/// How much of a failing job's log the repair prompt gets.
const TRACE_TAIL_LINES: usize = 60;
/// The most failing jobs whose logs are read.
const MAX_TRACES: usize = 5;

/// The GitLab forge of one project.
#[derive(Debug, Clone)]
pub struct GitLabForge {
    /// The API, with the token.
    pub api: ApiClient,
    /// The project's path with its namespace.
    pub project: String,
    /// Whose reviews and comments count beside the project's Developers and above, and whose
    /// never (`review.trustedAuthors`, `review.ignoreAuthors`).
    pub authority: crate::authority::Authority,
    /// Whether the project merges through merge trains, once read (`GitLabForge::merges_by_train`):
    /// shared by the forge's copies.
    pub trains: std::sync::Arc<std::sync::OnceLock<bool>>,
}

fn forge_error(f: Failure) -> ForgeError {
    ForgeError::Command {
        command: "GitLab API".into(),
        ended: CallEnd::Otherwise,
        stderr: f.message,
        hint: "check gitlab.url, gitlab.project and the token in gitlab.tokenEnv",
        kind: f.kind,
    }
}

fn refused(what: String, kind: CallFailureKind, hint: &'static str) -> ForgeError {
    ForgeError::Command {
        command: "GitLab API".into(),
        ended: CallEnd::Otherwise,
        stderr: what,
        hint,
        kind,
    }
}

/// What a pipeline's `status` means to the merge gate.
pub fn pipeline_state(status: &str) -> CiState {
    match status {
        "success" | "skipped" => CiState::Passed,
        "failed" | "canceled" | "canceling" => CiState::Failed,
        // created, waiting_for_resource, preparing, pending, running, scheduled, and
        // manual (a job waits for a person): not yet a verdict.
        _ => CiState::Pending,
    }
}

/// Why GitLab's fields say a merge request cannot be merged now, and what kind of refusal it
/// is; `None` when they name no reason (mergeable, or a field this version lacks).
pub fn merge_blocker(mr: &MergeRequest, commit: &str) -> Option<(String, CallFailureKind)> {
    let status = mr
        .detailed_merge_status
        .as_deref()
        .or(mr.merge_status.as_deref())
        .unwrap_or_default();
    if let Some(state) = mr.state.as_deref().filter(|s| *s != "opened") {
        return Some((
            format!("the merge request is {state}"),
            CallFailureKind::Other,
        ));
    }
    if mr.sha.as_deref().is_some_and(|sha| sha != commit) {
        return Some((
            format!("the merge request's head moved past {commit}"),
            CallFailureKind::LostRace,
        ));
    }
    if mr.draft || mr.work_in_progress || status == "draft_status" {
        return Some((
            "the merge request is a draft (a person marks it ready)".into(),
            CallFailureKind::Policy,
        ));
    }
    if mr.has_conflicts || status == "conflict" {
        return Some((
            "the merge request has conflicts with the target branch".into(),
            CallFailureKind::Conflict,
        ));
    }
    match status {
        "" | "mergeable" | "can_be_merged" => None,
        "need_rebase" => Some((
            "the project wants the branch rebased onto the target branch first".into(),
            CallFailureKind::Behind,
        )),
        // GitLab is still computing mergeability: asked again, it answers.
        "checking" | "unchecked" | "approvals_syncing" | "preparing" => Some((
            format!("GitLab is still checking whether it can merge ({status})"),
            CallFailureKind::Network,
        )),
        "cannot_be_merged" | "cannot_be_merged_recheck" => Some((
            "GitLab cannot merge it (conflicts)".into(),
            CallFailureKind::Conflict,
        )),
        other => Some((
            format!("the project's rules refuse the merge ({other})"),
            CallFailureKind::Policy,
        )),
    }
}

impl GitLabForge {
    /// `projects/:id`, the prefix of every call about the project.
    fn at(&self) -> Endpoint {
        super::client::project(&self.project)
    }

    fn json(&self, method: &str, at: &Endpoint, body: Option<&Value>) -> Result<Value, ForgeError> {
        self.api.json(method, at, body).map_err(forge_error)
    }

    /// Every merge request whose source branch is `branch`.
    fn merge_requests(&self, branch: &str) -> Result<Vec<MergeRequest>, ForgeError> {
        let list = self
            .api
            .pages(
                &self
                    .at()
                    .fixed("merge_requests")
                    .query("source_branch", branch)
                    .query("state", "all"),
            )
            .map_err(forge_error)?;
        Ok(list.iter().map(models::one).collect())
    }

    fn pr_of(mr: &MergeRequest) -> Option<Pr> {
        let state = match mr.state.as_deref()? {
            "opened" | "locked" => PrState::Open,
            "merged" => PrState::Merged,
            _ => PrState::Closed,
        };
        Some(Pr {
            number: u32::try_from(mr.iid?).ok()?,
            url: mr.web_url.clone().unwrap_or_default(),
            state,
        })
    }

    /// The merge request of `branch`: an open one over a merged one over a closed one, then
    /// the newest.
    pub fn pr_for_branch(&self, branch: &str) -> Result<Option<Pr>, ForgeError> {
        let rank = |s: PrState| match s {
            PrState::Open => 2,
            PrState::Merged => 1,
            PrState::Closed => 0,
        };
        Ok(self
            .merge_requests(branch)?
            .iter()
            .filter_map(Self::pr_of)
            .max_by_key(|p| (rank(p.state), p.number)))
    }

    fn open_mr(&self, branch: &str) -> Result<Option<MergeRequest>, ForgeError> {
        Ok(self
            .merge_requests(branch)?
            .into_iter()
            .filter(|m| m.state.as_deref() == Some("opened"))
            .max_by_key(|m| m.iid))
    }

    /// Opens the merge request of `branch` into `target`.
    pub fn create_pr(
        &self,
        branch: &str,
        target: &str,
        title: &str,
        body: &str,
    ) -> Result<Pr, ForgeError> {
        let at = self.at().fixed("merge_requests");
        let mr = self.json(
            "POST",
            &at,
            Some(&json!({
                "source_branch": branch,
                "target_branch": target,
                "title": title,
                "description": body,
                "remove_source_branch": true,
            })),
        )?;
        Self::pr_of(&models::one(&mr)).ok_or_else(|| ForgeError::Parse {
            command: format!("POST {at}"),
            detail: "the answer is not a merge request".into(),
        })
    }

    /// The head commit of `branch` as GitLab has it.
    fn branch_head(&self, branch: &str) -> Result<String, ForgeError> {
        let b = self.json(
            "GET",
            &self.at().fixed("repository/branches").segment(branch),
            None,
        )?;
        models::one::<Branch>(&b)
            .commit
            .and_then(|c| c.id)
            .ok_or_else(|| ForgeError::Parse {
                command: format!("GET repository/branches/{branch}"),
                detail: "no commit id in the answer".into(),
            })
    }

    /// The newest pipeline of `commit`, if GitLab ran one.
    fn pipeline_of(&self, commit: &str) -> Result<Option<Pipeline>, ForgeError> {
        let list = self.json(
            "GET",
            &self
                .at()
                .fixed("pipelines")
                .query("sha", commit)
                .query("order_by", "id")
                .query("sort", "desc")
                .query("per_page", 1),
            None,
        )?;
        Ok(list
            .as_array()
            .and_then(|l| l.first())
            .map(models::one::<Pipeline>)
            .filter(|p| p.sha.as_deref() == Some(commit)))
    }

    /// CI of `commit`, the head of `branch` as a look just read it. GitLab creates a push's
    /// pipeline a moment after the push, so no pipeline yet is pending, never "no CI": that
    /// holds only where the project has no CI configuration at `commit`
    /// (`GitLabForge::ci_configured_at`). How long pending may last is the machine's
    /// bounded wait for CI.
    pub fn ci_state_of(&self, branch: &str, commit: &str) -> Result<CiState, ForgeError> {
        if let Some(p) = self.pipeline_of(commit)? {
            return Ok(pipeline_state(p.status.as_deref().unwrap_or_default()));
        }
        let mr = self.open_mr(branch)?;
        if let Some(p) = self.merged_result_of(mr.as_ref(), commit)? {
            return Ok(pipeline_state(p.status.as_deref().unwrap_or_default()));
        }
        // A head pipeline of another commit says the project has CI, so ours is still to be
        // created; it is never a verdict on this commit.
        let other_head_pipeline = match mr {
            Some(mr) => mr
                .head_pipeline
                .and_then(|p| p.sha)
                .is_some_and(|sha| sha != commit),
            None => false,
        };
        Ok(if other_head_pipeline || self.ci_configured_at(commit)? {
            CiState::Pending
        } else {
            CiState::NoneConfigured
        })
    }

    /// The project's settings (`GET projects/:id`).
    pub(super) fn project_settings(&self) -> Result<Project, ForgeError> {
        let project = self
            .api
            .json("GET", &self.at(), None)
            .map_err(forge_error)?;
        Ok(models::one(&project))
    }

    /// Whether the project has a CI configuration at `commit`: the file the project's
    /// `ci_config_path` names (`.gitlab-ci.yml` when it names none) exists there. A
    /// configuration kept in another project or at a URL (`…@group/project`, `https://…`)
    /// cannot be looked at here and counts as configured: a pipeline is then waited for. So
    /// does a project on Auto DevOps (`auto_devops_enabled`), whose pipeline GitLab makes
    /// without a file.
    fn ci_configured_at(&self, commit: &str) -> Result<bool, ForgeError> {
        let project = self.project_settings()?;
        // Auto DevOps runs its own pipeline where the project keeps no CI file.
        if project.auto_devops_enabled {
            return Ok(true);
        }
        let path = project
            .ci_config_path
            .as_deref()
            .filter(|p| !p.is_empty())
            .unwrap_or(".gitlab-ci.yml");
        if path.contains('@') || path.contains("://") {
            return Ok(true);
        }
        let at = self
            .at()
            .fixed("repository/files")
            .segment(path)
            .query("ref", commit);
        let answer = self.api.answer("GET", &at, None).map_err(forge_error)?;
        match answer.status {
            404 => Ok(false),
            _ if answer.ok() => Ok(true),
            _ => Err(forge_error(self.api.failure("GET", &at, &answer))),
        }
    }

    /// CI of `branch`'s head.
    pub fn ci_state(&self, branch: &str) -> Result<CiState, ForgeError> {
        let head = self.branch_head(branch)?;
        self.ci_state_of(branch, &head)
    }

    /// Each failing job of the pipeline whose verdict is `commit`'s (the head of `branch`):
    /// its name, link and the end of its log.
    pub fn failing_checks_of(&self, branch: &str, commit: &str) -> Result<String, ForgeError> {
        match self.verdict_pipeline(branch, commit)? {
            Some(p) => self.failing_jobs(p.id.unwrap_or_default()),
            None => Ok(String::new()),
        }
    }

    /// Each failing job of pipeline `id`: its name, link and the end of its log.
    fn failing_jobs(&self, id: u64) -> Result<String, ForgeError> {
        let jobs = self
            .api
            .pages(
                &self
                    .at()
                    .fixed("pipelines")
                    .segment(id)
                    .fixed("jobs")
                    .query("scope[]", "failed"),
            )
            .map_err(forge_error)?;
        let mut text = String::new();
        for (i, job) in jobs.iter().map(models::one::<Job>).enumerate() {
            let (name, link) = (&job.name, &job.web_url);
            text.push_str(&format!("failing check: {name} {link}\n"));
            let Some(job_id) = job.id.filter(|_| i < MAX_TRACES) else {
                continue;
            };
            // A log that cannot be read leaves the name and link, which still say what failed.
            let path = self.at().fixed("jobs").segment(job_id).fixed("trace");
            if let Ok(answer) = self.api.answer("GET", &path, None) {
                if answer.ok() {
                    let log = String::from_utf8_lossy(&answer.body);
                    let lines: Vec<&str> = log.lines().collect();
                    for line in &lines[lines.len().saturating_sub(TRACE_TAIL_LINES)..] {
                        text.push_str(line);
                        text.push('\n');
                    }
                }
            }
        }
        Ok(text)
    }

    /// [`GitLabForge::failing_checks_of`] for `branch`'s head.
    pub fn failing_checks(&self, branch: &str) -> Result<String, ForgeError> {
        let head = self.branch_head(branch)?;
        self.failing_checks_of(branch, &head)
    }

    /// Merges the open merge request of `branch` exactly at `commit` and removes the branch.
    /// Its fields are read first, so a draft, a conflict or a rule of the project is an
    /// answer of its own; a refused merge is read again from the fields.
    pub fn merge_pr(&self, branch: &str, commit: &str, message: &str) -> Result<(), ForgeError> {
        let Some(mr) = self.open_mr(branch)? else {
            return match self.pr_for_branch(branch)? {
                Some(pr) if pr.state == PrState::Merged => Ok(()),
                _ => Err(refused(
                    format!("{branch} has no open merge request"),
                    CallFailureKind::NotFound,
                    "open one (createPR) or let the runner open it",
                )),
            };
        };
        let iid = mr.iid.unwrap_or_default();
        // The list does not refresh a merge request's merge status (it stays `unchecked`
        // after a push); the merge request's own endpoint does.
        let at = self.at().fixed("merge_requests").segment(iid);
        let mr = models::one(&self.json("GET", &at, None)?);
        if let Some((why, kind)) = merge_blocker(&mr, commit) {
            return Err(blocked(branch, iid, why, kind));
        }
        if self.merges_by_train()? {
            return self.add_to_train(branch, iid, commit);
        }
        let path = at.clone().fixed("merge");
        let body = json!({
            "sha": commit,
            "should_remove_source_branch": true,
            "merge_commit_message": message,
        });
        let answer = self
            .api
            .answer("PUT", &path, Some(&body))
            .map_err(forge_error)?;
        if answer.ok() {
            return Ok(());
        }
        let failure = self.api.failure("PUT", &path, &answer);
        // 405, 406, 409, 422: GitLab refused this merge; its fields say why.
        if matches!(answer.status, 405 | 406 | 409 | 422) {
            let now: MergeRequest = models::one(&self.json("GET", &at, None)?);
            if now.state.as_deref() == Some("merged") && now.sha.as_deref() == Some(commit) {
                return Ok(());
            }
            if let Some((why, kind)) = merge_blocker(&now, commit) {
                return Err(blocked(branch, iid, why, kind));
            }
            if answer.status == 409 {
                return Err(blocked(
                    branch,
                    iid,
                    format!("the head is no longer {commit}"),
                    CallFailureKind::LostRace,
                ));
            }
        }
        Err(forge_error(failure))
    }
}

fn blocked(branch: &str, iid: u64, why: String, kind: CallFailureKind) -> ForgeError {
    let hint = match kind {
        CallFailureKind::Policy => {
            "have a person satisfy the rule or change the project's merge settings, then run again"
        }
        _ => "the runner decides from the kind of refusal",
    };
    refused(
        format!("GitLab refuses the merge of {branch} (!{iid}): {why}"),
        kind,
        hint,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_statuses_are_the_merge_gates() {
        assert_eq!(pipeline_state("success"), CiState::Passed);
        assert_eq!(pipeline_state("failed"), CiState::Failed);
        assert_eq!(pipeline_state("canceled"), CiState::Failed);
        for s in [
            "created",
            "pending",
            "running",
            "manual",
            "scheduled",
            "new-one",
        ] {
            assert_eq!(pipeline_state(s), CiState::Pending, "{s}");
        }
    }

    #[test]
    fn merge_refusals_are_read_from_fields() {
        let c = "abc";
        let kind = |mr: Value| merge_blocker(&models::one(&mr), c).map(|(_, k)| k);
        let base = |extra: Value| {
            let mut mr = json!({"state": "opened", "sha": c, "draft": false,
                "has_conflicts": false, "detailed_merge_status": "mergeable"});
            if let (Some(m), Some(e)) = (mr.as_object_mut(), extra.as_object()) {
                m.extend(e.clone());
            }
            mr
        };
        assert_eq!(kind(base(json!({}))), None);
        assert_eq!(
            kind(base(json!({"sha": "def"}))),
            Some(CallFailureKind::LostRace)
        );
        assert_eq!(
            kind(base(
                json!({"draft": true, "detailed_merge_status": "draft_status"})
            )),
            Some(CallFailureKind::Policy)
        );
        assert_eq!(
            kind(base(
                json!({"has_conflicts": true, "detailed_merge_status": "conflict"})
            )),
            Some(CallFailureKind::Conflict)
        );
        assert_eq!(
            kind(base(json!({"detailed_merge_status": "need_rebase"}))),
            Some(CallFailureKind::Behind)
        );
        assert_eq!(
            kind(base(json!({"detailed_merge_status": "not_approved"}))),
            Some(CallFailureKind::Policy)
        );
        assert_eq!(
            kind(base(json!({"detailed_merge_status": "checking"}))),
            Some(CallFailureKind::Network)
        );
        // An older GitLab without detailed_merge_status.
        let old = json!({"state": "opened", "sha": c, "merge_status": "can_be_merged"});
        assert_eq!(kind(old), None);
    }
}
