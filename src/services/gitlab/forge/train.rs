//! GitLab's merge trains. A project with merge trains on (`merge_trains_enabled`, with the
//! merged results pipelines they run, `merge_pipelines_enabled`; read once, with the project)
//! merges through its train: the builtin merge adds the merge request to the train with the
//! commit CI passed (`POST merge_trains/merge_requests/:iid` with `sha`, which GitLab refuses,
//! 409, once the head moved) rather than merging it, and each later look reads its car
//! (`GET merge_trains/merge_requests/:iid`: `idle`, `stale`, `fresh`, `merging`, then
//! `merged` or `skip_merged`) until GitLab merges it. A car GitLab dropped is gone (404): the
//! merge request's newest train pipeline (ref `refs/merge-requests/:iid/train`) says why —
//! failed, the train's CI failed on main with the merge requests ahead of it; anything else, a
//! person took it off (or closed it).

use super::{blocked, forge_error, merge_blocker, refused, GitLabForge};
use crate::call_failure::CallFailureKind;
use crate::ports::forge::{ForgeError, PrState, QueueState};
use crate::services::gitlab::models::{self, Car, MergeRequest, Pipeline};
use serde_json::{json, Value};

/// What one car's `status` says: merged by the train, or still on it.
pub fn car_merged(car: &Car) -> bool {
    matches!(car.status.as_deref(), Some("merged" | "skip_merged"))
}

/// The newest of the train pipelines of merge request `iid` among `pipelines` (GitLab's list
/// of a merge request's pipelines).
pub fn newest_train_pipeline(pipelines: &[Pipeline], iid: u64) -> Option<&Pipeline> {
    let train_ref = format!("refs/merge-requests/{iid}/train");
    pipelines
        .iter()
        .filter(|p| p.git_ref.as_deref() == Some(train_ref.as_str()))
        .max_by_key(|p| p.id)
}

/// Where merge request `iid` stands once its car is gone, by its newest train pipeline: a
/// failed one is the train's CI failing (`Some` with the pipeline's link); none, or one that
/// did not fail (GitLab cancels a car's pipeline when a person takes it off), is a person's.
pub fn dropped_by_pipeline(pipeline: Option<&Pipeline>) -> Option<String> {
    let p = pipeline.filter(|p| p.status.as_deref() == Some("failed"))?;
    Some(match p.web_url.as_deref() {
        Some(url) if !url.is_empty() => url.to_string(),
        _ => format!("#{}", p.id.unwrap_or_default()),
    })
}

impl GitLabForge {
    /// Whether the project merges through merge trains (both settings on), read from the
    /// project once per run.
    pub fn merges_by_train(&self) -> Result<bool, ForgeError> {
        if let Some(on) = self.trains.get() {
            return Ok(*on);
        }
        let project = self.project_settings()?;
        let on = project.merge_trains_enabled && project.merge_pipelines_enabled;
        Ok(*self.trains.get_or_init(|| on))
    }

    /// Merge request `iid`'s car on the train; `None` when it is on none (404).
    fn car(&self, iid: u64) -> Result<Option<Car>, ForgeError> {
        let path = self.at().fixed("merge_trains/merge_requests").segment(iid);
        let answer = self.api.answer("GET", &path, None).map_err(forge_error)?;
        if answer.status == 404 {
            return Ok(None);
        }
        if !answer.ok() {
            return Err(forge_error(self.api.failure("GET", &path, &answer)));
        }
        // Any JSON is a car, its fields read as they are; only an answer that is no JSON fails.
        serde_json::from_slice::<Value>(&answer.body)
            .map(|car| Some(models::one(&car)))
            .map_err(|e| ForgeError::Parse {
                command: format!("GET {path}"),
                detail: e.to_string(),
            })
    }

