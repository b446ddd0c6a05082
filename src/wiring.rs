//! The composition root: the production adapter of every port, built from the config. The
//! one place that names both the ports and the adapters, so `ports/` names none of them.

use crate::agent::ProcessAgent;
use crate::config::{Config, ForgeKind, TrackerConfig};
use crate::git::repo::Repo;
use crate::logs::Logs;
use crate::notify::{Channel, Notifier};
use crate::ports::clock::TokioClock;
use crate::ports::{ClaimStore, ForgePort, Ports, TrackerPort};
use crate::runner_dir::RunnerDir;
use crate::services::github::{GitHub, GitHubForge};
use crate::services::gitlab::{GitLab, GitLabForge, GitLabPort};
use crate::services::linear::Linear;
use crate::services::local::{Local, LocalCi, LocalClaims, LocalForge};
use crate::services::shared::claim_notes::NoteClaims;
use crate::step::Step;
use crate::tracker::Traced;
use std::path::PathBuf;
use std::time::Duration;

/// The production adapters of a config: git and the forge through their commands, the
/// configured tracker, its claim store when `with_claims` (a run with a worker id: the store
/// of a tracker whose token is not set cannot be built, and a run without one needs none),
/// the agent as a child process, the configured channels, tokio's clock. `Err` names the
/// config file and `projectPath` when the project is no git repository.
pub fn production(cfg: &Config, with_claims: bool) -> Result<Ports, String> {
    let mut repo = Repo::open(&cfg.project_path)
        .map_err(|e| format!("{}: projectPath: {e}", cfg.file.display()))?;
    // Before the forge gets its copy: both merge into the same, settled, main. An origin
    // that cannot be asked stops the run here, before any issue is selected or blamed.
    let source = repo
        .settle_base(cfg.base_branch.as_deref())
        .map_err(|e| format!("{}: {e}", cfg.project_path.display()))?;
    say!(
        "{}",
        crate::git::repo::describe_base(&repo.main, &source, &cfg.file)
    );
    if let Some(dir) = cfg.tracker.dir() {
        repo.own_dir(dir);
    }
    repo.name_issues(crate::config::IssueRefs::of(cfg));
    let runner_dir = RunnerDir::locate(&cfg.project_path).map_err(|e| e.to_string())?;
    let tracker = tracker(cfg)?;
    let forge = forge(cfg, &repo, &runner_dir)?;
    let notifier = notifier(cfg);
    let claims = if with_claims {
        Some(claim_store(cfg, None)?)
    } else {
        None
    };
    Ok(Ports {
        claims,
        forge,
        git: Box::new(repo),
        tracker,
        agent: Box::new(ProcessAgent),
        notifier: Box::new(notifier),
        clock: std::sync::Arc::new(TokioClock),
    })
}

/// The forge a config names, on the project's clone `repo` (the local forge keeps its PR
/// records and CI results in the runner's directory).
fn forge(cfg: &Config, repo: &Repo, runner_dir: &RunnerDir) -> Result<Box<dyn ForgePort>, String> {
    Ok(match cfg.forge {
        ForgeKind::Gitlab => Box::new(GitLabPort {
            api: GitLabForge {
                api: crate::services::gitlab::client::from_config(cfg)?,
                project: cfg.gitlab.project.clone().unwrap_or_default(),
                authority: cfg.review.authority(),
                trains: Default::default(),
            },
            require_checks: cfg.require_checks,
            repo: repo.clone(),
        }),
        ForgeKind::Github => Box::new(GitHubForge {
            gh: PathBuf::from("gh"),
            repo_dir: cfg.project_path.clone(),
            require_checks: cfg.require_checks,
            authority: cfg.review.authority(),
            repo: repo.clone(),
        }),
        ForgeKind::Local => Box::new(LocalForge {
            require_checks: cfg.require_checks,
            // The runner opens PRs only when it runs createPR itself.
            pulls: cfg
                .builtin(Step::CreatePr)
                .then(|| runner_dir.dir.join("pulls")),
            ci: cfg.local_ci.as_ref().map(|c| LocalCi {
                command: c.command.clone(),
                timeout: c.timeout,
                results: c
                    .results
                    .clone()
                    .unwrap_or_else(|| runner_dir.dir.join("ci")),
                sandbox: c.sandbox(&cfg.agent.sandbox),
            }),
            reviews: Some(crate::services::local::port::reviews_dir(
                cfg,
                &runner_dir.dir,
            )),
            repo: repo.clone(),
        }),
    })
}

