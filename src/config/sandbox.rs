//! `agent.sandbox` (top level and per step): where the agent's process runs and what it can
//! reach. The layout itself (the argument vector of each kind) is `agent/sandbox.rs`; this is
//! the key as written and its typed form.

use super::walker::{join, Obj, Walker};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What the agent runs in: `none` (as the runner's user, everything reachable), `bwrap`
/// (bubblewrap from the distribution), `podman` or `docker` (a container from `image`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// Variant docs would turn the schema's `enum` into a `oneOf` the walker does not read.
#[allow(missing_docs)]
pub enum SandboxKind {
    #[default]
    None,
    Bwrap,
    Podman,
    Docker,
}

impl SandboxKind {
    /// The name written in the config, and the program run for the kind (`none` runs none).
    pub const fn as_str(self) -> &'static str {
        match self {
            SandboxKind::None => "none",
            SandboxKind::Bwrap => "bwrap",
            SandboxKind::Podman => "podman",
            SandboxKind::Docker => "docker",
        }
    }

    /// The distribution's package that provides the kind's program.
    pub const fn package(self) -> &'static str {
        match self {
            SandboxKind::None => "",
            SandboxKind::Bwrap => "bubblewrap",
            SandboxKind::Podman => "podman",
            SandboxKind::Docker => "docker.io",
        }
    }

    /// Whether the agent runs in a container image rather than on the host's own system.
    pub const fn is_container(self) -> bool {
        matches!(self, SandboxKind::Podman | SandboxKind::Docker)
    }
}

impl std::fmt::Display for SandboxKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `host` keeps the network; `none` cuts it entirely (an agent that reaches its model through
/// a local endpoint outside the sandbox cannot reach it either); `allowlist` cuts it but for
/// the runner's proxy, which lets through only the hosts in `allow` (bwrap only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// As for SandboxKind: the values are the config's own words.
#[allow(missing_docs)]
pub enum SandboxNetwork {
    #[default]
    Host,
    None,
    Allowlist,
}

/// Where the agent runs and what it can reach (docs/security.md, "The agent in a sandbox, at a glance"). A step's
/// own `sandbox` is merged over the top level's key by key.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxFile {
    /// `none` runs the agent as the runner's user with everything it can reach; `bwrap`
    /// (bubblewrap), `podman` or `docker` let it change the work tree and nothing else.
    #[serde(default)]
    pub kind: SandboxKind,
    /// `none` cuts the network off inside the sandbox; `allowlist` leaves the agent only the
    /// runner's proxy, which lets through the agent CLI's own hosts and `allow` (bwrap only).
    #[serde(default)]
    pub network: SandboxNetwork,
    /// With `network: "allowlist"`: more hosts the agent may reach, beside its CLI's own
    /// (`api.anthropic.com`, …): a host name or address, or `*.example.com` for its
    /// subdomains.
    #[serde(default)]
    pub allow: Vec<String>,
    /// With `network: "allowlist"`: the model key stays in the runner; the agent's base URL is
    /// the proxy, which adds the key to its requests for the model's host.
    #[serde(default)]
    pub key_outside: bool,
    /// With `keyOutside`: where the proxy sends the model's requests (default: the CLI's own
    /// API, e.g. `https://api.anthropic.com`); `http://` only to a loopback address.
    pub model_url: Option<String>,
    /// More paths the agent may read (absolute, `~` or `~/…` in the runner's home). A parent
    /// of the project is fine (the work tree stays writable: the more specific bind wins); the
    /// project itself or a path inside it is an error.
    #[serde(default)]
    pub read_only: Vec<String>,
    /// More paths the agent may change (absolute, `~` or `~/…`; not inside the project).
    #[serde(default)]
    pub writable: Vec<String>,
    /// Names of more environment variables passed in (the tracker's and forge's tokens
    /// never are unless listed here).
    #[serde(default)]
    pub env: Vec<String>,
    /// The container image (podman and docker only): it must hold the agent CLI.
    pub image: Option<String>,
}

