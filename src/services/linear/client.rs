//! The one place Linear's API client is built.

use crate::api_client::{read_token, ApiClient, Auth};
use crate::config::Config;

/// The client of the config's Linear API (`linear.url`), with the token read from
/// `linear.tokenEnv` now. `Err` names the variable when it is not set.
pub fn from_config(cfg: &Config) -> Result<ApiClient, String> {
    Ok(ApiClient::new(
        &cfg.linear.url,
        read_token(&cfg.linear.token_env, "linear.tokenEnv", &cfg.file)?,
        Auth::Plain,
        &cfg.linear.token_env,
    ))
}
