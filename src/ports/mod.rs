//! The ports: the only way the driver reaches the world. Each trait says what one outside
//! party does for the runner (git, the issue tracker, the forge, the agent, the notification
//! channels, the clock), with one error type per port whose failures are classified once, at
//! the adapter, into a [`CallFailureKind`](crate::call_failure::CallFailureKind).
//!
//! The production adapters live beside the code they wrap (`git/`, `forge/`, `tracker/`,
//! `agent/`, `notify/`, [`clock::TokioClock`]); the in-memory fakes in `fake`, compiled for the
//! crate's own tests only, let tests run the driver in-process, with no git, gh or agent
//! process and no real sleep.

pub mod agent;
pub mod clock;
// Test-only: the product ships no fake, so nothing on the run path can pick one.
#[cfg(test)]
pub mod fake;
pub mod forge;
pub mod git;
pub mod notifier;
pub mod tracker;
pub mod world;

pub use agent::AgentPort;
pub use clock::Clock;
pub use forge::ForgePort;
pub use git::GitPort;
pub use notifier::NotifierPort;
pub use tracker::TrackerPort;
pub use world::{Io, World};

use crate::config::{Config, ForgeKind};
use crate::forge::Forge;
use crate::git::repo::Repo;
use crate::logs::Logs;
use crate::notify::{Channel, Notifier};
use crate::runner_dir::RunnerDir;
use crate::step::Step;
use crate::tracker::Tracker;
use agent::ProcessAgent;
use clock::TokioClock;
use forge::ForgeAdapter;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, so that the async ports can be called through `dyn`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Everything the driver calls outside itself, one adapter per port.
pub struct Ports {
    /// The project's git repository.
    pub git: Box<dyn GitPort>,
    /// Pull requests and CI.
    pub forge: Box<dyn ForgePort>,
    /// Issues: selection, reads, closing and quarantine.
    pub tracker: Box<dyn TrackerPort>,
    /// The coding agent: one attempt per call.
    pub agent: Box<dyn AgentPort>,
    /// Chat, webhook and command channels.
    pub notifier: Box<dyn NotifierPort>,
    /// "Now" and every wait.
    pub clock: Arc<dyn Clock>,
}

impl Ports {
    /// The production adapters of a config: git and the forge through their commands, the
    /// configured tracker, the agent as a child process, the configured channels, tokio's clock.
    /// `Err` names the config file and `projectPath` when the project is no git repository.
    pub fn production(cfg: &Config) -> Result<Ports, String> {
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
                    api: crate::tracker::gitlab_api(cfg)?,
                    project: cfg.gitlab.project.clone().unwrap_or_default(),
                },
                require_checks: cfg.require_checks,
            },
            ForgeKind::Github => Forge::GitHub {
                gh: PathBuf::from("gh"),
                repo_dir: cfg.project_path.clone(),
                require_checks: cfg.require_checks,
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
                    results: runner_dir.dir.join("ci"),
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
        Ok(Ports {
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
}
