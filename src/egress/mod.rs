//! The agent's one way out under `agent.sandbox.network: "allowlist"` (docs/security.md, "The
//! allowlist"): a proxy the runner serves on a Unix socket for the length of one attempt
//! ([`proxy`]), bound into the sandbox, whose network namespace has a loopback only; inside,
//! the sandbox's entry ([`relay`], the runner's own binary as `egress-relay`) listens on
//! `127.0.0.1:`[`INSIDE_PORT`], relays each connection to the socket and starts the agent with
//! the CLI's proxy variables pointing there.
//!
//! The proxy lets through `CONNECT host:port` and plain `http://` requests to the hosts of the
//! allowlist (the agent CLI's own, [`default_hosts`], and `allow`), answers 403 to every
//! other host and records it. With `keyOutside` it also serves [`MODEL_PATH`]: the agent's base
//! URL points there, the agent holds a placeholder instead of its key, and the proxy sends
//! each request on to the model's host with the key the runner holds ([`model_api`]).

pub mod proxy;
pub mod relay;

use crate::config::AgentKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The port the relay listens on inside the sandbox, whose network namespace is its own:
/// nothing else listens there.
pub const INSIDE_PORT: u16 = 3128;

/// Where the proxy's socket is bound inside the sandbox (its `/tmp` is a tmpfs of its own).
pub const INSIDE_SOCKET: &str = "/tmp/.sdlc-runner-egress.sock";

/// The path under which the proxy serves the model's API with `keyOutside`.
pub const MODEL_PATH: &str = "/model";

/// What the agent's key variable holds with `keyOutside`: the CLI starts, and the proxy puts
/// the real key in its place.
pub const PLACEHOLDER_KEY: &str = "sdlc-runner-key-outside";

/// The hosts the agent CLI itself needs: its model's API and its login's refresh.
pub fn default_hosts(kind: AgentKind) -> &'static [&'static str] {
    match kind {
        AgentKind::Claude => &["api.anthropic.com", "console.anthropic.com", "claude.ai"],
        AgentKind::Codex => &["api.openai.com", "auth.openai.com", "chatgpt.com"],
        AgentKind::Gemini => &[
            "generativelanguage.googleapis.com",
            "cloudcode-pa.googleapis.com",
            "oauth2.googleapis.com",
        ],
    }
}

/// The variables the agent CLI reads its proxy from (Node's CLIs and Codex's Rust client
/// read the same ones, upper and lower case).
pub fn proxy_vars(kind: AgentKind) -> &'static [&'static str] {
    match kind {
        AgentKind::Claude | AgentKind::Codex | AgentKind::Gemini => &[
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "ALL_PROXY",
            "https_proxy",
            "http_proxy",
            "all_proxy",
        ],
    }
}

/// How a CLI sends its key to its model's API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `x-api-key: KEY` (Anthropic's API key).
    XApiKey,
    /// `authorization: Bearer KEY` (Anthropic's auth token, OpenAI).
    Bearer,
    /// `x-goog-api-key: KEY` (the Gemini API).
    GoogApiKey,
}

impl KeyHeader {
    /// The header's name and its value for `key`.
    pub fn header(self, key: &str) -> (&'static str, String) {
        match self {
            KeyHeader::XApiKey => ("x-api-key", key.to_string()),
            KeyHeader::Bearer => ("authorization", format!("Bearer {key}")),
            KeyHeader::GoogApiKey => ("x-goog-api-key", key.to_string()),
        }
    }
}

/// Every header a CLI may carry its key in: the proxy drops them before adding the real one.
pub const KEY_HEADERS: [&str; 3] = ["x-api-key", "authorization", "x-goog-api-key"];

/// What `keyOutside` needs of a CLI: the variable of its base URL, its API's own address, and
/// its key variables with the header each is sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelApi {
    /// The variable the CLI reads its base URL from.
    pub base_url_var: &'static str,
    /// The API's address, which the CLI's paths are appended to.
    pub upstream: &'static str,
    /// The key variables, in the order they are looked for, and how each is sent.
    pub keys: &'static [(&'static str, KeyHeader)],
}

