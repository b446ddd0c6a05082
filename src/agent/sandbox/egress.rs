//! `network: "allowlist"` in bubblewrap (docs/security.md, "The allowlist"): the sandbox's
//! argument vector and environment once the agent's only way out is the runner's proxy
//! (`crate::egress`). bubblewrap already has a network namespace of its own (loopback only);
//! here the proxy's socket and the runner's binary are bound in, the runner's binary becomes
//! the sandbox's entry (`egress-relay`, which starts the agent), the CLI's proxy variables
//! name the relay, and with `keyOutside` the CLI's key variables give way to a placeholder
//! and its base URL to the proxy's model route.

use super::{cli_key_vars, SandboxError};
use crate::config::{AgentKind, SandboxConfig};
use crate::egress::{
    default_hosts, model_api, proxy_vars, Allowlist, ModelRoute, Plan, Secret, INSIDE_PORT,
    INSIDE_SOCKET, MODEL_PATH, PLACEHOLDER_KEY,
};
use std::path::Path;

/// Makes `args` (bubblewrap's, from `bwrap_args`) and `env` (the sandbox's whole
/// environment) those of an agent whose one way out is the proxy of the returned plan.
pub(super) fn enclose(
    config: &SandboxConfig,
    agent: AgentKind,
    args: &mut Vec<String>,
    env: &mut Vec<(String, String)>,
) -> Result<Plan, SandboxError> {
    let model = config
        .key_outside
        .then(|| route(config, agent, env))
        .transpose()?;
    let allow = Allowlist::new(
        default_hosts(agent)
            .iter()
            .copied()
            .chain(config.allow.iter().map(String::as_str)),
    );
    let plan = Plan::new(allow, model).map_err(|e| {
        SandboxError::Egress(format!(
            "agent.sandbox.network \"allowlist\": the proxy's socket directory cannot be made \
             under {}: {e}; check the temporary directory (TMPDIR)",
            std::env::temp_dir().display()
        ))
    })?;
    let runner = std::env::current_exe().map_err(|e| {
        SandboxError::Egress(format!(
            "agent.sandbox.network \"allowlist\": the runner's own binary, the sandbox's relay \
             to the proxy, cannot be found: {e}"
        ))
    })?;
    entered(args, &runner, &plan.socket)?;
    let proxy = format!("http://127.0.0.1:{INSIDE_PORT}");
    for name in proxy_vars(agent) {
        set(env, name, &proxy);
    }
    // Nothing bypasses the proxy: there is nothing else to reach.
    env.retain(|(k, _)| k != "NO_PROXY" && k != "no_proxy");
    if let Some(route) = &plan.model {
        let api = model_api(agent);
        let held = api
            .keys
            .iter()
            .find(|(_, header)| *header == route.header)
            .map_or(api.keys[0].0, |(name, _)| *name);
        env.retain(|(k, _)| !cli_key_vars(agent).contains(&k.as_str()));
        set(env, held, PLACEHOLDER_KEY);
        set(env, api.base_url_var, &format!("{proxy}{MODEL_PATH}"));
    }
    Ok(plan)
}

/// The model route of `keyOutside`: `modelUrl` or the CLI's API, and the first of the CLI's
/// key variables the agent would have been handed.
fn route(
    config: &SandboxConfig,
    agent: AgentKind,
    env: &[(String, String)],
) -> Result<ModelRoute, SandboxError> {
    let api = model_api(agent);
    let found = api.keys.iter().find_map(|(name, header)| {
        env.iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| (*header, v.clone()))
    });
    let Some((header, key)) = found else {
        let names: Vec<&str> = api.keys.iter().map(|(n, _)| *n).collect();
        return Err(SandboxError::Egress(format!(
            "agent.sandbox.keyOutside: none of {} is set in the runner's environment, so the \
             proxy has no key to add: set one, or set keyOutside to false to let the {agent} CLI \
             use its own login",
            names.join(", ")
        )));
    };
    Ok(ModelRoute {
        upstream: config
            .model_url
            .clone()
            .unwrap_or_else(|| api.upstream.to_string()),
        header,
        key: Secret::new(key),
    })
}

