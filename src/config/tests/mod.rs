use super::*;

mod docs;

const FILE: &str = "/work/cfg/sdlc-config.json";

fn load(text: &str) -> Config {
    match Config::from_str(text, Path::new(FILE)) {
        Ok(c) => c,
        Err(e) => panic!("expected a valid config, got:\n{e}"),
    }
}

/// The error lines without the file prefix.
fn errors(text: &str) -> Vec<String> {
    match Config::from_str(text, Path::new("sdlc-config.json")) {
        Ok(_) => panic!("expected errors for {text}"),
        Err(e) => e
            .lines()
            .into_iter()
            .map(|l| {
                l.strip_prefix("sdlc-config.json: ")
                    .map(str::to_string)
                    .unwrap_or(l)
            })
            .collect(),
    }
}

/// Each `(rest, expected)`: the config of a project with `rest` besides fails with exactly
/// the `expected` errors.
fn rejects(cases: &[(&str, &[&str])]) {
    for (rest, expected) in cases {
        assert_eq!(errors(&with_project(rest)), *expected, "for {rest}");
    }
}

fn with_project(rest: &str) -> String {
    format!(r#"{{"projectPath": "p", {rest}}}"#)
}

#[test]
fn minimal_config_has_every_default() {
    let c = load(r#"{"projectPath": "proj"}"#);
    assert_eq!(c.file, PathBuf::from(FILE));
    assert_eq!(c.project_path, PathBuf::from("/work/cfg/proj"));
    assert_eq!(c.plugins_path, None);
    assert_eq!(c.model, "sonnet");
    assert_eq!(c.effort, Effort::Medium);
    assert_eq!(
        c.log_dir,
        crate::logs::default_dir(Path::new("/work/cfg/proj"))
    );
    assert_eq!(c.max_log_disk_usage_bytes, 500 * 1024 * 1024);
    assert!(c.cleanup.process_patterns.is_empty());
    for step in Step::ALL {
        assert_eq!(c.model(step), "sonnet");
        assert_eq!(c.effort(step), Some(Effort::Medium));
        assert_eq!(c.max_turns(step), 20);
        assert_eq!(c.timeout(step), Duration::from_secs(600));
        assert_eq!(c.idle_timeout(step), Duration::from_secs(600));
        assert_eq!(c.skill(step), None);
        assert_eq!(c.prompt(step), None);
        assert!(c.enabled(step));
    }
    assert_eq!(c.idle_timeout, Duration::from_secs(600));
    assert_eq!(c.decision_timeout, Duration::from_secs(3600));
    assert_eq!(c.approval, Approval::Auto);
    assert_eq!(c.budget, Budget::default());
    assert_eq!(c.discord_channel_id, None);
    assert_eq!(c.agent.command, "claude");
    assert!(c.agent.args.is_empty() && c.agent.env.is_empty());
    assert_eq!(c.agent.max_api_retries, 2);
    assert_eq!(
        c.notify,
        NotifyConfig {
            webhook_url: None,
            command: None,
            min_severity: Severity::Warning,
        }
    );
    assert_eq!(c.tracker.kind(), TrackerKind::Github);
    assert_eq!(c.tracker.dir(), None);
    assert_eq!(c.tracker.label(), "automatable");
    assert_eq!(c.tracker.escalated_label(), "sdlc-escalated");
    assert!(!c.require_checks);
    assert_eq!(c.forge, ForgeKind::Github);
    // The machine's own defaults and the config's defaults are the same numbers, but for the
    // review gate and the claim's lease: a config always has them (a request for changes
    // holds the merge; a lease of an hour), while a machine without them is an older
    // journal's.
    let limits = c.limits();
    assert_eq!(limits.claim_lease_secs, Some(3600));
    assert_eq!(
        limits.review,
        Some(crate::machine::ReviewGate {
            require_approval: false,
            wait_secs: 1440 * 60,
            max_rounds: 2,
            ignore_authors: vec!["sdlc-runner".into()],
        })
    );
    assert_eq!(
        Limits {
            review: None,
            claim_lease_secs: None,
            // Every new session's runner commits each agent step's work (issue 48).
            runner_commits: false,
            // GitHub's issues and pull requests: GitHub closes a merged issue itself, a
            // moment later; a machine without it (an older journal's) closes it at once.
            tracker_close_waits: 0,
            ..limits
        },
        Limits::default()
    );
}

#[test]
fn relative_paths_resolve_against_the_config_directory() {
    let c = load(
        r#"{"projectPath": "../repo", "pluginsPath": "plugins", "logDir": "logs",
            "tracker": {"kind": "local", "dir": "./issues"}}"#,
    );
    assert_eq!(c.project_path, PathBuf::from("/work/cfg/../repo"));
    assert_eq!(c.plugins_path, Some(PathBuf::from("/work/cfg/plugins")));
    assert_eq!(c.log_dir, PathBuf::from("/work/cfg/logs"));
    assert_eq!(c.tracker.dir(), Some(Path::new("/work/cfg/./issues")));
    let abs = load(r#"{"projectPath": "/srv/repo", "logDir": ""}"#);
    assert_eq!(abs.project_path, PathBuf::from("/srv/repo"));
    // An empty logDir means the default, as in the old runner.
    assert_eq!(
        abs.log_dir,
        crate::logs::default_dir(Path::new("/srv/repo"))
    );
}

#[test]
fn local_tracker_makes_the_forge_local_unless_set() {
    let c = load(&with_project(r#""tracker": {"kind": "local", "dir": "i"}"#));
    assert_eq!(c.forge, ForgeKind::Local);
    let c = load(&with_project(
        r#""tracker": {"kind": "local", "dir": "i"}, "forge": "github""#,
    ));
    assert_eq!(c.forge, ForgeKind::Github);
}

#[test]
fn limits_convert_to_exact_units() {
    let c = load(&with_project(
        r#""maxRetriesPerStep": 5, "maxBounceRetries": 0, "maxConsecutiveEscalations": 4,
           "maxConsecutiveSameFailure": 0, "maxRateLimitWaits": 7,
           "maxConsecutiveFailures": {"implement": 2, "verify": 0},
           "backoff": {"initialSeconds": 10, "maxSeconds": 80},
           "maxQuotaWaitMinutes": 90.5, "maxRepairIterations": 1, "approval": "manual",
           "maxNetworkWaits": 3,
           "forge": "local", "review": {"requireApproval": true, "approvalTimeoutMinutes": 2.5},
           "budget": {"perIssueUsd": 12.345678, "perSessionUsd": 100, "perIssueMinutes": 1.5, "perCallUsd": 2.5, "perDayUsd": 300},
           "steps": {"simplify": {"enabled": false}}"#,
    ));
    let mut failures = [0; Step::COUNT];
    failures[Step::Implement.index()] = 2;
    let l = c.limits();
    assert_eq!(
        l,
        Limits {
            max_retries_per_step: 5,
            max_bounce_retries: 0,
            max_consecutive_escalations: 4,
            max_consecutive_same_failure: 0,
            max_consecutive_failures: failures,
            max_rate_limit_waits: 7,
            backoff_initial_secs: 10,
            backoff_max_secs: 80,
            max_quota_wait_secs: 5430,
            max_repair_iterations: 1,
            simplify_enabled: false,
            per_issue_budget_micros: Some(12_345_678),
            per_session_budget_micros: Some(100_000_000),
            per_issue_budget_ms: Some(90_000),
            per_call_budget_micros: Some(2_500_000),
            per_day_budget_micros: Some(300_000_000),
            // Read from the journals when a session begins, not from the config.
            day_spent_before_micros: 0,
            manual_approval: true,
            // steps.commitPush.run is the agent's unless set to builtin.
            builtin_commit_push: false,
            // The runner commits every agent step's work (issue 48).
            runner_commits: true,
            ask_on_issue_budget: false,
            ask_on_weakening: false,
            max_network_waits: 3,
            network_backoff_initial_secs: 2,
            ci_poll_initial_secs: 10,
            ci_poll_max_secs: 120,
            // monitorCI's timeoutMin (the default 10 minutes) bounds its waits for CI.
            ci_timeout_secs: 600,
            // The run sets it when it shares its merges; the config alone does not.
            merge_turn_wait_ms: None,
            claims: false,
            // leaseMinutes, 60 by default: the machine's renewal terms.
            claim_lease_secs: Some(3600),
            // decisionTimeoutMinutes, 60 by default: a claim is renewed to outlast the wait.
            decision_wait_secs: 3600,
            review: Some(crate::machine::ReviewGate {
                require_approval: true,
                wait_secs: 150,
                max_rounds: 2,
                ignore_authors: vec!["sdlc-runner".into()],
            }),
            // The local forge merges: nobody but the runner closes the issue.
            tracker_close_waits: 0,
            // A runner alone: no train tests its trees, monitorCI waits for CI.
            train_tests_ci: false,
        }
    );
    assert_eq!(l.next_step(Step::Implement), Some(Step::Verify));
    // GitHub's issues and pull requests: GitHub closes a merged issue itself, a moment later.
    let github = load(&with_project(r#""forge": "github""#));
    assert_eq!(github.limits().tracker_close_waits, 3);
    // monitorCI's pauses while CI is pending: the config's, doubling to its cap.
    let fast = load(&with_project(
        r#""ciPoll": {"initialSeconds": 2, "maxSeconds": 5}"#,
    ));
    assert_eq!(fast.limits().ci_polls()[..4], [2, 4, 5, 5]);
}

/// The typed settings find each key by its position in the declaration: every one gets the
/// value written at its own name, not a neighbour's.
#[test]
fn each_setting_reads_the_key_declared_with_it() {
    let c = load(&with_project(
        r#""maxLogDiskUsageMB": 2, "cleanup": {"processPatterns": ["chrome"]},
           "maxRateLimitWaits": 11, "maxNetworkWaits": 12, "maxRepairIterations": 13,
           "decisionTimeoutMinutes": 14, "discordChannelId": "15", "requireChecks": true,
           "notify": {"webhookUrl": "https://hook", "command": ["tell"], "minSeverity": "info"},
           "claims": {"leaseMinutes": 16}, "http": {"listen": "127.0.0.1:17", "tokenEnv": "T"},
           "workers": 18, "steps": {"verify": {"maxTurns": 19, "timeoutMin": 20, "prompt": "p"}}"#,
    ));
    assert_eq!(c.max_log_disk_usage_bytes, 2 * 1024 * 1024);
    assert_eq!(c.cleanup.process_patterns, ["chrome"]);
    assert_eq!(
        (
            c.max_rate_limit_waits,
            c.max_network_waits,
            c.max_repair_iterations
        ),
        (11, 12, 13)
    );
    assert_eq!(c.decision_timeout, Duration::from_secs(14 * 60));
    assert_eq!(c.discord_channel_id.as_deref(), Some("15"));
    assert!(c.require_checks);
    assert_eq!(c.notify.webhook_url.as_deref(), Some("https://hook"));
    assert_eq!(c.notify.command.as_deref(), Some(&["tell".to_string()][..]));
    assert_eq!(c.notify.min_severity, Severity::Info);
    assert_eq!(c.claims.lease, Duration::from_secs(16 * 60));
    assert_eq!(c.http.listen.as_deref(), Some("127.0.0.1:17"));
    assert_eq!(c.http.token_env.as_deref(), Some("T"));
    assert_eq!(c.workers, 18);
    assert_eq!(c.max_turns(Step::Verify), 19);
    assert_eq!(c.timeout(Step::Verify), Duration::from_secs(20 * 60));
    assert_eq!(c.prompt(Step::Verify), Some("p"));
    assert_eq!(c.max_turns(Step::Implement), 20);
}

#[test]
fn consecutive_failures_merge_over_the_verify_default() {
    let c = load(&with_project(r#""maxConsecutiveFailures": {"merge": 4}"#));
    let l = c.limits();
    assert_eq!(l.max_consecutive_failures[Step::Verify.index()], 3);
    assert_eq!(l.max_consecutive_failures[Step::Merge.index()], 4);
}

#[test]
fn step_settings_fall_back_to_global_and_haiku_drops_effort() {
    let c = load(&with_project(
        r#""model": "opus", "effort": "high", "idleTimeoutMin": 2,
           "steps": {"startCycle": {"model": "claude-haiku-4-5"},
                     "verify": {"effort": "xhigh", "maxTurns": 99, "timeoutMin": 0.5,
                                "idleTimeoutMin": 1, "prompt": "check it", "skill": "verify-code"}},
           "pluginsPath": "/plugins""#,
    ));
    assert_eq!(c.model(Step::StartCycle), "claude-haiku-4-5");
    assert_eq!(c.effort(Step::StartCycle), None);
    assert_eq!(c.model(Step::Implement), "opus");
    assert_eq!(c.effort(Step::Implement), Some(Effort::High));
    assert_eq!(c.idle_timeout(Step::Implement), Duration::from_secs(120));
    assert_eq!(c.effort(Step::Verify), Some(Effort::Xhigh));
    assert_eq!(c.max_turns(Step::Verify), 99);
    assert_eq!(c.timeout(Step::Verify), Duration::from_secs(30));
    assert_eq!(c.idle_timeout(Step::Verify), Duration::from_secs(60));
    assert_eq!(c.prompt(Step::Verify), Some("check it"));
    assert_eq!(c.skill(Step::Verify), Some("verify-code"));
    assert_eq!(
        c.skill_file(Step::Verify),
        Some(PathBuf::from(
            "/plugins/plugins/nmg-sdlc/skills/verify-code/SKILL.md"
        ))
    );
    assert_eq!(c.skill_file(Step::Implement), None);
}

#[test]
fn comment_keys_are_allowed_in_every_schema_object() {
    let c = load(
        r#"{"_top": 1, "projectPath": "p", "steps": {"_n": "x", "verify": {"_why": [1]}},
            "cleanup": {"_c": null}, "backoff": {"_c": 1}, "budget": {"_c": 1},
            "agent": {"_c": 1, "env": {"_KEEP": "1"}}, "notify": {"_c": 1},
            "tracker": {"_c": 1}, "maxConsecutiveFailures": {"_c": "x"}}"#,
    );
    // In agent.env the keys are variable names, so `_KEEP` is a variable, not a comment.
    assert_eq!(c.agent.env.get("_KEEP").map(String::as_str), Some("1"));
}

#[test]
fn unknown_keys_name_the_path_and_suggest_the_closest() {
    rejects(&[
(r#""maxRetries": 3"#, &["maxRetries: unknown key; did you mean \"maxRetriesPerStep\"?"]),
(r#""Model": "opus""#, &["Model: unknown key; did you mean \"model\"?"]),
(r#""steps": {"verify": {"maxturns": 3}}"#, &["steps.verify.maxturns: unknown key; did you mean \"maxTurns\"?"]),
(r#""backoff": {"jitter": 1}"#, &["backoff.jitter: unknown key; expected one of initialSeconds, maxSeconds (keys starting with \"_\" are comments)"]),
(r#""frobnicate": true"#, &["frobnicate: unknown key (keys starting with \"_\" are comments; `sdlc-runner config schema` lists every key)"]),
]);
    // The old runner let `number`/`key` in a step override the step's identity.
    rejects(&[
(r#""steps": {"merge": {"number": 1}}"#, &["steps.merge.number: unknown key; expected one of model, effort, maxTurns, timeoutMin, idleTimeoutMin, skill, prompt, enabled, run, agent (keys starting with \"_\" are comments)"]),
]);
}

#[test]
fn unknown_step_keys_are_named() {
    rejects(&[
(r#""steps": {"verfy": {}}"#, &["steps.verfy: unknown step; did you mean \"verify\"?"]),
(r#""steps": {"draftIssue": {}}"#, &["steps.draftIssue: unknown step; the steps are startCycle, startIssue, writeSpecs, implement, simplify, verify, commitPush, createPR, monitorCI, merge, addressReview"]),
(r#""maxConsecutiveFailures": {"createPr": 1}"#, &["maxConsecutiveFailures.createPr: unknown step; did you mean \"createPR\"?"]),
]);
}

#[test]
fn haiku_with_effort_is_an_error() {
    rejects(&[
(r#""steps": {"merge": {"model": "haiku", "effort": "low"}}"#, &["steps.merge.effort: model \"haiku\" does not support effort: remove effort from this step"]),
(r#""model": "haiku", "effort": "low""#, &["effort: model \"haiku\" does not support effort: remove effort, or set it per step on non-haiku steps"]),
(r#""model": "haiku", "steps": {"verify": {"effort": "high"}}"#, &["steps.verify.effort: model \"haiku\" (the global model) does not support effort: remove effort from this step or set steps.verify.model"]),
]);
    // A step that sets its own non-haiku model may have an effort under a haiku global model.
    load(&with_project(
        r#""model": "haiku", "steps": {"verify": {"model": "opus", "effort": "high"}}"#,
    ));
}

#[test]
fn bad_enum_values_list_the_choices() {
    rejects(&[
        (
            r#""steps": {"verify": {"effort": "max"}}"#,
            &["steps.verify.effort: \"max\" is not one of low|medium|high|xhigh"],
        ),
        (
            r#""approval": "ask""#,
            &["approval: \"ask\" is not one of auto|manual"],
        ),
        (
            r#""tracker": {"kind": "jira"}"#,
            &["tracker.kind: \"jira\" is not one of github|local|gitlab|linear"],
        ),
        (
            r#""forge": "gitea""#,
            &["forge: \"gitea\" is not one of github|local|gitlab"],
        ),
        (
            r#""forge": "gitlab""#,
            &["gitlab: required when tracker.kind or forge is \"gitlab\": the project's path with its namespace, such as \"group/sub/project\""],
        ),
        (
            r#""tracker": {"kind": "gitlab"}, "gitlab": {"url": "gitlab.example.com"}"#,
            &[
                "gitlab.project: required when tracker.kind or forge is \"gitlab\": the project's path with its namespace, such as \"group/sub/project\"",
                "gitlab.url: \"gitlab.example.com\" is not an http:// or https:// URL",
            ],
        ),
        (
            r#""tracker": {"kind": "gitlab"}, "forge": "github", "gitlab": {"project": "g/p"}"#,
            &["forge: a GitLab tracker's issues are closed by GitLab merge requests: set forge to \"gitlab\" (or \"local\")"],
        ),
        (
            r#""tracker": {"kind": "linear"}"#,
            &["linear: required when tracker.kind is \"linear\": the team's key, such as \"ENG\""],
        ),
    ]);
}

#[test]
fn wrong_types_name_the_expected_type() {
    rejects(&[
(r#""maxRetriesPerStep": "3""#, &["maxRetriesPerStep: expected an integer ≥ 1, found string \"3\" (write 3 without quotes)"]),
(r#""maxRetriesPerStep": 0"#, &["maxRetriesPerStep: expected an integer ≥ 1, found number 0"]),
(r#""maxBounceRetries": 2.5"#, &["maxBounceRetries: expected an integer ≥ 0, found number 2.5"]),
(r#""maxConsecutiveSameFailure": 1"#, &["maxConsecutiveSameFailure: expected 0 (off) or an integer ≥ 2, found number 1"]),
(r#""steps": {"verify": null}"#, &["steps.verify: expected an object, found null"]),
(r#""steps": {"verify": {"timeoutMin": -1}}"#, &["steps.verify.timeoutMin: expected a number > 0, found number -1"]),
(r#""requireChecks": "yes""#, &["requireChecks: expected true or false, found string \"yes\""]),
(r#""model": "  ""#, &["model: expected a non-empty string, found string \"  \""]),
(r#""cleanup": {"processPatterns": ["chrome", 3, ""]}"#, &[
            "cleanup.processPatterns[1]: expected a string, found number 3",
            "cleanup.processPatterns[2]: an empty pattern would match every process; remove it"
        ]),
(r#""agent": {"env": {"A": 1}, "args": "x"}"#, &[
            "agent.args: expected an array of strings, found string \"x\"",
            "agent.env.A: expected a string, found number 1"
        ]),
(r#""discordChannelId": 123"#, &["discordChannelId: expected a string (write the id in quotes: large numbers lose digits in JSON), found number 123"]),
]);
    assert_eq!(
        errors("[1]"),
        ["expected a JSON object at the top level, found an array"]
    );
}

#[test]
fn cross_field_rules() {
    assert_eq!(
        errors("{}"),
        ["projectPath: required: the path of the git repository to work on"]
    );
    rejects(&[
(r#""steps": {"verify": {"enabled": false}}"#, &["steps.verify.enabled: verify cannot be disabled (only simplify can)"]),
(r#""steps": {"verify": {"skill": "verify-code"}}"#, &["pluginsPath: required because steps verify name a skill (skills are read from <pluginsPath>/plugins/nmg-sdlc/skills/<skill>/SKILL.md)"]),
(r#""backoff": {"initialSeconds": 120, "maxSeconds": 60}"#, &["backoff.maxSeconds: 60 is less than backoff.initialSeconds (120)"]),
(r#""ciPoll": {"initialSeconds": 30, "maxSeconds": 5}"#, &["ciPoll.maxSeconds: 5 is less than ciPoll.initialSeconds (30)"]),
(r#""tracker": {"kind": "local"}"#, &["tracker.dir: required when tracker.kind is \"local\": the directory holding one file per issue"]),
(r#""tracker": {"dir": "issues"}"#, &["tracker.dir: only used by the local tracker: set tracker.kind to \"local\" or remove tracker.dir"]),
(r#""notify": {"webhookUrl": "hooks.example.com", "command": []}"#, &[
            "notify.webhookUrl: \"hooks.example.com\" is not an http:// or https:// URL",
            "notify.command: expected a non-empty array of strings, found an empty array"
        ]),
]);
}

#[test]
fn every_error_is_reported_not_just_the_first() {
    let errs = errors(
        r#"{"maxRetries": 1, "effort": "max", "steps": {"verify": {"maxTurns": 0}},
            "budget": {"perIssueUsd": 0}, "agent": {"command": ""}}"#,
    );
    assert_eq!(
        errs,
        [
            "maxRetries: unknown key; did you mean \"maxRetriesPerStep\"?",
            "projectPath: required: the path of the git repository to work on",
            "effort: \"max\" is not one of low|medium|high|xhigh",
            "agent.command: expected a non-empty string, found string \"\"",
            "steps.verify.maxTurns: expected an integer ≥ 1, found number 0",
            "budget.perIssueUsd: expected a number > 0, found number 0",
        ]
    );
}

#[test]
fn duplicate_keys_are_errors_except_comments() {
    assert_eq!(
        errors(
            r#"{"projectPath": "p", "_c": 1, "_c": 2,
                "steps": {"verify": {"maxTurns": 5}, "verify": {"model": "opus"}},
                "steps": {}}"#
        ),
        [
            "steps.verify: duplicate key: JSON keeps only the last one; merge them into one",
            "steps: duplicate key: JSON keeps only the last one; merge them into one",
        ]
    );
}

#[test]
fn json_syntax_errors_give_line_and_column() {
    for (text, expected) in [
        (
            "{\n  \"projectPath\": \"p\",\n}\n",
            "c.json:3:1: invalid JSON: trailing comma",
        ),
        ("", "c.json:1:0: invalid JSON: EOF while parsing a value"),
    ] {
        let e = Config::from_str(text, Path::new("c.json")).err();
        assert_eq!(e.map(|e| e.to_string()).as_deref(), Some(expected));
    }
}

#[test]
fn missing_file_names_the_path() {
    let e = Config::load(Path::new("/nonexistent/sdlc-config.json"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.starts_with("/nonexistent/sdlc-config.json: cannot read the config file: "),
        "{e}"
    );
    assert!(
        e.contains("sdlc-runner init"),
        "a missing file suggests init: {e}"
    );
}

#[test]
fn agent_kind_defaults_to_claude_and_names_its_binary() {
    let c = load(r#"{"projectPath": "p"}"#);
    assert_eq!(c.agent.kind, crate::config::AgentKind::Claude);
    assert_eq!(c.agent.command, "claude");
    let c = load(&with_project(r#""agent": {"kind": "codex"}"#));
    assert_eq!(c.agent.command, "codex");
    assert_eq!(c.model(Step::Implement), "", "no Claude model for codex");
    assert_eq!(c.effort(Step::Implement), Some(Effort::Medium));
    let c = load(&with_project(
        r#""agent": {"kind": "gemini"}, "model": "gemini-2.5-pro""#,
    ));
    assert_eq!(c.agent.command, "gemini");
    assert_eq!(c.model(Step::Verify), "gemini-2.5-pro");
    assert_eq!(c.effort(Step::Verify), None);
    rejects(&[(
        r#""agent": {"kind": "cursor"}"#,
        &["agent.kind: \"cursor\" is not one of claude|codex|gemini"],
    )]);
}

#[test]
fn a_step_agent_is_merged_over_the_top_level_one() {
    let c = load(&with_project(
        r#""agent": {"command": "/opt/claude", "args": ["-x"], "env": {"A": "1", "B": "2"}},
           "steps": {"implement": {"agent": {"kind": "codex", "env": {"B": "3"}}, "model": "gpt-5.5"},
                     "verify": {"agent": {"args": ["-y"]}}}"#,
    ));
    let implement = c.agent(Step::Implement);
    assert_eq!(implement.kind, crate::config::AgentKind::Codex);
    assert_eq!(
        implement.command, "codex",
        "another kind's command is not inherited"
    );
    assert!(implement.args.is_empty());
    assert_eq!(implement.env.get("A").map(String::as_str), Some("1"));
    assert_eq!(implement.env.get("B").map(String::as_str), Some("3"));
    assert_eq!(c.model(Step::Implement), "gpt-5.5");
    let verify = c.agent(Step::Verify);
    assert_eq!(verify.command, "/opt/claude");
    assert_eq!(verify.args, ["-y"]);
    assert_eq!(c.model(Step::Verify), "sonnet");
    // A Claude model set globally is not passed to the codex step.
    let c = load(&with_project(
        r#""model": "opus", "steps": {"implement": {"agent": {"kind": "codex"}}}"#,
    ));
    assert_eq!(c.model(Step::Implement), "");
    assert_eq!(c.model(Step::Verify), "opus");
}

#[test]
fn keys_meaningless_for_a_kind_are_errors_that_say_so() {
    rejects(&[
(r#""agent": {"kind": "gemini"}, "effort": "high""#, &["effort: gemini has no reasoning-effort setting: remove effort"]),
(r#""steps": {"verify": {"agent": {"kind": "gemini"}, "effort": "low"}}"#, &["steps.verify.effort: gemini has no reasoning-effort setting: remove steps.verify.effort"]),
]);
    let errs = errors(&with_project(
        r#""agent": {"kind": "codex", "maxApiRetries": 1}"#,
    ));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with("agent.maxApiRetries: means nothing for codex"),
        "{errs:?}"
    );
    // An inherited global effort is dropped for a gemini step, as for haiku.
    let c = load(&with_project(
        r#""effort": "high", "steps": {"verify": {"agent": {"kind": "gemini"}}}"#,
    ));
    assert_eq!(c.effort(Step::Verify), None);
    assert_eq!(c.effort(Step::Implement), Some(Effort::High));
}

#[test]
fn usd_budgets_need_a_price_for_every_token_reporting_model() {
    let errs = errors(&with_project(
        r#""budget": {"perIssueUsd": 5}, "agent": {"kind": "codex"}, "steps": {"verify": {"model": "gpt-5.5"}, "implement": {"model": "gpt-5"}}"#,
    ));
    assert!(
        errs.iter().any(|e| e.starts_with(
            "steps.startIssue.model: budget.perIssueUsd needs the cost of every step"
        )),
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .any(|e| e
                .starts_with("agent.pricing: model \"gpt-5.5\" (step verify, codex) has no price")),
        "{errs:#?}"
    );
    assert!(
        !errs.iter().any(|e| e.contains("\"gpt-5\" ")),
        "gpt-5 is in the shipped table: {errs:#?}"
    );
    let c = load(&with_project(
        r#""budget": {"perSessionUsd": 50}, "agent": {"kind": "codex", "pricing": {"gpt-5.5": {"input": 2, "cachedInput": 0.2, "output": 16}}}, "model": "gpt-5.5""#,
    ));
    assert_eq!(c.pricing["gpt-5.5"].output, 16.0);
    rejects(&[(
        r#""agent": {"pricing": {"m": {"input": -1, "output": 1}}}"#,
        &[
            "agent.pricing.m.input: expected a number ≥ 0, found number -1",
            "agent.pricing.m.cachedInput: missing: US dollars per million tokens (0 if free)",
        ],
    )]);
    // Without a budget no price is needed; Claude's default model is in the shipped table.
    load(&with_project(r#""agent": {"kind": "codex"}"#));
    load(&with_project(r#""budget": {"perIssueUsd": 5}"#));
}

/// `agent.pricingFile`: prices kept in a file of their own (relative to the config), merged
/// over the shipped table, with the config's `agent.pricing` over it; a file that cannot be
/// read or holds a bad price is an error naming the file and the entry.
#[test]
fn a_pricing_file_replaces_shipped_prices_and_the_config_wins_over_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("sdlc-config.json");
    std::fs::write(
        dir.path().join("prices.json"),
        r#"{"opus": {"input": 7, "cachedInput": 0.7, "output": 35}, "claude-opus-9": {"input": 9, "cachedInput": 0.9, "output": 45, "cacheWrite": 10}}"#,
    )
    .expect("write");
    let text = r#"{"projectPath": "p", "budget": {"perCallUsd": 1}, "agent": {"pricingFile": "prices.json", "pricing": {"claude-opus-9": {"input": 8, "cachedInput": 0.8, "output": 40}}}, "steps": {"implement": {"model": "claude-opus-9"}}}"#;
    let c = match Config::from_str(text, &config) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        c.pricing["opus"].output, 35.0,
        "the file replaces the shipped price"
    );
    assert_eq!(
        c.pricing["claude-opus-9"].input, 8.0,
        "the config wins over the file"
    );
    assert_eq!(
        c.pricing["sonnet"].output, 15.0,
        "the rest of the table stays"
    );

    let missing = text.replace("prices.json", "nowhere.json");
    let err = Config::from_str(&missing, &config)
        .expect_err("missing file")
        .to_string();
    assert!(
        err.contains("agent.pricingFile: cannot read ") && err.contains("nowhere.json"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("prices.json"),
        r#"{"opus": {"input": -1, "cachedInput": 0.7, "output": 35}}"#,
    )
    .expect("write");
    let err = Config::from_str(text, &config)
        .expect_err("bad price")
        .to_string();
    assert!(
        err.contains("agent.pricingFile (")
            && err.contains("prices.json).opus.input: expected a number ≥ 0"),
        "{err}"
    );
    std::fs::write(dir.path().join("prices.json"), "{ not json").expect("write");
    let err = Config::from_str(text, &config)
        .expect_err("not JSON")
        .to_string();
    assert!(err.contains("prices.json is not JSON"), "{err}");
}

/// Claude reports an attempt's dollars when it ends, but the running cost that stops a call at
/// the money left is priced from the tokens it streams: a Claude model without a price under a
/// dollar budget (the per-call cap included) would be metered at $0, so it is refused.
#[test]
fn a_claude_model_without_a_price_under_a_dollar_budget_is_refused() {
    for budget in [
        r#""perIssueUsd": 5"#,
        r#""perSessionUsd": 5"#,
        r#""perDayUsd": 5"#,
        r#""perCallUsd": 1"#,
    ] {
        let errs = errors(&with_project(&format!(
            r#""budget": {{{budget}}}, "steps": {{"implement": {{"model": "claude-opus-9"}}}}"#
        )));
        assert!(
            errs.iter().any(|e| e.starts_with(
                "agent.pricing: model \"claude-opus-9\" (step implement, claude) has no price"
            ) && e.contains("$0")),
            "{budget}: {errs:#?}"
        );
        assert_eq!(errs.len(), 1, "only the unpriced step: {errs:#?}");
    }
    load(&with_project(
        r#""budget": {"perCallUsd": 1}, "agent": {"pricing": {"claude-opus-9": {"input": 5, "cachedInput": 0.5, "output": 25}}}, "steps": {"implement": {"model": "claude-opus-9"}}"#,
    ));
    load(&with_project(
        r#""steps": {"implement": {"model": "claude-opus-9"}}"#,
    ));
}

/// A step's agent object declares no defaults of its own: a Claude step under a Codex
/// top-level agent still gets Claude's `maxApiRetries` default, not zero.
#[test]
fn a_step_agent_of_another_kind_gets_the_declared_defaults() {
    let c = load(&with_project(
        r#""agent": {"kind": "codex"}, "steps": {"verify": {"model": "opus", "agent": {"kind": "claude"}}}"#,
    ));
    let verify = c.agent(Step::Verify);
    assert_eq!(verify.kind, crate::config::AgentKind::Claude);
    assert_eq!(verify.max_api_retries, 2);
    assert_eq!(verify.command, "claude");
}

#[test]
fn base_branch_is_a_branch_name_as_origin_names_it() {
    assert_eq!(
        load(&with_project(r#""baseBranch": "release/2""#))
            .base_branch
            .as_deref(),
        Some("release/2")
    );
    assert_eq!(load(r#"{"projectPath": "p"}"#).base_branch, None);
    for bad in [
        "refs/heads/main",
        "-main",
        "a b",
        "x..y",
        "main.lock",
        "a~1",
    ] {
        let errs = errors(&with_project(&format!(r#""baseBranch": "{bad}""#)));
        assert!(
            errs.iter()
                .any(|e| e.starts_with("baseBranch:") && e.contains("is not a branch name")),
            "{bad}: {errs:?}"
        );
    }
}

#[test]
fn a_required_approval_is_taken_on_every_forge() {
    for forge in [
        r#""forge": "local""#,
        r#""forge": "github""#,
        r#""forge": "gitlab", "gitlab": {"project": "g/p"}"#,
    ] {
        let c = load(&with_project(&format!(
            r#"{forge}, "review": {{"requireApproval": true}}"#
        )));
        assert!(c.review.require_approval, "{forge}");
    }
}

#[test]
fn a_runs_limits_add_its_claims_workers_and_days_spend_to_the_configs() {
    let c = load(&with_project(
        r#""claims": {"leaseMinutes": 10}, "budget": {"perDayUsd": 50, "perCallUsd": 1}"#,
    ));
    let alone = c.limits();
    assert_eq!((alone.claims, alone.merge_turn_wait_ms), (false, None));
    assert_eq!(alone.claim_lease_secs, Some(600));
    let shared = c.limits_for(crate::config::RunShape {
        claims: true,
        workers: 3,
        spent_today_micros: 7_000_000,
    });
    assert!(shared.claims);
    // One lease per worker ahead, and two seconds of slack for the clocks.
    assert_eq!(shared.merge_turn_wait_ms, Some(3 * 600_000 + 2_000));
    assert_eq!(shared.day_spent_before_micros, 7_000_000);
    // Everything else is the config's alone.
    let same = crate::machine::Limits {
        claims: false,
        merge_turn_wait_ms: None,
        day_spent_before_micros: 0,
        ..shared
    };
    assert_eq!(same, alone);
    // Without a day budget, the day's spend is no limit's business.
    let no_day = load(&with_project(r#""budget": {"perCallUsd": 1}"#));
    let l = no_day.limits_for(crate::config::RunShape {
        spent_today_micros: 7_000_000,
        ..Default::default()
    });
    assert_eq!(l.day_spent_before_micros, 0);
}

#[test]
fn the_review_round_has_a_step_entry_of_its_own_resolved_like_every_step() {
    // Unset: the global settings, as for any step, not monitorCI's.
    let c = load(
        r#"{"projectPath": "/p", "model": "opus", "steps": {"monitorCI": {"model": "haiku", "timeoutMin": 30}}}"#,
    );
    assert_eq!(c.address_review.model, "opus");
    assert_eq!(c.address_review.timeout, Duration::from_secs(600));
    assert_eq!(c.address_review_prompt(), None);
    // Its own keys, and in monitorCI's place in the config a round runs with.
    let c = load(
        r#"{"projectPath": "/p", "pluginsPath": "/plugins",
            "review": {"prompt": "older"},
            "steps": {"monitorCI": {"run": "builtin"},
                      "addressReview": {"model": "sonnet", "timeoutMin": 3, "maxTurns": 7,
                                        "skill": "answer-review", "prompt": "own"}}}"#,
    );
    let round = c.review_round();
    assert_eq!(round.model(Step::MonitorCi), "sonnet");
    assert_eq!(round.timeout(Step::MonitorCi), Duration::from_secs(180));
    assert_eq!(round.max_turns(Step::MonitorCi), 7);
    assert!(!round.builtin(Step::MonitorCi));
    assert_eq!(
        round.skill_file(Step::MonitorCi),
        Some(PathBuf::from(
            "/plugins/plugins/nmg-sdlc/skills/answer-review/SKILL.md"
        ))
    );
    assert_eq!(c.round_skill_file(), round.skill_file(Step::MonitorCi));
    // The step's prompt wins over the older `review.prompt`, which is still read.
    assert_eq!(c.address_review_prompt(), Some("own"));
    let c = load(r#"{"projectPath": "/p", "review": {"prompt": "older"}}"#);
    assert_eq!(c.address_review_prompt(), Some("older"));
}

#[test]
fn the_review_round_cannot_be_builtin_or_disabled() {
    assert_eq!(
        errors(
            r#"{"projectPath": "/p", "steps": {"addressReview": {"run": "builtin", "enabled": false}}}"#
        ),
        [
            "steps.addressReview.run: addressReview needs a model and cannot be builtin (only startCycle, startIssue, commitPush, createPR, monitorCI, merge can)",
            "steps.addressReview.enabled: set review.maxReviewRounds to 0 for no review rounds (addressReview cannot be disabled otherwise)",
        ]
    );
}

#[test]
fn trusted_authors_are_read_and_a_login_in_both_lists_is_refused() {
    let c = load(&with_project(
        r#""review": {"trustedAuthors": ["helper-bot"]}"#,
    ));
    assert_eq!(c.review.trusted_authors, ["helper-bot"]);
    assert_eq!(c.review.authority().trusted, ["helper-bot"]);
    rejects(&[
        (
            r#""review": {"ignoreAuthors": ["bot"], "trustedAuthors": ["Bot", "ann"]}"#,
            &["review.trustedAuthors: \"Bot\" is in review.ignoreAuthors too; keep it in one list"],
        ),
        (
            r#""review": {"trustedAuthors": [""]}"#,
            &["review.trustedAuthors[0]: an empty author names nobody; remove it"],
        ),
    ]);
}

#[test]
fn the_trains_limits_default_to_one_tree_at_a_time_and_wrong_ones_are_named() {
    let c = load(r#"{"projectPath": "p"}"#);
    assert_eq!(
        (c.train.max_parallel, c.train.max_length, c.train.batch),
        (1, 16, 1)
    );
    let c = load(&with_project(
        r#""train": {"maxParallel": 3, "maxLength": 6, "batch": 2}"#,
    ));
    assert_eq!(
        (c.train.max_parallel, c.train.max_length, c.train.batch),
        (3, 6, 2)
    );
    let wrong = errors(&with_project(
        r#""train": {"maxParallel": 0, "batch": 20, "maxLenght": 3}"#,
    ));
    let all = wrong.join("\n");
    for named in ["train.maxParallel", "train.batch", "train.maxLenght"] {
        assert!(all.contains(named), "{named}: {all}");
    }
    let never_fills = errors(&with_project(r#""train": {"maxLength": 2, "batch": 3}"#));
    assert_eq!(
        never_fills,
        vec!["train.batch: 3 PRs tested as one tree, but the train holds at most 2 (maxLength): a batch could never fill; lower batch or raise maxLength".to_string()],
    );
}

#[test]
fn a_fleet_with_a_train_leaves_ci_on_the_branch_alone_to_the_train() {
    let c = load(&with_project(
        r#""forge": "local", "localCi": {"command": ["true"]}, "steps": {"merge": {"run": "builtin"}}"#,
    ));
    let fleet = |workers| crate::config::RunShape {
        claims: true,
        workers,
        spent_today_micros: 0,
    };
    assert!(c.limits_for(fleet(3)).train_tests_ci);
    // One worker has no train; an agent-run merge or no CI command neither.
    assert!(!c.limits_for(fleet(1)).train_tests_ci);
    assert!(!c.limits().train_tests_ci);
    let agent_merge = load(&with_project(
        r#""forge": "local", "localCi": {"command": ["true"]}"#,
    ));
    assert!(!agent_merge.limits_for(fleet(3)).train_tests_ci);
}
