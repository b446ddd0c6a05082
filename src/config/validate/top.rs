//! The top level's checks that span keys, read in `Walker::config` in the order `config check`
//! lists their errors: the top value an object, `projectPath` given, effort where the model
//! takes it, skills with their `pluginsPath`, the forge, the train's batch, nothing of the
//! sandbox hidden.

use super::super::definition::TrainConfig;
use super::super::*;
use super::agents::no_effort;
use super::sandbox_paths;
use crate::config::AgentKind;

/// Every step's config with its key, the review round's (`addressReview`) last.
pub(super) fn every_step<'c>(
    steps: &'c [StepConfig; Step::COUNT],
    address_review: &'c StepConfig,
) -> impl Iterator<Item = (&'static str, &'c StepConfig)> + Clone {
    Step::ALL
        .iter()
        .map(|s| (s.key(), &steps[s.index()]))
        .chain([(ADDRESS_REVIEW, address_review)])
}

impl Walker {
    /// The top level, which must be an object; `None` (said) otherwise.
    pub(super) fn top_object<'v>(&mut self, root: &'v Value) -> Option<Obj<'v>> {
        if !root.is_object() {
            self.err(
                String::new(),
                format!(
                    "expected a JSON object at the top level, found {}",
                    describe(root)
                ),
            );
            return None;
        }
        Some(self.object(String::new(), Some(root), top_shape()))
    }

    /// `projectPath`: required, not empty.
    pub(super) fn project_path(&mut self, top: &Obj, base: &Path) -> Option<PathBuf> {
        match top.get("projectPath") {
            None => {
                self.err(
                    "projectPath".into(),
                    "required: the path of the git repository to work on",
                );
                None
            }
            Some(Value::String(s)) if s.trim().is_empty() => {
                self.err(
                    "projectPath".into(),
                    "expected a non-empty path, found string \"\"",
                );
                None
            }
            Some(_) => self.path(top, "projectPath", base),
        }
    }

    /// The top level's `effort`: only for an agent that takes one, and not with a haiku model.
    pub(super) fn check_top_effort(
        &mut self,
        model: Option<&str>,
        effort_raw: Option<Effort>,
        agent: &AgentConfig,
    ) {
        if effort_raw.is_some() && !agent.kind.has_effort() {
            self.err("effort".into(), no_effort(agent.kind, "effort"));
        }
        if let (Some(m), Some(_)) = (model, effort_raw) {
            if is_haiku(m) && agent.kind == AgentKind::Claude {
                self.err(
                    "effort".into(),
                    format!("model \"{m}\" does not support effort: remove effort, or set it per step on non-haiku steps"),
                );
            }
        }
    }

    /// A step that names a skill needs `pluginsPath`, where skills are read from.
    pub(super) fn check_skills_have_plugins<'c>(
        &mut self,
        top: &Obj,
        plugins_path_set: bool,
        steps: impl Iterator<Item = (&'static str, &'c StepConfig)> + Clone,
    ) {
        let any_skill = steps.clone().any(|(_, s)| s.skill.is_some());
        if any_skill && !plugins_path_set && top.get("pluginsPath").is_none() {
            let with_skill: Vec<&str> = steps
                .filter(|(_, s)| s.skill.is_some())
                .map(|(key, _)| key)
                .collect();
            self.err(
                "pluginsPath".into(),
                format!(
                    "required because steps {} name a skill (skills are read from <pluginsPath>/plugins/nmg-sdlc/skills/<skill>/SKILL.md)",
                    with_skill.join(", ")
                ),
            );
        }
    }

    /// The counters' keys, their errors listed in the order `config check` has always used,
    /// and `maxConsecutiveFailures` read among them.
    pub(super) fn counters(&mut self, top: &Obj, held: &mut Held) -> [u32; Step::COUNT] {
        held.release(
            self,
            &[
                "maxRetriesPerStep",
                "maxBounceRetries",
                "maxConsecutiveEscalations",
            ],
        );
        let max_consecutive_failures = self.consecutive_failures(top);
        held.release(
            self,
            &[
                "maxConsecutiveSameFailure",
                "maxRateLimitWaits",
                "maxNetworkWaits",
                "backoff",
                "maxQuotaWaitMinutes",
                "maxRepairIterations",
                "approval",
                "decisionTimeoutMinutes",
                "budget",
            ],
        );
        max_consecutive_failures
    }

    /// `forge`, by default the tracker's own (a local tracker's is local, GitLab's GitLab).
    pub(super) fn forge(&mut self, top: &Obj, tracker: TrackerKind) -> ForgeKind {
        match self.pick::<ForgeKind>(top, "forge") {
            Some(forge) => forge,
            None if tracker == TrackerKind::Local => ForgeKind::Local,
            None if tracker == TrackerKind::Gitlab => ForgeKind::Gitlab,
            None => ForgeKind::Github,
        }
    }

    /// A train's batch must fit in the train.
    pub(super) fn check_train(&mut self, top: &Obj, train: TrainConfig) {
        if train.batch > train.max_length {
            self.err(
                join(&top.path("train"), "batch"),
                format!(
                    "{} PRs tested as one tree, but the train holds at most {} (maxLength): a batch could never fill; lower batch or raise maxLength",
                    train.batch, train.max_length
                ),
            );
        }
    }

    /// No path the agent needs may be hidden by the sandbox.
    pub(super) fn check_sandbox_hides_nothing(&mut self, config: &Config) {
        let home = super::sandbox::home_dir();
        for (key, message) in sandbox_paths::hiding(config, home.as_deref()) {
            self.err(key, message);
        }
    }
}
