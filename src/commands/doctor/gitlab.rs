//! `doctor` on GitLab: the token, the project, the selection label, the right to merge and
//! the reading of reviews, asked of GitLab's API as `run` will ask it.

use super::Check;
use crate::api_client::Endpoint;
use crate::config::{Config, ForgeKind, TrackerKind};

/// GitLab's access level from which an account may merge into an unprotected branch
/// (Developer).
const DEVELOPER: u64 = 30;

/// The checks of a config whose tracker or forge is GitLab.
pub(super) fn checks(cfg: &Config) -> Vec<Check> {
    let api = match crate::services::gitlab::client::from_config(cfg) {
        Ok(api) => api,
        Err(e) => {
            return vec![Check::fail(
                "gitlab",
                e,
                "export the token (scope `api`) in that variable as the user the runner runs as",
            )]
        }
    };
    let project = cfg.gitlab.project.clone().unwrap_or_default();
    let at = crate::services::gitlab::client::project(&project);
    let found = match api.json("GET", &at, None) {
        Ok(found) => found,
        Err(f) => {
            return vec![Check::fail(
                "gitlab",
                f.message,
                format!(
                    "check gitlab.url ({}), gitlab.project ({project}) and that the token in {} can read the project",
                    cfg.gitlab.url, cfg.gitlab.token_env
                ),
            )]
        }
    };
    let mut out = vec![Check::ok(
        "gitlab",
        format!(
            "project {} readable with the token in {}",
            found["path_with_namespace"].as_str().unwrap_or(&project),
            cfg.gitlab.token_env
        ),
    )];
    if cfg.tracker.kind() == TrackerKind::Gitlab {
        let label = cfg.tracker.label();
        let path = at.clone().fixed("labels").segment(label);
        out.push(match api.answer("GET", &path, None) {
            Ok(a) if a.ok() => Check::ok("gitlab", format!("label {label} exists")),
            Ok(a) if a.status == 404 => Check::warn(
                "gitlab",
                format!("the project has no label {label}: no issue is selected"),
                format!("create the label {label} in the project and put it on the issues to work"),
            ),
            Ok(a) => Check::fail(
                "gitlab",
                api.failure("GET", &path, &a).message,
                "check the token's rights",
            ),
            Err(f) => Check::fail("gitlab", f.message, "check gitlab.url and the network"),
        });
    }
    if cfg.forge == ForgeKind::Gitlab {
        let access = |kind: &str| found["permissions"][kind]["access_level"].as_u64();
        let level = access("project_access").max(access("group_access"));
        out.push(match level {
            Some(l) if l >= DEVELOPER => Check::ok(
                "gitlab",
                format!("the token's account has access level {l}: it may merge where the branch's protection allows that level"),
            ),
            _ => Check::fail(
                "gitlab",
                format!(
                    "the token's account has access level {} on the project: too low to merge",
                    level.map_or("none".to_string(), |l| l.to_string())
                ),
                "give the account at least the Developer role (Maintainer where the target branch is protected for maintainers)",
            ),
        });
        out.push(reviews(&api, &at, &cfg.gitlab.token_env));
    }
    out
}

/// The review gate reads each merge request's discussions and approvals before its merge:
/// the token must be allowed to. Asked of the newest merge request, as a look will ask; with
/// none yet, of the list, the most that can be asked.
fn reviews(api: &crate::api_client::ApiClient, at: &Endpoint, token_env: &str) -> Check {
    let grant = format!(
        "give the token in {token_env} the scope `api` (or `read_api`) of an account with at least the Reporter role on the project, so the review gate can read discussions and approvals before a merge"
    );
    let ask = |path: &Endpoint| -> Result<serde_json::Value, Check> {
        match api.answer("GET", path, None) {
            Ok(a) if a.ok() => Ok(serde_json::from_slice(&a.body).unwrap_or_default()),
            Ok(a) if matches!(a.status, 401 | 403 | 404) => Err(Check::fail(
                "reviews",
                format!(
                    "{}: the review gate could not read merge requests",
                    api.failure("GET", path, &a).message
                ),
                grant.clone(),
            )),
            Ok(a) => Err(Check::warn(
                "reviews",
                format!(
                    "GitLab gave no answer about reviews: {}",
                    api.failure("GET", path, &a).message
                ),
                "check gitlab.url and the network; the review gate reads discussions and approvals before every merge",
            )),
            Err(f) => Err(Check::warn(
                "reviews",
                format!("GitLab gave no answer about reviews: {}", f.message),
                "check gitlab.url and the network; the review gate reads discussions and approvals before every merge",
            )),
        }
    };
    let list = at
        .clone()
        .fixed("merge_requests")
        .query("order_by", "created_at")
        .query("sort", "desc")
        .query("per_page", 1);
    let newest = match ask(&list) {
        Ok(list) => list
            .as_array()
            .and_then(|l| l.first())
            .and_then(|mr| mr["iid"].as_u64()),
        Err(check) => return check,
    };
    let Some(iid) = newest else {
        return Check::ok(
            "reviews",
            "merge requests readable (none yet: their discussions and approvals are read at the first review)",
        );
    };
    for part in ["discussions", "approvals"] {
        if let Err(check) = ask(&at.clone().fixed("merge_requests").segment(iid).fixed(part)) {
            return check;
        }
    }
    Check::ok(
        "reviews",
        format!("merge request !{iid}'s discussions and approvals readable with the token in {token_env}"),
    )
}
