//! The validating walk over the parsed JSON: every problem is collected (not only the
//! first), with the key path and what would fix it. (The duplicate-key scan of the raw text is
//! in `duplicates.rs`.)

use super::*;
use crate::agents::AgentKind;

mod agents;
mod reader;
use agents::{no_effort, step_model};
pub(super) use reader::{join, step_keys, Obj, Walker};

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
        let top = self.object(String::new(), Some(root), Shape::top());

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
        let max_log_mb = self.positive_or_default(&top, "maxLogDiskUsageMB");

        let cleanup_obj = self.member(&top, "cleanup");
        let process_patterns = self
            .strings(
                &cleanup_obj,
                "processPatterns",
                false,
                Some("an empty pattern would match every process; remove it"),
            )
            .unwrap_or_default();

        let idle_timeout_min = self.positive_or_default(&top, "idleTimeoutMin");
        let steps = self.steps(
            &top,
            &global_model,
            model.is_some(),
            effort_raw,
            idle_timeout_min,
            &agent,
        );
        let any_skill = steps.iter().any(|s| s.skill.is_some());
        if any_skill && plugins_path.is_none() && top.get("pluginsPath").is_none() {
            let with_skill: Vec<&str> = Step::ALL
                .iter()
                .filter(|s| steps[s.index()].skill.is_some())
                .map(|s| s.key())
                .collect();
            self.err(
                "pluginsPath".into(),
                format!(
                    "required because steps {} name a skill (skills are read from <pluginsPath>/plugins/nmg-sdlc/skills/<skill>/SKILL.md)",
                    with_skill.join(", ")
                ),
            );
        }

        let max_retries_per_step = self.uint_or_default(&top, "maxRetriesPerStep");
        let max_bounce_retries = self.uint_or_default(&top, "maxBounceRetries");
        let max_consecutive_escalations = self.uint_or_default(&top, "maxConsecutiveEscalations");
        let max_consecutive_failures = self.consecutive_failures(&top);
        let same_default = top.default("maxConsecutiveSameFailure");
        let same_max = top
            .shape
            .range("maxConsecutiveSameFailure")
            .1
            .unwrap_or(f64::MAX);
        let max_consecutive_same_failure = match top.get("maxConsecutiveSameFailure") {
            None => same_default,
            Some(v) => match v.as_f64() {
                Some(n) if n.fract() == 0.0 && n > same_max => {
                    self.above_maximum("maxConsecutiveSameFailure".into(), n, same_max);
                    same_default
                }
                Some(n) if n == 0.0 || (n >= 2.0 && n.fract() == 0.0) => n as u32,
                _ => {
                    self.expected(
                        "maxConsecutiveSameFailure".into(),
                        "0 (off) or an integer ≥ 2",
                        v,
                    );
                    same_default
                }
            },
        };
        let max_rate_limit_waits = self.uint_or_default(&top, "maxRateLimitWaits");
        let max_network_waits = self.uint_or_default(&top, "maxNetworkWaits");

        let backoff_obj = self.member(&top, "backoff");
        let initial_seconds = self.uint_or_default(&backoff_obj, "initialSeconds");
        let max_seconds = self.uint_or_default(&backoff_obj, "maxSeconds");
        if max_seconds < initial_seconds {
            self.err(
                "backoff.maxSeconds".into(),
                format!("{max_seconds} is less than backoff.initialSeconds ({initial_seconds})"),
            );
        }

        let quota_default: f64 = top.default("maxQuotaWaitMinutes");
        let quota_max = top.shape.range("maxQuotaWaitMinutes").1.unwrap_or(f64::MAX);
        let max_quota_wait_min = match top.get("maxQuotaWaitMinutes") {
            None => quota_default,
            Some(v) => match v.as_f64().filter(|n| n.is_finite() && *n >= 0.0) {
                Some(n) if n > quota_max => {
                    self.above_maximum("maxQuotaWaitMinutes".into(), n, quota_max);
                    quota_default
                }
                Some(n) => n,
                None => {
                    self.expected("maxQuotaWaitMinutes".into(), "a number ≥ 0", v);
                    quota_default
                }
            },
        };
        let max_repair_iterations = self.uint_or_default(&top, "maxRepairIterations");
        let approval = self
            .pick::<Approval>(&top, "approval")
            .unwrap_or_else(|| top.default("approval"));
        let decision_timeout_min = self.positive_or_default(&top, "decisionTimeoutMinutes");

        let budget_obj = self.member(&top, "budget");
        let budget = Budget {
            per_issue_usd: self.positive(&budget_obj, "perIssueUsd"),
            per_session_usd: self.positive(&budget_obj, "perSessionUsd"),
            per_issue_minutes: self.positive(&budget_obj, "perIssueMinutes"),
        };
        let pricing = self.pricing(&top);
        self.check_prices(&steps, &pricing, &budget);

        let discord_channel_id = match top.get("discordChannelId") {
            None => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(v @ Value::Number(_)) => {
                // Discord ids exceed 2^53, so a JSON number has already lost digits.
                self.expected(
                    "discordChannelId".into(),
                    "a string (write the id in quotes: large numbers lose digits in JSON)",
                    v,
                );
                None
            }
            Some(v) => {
                self.expected("discordChannelId".into(), "a non-empty string", v);
                None
            }
        };

        let notify = self.notify(&top);
        let tracker = self.tracker(&top, base);
        let require_checks = self
            .boolean(&top, "requireChecks")
            .unwrap_or_else(|| top.default("requireChecks"));
        let forge = match self.pick::<ForgeKind>(&top, "forge") {
            Some(forge) => forge,
            None if tracker.kind() == TrackerKind::Local => ForgeKind::Local,
            None => ForgeKind::Github,
        };

        let local_ci = self.local_ci(&top, forge);
        let workers = self.uint_or_default(&top, "workers");
        let claims_obj = self.member(&top, "claims");
        let claim_lease = minutes(self.positive_or_default(&claims_obj, "leaseMinutes"));

        let http_obj = self.member(&top, "http");
        let listen = self.text(&http_obj, "listen");
        if let Some(addr) = &listen {
            if addr.parse::<std::net::SocketAddr>().is_err() {
                self.err(
                    http_obj.path("listen"),
                    format!("\"{addr}\" is not an address and port: write one such as \"127.0.0.1:8080\""),
                );
            }
        }
        let http = HttpConfig {
            listen,
            token_env: self.text(&http_obj, "tokenEnv"),
        };

        let project_path = project_path?;
        let log_dir = log_dir.unwrap_or_else(|| default_log_dir(&project_path));
        Some(Config {
            file: file.to_path_buf(),
            project_path,
            plugins_path,
            model: global_model,
            effort: effort_raw.unwrap_or(DEFAULT_EFFORT),
            log_dir,
            max_log_disk_usage_bytes: (max_log_mb * 1024.0 * 1024.0).round() as u64,
            cleanup: Cleanup { process_patterns },
            steps,
            max_retries_per_step,
            max_bounce_retries,
            max_consecutive_escalations,
            max_consecutive_failures,
            max_consecutive_same_failure,
            max_rate_limit_waits,
            max_network_waits,
            backoff: Backoff {
                initial_seconds,
                max_seconds,
            },
            max_quota_wait: minutes(max_quota_wait_min),
            max_repair_iterations,
            approval,
            decision_timeout: minutes(decision_timeout_min),
            budget,
            idle_timeout: minutes(idle_timeout_min),
            discord_channel_id,
            agent,
            pricing,
            notify,
            tracker,
            require_checks,
            forge,
            local_ci,
            claim_lease,
            workers,
            http,
        })
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
        Some(LocalCi {
            command: command?,
            timeout: minutes(timeout_min),
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
    ) -> [StepConfig; Step::COUNT] {
        let steps_obj = self.object_of(
            top.path("steps"),
            top.get("steps"),
            top.shape.child("steps"),
            "step",
        );
        Step::ALL.map(|step| {
            let o = self.member(&steps_obj, step.key());
            let model = self.text(&o, "model");
            let effort = self.pick::<Effort>(&o, "effort");
            let agent = self.step_agent(&o, top_agent);
            if effort.is_some() && !agent.kind.has_effort() {
                self.err(o.path("effort"), no_effort(agent.kind, &o.path("effort")));
            }
            if effort.is_some() && agent.kind == AgentKind::Claude {
                match &model {
                    Some(m) if is_haiku(m) => self.err(
                        o.path("effort"),
                        format!("model \"{m}\" does not support effort: remove effort from this step"),
                    ),
                    None if global_model_set && top_agent.kind == AgentKind::Claude && is_haiku(global_model) => self.err(
                        o.path("effort"),
                        format!(
                            "model \"{global_model}\" (the global model) does not support effort: remove effort from this step or set {}",
                            o.path("model")
                        ),
                    ),
                    _ => {}
                }
            }
            let max_turns = self.uint_or_default(&o, "maxTurns");
            let timeout_min = self.positive_or_default(&o, "timeoutMin");
            let idle_min = self.positive(&o, "idleTimeoutMin").unwrap_or(idle_timeout_min);
            let skill = self.text(&o, "skill");
            if let Some(s) = &skill {
                if s.contains('/') || s.contains('\\') || s == ".." {
                    self.err(
                        o.path("skill"),
                        format!("\"{s}\" is not a skill name: give the directory name under <pluginsPath>/plugins/nmg-sdlc/skills/"),
                    );
                }
            }
            let prompt = self.text(&o, "prompt");
            let run = match self.text(&o, "run").as_deref() {
                None | Some("agent") => StepRun::Agent,
                Some("builtin") if step.can_be_builtin() => StepRun::Builtin,
                Some("builtin") => {
                    let builtin: Vec<&str> =
                        Step::BUILTIN.iter().map(|s| s.key()).collect();
                    self.err(
                        o.path("run"),
                        format!(
                            "{} needs a model and cannot be builtin (only {} can)",
                            step.key(),
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
            let enabled = self.boolean(&o, "enabled").unwrap_or(true);
            if !enabled && !step.can_be_disabled() {
                let optional: Vec<&str> = Step::ALL
                    .iter()
                    .filter(|s| s.can_be_disabled())
                    .map(|s| s.key())
                    .collect();
                self.err(
                    o.path("enabled"),
                    format!(
                        "{} cannot be disabled (only {} can)",
                        step.key(),
                        optional.join(", ")
                    ),
                );
            }
            let model = step_model(model, global_model, top_agent.kind, agent.kind);
            let effort = match agent.kind {
                AgentKind::Gemini => None,
                AgentKind::Claude if is_haiku(&model) => None,
                _ => Some(effort.or(global_effort).unwrap_or(DEFAULT_EFFORT)),
            };
            StepConfig {
                model,
                effort,
                max_turns,
                timeout: minutes(timeout_min),
                idle_timeout: minutes(idle_min),
                skill,
                prompt,
                enabled: enabled || !step.can_be_disabled(),
                run,
                agent,
            }
        })
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

    fn notify(&mut self, top: &Obj) -> NotifyConfig {
        let o = self.member(top, "notify");
        let webhook_url = self.text(&o, "webhookUrl");
        if let Some(url) = &webhook_url {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                self.err(
                    o.path("webhookUrl"),
                    format!("\"{url}\" is not an http:// or https:// URL"),
                );
            }
        }
        let command = self.strings(&o, "command", true, None);
        if let Some([program, ..]) = command.as_deref() {
            if program.trim().is_empty() {
                self.err(
                    format!("{}[0]", o.path("command")),
                    "the program name is empty",
                );
            }
        }
        let min_severity = self
            .pick::<Severity>(&o, "minSeverity")
            .unwrap_or_else(definition::d::min_severity);
        NotifyConfig {
            webhook_url,
            command,
            min_severity,
        }
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
            // A local tracker without its directory was reported above; the config is not
            // returned then.
            _ => TrackerConfig::Github {
                label,
                escalated_label,
            },
        }
    }
}

/// Not the old runner's `<os temp>/sdlc-logs/<basename>`: another user could prepare that
/// directory, and two projects with the same name shared it.
pub(super) fn default_log_dir(project: &Path) -> PathBuf {
    crate::logs::default_dir(project)
}
