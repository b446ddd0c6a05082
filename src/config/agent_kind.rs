//! Which agent CLI runs a step, and the facts about each CLI that config validation needs.

use std::fmt;

/// The agent CLIs the runner can drive (`agent.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AgentKind {
    /// Anthropic's Claude Code (`claude -p … --output-format stream-json`).
    #[default]
    Claude,
    /// OpenAI's Codex CLI (`codex exec --json`).
    Codex,
    /// Google's Gemini CLI (`gemini -p … --output-format stream-json`).
    Gemini,
}

impl AgentKind {
    /// Every supported CLI, in the order docs and messages list them.
    pub const ALL: [AgentKind; 3] = [AgentKind::Claude, AgentKind::Codex, AgentKind::Gemini];

    /// The name used in the config's `agent.kind` and in messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
        }
    }

    /// The kind named `s` in the config, `None` for an unknown name.
    pub fn parse(s: &str) -> Option<AgentKind> {
        AgentKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The CLI's binary, the default of `agent.command`.
    pub const fn default_command(self) -> &'static str {
        self.as_str()
    }

    /// Whether the CLI takes a reasoning effort (Claude: `CLAUDE_CODE_EFFORT_LEVEL`, Codex:
    /// `model_reasoning_effort`). Gemini has none.
    pub const fn has_effort(self) -> bool {
        !matches!(self, AgentKind::Gemini)
    }

    /// Whether `agent.maxApiRetries` reaches the CLI. Only Claude reads its retry count from
    /// the environment; Codex keeps its retry knobs per model provider in its own config, and
    /// Gemini in its settings file (docs/agents.md).
    pub const fn takes_api_retries(self) -> bool {
        matches!(self, AgentKind::Claude)
    }

    /// Whether the CLI reports its cost in dollars; the others report tokens, priced with
    /// `agent.pricing`.
    pub const fn reports_cost(self) -> bool {
        matches!(self, AgentKind::Claude)
    }

    /// Whether the CLI streams each model request's usage as it happens, so that the runner
    /// can stop a call at its money; the others report tokens only when they end.
    pub const fn streams_usage(self) -> bool {
        matches!(self, AgentKind::Claude)
    }

    /// Whether the CLI enforces the step's turn limit itself (`--max-turns`); for the others
    /// the runner counts tool calls from the stream and stops the agent.
    pub const fn limits_turns(self) -> bool {
        matches!(self, AgentKind::Claude)
    }
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
