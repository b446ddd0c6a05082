//! The checks of one entry of `steps` that span its keys, read in `Walker::step_config` in
//! the order `config check` lists their errors: effort where the model takes it, the runner
//! (agent or builtin) and what it can do in a sandbox, whether the step may be disabled.

use super::super::*;
use super::agents::no_effort;
use super::StepDefaults;
use crate::config::AgentKind;

impl Walker {
    /// A step's `effort`: only for an agent that takes one, and not with a haiku model (the
    /// step's own, or the global one the step inherits).
    pub(super) fn check_step_effort(
        &mut self,
        o: &Obj,
        model: Option<&str>,
        effort: Option<Effort>,
        agent: &AgentConfig,
        d: &StepDefaults,
    ) {
        if effort.is_some() && !agent.kind.has_effort() {
            self.err(o.path("effort"), no_effort(agent.kind, &o.path("effort")));
        }
        if effort.is_some() && agent.kind == AgentKind::Claude {
            match model {
                Some(m) if is_haiku(m) => self.err(
                    o.path("effort"),
                    format!("model \"{m}\" does not support effort: remove effort from this step"),
                ),
                None if d.global_model_set && d.top_agent.kind == AgentKind::Claude && is_haiku(d.global_model) => self.err(
                    o.path("effort"),
                    format!(
                        "model \"{}\" (the global model) does not support effort: remove effort from this step or set {}",
                        d.global_model,
                        o.path("model")
                    ),
                ),
                _ => {}
            }
        }
    }

    /// `run`: the agent, or the runner itself for a step that can be builtin.
    pub(super) fn step_run(&mut self, o: &Obj, key: &str, can_be_builtin: bool) -> StepRun {
        match self.text(o, "run").as_deref() {
            None | Some("agent") => StepRun::Agent,
            Some("builtin") if can_be_builtin => StepRun::Builtin,
            Some("builtin") => {
                let builtin: Vec<&str> = Step::BUILTIN.iter().map(|s| s.key()).collect();
                self.err(
                    o.path("run"),
                    format!(
                        "{key} needs a model and cannot be builtin (only {} can)",
                        builtin.join(", ")
                    ),
                );
                StepRun::Agent
            }
            Some(other) => {
                self.err(
                    o.path("run"),
                    format!("\"{other}\" is not a runner: use \"agent\" or \"builtin\""),
                );
                StepRun::Agent
            }
        }
    }

    /// A step that can be builtin but is run by the agent needs git, which a sandbox takes
    /// away (the clone's git directory is read-only there).
    pub(super) fn check_git_outside_sandbox(&mut self, o: &Obj, key: &str, agent: &AgentConfig) {
        if agent.sandbox.kind != SandboxKind::None {
            self.err(
                o.path("run"),
                format!(
                    "{key} run by the agent cannot work inside agent.sandbox (kind \"{}\"): the \
                     clone's git directory is read-only there, so the agent can neither switch \
                     branches, commit nor push; set {} to \"builtin\" (the runner does it with \
                     git and the forge), or agent.sandbox.kind to \"none\"",
                    agent.sandbox.kind,
                    o.path("run")
                ),
            );
        }
    }

    /// `enabled`: only optional steps may be disabled, and `addressReview` only through
    /// `review.maxReviewRounds`.
    pub(super) fn step_enabled(&mut self, o: &Obj, key: &str, step: Option<Step>) -> bool {
        let can_be_disabled = step.is_some_and(Step::can_be_disabled);
        let enabled = self.boolean(o, "enabled").unwrap_or(true);
        if !enabled && step.is_none() {
            self.err(
                o.path("enabled"),
                "set review.maxReviewRounds to 0 for no review rounds (addressReview cannot be disabled otherwise)",
            );
        } else if !enabled && !can_be_disabled {
            let optional: Vec<&str> = Step::ALL
                .iter()
                .filter(|s| s.can_be_disabled())
                .map(|s| s.key())
                .collect();
            self.err(
                o.path("enabled"),
                format!(
                    "{key} cannot be disabled (only {} can)",
                    optional.join(", ")
                ),
            );
        }
        enabled
    }
}