/// bubblewrap's `… --chdir TREE -- PROGRAM ARGS` made `… BINDS --chdir TREE -- RUNNER
/// egress-relay --socket S --port P -- PROGRAM ARGS`: the binds after every other mount.
fn entered(args: &mut Vec<String>, runner: &Path, socket: &Path) -> Result<(), SandboxError> {
    let at = args
        .iter()
        .position(|a| a == "--chdir")
        .filter(|&i| args.get(i + 2).is_some_and(|a| a == "--"))
        .ok_or_else(|| {
            SandboxError::Egress(
                "agent.sandbox.network \"allowlist\": bubblewrap's arguments have no `--chdir \
                 DIR --` to enter the relay before (a runner bug: report it)"
                    .to_string(),
            )
        })?;
    let runner = runner.display().to_string();
    let port = INSIDE_PORT.to_string();
    let relay = [
        &runner,
        "egress-relay",
        "--socket",
        INSIDE_SOCKET,
        "--port",
        &port,
        "--",
    ];
    args.splice(at + 3..at + 3, relay.iter().map(|s| s.to_string()));
    let socket = socket.display().to_string();
    let binds = [
        "--ro-bind",
        &runner,
        &runner,
        "--bind",
        &socket,
        INSIDE_SOCKET,
    ];
    args.splice(at..at, binds.iter().map(|s| s.to_string()));
    Ok(())
}

/// `name=value`, replacing any value `env` had.
fn set(env: &mut Vec<(String, String)>, name: &str, value: &str) {
    env.retain(|(k, _)| k != name);
    env.push((name.to_string(), value.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relay_enters_before_the_agent_with_the_socket_bound_after_every_other_mount() {
        let mut args: Vec<String> = [
            "--unshare-net",
            "--tmpfs",
            "/tmp",
            "--chdir",
            "/w",
            "--",
            "/bin/agent",
            "--chdir",
            "x",
        ]
        .map(String::from)
        .to_vec();
        entered(
            &mut args,
            Path::new("/opt/sdlc-runner"),
            Path::new("/tmp/sdlc-egress-1/proxy.sock"),
        )
        .expect("entered");
        let port = INSIDE_PORT.to_string();
        let expected = [
            "--unshare-net",
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            "/opt/sdlc-runner",
            "/opt/sdlc-runner",
            "--bind",
            "/tmp/sdlc-egress-1/proxy.sock",
            INSIDE_SOCKET,
            "--chdir",
            "/w",
            "--",
            "/opt/sdlc-runner",
            "egress-relay",
            "--socket",
            INSIDE_SOCKET,
            "--port",
            &port,
            "--",
            "/bin/agent",
            "--chdir",
            "x",
        ];
        assert_eq!(args, expected);
    }

    #[test]
    fn with_the_key_outside_the_agent_holds_a_placeholder_and_the_proxy_the_key() {
        let config = SandboxConfig {
            network: crate::config::SandboxNetwork::Allowlist,
            key_outside: true,
            allow: vec!["example.org".into()],
            ..SandboxConfig::default()
        };
        let mut args: Vec<String> = ["--chdir", "/w", "--", "/bin/agent"]
            .map(String::from)
            .to_vec();
        let mut env = vec![
            ("ANTHROPIC_API_KEY".to_string(), "sk-ant-real".to_string()),
            ("CLAUDE_CODE_OAUTH_TOKEN".to_string(), "oauth".to_string()),
            ("NO_PROXY".to_string(), "*".to_string()),
        ];
        let plan = enclose(&config, AgentKind::Claude, &mut args, &mut env).expect("plan");
        let route = plan.model.as_ref().expect("route");
        assert_eq!(route.key.expose(), "sk-ant-real");
        assert_eq!(route.upstream, "https://api.anthropic.com");
        assert!(plan.allow.allows("api.anthropic.com") && plan.allow.allows("example.org"));
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("ANTHROPIC_API_KEY"), Some(PLACEHOLDER_KEY));
        assert_eq!(get("CLAUDE_CODE_OAUTH_TOKEN"), None);
        assert_eq!(get("NO_PROXY"), None);
        assert_eq!(
            get("ANTHROPIC_BASE_URL"),
            Some("http://127.0.0.1:3128/model")
        );
        assert_eq!(get("HTTPS_PROXY"), Some("http://127.0.0.1:3128"));
        assert!(
            !env.iter().any(|(_, v)| v.contains("sk-ant-real")),
            "{env:?}"
        );
        assert!(plan.socket.parent().is_some_and(Path::is_dir));

        let mut env = vec![("OTHER".to_string(), "x".to_string())];
        let mut args: Vec<String> = ["--chdir", "/w", "--", "/bin/agent"]
            .map(String::from)
            .to_vec();
        let e = enclose(&config, AgentKind::Claude, &mut args, &mut env).expect_err("no key");
        assert!(
            e.to_string().starts_with(
                "agent.sandbox.keyOutside: none of ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN is set"
            ),
            "{e}"
        );
    }
}
