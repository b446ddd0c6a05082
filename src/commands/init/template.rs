//! `init --agent codex|gemini`: the starting config of `init`, adapted to another CLI. The
//! template is written for Claude; this swaps the agent, the models (one with a shipped price,
//! since the template sets budgets in dollars) and drops what the CLI has no use for.

use crate::config::AgentKind;

/// The model each kind's config starts with: priced in the shipped table.
pub fn starting_model(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Claude => "sonnet",
        AgentKind::Codex => "gpt-5",
        AgentKind::Gemini => "gemini-2.5-pro",
    }
}

/// `text` (the Claude template) for `kind`.
pub fn adapt(text: &str, kind: AgentKind) -> String {
    if kind == AgentKind::Claude {
        return text.to_string();
    }
    let model = starting_model(kind);
    let global = match kind {
        AgentKind::Gemini => format!(
            "\"model\": \"{model}\",\n  \"_effort\": \"Gemini has no reasoning-effort setting.\","
        ),
        _ => format!("\"model\": \"{model}\",\n  \"effort\": \"medium\","),
    };
    let step_model = match kind {
        AgentKind::Gemini => "",
        _ => "\"effort\": \"high\", ",
    };
    text.replace("\"model\": \"sonnet\",\n  \"effort\": \"medium\",", &global)
        .replace("\"model\": \"opus\", \"effort\": \"high\", ", step_model)
        .replace(
            "\"command\": \"claude\",",
            &format!(
                "\"kind\": \"{kind}\",\n    \"command\": \"{}\",\n    \"_pricing\": \"{kind} reports tokens, not dollars: budgets use agent.pricing (USD per million tokens; shipped defaults in docs/agents.md). Add your model's price there.\",",
                kind.default_command()
            ),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_gets_a_template_that_loads_and_runs_that_kind() {
        let dir = tempfile::tempdir().expect("temp dir");
        for kind in AgentKind::ALL {
            let path = dir.path().join(format!("{kind}.json"));
            let text = adapt(&super::super::config_text(dir.path(), None), kind);
            std::fs::write(&path, &text).expect("write");
            let config = crate::config::Config::load(&path)
                .unwrap_or_else(|e| panic!("{kind}: {}", e.lines().join("\n")));
            for step in crate::step::Step::ALL {
                assert_eq!(config.agent(step).kind, kind);
                if !config.builtin(step) && kind != AgentKind::Claude {
                    assert_eq!(config.model(step), starting_model(kind), "{kind} {step:?}");
                }
            }
            assert!(config.budget.per_issue_usd.is_some(), "priced: {kind}");
        }
    }
}
