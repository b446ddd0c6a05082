//! The runner's own HTTP calls to a tracker's or a forge's API (GitLab's REST API, Linear's
//! GraphQL), through one client: rustls with the system's trust store (so a self-hosted
//! instance behind a company CA works through `SSL_CERT_FILE`), a time limit per call, and
//! the stop scope of the thread that makes the call (a stop request or the step's deadline
//! ends the call within milliseconds, as it kills a git or `gh` child).
//!
//! The answer comes back whatever its status, as an [`HttpAnswer`]; the adapter decides what a
//! failed one means ([`HttpAnswer::failure_kind`]). Only a call that got no answer is an error
//! here, kinded at once: network, time-out, or stopped.
//!
//! The token is read once, at start, from the variable the config names ([`read_token`]); it
//! is sent as a header and appears in no message, no log line and no agent's environment
//! ([`withheld_vars`]).

use crate::call_failure::{CallFailureKind, HttpAnswer};
use std::collections::BTreeSet;
use std::sync::{LazyLock, Mutex};

mod endpoint;
pub mod transport;
pub use endpoint::Endpoint;
use std::time::Duration;

/// Longest one API call may take: a dead network must not hang an unattended run.
pub const API_TIMEOUT: Duration = Duration::from_secs(60);

/// A secret read from the environment. Its `Debug` shows no character of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

/// The variables holding the runner's API tokens: the agent's environment never has them.
static WITHHELD: LazyLock<Mutex<BTreeSet<String>>> = LazyLock::new(Mutex::default);

/// The variables an agent must not inherit, because they hold a token of the runner's own.
pub fn withheld_vars() -> Vec<String> {
    WITHHELD
        .lock()
        .map(|set| set.iter().cloned().collect())
        .unwrap_or_default()
}

/// The token in variable `var` (named by `key` of the config `file`). `Err` names the
/// variable and the key when it is unset or empty; the message never carries a value.
pub fn read_token(var: &str, key: &str, file: &std::path::Path) -> Result<Token, String> {
    if let Ok(mut set) = WITHHELD.lock() {
        set.insert(var.to_string());
    }
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(Token(v.trim().to_string())),
        _ => Err(format!(
            "{}: {key}: the environment variable {var} is not set (or empty); export the API \
             token in {var} before starting the runner, or name another variable in {key}",
            file.display()
        )),
    }
}

/// A token for unit tests.
#[cfg(test)]
pub fn test_token() -> Token {
    Token("test-token".into())
}

/// How the token is presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// GitLab: `PRIVATE-TOKEN: <token>`.
    PrivateToken,
    /// Linear's API keys: `Authorization: <key>`.
    Plain,
}

/// A call that got no HTTP answer.
#[derive(Debug, thiserror::Error)]
#[error("{what} failed: {detail}")]
pub struct NoAnswer {
    /// `METHOD url`, for the message.
    pub what: String,
    /// Why there is no answer.
    pub detail: String,
    /// Network, time-out, or a stop of the runner's.
    pub kind: CallFailureKind,
}

/// One API's client: where it is, and the token.
#[derive(Debug, Clone)]
pub struct ApiClient {
    /// The API's root URL without a trailing `/` (`https://gitlab.com/api/v4`).
    pub base: String,
    token: Token,
    auth: Auth,
    /// The variable the token came from, for messages that tell what to renew.
    pub token_env: String,
    /// The limit of one call.
    pub timeout: Duration,
}

impl ApiClient {
    /// A client of the API at `base` with `token`.
    pub fn new(base: &str, token: Token, auth: Auth, token_env: &str) -> ApiClient {
        ApiClient {
            base: base.trim_end_matches('/').to_string(),
            token,
            auth,
            token_env: token_env.to_string(),
            timeout: API_TIMEOUT,
        }
    }

    /// The URL of `at`, for messages: as it is called, or as written when it is no URL.
    pub fn address(&self, at: &Endpoint) -> String {
        at.below(&self.base)
    }

