//! The one place GitLab's API client is built, for the tracker, the forge and `doctor` alike.

use crate::api_client::{read_token, ApiClient, Auth, Endpoint};
use crate::config::Config;

/// Where the REST API v4 of the GitLab instance at `instance` is (`https://host/api/v4`).
pub fn api_root(instance: &str) -> String {
    Endpoint::new("api/v4").below(instance)
}

/// `projects/:id`, the prefix of every project call: the project's whole path is the id,
/// as one segment (`projects/group%2Fsub%2Fproject`).
pub fn project(path: &str) -> Endpoint {
    Endpoint::new("projects").segment(path)
}

/// The client of the config's GitLab API (`gitlab.url` + `/api/v4`), with the token read from
/// `gitlab.tokenEnv` now. `Err` names the variable when it is not set.
pub fn from_config(cfg: &Config) -> Result<ApiClient, String> {
    let token = read_token(&cfg.gitlab.token_env, "gitlab.tokenEnv", &cfg.file)?;
    Ok(ApiClient::new(
        &api_root(&cfg.gitlab.url),
        token,
        Auth::PrivateToken,
        &cfg.gitlab.token_env,
    ))
}
