//! The `agent` object, its per-step override `steps.<key>.agent`, and the price table
//! `agent.pricing` (docs/agents.md).

use super::*;
use crate::config::{AgentKind, Price, Pricing};

impl Walker {
    /// The fields of an agent object. `base`: the top-level agent a step's agent is merged
    /// over; a step that switches to another kind keeps only the environment from it, since a
    /// command and arguments for one CLI mean nothing to another.
    pub(super) fn agent_fields(&mut self, o: &Obj, base: Option<&AgentConfig>) -> AgentConfig {
        let kind = self
            .choice(o, "kind")
            .and_then(|name| AgentKind::ALL.into_iter().find(|k| k.as_str() == name))
            .or(base.map(|b| b.kind))
            .unwrap_or_default();
        let inherited = base.filter(|b| b.kind == kind);
        let command = self
            .text(o, "command")
            .or_else(|| inherited.map(|b| b.command.clone()))
            .unwrap_or_else(|| kind.default_command().to_string());
        let args = self
            .strings(o, "args", false, None)
            .or_else(|| inherited.map(|b| b.args.clone()))
            .unwrap_or_default();
        let mut env = base.map(|b| b.env.clone()).unwrap_or_default();
        if let Some(v) = o.get("env") {
            let path = o.path("env");
            match v {
                // Keys here are variable names, not schema keys, so `_` is not a comment.
                Value::Object(map) => {
                    for (k, val) in map {
                        if k.is_empty() || k.contains('=') || k.contains('\0') {
                            self.err(join(&path, k), "not a valid environment variable name");
                            continue;
                        }
                        match val {
                            Value::String(s) => {
                                env.insert(k.clone(), s.clone());
                            }
                            other => self.expected(join(&path, k), "a string", other),
                        }
                    }
                }
                other => self.expected(path, "an object of strings", other),
            }
        }
        if o.get("maxApiRetries").is_some() && !kind.takes_api_retries() {
            self.err(
                o.path("maxApiRetries"),
                format!(
                    "means nothing for {kind}: its retry settings live in its own configuration \
                     (see docs/agents.md); remove maxApiRetries"
                ),
            );
        }
        let max_api_retries = self
            .uint(o, "maxApiRetries")
            .or(inherited.map(|b| b.max_api_retries))
            // A step's agent declares no default of its own: it is the top-level one's.
            .unwrap_or_else(definition::d::max_api_retries);
        let sandbox = self.sandbox(o, base.map(|b| &b.sandbox));
        AgentConfig {
            kind,
            command,
            args,
            env,
            max_api_retries,
            sandbox,
        }
    }

    /// `steps.<key>.agent` merged over the top-level agent.
    pub(super) fn step_agent(&mut self, step: &Obj, top: &AgentConfig) -> AgentConfig {
        let o = self.member(step, "agent");
        self.agent_fields(&o, Some(top))
    }