    /// `METHOD base/at` with `body` as JSON: the answer, whatever its status.
    pub fn call(
        &self,
        method: &str,
        at: &Endpoint,
        body: Option<&serde_json::Value>,
    ) -> Result<HttpAnswer, NoAnswer> {
        let what = format!("{method} {}", self.address(at));
        let fail = |detail: String, kind| NoAnswer {
            what: what.clone(),
            detail,
            kind,
        };
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|e| fail(e.to_string(), CallFailureKind::Other))?;
        let url = reqwest::Url::parse(&self.base)
            .map_err(|e| e.to_string())
            .and_then(|base| at.url_below(&base))
            .map_err(|e| {
                fail(
                    format!("not a URL ({e}); check the API's address in the config"),
                    CallFailureKind::Other,
                )
            })?;
        let token = match self.auth {
            Auth::PrivateToken => ("PRIVATE-TOKEN", self.token.0.clone()),
            Auth::Plain => ("Authorization", self.token.0.clone()),
        };
        let json = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| fail(e.to_string(), CallFailureKind::Other))?;
        transport::send(transport::Request {
            method,
            url,
            headers: vec![token],
            json,
            timeout: self.timeout,
        })
        .map_err(|e| fail(e.detail, e.kind))
    }

    /// The message and kind of a failed answer (`answer` not 2xx): the kind from its status
    /// and headers, the words naming the call, GitLab's or Linear's message, and for a
    /// refused token the variable to renew. The token itself is never in it.
    pub fn refusal(&self, what: &str, answer: &HttpAnswer) -> (String, CallFailureKind) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let kind = answer.failure_kind(now);
        let said = message_of(&answer.body);
        let mut detail = format!("HTTP {}: {said}", answer.status);
        match answer.status {
            401 => detail.push_str(&format!(
                "; the token in {} was refused: renew it (or name another variable in tokenEnv)",
                self.token_env
            )),
            403 => detail.push_str(&format!(
                "; the token in {} may not do this: give its account the right, or use a token with the `api` scope",
                self.token_env
            )),
            _ => {}
        }
        let detail = crate::redact::redact(&detail);
        (format!("{what}: {detail}"), kind)
    }
}

/// A call that failed: what to tell (naming the call, never the token) and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The call and what went wrong.
    pub message: String,
    /// What made it fail, for the machine.
    pub kind: CallFailureKind,
}

/// What one REST list asks per page.
const PAGE: usize = 100;

impl ApiClient {
    /// [`ApiClient::call`] with a failed call as a [`Failure`].
    pub fn answer(
        &self,
        method: &str,
        at: &Endpoint,
        body: Option<&serde_json::Value>,
    ) -> Result<HttpAnswer, Failure> {
        self.call(method, at, body).map_err(|e| Failure {
            message: e.to_string(),
            kind: e.kind,
        })
    }

    /// The failure of an answer that is not a success.
    pub fn failure(&self, method: &str, at: &Endpoint, answer: &HttpAnswer) -> Failure {
        let what = format!("{method} {}", self.address(at));
        let (message, kind) = self.refusal(&what, answer);
        Failure { message, kind }
    }

    /// A call that must succeed: its body as JSON.
    pub fn json(
        &self,
        method: &str,
        at: &Endpoint,
        body: Option<&serde_json::Value>,
    ) -> Result<serde_json::Value, Failure> {
        let answer = self.answer(method, at, body)?;
        if !answer.ok() {
            return Err(self.failure(method, at, &answer));
        }
        if answer.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(serde_json::Value::Null);
        }
        serde_json::from_slice(&answer.body).map_err(|e| Failure {
            message: format!(
                "{method} {}: the answer is not the JSON expected ({e}); check that the URL is the API's",
                self.address(at)
            ),
            kind: CallFailureKind::Other,
        })
    }

    /// Every page of a REST list (`at` without `per_page` and `page`); a page shorter than
    /// the page size is the last.
    pub fn pages(&self, at: &Endpoint) -> Result<Vec<serde_json::Value>, Failure> {
        let mut all = Vec::new();
        for page in 1.. {
            let paged = at.clone().query("per_page", PAGE).query("page", page);
            let list = match self.json("GET", &paged, None)? {
                serde_json::Value::Array(list) => list,
                other => {
                    return Err(Failure {
                        message: format!(
                            "GET {}: expected a list, got {}",
                            self.address(&paged),
                            crate::sanitize::title(
                                &other.to_string().chars().take(200).collect::<String>()
                            )
                        ),
                        kind: CallFailureKind::Other,
                    })
                }
            };
            let last = list.len() < PAGE;
            all.extend(list);
            if last {
                break;
            }
        }
        Ok(all)
    }
}