/// A configured path (`readOnly`, `writable`): `~` and `~/…` in `home`, else as written
/// (validation allows only absolute ones besides).
pub fn expand(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (_, Some(home)) if path == "~" => home.to_path_buf(),
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// The runner's home directory (`HOME`, when absolute): where `~` points.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// `agent.sandbox` resolved: a step's own keys over the top level's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxConfig {
    /// What the agent runs in.
    pub kind: SandboxKind,
    /// Whether it keeps the network.
    pub network: SandboxNetwork,
    /// More hosts the proxy lets through (`network: "allowlist"`), as written.
    pub allow: Vec<String>,
    /// The model key stays in the runner (`network: "allowlist"`).
    pub key_outside: bool,
    /// Where the proxy sends the model's requests with `key_outside`; `None`: the CLI's own.
    pub model_url: Option<String>,
    /// More paths it may read, as written (`~/` is the runner's home).
    pub read_only: Vec<String>,
    /// More paths it may change, as written.
    pub writable: Vec<String>,
    /// Names of more variables passed in.
    pub env: Vec<String>,
    /// The container image of podman and docker.
    pub image: Option<String>,
    /// A `kind` was written (`none` included): the operator chose; doctor warns only when
    /// nobody did.
    pub chosen: bool,
}

impl Walker {
    /// The `sandbox` member of agent object `o`, merged key by key over `base` (the top
    /// level's, for a step).
    pub(super) fn sandbox(&mut self, o: &Obj, base: Option<&SandboxConfig>) -> SandboxConfig {
        let s = self.member(o, "sandbox");
        let mut out = base.cloned().unwrap_or_default();
        if let Some(kind) = self.pick::<SandboxKind>(&s, "kind") {
            out.kind = kind;
            out.chosen = true;
        }
        if let Some(network) = self.pick::<SandboxNetwork>(&s, "network") {
            out.network = network;
        }
        for (key, list) in [
            ("readOnly", &mut out.read_only),
            ("writable", &mut out.writable),
        ] {
            if let Some(paths) = self.strings(&s, key, false, Some("a blank path")) {
                for (i, p) in paths.iter().enumerate() {
                    if !(p.starts_with('/') || p.starts_with("~/") || p == "~") {
                        self.err(
                            format!("{}[{i}]", s.path(key)),
                            format!(
                                "\"{p}\" is relative: write an absolute path or one in the home \
                                 directory as \"~/…\" (the sandbox has no working directory to \
                                 resolve it against)"
                            ),
                        );
                    }
                }
                *list = paths;
            }
        }
        if let Some(names) = self.strings(&s, "env", false, Some("a blank variable name")) {
            for (i, n) in names.iter().enumerate() {
                if n.contains('=') || n.contains('\0') {
                    self.err(
                        format!("{}[{i}]", s.path("env")),
                        "not a valid environment variable name",
                    );
                }
            }
            out.env = names;
        }
        if let Some(image) = self.text(&s, "image") {
            out.image = Some(image);
        }
        self.egress_keys(&s, &mut out);
        if out.kind.is_container() && out.image.is_none() {
            self.err(
                join(&s.path, "image"),
                format!(
                    "sandbox kind {} runs the agent in a container: name the image that holds \
                     the agent CLI (\"image\": \"…\")",
                    out.kind
                ),
            );
        }
        if !out.kind.is_container() {
            if let Some(v @ Value::String(_)) = s.get("image") {
                self.err(
                    s.path("image"),
                    format!(
                        "{v} means nothing for sandbox kind {}: only podman and docker run an \
                         image; remove it",
                        out.kind
                    ),
                );
            }
        }
        out
    }
}

impl Walker {
    /// `allow`, `keyOutside` and `modelUrl`, and what they need: the allowlist network, served
    /// to bubblewrap only.
    fn egress_keys(&mut self, s: &Obj, out: &mut SandboxConfig) {
        if let Some(hosts) = self.strings(s, "allow", false, Some("a blank host")) {
            for (i, h) in hosts.iter().enumerate() {
                if let Err(why) = egress_host(h) {
                    self.err(
                        format!("{}[{i}]", s.path("allow")),
                        format!("\"{h}\" {why}"),
                    );
                }
            }
            out.allow = hosts;
        }
        if let Some(on) = self.boolean(s, "keyOutside") {
            out.key_outside = on;
        }
        if let Some(url) = self.text(s, "modelUrl") {
            if let Err(why) = egress_model_url(&url) {
                self.err(s.path("modelUrl"), format!("\"{url}\" {why}"));
            }
            out.model_url = Some(url);
        }
        let allowlist = out.network == SandboxNetwork::Allowlist;
        if allowlist && out.kind != SandboxKind::Bwrap {
            self.err(
                join(&s.path, "network"),
                format!(
                    "\"allowlist\" is served to sandbox kind bwrap only, not {}: set kind \
                     \"bwrap\", or network \"host\" or \"none\"",
                    out.kind
                ),
            );
        }
        for (key, set) in [
            ("allow", s.get("allow").is_some()),
            (
                "keyOutside",
                out.key_outside && s.get("keyOutside").is_some(),
            ),
            ("modelUrl", s.get("modelUrl").is_some()),
        ] {
            if set && !allowlist {
                self.err(
                    s.path(key),
                    "means nothing unless network is \"allowlist\": set agent.sandbox.network \
                     to \"allowlist\" or remove it",
                );
            }
        }
    }
}