    /// `agent.pricingFile` over the shipped table, then `agent.pricing` over both: a
    /// team can keep one file of prices for every project, and a project can still name one
    /// more model.
    pub(super) fn pricing(&mut self, top: &Obj, base: &Path) -> Pricing {
        let mut pricing = crate::config::shipped_pricing();
        let Some(Value::Object(agent)) = top.get("agent") else {
            return pricing;
        };
        let prices = top.shape.child("agent").child("pricing").entries();
        let agent_obj = self.member(top, "agent");
        if let Some(file) = self.path(&agent_obj, "pricingFile", base) {
            let key = agent_obj.path("pricingFile");
            match std::fs::read(&file) {
                Err(e) => self.err(
                    key,
                    format!(
                        "cannot read {}: {e}; create it (an object of model → {{\"input\", \"cachedInput\", \"output\"}} in US dollars per million tokens) or remove the key",
                        file.display()
                    ),
                ),
                Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                    Ok(Value::Object(models)) => {
                        let at = format!("{key} ({})", file.display());
                        self.prices(&at, &models, prices, &mut pricing);
                    }
                    Ok(other) => self.expected(
                        format!("{key} ({})", file.display()),
                        "an object mapping model names to prices",
                        &other,
                    ),
                    Err(e) => self.err(
                        key,
                        format!("{} is not JSON: {e}", file.display()),
                    ),
                },
            }
        }
        let path = join(&top.path("agent"), "pricing");
        let Some(v) = agent.get("pricing") else {
            return pricing;
        };
        let Value::Object(models) = v else {
            self.expected(path, "an object mapping model names to prices", v);
            return pricing;
        };
        self.prices(&path, models, prices, &mut pricing);
        pricing
    }

    /// The prices of `models` (found at `path`) into `pricing`, each checked against the
    /// shape of one price.
    fn prices(
        &mut self,
        path: &str,
        models: &serde_json::Map<String, Value>,
        prices: Shape,
        pricing: &mut Pricing,
    ) {
        for (model, entry) in models {
            if model.starts_with('_') {
                continue;
            }
            let o = self.object(join(path, model), Some(entry), prices);
            let has_cache_write = o.get("cacheWrite").is_some();
            let mut usd = |key: &str| match o.get(key) {
                None => {
                    self.err(
                        o.path(key),
                        "missing: US dollars per million tokens (0 if free)",
                    );
                    None
                }
                Some(v) => match v.as_f64().filter(|n| n.is_finite() && *n >= 0.0) {
                    Some(n) if n > o.shape.range(key).1.unwrap_or(f64::MAX) => {
                        self.above_maximum(
                            o.path(key),
                            n,
                            o.shape.range(key).1.unwrap_or(f64::MAX),
                        );
                        None
                    }
                    Some(n) => Some(n),
                    None => {
                        self.expected(o.path(key), "a number ≥ 0", v);
                        None
                    }
                },
            };
            let (input, cached_input, output) = (usd("input"), usd("cachedInput"), usd("output"));
            let cache_write = if has_cache_write {
                usd("cacheWrite")
            } else {
                input.map(|i| i * crate::config::pricing::CACHE_WRITE_FACTOR)
            };
            if let (Some(input), Some(cached_input), Some(output), Some(cache_write)) =
                (input, cached_input, output, cache_write)
            {
                pricing.insert(
                    model.clone(),
                    Price {
                        input,
                        cached_input,
                        output,
                        cache_write,
                    },
                );
            }
        }
    }

    /// Budgets in dollars need the cost of every attempt: a step on a CLI that reports only
    /// tokens must name a model with a price.
    pub(super) fn check_prices(
        &mut self,
        steps: &[(&str, &StepConfig)],
        pricing: &Pricing,
        budget: &Budget,
    ) {
        let Some(budget_key) = budget
            .per_issue_usd
            .map(|_| "budget.perIssueUsd")
            .or(budget.per_session_usd.map(|_| "budget.perSessionUsd"))
            .or(budget.per_day_usd.map(|_| "budget.perDayUsd"))
            .or(budget.per_call_usd.map(|_| "budget.perCallUsd"))
        else {
            return;
        };
        for &(step, s) in steps {
            if !s.enabled || s.run == StepRun::Builtin {
                continue;
            }
            let kind = s.agent.kind;
            if s.model.is_empty() {
                self.err(
                    format!("steps.{step}.model"),
                    format!(
                        "{budget_key} needs the cost of every step, and {kind} reports tokens, not dollars: \
                         name the model (the CLI's own default has no known price)"
                    ),
                );
            } else if !pricing.contains_key(&s.model) {
                // A CLI that reports dollars still streams tokens only while it works: the
                // running cost that stops a call at the money left is priced from them.
                let why = if kind.reports_cost() {
                    "the running cost that stops a call at the money left is priced from the tokens it streams, and would stay $0"
                } else {
                    "its attempts would cost $0"
                };
                self.err(
                    "agent.pricing".into(),
                    format!(
                        "model \"{}\" (step {}, {kind}) has no price, and {budget_key} needs one ({why}): add \
                         agent.pricing.\"{}\" = {{\"input\": …, \"cachedInput\": …, \"output\": …}} in US dollars per million tokens",
                        s.model,
                        step,
                        s.model
                    ),
                );
            }
        }
    }
}

/// The complaint about an effort given to a CLI without one.
pub(super) fn no_effort(kind: AgentKind, path: &str) -> String {
    format!("{kind} has no reasoning-effort setting: remove {path}")
}

/// A step's model: its own, else the global one when the step runs the top-level kind (a
/// Claude model name is never passed to another CLI), else Claude's default for a Claude
/// step, else empty (the CLI's own default).
pub(super) fn step_model(
    own: Option<String>,
    global: &str,
    top: AgentKind,
    kind: AgentKind,
) -> String {
    match own {
        Some(m) => m,
        None if kind == top => global.to_string(),
        None if kind == AgentKind::Claude => DEFAULT_MODEL.to_string(),
        None => String::new(),
    }
}
