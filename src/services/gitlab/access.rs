//! Who may push in a GitLab project: a member's access level, which `authority::judge` weighs
//! against `authority::DEVELOPER` for the reviews and comments that count.

use std::sync::Mutex;

/// A GitLab project and a user's id in it.
type Member = (String, u64);

/// The access levels of a GitLab project's members already asked for this run, by
/// (project, user id): `None` for no member.
static GITLAB_ACCESS: Mutex<std::collections::BTreeMap<Member, Option<u64>>> =
    Mutex::new(std::collections::BTreeMap::new());

/// The access level of user `user_id` in GitLab `project` (`GET
/// projects/:id/members/all/:user_id`, inherited memberships included), asked once per run;
/// 404: no member.
pub(crate) fn access_level(
    api: &crate::api_client::ApiClient,
    project: &str,
    user_id: u64,
) -> Result<Option<u64>, crate::api_client::Failure> {
    let key = (project.to_string(), user_id);
    if let Some(level) = GITLAB_ACCESS
        .lock()
        .ok()
        .and_then(|known| known.get(&key).copied())
    {
        return Ok(level);
    }
    let path = super::client::project(project)
        .fixed("members/all")
        .segment(user_id);
    let answer = api.answer("GET", &path, None)?;
    let level = if answer.status == 404 {
        None
    } else if answer.ok() {
        serde_json::from_slice::<serde_json::Value>(&answer.body)
            .ok()
            .and_then(|m| super::models::one::<super::models::Member>(&m).access_level)
    } else {
        return Err(api.failure("GET", &path, &answer));
    };
    if let Ok(mut known) = GITLAB_ACCESS.lock() {
        known.insert(key, level);
    }
    Ok(level)
}
