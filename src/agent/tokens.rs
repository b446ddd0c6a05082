//! What an attempt cost when the CLI reports tokens but no dollars: the tokens each model
//! spent, priced by the config's `agent.pricing` (the shipped table and the config's entries,
//! `config::pricing`).

use crate::config::Pricing;

/// Tokens one model spent in one attempt. `input` includes `cached_input`, as both CLIs
/// report it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelTokens {
    /// The model the CLI named; empty when it names none (Codex), then the step's model.
    pub model: String,
    /// Input tokens, cached ones included.
    pub input: u64,
    /// Input tokens served from the prompt cache.
    pub cached_input: u64,
    /// Input tokens written to the prompt cache, not part of `input` (Claude).
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
}

/// The cost of `tokens` in micro-dollars; `None` when a model that spent tokens has no price.
/// `fallback_model` names the tokens whose model the CLI did not say.
pub fn cost_micros(pricing: &Pricing, tokens: &[ModelTokens], fallback_model: &str) -> Option<u64> {
    let mut usd = 0.0;
    for t in tokens {
        if t.input == 0 && t.output == 0 && t.cache_write == 0 {
            continue;
        }
        let model = if t.model.is_empty() {
            fallback_model
        } else {
            &t.model
        };
        let price = pricing.get(model)?;
        let cached = t.cached_input.min(t.input);
        usd += ((t.input - cached) as f64 * price.input
            + cached as f64 * price.cached_input
            + t.cache_write as f64 * price.cache_write
            + t.output as f64 * price.output)
            / 1e6;
    }
    Some((usd * 1e6).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_input_is_priced_apart_and_unknown_models_have_no_cost() {
        let pricing = crate::config::shipped_pricing();
        let tokens = [ModelTokens {
            model: String::new(),
            input: 1_000_000,
            cached_input: 400_000,
            output: 100_000,
            ..Default::default()
        }];
        // 0.6 M × 1.25 + 0.4 M × 0.125 + 0.1 M × 10 = 0.75 + 0.05 + 1.0 = 1.80 USD
        assert_eq!(cost_micros(&pricing, &tokens, "gpt-5"), Some(1_800_000));
        assert_eq!(cost_micros(&pricing, &tokens, "gpt-unknown"), None);
        let idle = [ModelTokens {
            model: "unpriced".into(),
            ..Default::default()
        }];
        assert_eq!(cost_micros(&pricing, &idle, "gpt-5"), Some(0));
    }
}