/// Whether `host` can be an entry of `allow`: a host name or an address, or `*.` and a
/// domain for its subdomains; never a URL, a port or a path.
fn egress_host(host: &str) -> Result<(), &'static str> {
    let name = host.strip_prefix("*.").unwrap_or(host);
    let fits = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'))
        && !name.contains('*');
    let bracketless_v6 = name.contains(':') && name.parse::<std::net::Ipv6Addr>().is_ok();
    if !fits || (name.contains(':') && !bracketless_v6) {
        return Err(
            "is not a host: write a name or address (\"api.example.com\", \
                    \"127.0.0.1\") or \"*.example.com\" for its subdomains, without a scheme, \
                    port or path",
        );
    }
    Ok(())
}

/// Whether `url` can be `modelUrl`: `https://`, or `http://` to a loopback address (a model
/// host run beside the runner, a test's), never a key sent in the clear over a network.
fn egress_model_url(url: &str) -> Result<(), &'static str> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|_| "is not a URL: write e.g. \"https://api.anthropic.com\"")?;
    let host = parsed.host_str().unwrap_or("").trim_matches(['[', ']']);
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback());
    match parsed.scheme() {
        "https" if !host.is_empty() => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(
            "is neither https:// nor http:// to a loopback address: the proxy would send the \
                  model key in the clear; write the model host's https:// URL",
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, SandboxKind, SandboxNetwork};
    use crate::step::Step;
    use std::path::Path;

    fn config(rest: &str) -> Result<Config, Vec<String>> {
        let text = format!(r#"{{"projectPath": "p", {rest}}}"#);
        Config::from_str(&text, Path::new("c.json")).map_err(|e| {
            e.lines()
                .into_iter()
                .map(|l| l.strip_prefix("c.json: ").map(str::to_string).unwrap_or(l))
                .collect()
        })
    }

    /// The steps the runner can do itself, builtin: inside a sandbox they must be.
    const GIT_STEPS: &str = r#""startCycle": {"run": "builtin"}, "startIssue": {"run": "builtin"},
        "commitPush": {"run": "builtin"}, "createPR": {"run": "builtin"},
        "monitorCI": {"run": "builtin"}, "merge": {"run": "builtin"}"#;

    #[test]
    fn inside_a_sandbox_the_steps_the_runner_can_do_are_the_runners() {
        let errors =
            config(r#""agent": {"sandbox": {"kind": "bwrap"}}"#).expect_err("agent-run git steps");
        let named: Vec<&str> = errors.iter().filter_map(|e| e.split(':').next()).collect();
        assert_eq!(
            named,
            [
                "steps.startCycle.run",
                "steps.startIssue.run",
                "steps.commitPush.run",
                "steps.createPR.run",
                "steps.monitorCI.run",
                "steps.merge.run"
            ],
            "{errors:?}"
        );
        assert!(
            errors[1].contains("git directory is read-only")
                && errors[1].contains("set steps.startIssue.run to \"builtin\""),
            "{errors:?}"
        );
        config(&format!(
            r#""agent": {{"sandbox": {{"kind": "bwrap"}}}}, "steps": {{{GIT_STEPS}}}"#
        ))
        .expect("builtin git steps in a sandbox");
        // A step whose own sandbox is none may still be the agent's: its git is writable.
        let mixed = GIT_STEPS.replace(
            r#""merge": {"run": "builtin"}"#,
            r#""merge": {"agent": {"sandbox": {"kind": "none"}}}"#,
        );
        config(&format!(
            r#""agent": {{"sandbox": {{"kind": "bwrap"}}}}, "steps": {{{mixed}}}"#
        ))
        .expect("an unsandboxed agent-run merge");
        config(r#""agent": {"sandbox": {"kind": "none"}}"#).expect("no sandbox: as before");
    }

    #[test]
    fn no_sandbox_unless_asked() {
        let c = config(r#""model": "sonnet""#).expect("valid");
        assert_eq!(c.agent.sandbox.kind, SandboxKind::None);
        assert!(!c.agent.sandbox.chosen);
        assert_eq!(c.agent(Step::Implement).sandbox.kind, SandboxKind::None);
        let c = config(r#""agent": {"sandbox": {"kind": "none"}}"#).expect("valid");
        assert!(c.agent(Step::Implement).sandbox.chosen);
    }

    #[test]
    fn a_steps_sandbox_is_merged_over_the_top_levels_key_by_key() {
        let c = config(&format!(
            r#""agent": {{"sandbox": {{"kind": "bwrap", "readOnly": ["~/ref"], "env": ["X"]}}}},
               "steps": {{"verify": {{"agent": {{"sandbox": {{"network": "none"}}}}}},
                         "implement": {{"agent": {{"kind": "codex", "sandbox": {{"env": []}}}}}},
                         {GIT_STEPS}}}"#
        ))
        .expect("valid");
        let verify = &c.agent(Step::Verify).sandbox;
        assert_eq!(verify.kind, SandboxKind::Bwrap);
        assert_eq!(verify.network, SandboxNetwork::None);
        assert_eq!(verify.read_only, ["~/ref"]);
        let implement = &c.agent(Step::Implement).sandbox;
        assert_eq!(
            implement.kind,
            SandboxKind::Bwrap,
            "another CLI keeps the sandbox"
        );
        assert!(implement.env.is_empty());
        assert_eq!(
            c.agent(Step::WriteSpecs).sandbox.network,
            SandboxNetwork::Host
        );
    }

    #[test]
    fn local_ci_runs_in_the_agents_sandbox_with_its_own_network_when_it_names_one() {
        let agent = format!(
            r#""forge": "local", "agent": {{"sandbox": {{"kind": "bwrap", "network": "none"}}}},
               "steps": {{{GIT_STEPS}}}"#
        );
        for (ci, expected) in [
            (r#"{"command": ["true"]}"#, SandboxNetwork::None),
            (
                r#"{"command": ["true"], "network": "host"}"#,
                SandboxNetwork::Host,
            ),
        ] {
            let c = config(&format!(r#"{agent}, "localCi": {ci}"#)).expect("valid");
            let ci_config = c.local_ci.as_ref().expect("localCi");
            let sandbox = ci_config.sandbox(&c.agent.sandbox);
            assert_eq!(sandbox.kind, SandboxKind::Bwrap, "{ci}");
            assert_eq!(sandbox.network, expected, "{ci}");
        }
        let errors =
            config(r#""forge": "local", "localCi": {"command": ["true"], "network": "lan"}"#)
                .expect_err("a network that is none of them");
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("localCi.network: \"lan\" is not one of host|none")),
            "{errors:?}"
        );
    }

    #[test]
    fn mistakes_are_named_with_their_fix() {
        for (rest, expected) in [
            (
                r#""agent": {"sandbox": {"kind": "podman"}}"#,
                "agent.sandbox.image: sandbox kind podman runs the agent in a container: name the image that holds the agent CLI (\"image\": \"…\")",
            ),
            (
                r#""agent": {"sandbox": {"kind": "bwrap", "image": "x"}}"#,
                "agent.sandbox.image: \"x\" means nothing for sandbox kind bwrap: only podman and docker run an image; remove it",
            ),
            (
                r#""agent": {"sandbox": {"kind": "bwrap", "writable": ["cache"]}}"#,
                "agent.sandbox.writable[0]: \"cache\" is relative: write an absolute path or one in the home directory as \"~/…\" (the sandbox has no working directory to resolve it against)",
            ),
            (
                r#""agent": {"sandbox": {"kind": "firejail"}}"#,
                "agent.sandbox.kind: \"firejail\" is not one of none|bwrap|podman|docker",
            ),
            (
                r#""agent": {"sandbox": {"kind": "bwrap", "mounts": []}}"#,
                "agent.sandbox.mounts: unknown key",
            ),
            (
                r#""agent": {"sandbox": {"network": "allowlist"}}"#,
                "agent.sandbox.network: \"allowlist\" is served to sandbox kind bwrap only, not none",
            ),
            (
                r#""agent": {"sandbox": {"kind": "bwrap", "network": "allowlist", "allow": ["https://x.org"]}}"#,
                "agent.sandbox.allow[0]: \"https://x.org\" is not a host",
            ),
            (
                r#""agent": {"sandbox": {"kind": "bwrap", "keyOutside": true}}"#,
                "agent.sandbox.keyOutside: means nothing unless network is \"allowlist\"",
            ),
            (
                r#""agent": {"sandbox": {"kind": "bwrap", "network": "allowlist", "keyOutside": true, "modelUrl": "http://example.com"}}"#,
                "agent.sandbox.modelUrl: \"http://example.com\" is neither https:// nor http:// to a loopback address",
            ),
        ] {
            let errors = config(rest).expect_err(rest);
            assert!(
                errors.iter().any(|e| e.starts_with(expected)),
                "{rest}: {errors:?}"
            );
        }
    }
}