/// The notifier of the configured channels, which also writes the orchestration log.
fn notifier(cfg: &Config) -> Notifier {
    let mut channels = Vec::new();
    if let Some(target) = &cfg.discord_channel_id {
        channels.push(Channel::Discord {
            openclaw: PathBuf::from("openclaw"),
            target: target.clone(),
        });
    }
    if let Some(url) = &cfg.notify.webhook_url {
        channels.push(Channel::Webhook { url: url.clone() });
    }
    if let Some(cmd) = &cfg.notify.command {
        if let Some((program, args)) = cmd.split_first() {
            channels.push(Channel::Command {
                program: program.into(),
                args: args.to_vec(),
            });
        }
    }
    let logs = Logs {
        dir: cfg.log_dir.clone(),
    };
    Notifier::with_options(
        channels,
        Some(logs.orchestration_log()),
        crate::notify::NotifyOptions {
            min_severity: cfg.notify.min_severity,
            ..Default::default()
        },
    )
}

/// The tracker a config names, with each call's diagnostics around it. `Err` names the
/// variable of a token that is not set.
pub fn tracker(cfg: &Config) -> Result<Box<dyn TrackerPort>, String> {
    Ok(match &cfg.tracker {
        TrackerConfig::Local { .. } => Box::new(Traced::new("local", local_tracker(cfg)?)),
        TrackerConfig::Github { .. } => Box::new(Traced::new("github", github_tracker(cfg)?)),
        TrackerConfig::Gitlab { .. } => Box::new(Traced::new("gitlab", gitlab_tracker(cfg)?)),
        TrackerConfig::Linear { .. } => Box::new(Traced::new("linear", linear_tracker(cfg)?)),
    })
}

/// The config's tracker is of another service than the one asked for.
fn not_the(cfg: &Config, service: &str) -> String {
    format!(
        "{}: the tracker is not {service} but {:?}",
        cfg.file.display(),
        cfg.tracker.kind()
    )
}

/// The config's local tracker: its issue files, with the config's labels.
pub fn local_tracker(cfg: &Config) -> Result<Local, String> {
    match &cfg.tracker {
        TrackerConfig::Local {
            dir,
            label,
            escalated_label,
        } => {
            let mut t = Local::new(dir.clone());
            t.label = label.clone();
            t.escalated_label = escalated_label.clone();
            Ok(t)
        }
        _ => Err(not_the(cfg, "local")),
    }
}

/// The config's GitHub tracker, through `gh` in the project's clone.
fn github_tracker(cfg: &Config) -> Result<GitHub, String> {
    match &cfg.tracker {
        TrackerConfig::Github {
            label,
            escalated_label,
        } => {
            let mut t = GitHub::new(cfg.project_path.clone());
            t.label = label.clone();
            t.escalated_label = escalated_label.clone();
            t.authority = cfg.review.authority();
            Ok(t)
        }
        _ => Err(not_the(cfg, "github")),
    }
}

/// The config's GitLab tracker. `Err` names the token's variable when it is not set.
fn gitlab_tracker(cfg: &Config) -> Result<GitLab, String> {
    match &cfg.tracker {
        TrackerConfig::Gitlab {
            label,
            escalated_label,
        } => Ok(GitLab {
            api: crate::services::gitlab::client::from_config(cfg)?,
            project: cfg.gitlab.project.clone().unwrap_or_default(),
            label: label.clone(),
            escalated_label: escalated_label.clone(),
            links_unreadable: Default::default(),
            authority: cfg.review.authority(),
        }),
        _ => Err(not_the(cfg, "gitlab")),
    }
}

/// The config's Linear tracker. `Err` names the token's variable when it is not set.
pub fn linear_tracker(cfg: &Config) -> Result<Linear, String> {
    match &cfg.tracker {
        TrackerConfig::Linear {
            label,
            escalated_label,
        } => Ok(Linear {
            api: crate::services::linear::client::from_config(cfg)?,
            team: cfg.linear.team.clone().unwrap_or_default(),
            label: label.clone(),
            escalated_label: escalated_label.clone(),
        }),
        _ => Err(not_the(cfg, "linear")),
    }
}

/// The claim store of a runner with a worker id: files beside the local tracker, or notes on
/// the GitHub, GitLab or Linear tracker's issues (GitHub's asked within `patience` where
/// given, else `gh`'s usual time). `Err` names a token that is not set.
pub fn claim_store(cfg: &Config, patience: Option<Duration>) -> Result<ClaimStore, String> {
    Ok(match &cfg.tracker {
        TrackerConfig::Local { dir, .. } => Box::new(LocalClaims::new(dir)),
        TrackerConfig::Github { .. } => {
            let mut gh = GitHub::new(&cfg.project_path);
            if let Some(patience) = patience {
                gh.timeout = patience;
            }
            Box::new(NoteClaims(gh))
        }
        TrackerConfig::Gitlab { .. } => Box::new(NoteClaims(gitlab_tracker(cfg)?)),
        TrackerConfig::Linear { .. } => Box::new(NoteClaims(linear_tracker(cfg)?)),
    })
}