/// The service's own message in a failed answer's body (GitLab's `message` or `error`,
/// GraphQL's `errors[].message`), else the start of the body.
pub fn message_of(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let said = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            if let Some(errors) = v["errors"].as_array() {
                let all: Vec<String> = errors
                    .iter()
                    .map(|e| {
                        e["message"]
                            .as_str()
                            .map_or_else(|| e.to_string(), str::to_string)
                    })
                    .collect();
                return Some(all.join("; "));
            }
            match &v["message"] {
                serde_json::Value::Null => v["error"].as_str().map(str::to_string),
                serde_json::Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            }
        })
        .unwrap_or_else(|| text.chars().take(300).collect());
    crate::sanitize::title(&said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_token_names_its_variable_and_a_token_never_shows() {
        let file = std::path::Path::new("/p/sdlc-config.json");
        let e = read_token("SDLC_TEST_NO_SUCH_TOKEN_VAR", "gitlab.tokenEnv", file).unwrap_err();
        assert!(e.contains("SDLC_TEST_NO_SUCH_TOKEN_VAR"), "{e}");
        assert!(
            e.contains("gitlab.tokenEnv") && e.contains("/p/sdlc-config.json"),
            "{e}"
        );
        assert!(withheld_vars().contains(&"SDLC_TEST_NO_SUCH_TOKEN_VAR".to_string()));
        let t = Token("glpat-secret".into());
        assert_eq!(format!("{t:?}"), "Token(***)");
    }

    #[test]
    fn the_services_message_is_read_from_its_body() {
        assert_eq!(
            message_of(br#"{"message":"404 Not found"}"#),
            "404 Not found"
        );
        assert_eq!(
            message_of(br#"{"message":{"base":["cannot merge"]}}"#),
            r#"{"base":["cannot merge"]}"#
        );
        assert_eq!(message_of(br#"{"error":"invalid_token"}"#), "invalid_token");
        assert_eq!(
            message_of(br#"{"errors":[{"message":"Entity not found"}],"data":null}"#),
            "Entity not found"
        );
        assert_eq!(
            message_of(b"<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
    }

    fn answer(status: u16, headers: &[(&str, &str)]) -> HttpAnswer {
        HttpAnswer {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: br#"{"message":"nope"}"#.to_vec(),
        }
    }

    #[test]
    fn refusals_are_kinded_by_status_and_headers_and_name_the_token_variable() {
        let c = ApiClient::new(
            "https://gitlab.example/api/v4/",
            Token("glpat-secret".into()),
            Auth::PrivateToken,
            "GITLAB_TOKEN",
        );
        assert_eq!(c.base, "https://gitlab.example/api/v4");
        let (msg, kind) = c.refusal("GET x", &answer(401, &[]));
        assert_eq!(kind, CallFailureKind::Auth);
        assert!(
            msg.contains("GITLAB_TOKEN") && !msg.contains("glpat-secret"),
            "{msg}"
        );
        let (msg, kind) = c.refusal("GET x", &answer(403, &[]));
        assert_eq!(kind, CallFailureKind::Permission);
        assert!(msg.contains("GITLAB_TOKEN"), "{msg}");
        let (_, kind) = c.refusal("GET x", &answer(429, &[("retry-after", "7")]));
        assert_eq!(kind, CallFailureKind::RateLimited { wait_secs: 7 });
        let (_, kind) = c.refusal("GET x", &answer(503, &[]));
        assert_eq!(kind, CallFailureKind::Network);
        let (_, kind) = c.refusal("GET x", &answer(404, &[]));
        assert_eq!(kind, CallFailureKind::NotFound);
    }

    #[test]
    fn gitlabs_ratelimit_reset_is_the_wait_of_a_429_without_retry_after() {
        let now = 1_000_000;
        let a = answer(429, &[("ratelimit-reset", "1000042")]);
        assert_eq!(
            a.failure_kind(now),
            CallFailureKind::RateLimited { wait_secs: 42 }
        );
    }

    #[test]
    fn a_refused_connection_is_the_networks_and_a_stop_ends_the_call() {
        // A port nobody listens on: bind one and let it go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let c = ApiClient::new(
            &format!("http://127.0.0.1:{port}"),
            Token("t".into()),
            Auth::PrivateToken,
            "T",
        );
        let e = c.call("GET", &Endpoint::new("version"), None).unwrap_err();
        assert_eq!(e.kind, CallFailureKind::Network, "{e}");
        // A server that accepts and never answers: the deadline of the scope ends the call.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = silent.local_addr().unwrap();
        let c = ApiClient::new(
            &format!("http://{addr}"),
            Token("t".into()),
            Auth::Plain,
            "T",
        );
        let started = std::time::Instant::now();
        let deadline = started + Duration::from_millis(300);
        let e =
            crate::process::within_deadline(deadline, || c.call("GET", &Endpoint::new("x"), None))
                .unwrap_err();
        assert_eq!(e.kind, CallFailureKind::StepDeadline, "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
