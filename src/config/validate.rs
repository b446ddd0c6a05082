//! The validating walk over the parsed JSON: every problem is collected (not only the
//! first), with the key path and what would fix it. (The duplicate-key scan of the raw text is
//! in `duplicates.rs`.)

use super::*;
use crate::config::AgentKind;

mod agents;
mod sandbox_paths;
use agents::{no_effort, step_model};

impl Walker {
    pub(super) fn config(&mut self, root: &Value, file: &Path, base: &Path) -> Option<Config> {
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
        let top = self.object(String::new(), Some(root), top_shape());

        let project_path = match top.get("projectPath") {
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
            Some(_) => self.path(&top, "projectPath", base),
        };
        let plugins_path = self.path(&top, "pluginsPath", base);
        let model = self.text(&top, "model");
        let effort_raw = self.pick::<Effort>(&top, "effort");
        let agent = self.agent(&top);
        if effort_raw.is_some() && !agent.kind.has_effort() {
            self.err("effort".into(), no_effort(agent.kind, "effort"));
        }
        if let (Some(m), Some(_)) = (&model, effort_raw) {
            if is_haiku(m) && agent.kind == AgentKind::Claude {
                self.err(
                    "effort".into(),
                    format!("model \"{m}\" does not support effort: remove effort, or set it per step on non-haiku steps"),
                );
            }
        }
        // A Claude model name is never passed to another CLI: without `model`, those run
        // their own default.
        let global_model = model.clone().unwrap_or_else(|| match agent.kind {
            AgentKind::Claude => DEFAULT_MODEL.to_string(),
            _ => String::new(),
        });
        let log_dir = self.path(&top, "logDir", base);
        // Every key read as written, by the rule its declaration names. Its errors are listed
        // in the order `config check` has always used (each key where the walker reads the
        // keys that depend on it); a key declared later is listed last.
        let (settings, mut held) = self.held(&top, |w| Settings::read(w, &top));
        held.release(self, &["maxLogDiskUsageMB", "cleanup"]);
        let idle_timeout_min = self.positive_or_default(&top, "idleTimeoutMin");
        let (steps, address_review) = self.steps(
            &top,
            &global_model,
            model.is_some(),
            effort_raw,
            idle_timeout_min,
            &agent,
        );
        let every_step = || {
            Step::ALL
                .iter()
                .map(|s| (s.key(), &steps[s.index()]))
                .chain([(ADDRESS_REVIEW, &address_review)])
        };
        let any_skill = every_step().any(|(_, s)| s.skill.is_some());
        if any_skill && plugins_path.is_none() && top.get("pluginsPath").is_none() {
            let with_skill: Vec<&str> = every_step()
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

        held.release(
            self,
            &[
                "maxRetriesPerStep",
                "maxBounceRetries",
                "maxConsecutiveEscalations",
            ],
        );
        let max_consecutive_failures = self.consecutive_failures(&top);
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
        let pricing = self.pricing(&top, base);
        let priced: Vec<_> = every_step().collect();
        self.check_prices(&priced, &pricing, &settings.budget);
        held.release(self, &["discordChannelId", "notify"]);

        let tracker = self.tracker(&top, base);
        held.release(self, &["requireChecks"]);
        let forge = match self.pick::<ForgeKind>(&top, "forge") {
            Some(forge) => forge,
            None if tracker.kind() == TrackerKind::Local => ForgeKind::Local,
            None if tracker.kind() == TrackerKind::Gitlab => ForgeKind::Gitlab,
            None => ForgeKind::Github,
        };
        self.remote_services(&top, tracker.kind(), forge, &settings);
        let local_ci = self.local_ci(&top, forge);
        let train = settings.train;
        if train.batch > train.max_length {
            self.err(
                super::walker::join(&top.path("train"), "batch"),
                format!(
                    "{} PRs tested as one tree, but the train holds at most {} (maxLength): a batch could never fill; lower batch or raise maxLength",
                    train.batch, train.max_length
                ),
            );
        }
        held.release(self, &["workers", "claims", "train", "http"]);
        held.release_rest(self);

        let project_path = project_path?;
        let log_dir = log_dir.unwrap_or_else(|| default_log_dir(&project_path));
        let config = Config {
            file: file.to_path_buf(),
            project_path,
            plugins_path,
            model: global_model,
            effort: effort_raw.unwrap_or(DEFAULT_EFFORT),
            log_dir,
            steps,
            address_review,
            max_consecutive_failures,
            idle_timeout: minutes(idle_timeout_min),
            agent,
            pricing,
            tracker,
            forge,
            local_ci,
            settings,
        };
        let home = super::sandbox::home_dir();
        for (key, message) in sandbox_paths::hiding(&config, home.as_deref()) {
            self.err(key, message);
        }
        Some(config)
    }

    fn local_ci(&mut self, top: &Obj, forge: ForgeKind) -> Option<LocalCi> {
        top.get("localCi")?;
        let o = self.member(top, "localCi");
        if forge != ForgeKind::Local {
            self.err(
                top.path("localCi"),
                "only the local forge runs a CI command: remove localCi or set \"forge\": \"local\"",
            );
        }
        let command = self.strings(&o, "command", true, Some("an empty argument"));
        if command.is_none() && o.get("command").is_none() {
            self.err(
                o.path("command"),
                "missing: the program and its arguments, e.g. [\"cargo\", \"test\"]",
            );
        }
        let timeout_min = self.positive_or_default(&o, "timeoutMin");
        let network = self.pick::<super::SandboxNetwork>(&o, "network");
        if network == Some(super::SandboxNetwork::Allowlist) {
            self.err(
                o.path("network"),
                "\"allowlist\" serves the agent only: the CI's command gets \"host\" or \"none\"",
            );
        }
        Some(LocalCi {
            command: command?,
            timeout: minutes(timeout_min),
            network,
            results: None,
        })
    }

    fn steps(
        &mut self,
        top: &Obj,
        global_model: &str,
        global_model_set: bool,
        global_effort: Option<Effort>,
        idle_timeout_min: f64,
        top_agent: &AgentConfig,
    ) -> ([StepConfig; Step::COUNT], StepConfig) {
        let steps_obj = self.object_of(
            top.path("steps"),
            top.get("steps"),
            top.shape.child("steps"),
            "step",
        );
        let defaults = StepDefaults {
            global_model,
            global_model_set,
            global_effort,
            idle_timeout_min,
            top_agent,
        };
        let steps = Step::ALL.map(|step| {
            let o = self.member(&steps_obj, step.key());
            self.step_config(&o, step.key(), Some(step), &defaults)
        });
        let o = self.member(&steps_obj, ADDRESS_REVIEW);
        let address_review = self.step_config(&o, ADDRESS_REVIEW, None, &defaults);
        (steps, address_review)
    }

    /// One entry of `steps`: `step` is the lifecycle step it configures, `None` for
    /// `addressReview` (no step of the machine: a round is monitorCI's), which is always an
    /// agent's and is switched off by `review.maxReviewRounds: 0` rather than `enabled`.
    fn step_config(
        &mut self,
        o: &Obj,
        key: &str,
        step: Option<Step>,
        d: &StepDefaults,
    ) -> StepConfig {
        let can_be_builtin = step.is_some_and(Step::can_be_builtin);
        let can_be_disabled = step.is_some_and(Step::can_be_disabled);
        let model = self.text(o, "model");
        let effort = self.pick::<Effort>(o, "effort");
        let agent = self.step_agent(o, d.top_agent);
        if effort.is_some() && !agent.kind.has_effort() {
            self.err(o.path("effort"), no_effort(agent.kind, &o.path("effort")));
        }
        if effort.is_some() && agent.kind == AgentKind::Claude {
            match &model {
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
        let (settings, mut held) = self.held(o, |w| StepSettings::read(w, o));
        held.release(self, &["maxTurns", "timeoutMin"]);
        let idle_min = self
            .positive(o, "idleTimeoutMin")
            .unwrap_or(d.idle_timeout_min);
        held.release_rest(self);
        let run = match self.text(o, "run").as_deref() {
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
        };
        if run == StepRun::Agent && can_be_builtin && agent.sandbox.kind != SandboxKind::None {
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
        let model = step_model(model, d.global_model, d.top_agent.kind, agent.kind);
        let effort = match agent.kind {
            AgentKind::Gemini => None,
            AgentKind::Claude if is_haiku(&model) => None,
            _ => Some(effort.or(d.global_effort).unwrap_or(DEFAULT_EFFORT)),
        };
        StepConfig {
            model,
            effort,
            idle_timeout: minutes(idle_min),
            enabled: enabled || !can_be_disabled,
            run,
            agent,
            settings,
        }
    }

    fn consecutive_failures(&mut self, top: &Obj) -> [u32; Step::COUNT] {
        let mut out = defaults::machine().max_consecutive_failures;
        let Some(v) = top.get("maxConsecutiveFailures") else {
            return out;
        };
        let path = top.path("maxConsecutiveFailures");
        let Value::Object(map) = v else {
            self.expected(path, "an object mapping step keys to integers", v);
            return out;
        };
        let keys = step_keys();
        let o = Obj {
            path: path.clone(),
            map: Some(map),
            shape: top.shape.child("maxConsecutiveFailures"),
        };
        for key in map.keys() {
            if key.starts_with('_') {
                continue;
            }
            match Step::from_key(key) {
                Some(step) => {
                    if let Some(n) = self.uint(&o, key) {
                        out[step.index()] = n;
                    }
                }
                None => self.err(join(&path, key), unknown_message(key, &keys, "step")),
            }
        }
        out
    }

    fn agent(&mut self, top: &Obj) -> AgentConfig {
        let o = self.member(top, "agent");
        self.agent_fields(&o, None)
    }

    fn tracker(&mut self, top: &Obj, base: &Path) -> TrackerConfig {
        let o = self.member(top, "tracker");
        let kind = self
            .pick::<TrackerKind>(&o, "kind")
            .unwrap_or_else(|| o.default("kind"));
        let dir = self.path(&o, "dir", base);
        match (kind, &dir) {
            (TrackerKind::Local, None) => self.err(
                o.path("dir"),
                "required when tracker.kind is \"local\": the directory holding one file per issue",
            ),
            (TrackerKind::Github, Some(_)) if o.get("kind").is_none_or(|k| k == "github") => {
                self.err(
                    o.path("dir"),
                    "only used by the local tracker: set tracker.kind to \"local\" or remove tracker.dir",
                )
            }
            _ => {}
        }
        let label = self.text(&o, "label").unwrap_or_else(|| o.default("label"));
        let escalated_label = self
            .text(&o, "escalatedLabel")
            .unwrap_or_else(|| o.default("escalatedLabel"));
        match (kind, dir) {
            (TrackerKind::Local, Some(dir)) => TrackerConfig::Local {
                dir,
                label,
                escalated_label,
            },
            (TrackerKind::Gitlab, _) => TrackerConfig::Gitlab {
                label,
                escalated_label,
            },
            (TrackerKind::Linear, _) => TrackerConfig::Linear {
                label,
                escalated_label,
            },
            // A local tracker without its directory was reported above; the config is not
            // returned then.
            _ => TrackerConfig::Github {
                label,
                escalated_label,
            },
        }
    }
}

/// What a step inherits when its entry leaves a key out.
struct StepDefaults<'a> {
    global_model: &'a str,
    global_model_set: bool,
    global_effort: Option<Effort>,
    idle_timeout_min: f64,
    top_agent: &'a AgentConfig,
}

impl Walker {
    /// The services a tracker or forge on GitLab needs: `gitlab.project`. A `gitlab` or
    /// `linear` block that nothing uses is said, since its token would never be read.
    fn remote_services(
        &mut self,
        top: &Obj,
        tracker: TrackerKind,
        forge: ForgeKind,
        settings: &super::definition::Settings,
    ) {
        let on_gitlab = tracker == TrackerKind::Gitlab || forge == ForgeKind::Gitlab;
        if on_gitlab && settings.gitlab.project.is_none() {
            let given = top.get("gitlab").is_some();
            self.err(
                if given { "gitlab.project".into() } else { "gitlab".into() },
                "required when tracker.kind or forge is \"gitlab\": the project's path with its namespace, such as \"group/sub/project\"",
            );
        }
        if tracker == TrackerKind::Linear && settings.linear.team.is_none() {
            let given = top.get("linear").is_some();
            self.err(
                if given {
                    "linear.team".into()
                } else {
                    "linear".into()
                },
                "required when tracker.kind is \"linear\": the team's key, such as \"ENG\"",
            );
        }
        if tracker == TrackerKind::Gitlab && forge == ForgeKind::Github {
            self.err(
                "forge".into(),
                "a GitLab tracker's issues are closed by GitLab merge requests: set forge to \"gitlab\" (or \"local\")",
            );
        }
    }
}

/// Not the old runner's `<os temp>/sdlc-logs/<basename>`: another user could prepare that
/// directory, and two projects with the same name shared it.
pub(super) fn default_log_dir(project: &Path) -> PathBuf {
    crate::logs::default_dir(project)
}