    /// Puts merge request `iid` of `branch` on the train, only while its head is `commit` (the
    /// one CI passed); a merge request already on it is left there. `Err` of kind `Queued`
    /// tells the machine to wait for the train; `Ok` when the train merged it already; a
    /// refused add is the refusal, read from the merge request's fields where they say why.
    pub(super) fn add_to_train(
        &self,
        branch: &str,
        iid: u64,
        commit: &str,
    ) -> Result<(), ForgeError> {
        match self.car(iid)? {
            Some(car) if car_merged(&car) => return Ok(()),
            Some(_) => return Err(on_train(iid, commit)),
            None => {}
        }
        let path = self.at().fixed("merge_trains/merge_requests").segment(iid);
        let body = json!({ "sha": commit });
        let answer = self
            .api
            .answer("POST", &path, Some(&body))
            .map_err(forge_error)?;
        if answer.ok() {
            return Err(on_train(iid, commit));
        }
        let failure = self.api.failure("POST", &path, &answer);
        match answer.status {
            409 => Err(blocked(
                branch,
                iid,
                format!("the head is no longer {commit}"),
                CallFailureKind::LostRace,
            )),
            400 => {
                let at = self.at().fixed("merge_requests").segment(iid);
                let now: MergeRequest = models::one(&self.json("GET", &at, None)?);
                let (why, kind) = merge_blocker(&now, commit).unwrap_or((
                    format!(
                        "GitLab does not add it to the merge train ({})",
                        failure.message
                    ),
                    CallFailureKind::Policy,
                ));
                Err(blocked(branch, iid, why, kind))
            }
            _ => Err(forge_error(failure)),
        }
    }

    /// Where `branch`'s merge request stands on the train, after the merge put it there:
    /// merged, still on it, dropped because the train's pipeline failed, or taken off or
    /// closed by a person.
    pub fn train_state(&self, branch: &str) -> Result<QueueState, ForgeError> {
        let Some(pr) = self.pr_for_branch(branch)? else {
            return Err(refused(
                format!("{branch} has no merge request"),
                CallFailureKind::NotFound,
                "the runner opens it in createPR; check the project's merge requests",
            ));
        };
        match pr.state {
            PrState::Merged => return Ok(QueueState::Merged),
            PrState::Closed => return Ok(QueueState::Removed("closed the merge request")),
            PrState::Open => {}
        }
        let iid = u64::from(pr.number);
        if let Some(car) = self.car(iid)? {
            return Ok(if car_merged(&car) {
                QueueState::Merged
            } else {
                QueueState::Queued
            });
        }
        let pipelines: Vec<Pipeline> = self
            .api
            .pages(
                &self
                    .at()
                    .fixed("merge_requests")
                    .segment(iid)
                    .fixed("pipelines"),
            )
            .map_err(forge_error)?
            .iter()
            .map(models::one)
            .collect();
        let newest = newest_train_pipeline(&pipelines, iid);
        let Some(link) = dropped_by_pipeline(newest) else {
            return Ok(QueueState::Removed(
                "took the merge request off the merge train",
            ));
        };
        let id = newest.and_then(|p| p.id).unwrap_or_default();
        let jobs = self.failing_jobs(id)?;
        Ok(QueueState::ChecksFailed(format!(
            "the merge train's pipeline {link} failed, and GitLab dropped !{iid} from the train\n{jobs}"
        )))
    }
}

/// The answer of an add to the train: the error of kind `Queued`.
fn on_train(iid: u64, commit: &str) -> ForgeError {
    let short: String = commit.chars().take(12).collect();
    refused(
        format!(
            "the project takes its merges through GitLab's merge train: !{iid} is on it at {short}, and the runner waits for the train's pipeline and merge"
        ),
        CallFailureKind::Queued,
        "nothing to do: the train merges it, or drops it naming why",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_car_is_merged_or_on_the_train_and_a_dropped_one_is_told_by_its_train_pipeline() {
        let car = |v: Value| car_merged(&models::one(&v));
        assert!(car(json!({"status": "merged"})));
        assert!(car(json!({"status": "skip_merged"})));
        for s in ["idle", "stale", "fresh", "merging"] {
            assert!(!car(json!({ "status": s })), "{s}");
        }
        let pipelines: Vec<Pipeline> = [
            json!({"id": 10, "ref": "refs/merge-requests/3/train", "status": "failed",
                "web_url": "http://gitlab.test/p/-/pipelines/10"}),
            json!({"id": 12, "ref": "1-branch", "status": "success"}),
            json!({"id": 11, "ref": "refs/merge-requests/3/train", "status": "canceled"}),
        ]
        .iter()
        .map(models::one)
        .collect();
        // The newest train pipeline was canceled: a person took the car off.
        let newest = newest_train_pipeline(&pipelines, 3);
        assert_eq!(newest.and_then(|p| p.id), Some(11));
        assert_eq!(dropped_by_pipeline(newest), None);
        let failed = newest_train_pipeline(&pipelines[..2], 3);
        assert_eq!(
            dropped_by_pipeline(failed).as_deref(),
            Some("http://gitlab.test/p/-/pipelines/10")
        );
        assert!(newest_train_pipeline(&pipelines, 4).is_none());
        assert_eq!(dropped_by_pipeline(None), None);
    }
}
