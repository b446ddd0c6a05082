//! The prices of the agents' models (`agent.pricing`): what an attempt's tokens cost, for the
//! running cost the runner keeps while an agent works (every CLI) and for the cost of an
//! attempt whose CLI reports tokens but no dollars (Codex, Gemini).
//!
//! The shipped table holds list prices as the runner's authors knew them on
//! [`SHIPPED_AS_OF`] (repeated in docs/agents.md); a config's `agent.pricing` entries replace
//! them model by model, so a change of price needs no rebuild.

use std::collections::BTreeMap;

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Input tokens neither served from nor written to the prompt cache.
    pub input: f64,
    /// Input tokens served from the provider's prompt cache.
    pub cached_input: f64,
    /// Output tokens, reasoning included.
    pub output: f64,
    /// Input tokens written to the prompt cache (Claude reports them apart).
    pub cache_write: f64,
}

/// Model name → price.
pub type Pricing = BTreeMap<String, Price>;

/// The date of [`shipped`]'s figures, repeated in docs/agents.md.
pub const SHIPPED_AS_OF: &str = "2025-11";

/// Anthropic's 5-minute cache write costs 1.25 times the input price; a config price that
/// names no `cacheWrite` gets it.
pub const CACHE_WRITE_FACTOR: f64 = 1.25;

/// List prices shipped with the runner (USD per million tokens).
pub fn shipped() -> Pricing {
    // (input, cached input, output, cache write)
    let p = |input, cached_input, output, cache_write| Price {
        input,
        cached_input,
        output,
        cache_write,
    };
    // Claude: cache reads at a tenth of input, 5-minute cache writes at 1.25 times it. The
    // aliases the runner passes (`--model opus`) are priced as the model they name.
    let opus_4_5 = p(5.0, 0.5, 25.0, 6.25);
    let opus_4 = p(15.0, 1.5, 75.0, 18.75);
    let sonnet = p(3.0, 0.3, 15.0, 3.75);
    let haiku_4_5 = p(1.0, 0.1, 5.0, 1.25);
    // OpenAI and Google cache no writes at a price of their own: input price.
    [
        ("opus", opus_4_5),
        ("claude-opus-4-5", opus_4_5),
        ("claude-opus-4-1", opus_4),
        ("claude-opus-4", opus_4),
        ("sonnet", sonnet),
        ("claude-sonnet-4-5", sonnet),
        ("claude-sonnet-4", sonnet),
        ("haiku", haiku_4_5),
        ("claude-haiku-4-5", haiku_4_5),
        ("claude-3-5-haiku", p(0.8, 0.08, 4.0, 1.0)),
        ("gpt-5", p(1.25, 0.125, 10.0, 1.25)),
        ("gpt-5-codex", p(1.25, 0.125, 10.0, 1.25)),
        ("gpt-5.1", p(1.25, 0.125, 10.0, 1.25)),
        ("gpt-5.1-codex", p(1.25, 0.125, 10.0, 1.25)),
        ("gpt-5.1-codex-mini", p(0.25, 0.025, 2.0, 0.25)),
        ("gpt-5-mini", p(0.25, 0.025, 2.0, 0.25)),
        ("gpt-5-nano", p(0.05, 0.005, 0.4, 0.05)),
        ("gemini-3-pro-preview", p(2.0, 0.2, 12.0, 2.0)),
        ("gemini-2.5-pro", p(1.25, 0.31, 10.0, 1.25)),
        ("gemini-2.5-flash", p(0.30, 0.075, 2.5, 0.30)),
        ("gemini-2.5-flash-lite", p(0.10, 0.025, 0.4, 0.10)),
    ]
    .into_iter()
    .map(|(m, price)| (m.to_string(), price))
    .collect()
}