/// The model API of each CLI. All three accept a base URL: Claude Code
/// `ANTHROPIC_BASE_URL`, Codex `OPENAI_BASE_URL`, Gemini CLI `GOOGLE_GEMINI_BASE_URL`.
pub fn model_api(kind: AgentKind) -> ModelApi {
    match kind {
        AgentKind::Claude => ModelApi {
            base_url_var: "ANTHROPIC_BASE_URL",
            upstream: "https://api.anthropic.com",
            keys: &[
                ("ANTHROPIC_API_KEY", KeyHeader::XApiKey),
                ("ANTHROPIC_AUTH_TOKEN", KeyHeader::Bearer),
            ],
        },
        AgentKind::Codex => ModelApi {
            base_url_var: "OPENAI_BASE_URL",
            upstream: "https://api.openai.com/v1",
            keys: &[
                ("OPENAI_API_KEY", KeyHeader::Bearer),
                ("CODEX_API_KEY", KeyHeader::Bearer),
            ],
        },
        AgentKind::Gemini => ModelApi {
            base_url_var: "GOOGLE_GEMINI_BASE_URL",
            upstream: "https://generativelanguage.googleapis.com",
            keys: &[
                ("GEMINI_API_KEY", KeyHeader::GoogApiKey),
                ("GOOGLE_API_KEY", KeyHeader::GoogApiKey),
            ],
        },
    }
}

/// A key, never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Holds `value`.
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value, for the one header it goes into.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The hosts the proxy lets through: exact names (any case), or `*.domain` for the
/// domain's subdomains.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Allowlist(Vec<String>);

impl Allowlist {
    /// The CLI's own hosts and `more`.
    pub fn new<'a>(hosts: impl IntoIterator<Item = &'a str>) -> Allowlist {
        let mut list: Vec<String> = Vec::new();
        for h in hosts {
            let h = h.trim().to_ascii_lowercase();
            if !list.contains(&h) {
                list.push(h);
            }
        }
        Allowlist(list)
    }

    /// Whether `host` (as a request names it, IPv6 in brackets or not) is let through.
    pub fn allows(&self, host: &str) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        self.0.iter().any(|entry| match entry.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
            None => *entry == host,
        })
    }

    /// The hosts, as listed.
    pub fn hosts(&self) -> &[String] {
        &self.0
    }
}

/// Where the proxy sends the model's requests with `keyOutside`, and the key it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRoute {
    /// The model API's address (`https://…`, or `http://` to a loopback address).
    pub upstream: String,
    /// The header the key goes into.
    pub header: KeyHeader,
    /// The key, held by the runner only.
    pub key: Secret,
}

/// What one attempt's proxy serves: its socket, the allowlist and the model route. The
/// socket's private directory lives as long as the plan's last clone.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The proxy's Unix socket on the host.
    pub socket: PathBuf,
    /// The hosts let through.
    pub allow: Allowlist,
    /// The model route of `keyOutside`.
    pub model: Option<ModelRoute>,
    /// The port the relay listens on: a request naming `127.0.0.1` or `localhost` at this
    /// port is the proxy's own (the model route), not a host to reach.
    pub own_port: u16,
    /// The socket's directory (mode 0700), removed with the last clone.
    _dir: Option<Arc<tempfile::TempDir>>,
}

impl PartialEq for Plan {
    fn eq(&self, other: &Plan) -> bool {
        self.socket == other.socket
            && self.allow == other.allow
            && self.model == other.model
            && self.own_port == other.own_port
    }
}

impl Eq for Plan {}

impl Plan {
    /// A plan whose socket lies in a fresh private directory under the temporary directory.
    pub fn new(allow: Allowlist, model: Option<ModelRoute>) -> std::io::Result<Plan> {
        let dir = tempfile::Builder::new().prefix("sdlc-egress-").tempdir()?;
        let socket = dir.path().join("proxy.sock");
        Ok(Plan {
            socket,
            allow,
            model,
            own_port: INSIDE_PORT,
            _dir: Some(Arc::new(dir)),
        })
    }

    /// A plan serving at `socket` (whose directory the caller owns), the relay at `own_port`.
    pub fn at(socket: &Path, own_port: u16, allow: Allowlist, model: Option<ModelRoute>) -> Plan {
        Plan {
            socket: socket.to_path_buf(),
            allow,
            model,
            own_port,
            _dir: None,
        }
    }
}

#[cfg(test)]
mod tests;
