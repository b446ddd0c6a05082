//! `sdlc-runner config check --config F` and `sdlc-runner config schema`. The check is about
//! the file alone (schema and value rules); `doctor` looks at the machine it would run on.

use crate::cli::ConfigCommand;
use crate::config::{self, Approval, Config, ForgeKind, ADDRESS_REVIEW};
use crate::step::Step;
use std::path::Path;

pub fn run(command: &ConfigCommand) -> i32 {
    match command {
        ConfigCommand::Check { config, file } => match config.as_ref().or(file.as_ref()) {
            Some(path) => check(path),
            None => check(Path::new(crate::cli::DEFAULT_CONFIG)),
        },
        ConfigCommand::Schema => {
            out!("{}", config::schema_json());
            0
        }
    }
}

/// Exit 0 with a summary when the file is valid, else exit 2 with every problem on stderr.
fn check(file: &Path) -> i32 {
    match Config::load(file) {
        Ok(config) => {
            out!(
                "{}: ok (schema and values; `sdlc-runner doctor --config {}` checks the environment)",
                file.display(),
                file.display()
            );
            out_raw!("{}", summary(&config));
            for problem in config.environment_problems(true) {
                say!("warning: {}: {problem}", file.display());
            }
            0
        }
        Err(e) => {
            for line in e.lines() {
                say!("{line}");
            }
            2
        }
    }
}

/// A few lines an operator can eyeball: what runs where, and the bounds that matter.
pub fn summary(c: &Config) -> String {
    let mut out = String::new();
    out.push_str(&format!("  project: {}\n", c.project_path.display()));
    out.push_str(&format!("  logs:    {}\n", c.log_dir.display()));
    out.push_str(&format!(
        "  agent:   {} {} (model {}, effort {})\n",
        c.agent.kind,
        c.agent.command,
        if c.model.is_empty() {
            "the CLI's default"
        } else {
            &c.model
        },
        c.effort
    ));
    let tracker = match c.tracker.dir() {
        Some(dir) => format!("local {}", dir.display()),
        None => format!(
            "{}, label {}",
            kind_name(c.tracker.kind()),
            c.tracker.label()
        ),
    };
    let forge = match c.forge {
        ForgeKind::Github => "github",
        ForgeKind::Local => "local",
        ForgeKind::Gitlab => "gitlab",
    };
    out.push_str(&format!("  tracker: {tracker}; forge: {forge}\n"));
    let steps: Vec<String> = Step::ALL.iter().map(|&s| step_line(c, s)).collect();
    out.push_str(&format!("  steps:   {}\n", steps.join(", ")));
    let (model, effort, on) = review_round_agent(c);
    out.push_str(&format!(
        "  review:  up to {} {ADDRESS_REVIEW} round(s) on {model}{effort}{on}; approval {}\n",
        c.review.max_review_rounds,
        if c.review.require_approval {
            "required"
        } else {
            "not required"
        }
    ));
    out.push_str(&format!(
        "  limits:  {} attempts per step, {} bounces, halt after {} consecutive escalations, approval {}\n",
        c.max_retries_per_step,
        c.max_bounce_retries,
        c.max_consecutive_escalations,
        match c.approval {
            Approval::Auto => "auto",
            Approval::Manual => "manual",
        }
    ));
    out
}

/// One step as the summary lists it: builtin, or its model, effort, agent and whether it is off.
fn step_line(c: &Config, s: Step) -> String {
    if c.builtin(s) {
        return format!("{} builtin", s.key());
    }
    let effort = c.effort(s).map(|e| format!("/{e}")).unwrap_or_default();
    let off = if c.enabled(s) { "" } else { " (disabled)" };
    let agent = c.agent(s);
    let on = if agent.kind == c.agent.kind {
        String::new()
    } else {
        format!(" on {}", agent.kind)
    };
    let model = if c.model(s).is_empty() {
        "default"
    } else {
        c.model(s)
    };
    format!("{} {model}{effort}{on}{off}", s.key())
}

/// The review round's model, `/effort` and ` on <agent>` (empty when the run's agent).
fn review_round_agent(c: &Config) -> (&str, String, String) {
    let round = &c.address_review;
    let model = if round.model.is_empty() {
        "default"
    } else {
        &round.model
    };
    let effort = round.effort.map(|e| format!("/{e}")).unwrap_or_default();
    let on = if round.agent.kind == c.agent.kind {
        String::new()
    } else {
        format!(" on {}", round.agent.kind)
    };
    (model, effort, on)
}

/// The tracker's kind as the config names it.
fn kind_name(kind: crate::config::TrackerKind) -> &'static str {
    match kind {
        crate::config::TrackerKind::Github => "github",
        crate::config::TrackerKind::Local => "local",
        crate::config::TrackerKind::Gitlab => "gitlab",
        crate::config::TrackerKind::Linear => "linear",
    }
}
