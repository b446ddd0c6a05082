//! The prices of the models of the CLIs that report tokens but no dollars (`agent.pricing`).
//!
//! The shipped table holds list prices as published when they were written down (the date is
//! in docs/agents.md); a config's `agent.pricing` entries replace them model by model.

use std::collections::BTreeMap;

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Input tokens not served from the cache.
    pub input: f64,
    /// Input tokens served from the provider's prompt cache.
    pub cached_input: f64,
    /// Output tokens, reasoning included.
    pub output: f64,
}

/// Model name → price.
pub type Pricing = BTreeMap<String, Price>;

/// The date of [`shipped`]'s figures, repeated in docs/agents.md.
pub const SHIPPED_AS_OF: &str = "2025-09-01";

/// List prices shipped with the runner (USD per million tokens).
pub fn shipped() -> Pricing {
    let p = |input, cached_input, output| Price {
        input,
        cached_input,
        output,
    };
    [
        ("gpt-5", p(1.25, 0.125, 10.0)),
        ("gpt-5-codex", p(1.25, 0.125, 10.0)),
        ("gpt-5-mini", p(0.25, 0.025, 2.0)),
        ("gpt-5-nano", p(0.05, 0.005, 0.4)),
        ("gemini-2.5-pro", p(1.25, 0.31, 10.0)),
        ("gemini-2.5-flash", p(0.30, 0.075, 2.5)),
        ("gemini-2.5-flash-lite", p(0.10, 0.025, 0.4)),
    ]
    .into_iter()
    .map(|(m, price)| (m.to_string(), price))
    .collect()
}
