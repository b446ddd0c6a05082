//! The fake agent's requests through the network it is given, for the allowlist's tests:
//! `fetch:<url>` asks a URL as any HTTP client would (through `HTTPS_PROXY`/`HTTP_PROXY`
//! when they are set); `model` calls its CLI's model API at the CLI's base URL with the key
//! variable it holds, as the real CLI would, and says which key that was.

use crate::config::AgentKind;
use crate::egress::model_api;
use std::time::Duration;

/// What asking `url` got: the status and the start of the body, or the error.
pub fn fetch(url: &str) -> String {
    request(url, None).map_or_else(
        |e| format!("fetch {url} failed: {e}"),
        |said| format!("fetched {url}: {said}"),
    )
}

/// A request to the model API of `kind` at its base URL, with its key header; says what came
/// back and the key the agent held.
pub fn call_model(kind: AgentKind) -> String {
    let api = model_api(kind);
    let base = std::env::var(api.base_url_var).unwrap_or_else(|_| api.upstream.to_string());
    let held = api
        .keys
        .iter()
        .find_map(|(name, header)| Some((*name, *header, std::env::var(name).ok()?)));
    let Some((name, header, key)) = held else {
        return "model: no key variable is set".to_string();
    };
    let url = format!("{}/v1/messages", base.trim_end_matches('/'));
    let said = request(&url, Some(header.header(&key))).unwrap_or_else(|e| format!("failed: {e}"));
    format!("model at {url}: {said}; my {name} is {key}")
}

fn request(url: &str, header: Option<(&str, String)>) -> Result<String, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| e.to_string())?;
        let mut req = match header {
            Some(_) => client.post(url).body("{\"model\": \"fake\"}"),
            None => client.get(url),
        };
        if let Some((name, value)) = header {
            req = req.header(name, value);
        }
        let answer = req.send().await.map_err(|e| format!("{e:?}"))?;
        let status = answer.status().as_u16();
        let body = answer.text().await.map_err(|e| e.to_string())?;
        let body: String = body.trim().chars().take(300).collect();
        Ok(format!("{status} {body}"))
    })
}
