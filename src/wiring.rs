//! The composition root: the production adapter of every port, built from the config. The
//! one place that names both the ports and the adapters, so `ports/` names none of them.

use crate::agent::ProcessAgent;
use crate::config::{Config, ForgeKind, TrackerConfig};
use crate::forge::{Forge, ForgeAdapter};
use crate::git::repo::Repo;
use crate::logs::Logs;
use crate::notify::{Channel, Notifier};
use crate::ports::clock::TokioClock;
use crate::ports::{ClaimStore, Ports};
use crate::runner_dir::RunnerDir;
use crate::step::Step;
use crate::tracker::Tracker;
use std::path::PathBuf;

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
    let tracker = Tracker::from_config(cfg)?;
    let forge = match cfg.forge {
        ForgeKind::Gitlab => Forge::GitLab {
            api: crate::forge::GitLabForge {
                api: crate::services::gitlab::client::from_config(cfg)?,
                project: cfg.gitlab.project.clone().unwrap_or_default(),
                authority: cfg.review.authority(),
                trains: Default::default(),
            },
            require_checks: cfg.require_checks,
        },
        ForgeKind::Github => Forge::GitHub {
            gh: PathBuf::from("gh"),
            repo_dir: cfg.project_path.clone(),
            require_checks: cfg.require_checks,
            authority: cfg.review.authority(),
        },
        ForgeKind::Local => Forge::Local {
            require_checks: cfg.require_checks,
            // The runner opens PRs only when it runs createPR itself.
            pulls: cfg
                .builtin(Step::CreatePr)
                .then(|| runner_dir.dir.join("pulls")),
            ci: cfg.local_ci.as_ref().map(|c| crate::forge::LocalCi {
                command: c.command.clone(),
                timeout: c.timeout,
                results: c
                    .results
                    .clone()
                    .unwrap_or_else(|| runner_dir.dir.join("ci")),
                sandbox: c.sandbox(&cfg.agent.sandbox),
            }),
            reviews: Some(crate::forge::local_reviews_dir(cfg, &runner_dir.dir)),
        },
    };
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
    let notifier = Notifier::with_options(
        channels,
        Some(logs.orchestration_log()),
        crate::notify::NotifyOptions {
            min_severity: cfg.notify.min_severity,
            ..Default::default()
        },
    );
    let claims = if with_claims {
        Some(claim_store(cfg)?)
    } else {
        None
    };
    Ok(Ports {
        claims,
        forge: Box::new(ForgeAdapter {
            forge,
            repo: repo.clone(),
        }),
        git: Box::new(repo),
        tracker: Box::new(tracker),
        agent: Box::new(ProcessAgent),
        notifier: Box::new(notifier),
        clock: std::sync::Arc::new(TokioClock),
    })
}

/// The claim store of a runner with a worker id: files beside the local tracker, or notes on
/// the GitHub, GitLab or Linear tracker's issues. `Err` names a token that is not set.
fn claim_store(cfg: &Config) -> Result<ClaimStore, String> {
    use crate::tracker::claims::ClaimStore as Store;
    Ok(match &cfg.tracker {
        TrackerConfig::Local { dir, .. } => Box::new(Store::local(dir)),
        TrackerConfig::Github { .. } => Box::new(Store::GitHub(Box::new(
            crate::tracker::GitHub::new(&cfg.project_path),
        ))),
        TrackerConfig::Gitlab { .. } | TrackerConfig::Linear { .. } => {
            Box::new(Store::of_api_tracker(cfg)?)
        }
    })
}
