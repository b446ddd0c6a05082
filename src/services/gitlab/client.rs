//! The one place GitLab's API client is built, for the tracker, the forge and `doctor` alike.

use crate::api_client::{read_token, ApiClient, Auth};
use crate::config::Config;

/// The client of the config's GitLab API (`gitlab.url` + `/api/v4`), with the token read from
/// `gitlab.tokenEnv` now. `Err` names the variable when it is not set.
pub fn from_config(cfg: &Config) -> Result<ApiClient, String> {
    let token = read_token(&cfg.gitlab.token_env, "gitlab.tokenEnv", &cfg.file)?;
    Ok(ApiClient::new(
        &format!("{}/api/v4", cfg.gitlab.url.trim_end_matches('/')),
        token,
        Auth::PrivateToken,
        &cfg.gitlab.token_env,
    ))
}
