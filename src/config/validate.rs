//! The validating walk over the parsed JSON: every problem is collected (not only the
//! first), with the key path and what would fix it. (The duplicate-key scan of the raw text is
//! in `duplicates.rs`.)

use super::*;
use crate::config::AgentKind;

mod agents;
mod sandbox_paths;
mod step_checks;
mod top;
use agents::step_model;
use top::every_step;

impl Walker {
    pub(super) fn config(&mut self, root: &Value, file: &Path, base: &Path) -> Option<Config> {
        let top = self.top_object(root)?;

        let project_path = self.project_path(&top, base);
        let plugins_path = self.path(&top, "pluginsPath", base);
        let model = self.text(&top, "model");
        let effort_raw = self.pick::<Effort>(&top, "effort");
        let agent = self.agent(&top);
        self.check_top_effort(model.as_deref(), effort_raw, &agent);
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
        self.check_skills_have_plugins(
            &top,
            plugins_path.is_some(),
            every_step(&steps, &address_review),
        );

        let max_consecutive_failures = self.counters(&top, &mut held);
        let pricing = self.pricing(&top, base);
        let priced: Vec<_> = every_step(&steps, &address_review).collect();
        self.check_prices(&priced, &pricing, &settings.budget);
        held.release(self, &["discordChannelId", "notify"]);

        let tracker = self.tracker(&top, base);
        held.release(self, &["requireChecks"]);
        let forge = self.forge(&top, tracker.kind());
        self.remote_services(&top, tracker.kind(), forge, &settings);
        let local_ci = self.local_ci(&top, forge);
        self.check_train(&top, settings.train);
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
        self.check_sandbox_hides_nothing(&config);
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
        self.check_step_effort(o, model.as_deref(), effort, &agent, d);
        let (settings, mut held) = self.held(o, |w| StepSettings::read(w, o));
        held.release(self, &["maxTurns", "timeoutMin"]);
        let idle_min = self
            .positive(o, "idleTimeoutMin")
            .unwrap_or(d.idle_timeout_min);
        held.release_rest(self);
        let run = self.step_run(o, key, can_be_builtin);
        if run == StepRun::Agent && can_be_builtin {
            self.check_git_outside_sandbox(o, key, &agent);
        }
        let enabled = self.step_enabled(o, key, step);
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
