//! Command-line definitions (clap). `main.rs` parses and dispatches; each command lives in
//! its own module under `commands/`.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The config every command reads when `--config` is not given (what `init` writes).
pub const DEFAULT_CONFIG: &str = "sdlc-config.json";

#[derive(Debug, Parser)]
#[command(
    name = "sdlc-runner",
    version,
    about = "Drive an AI coding agent through the lifecycle of every open issue, and halt provably early when progress is impossible.",
    after_help = "Exit codes: 0 done (nothing left, single issue merged, single step ok, signal shutdown); 1 halted, escalation ended a single-issue run, or a single step failed; 2 usage, config or environment error before any agent ran."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the lifecycle on the configured project.
    Run(RunArgs),
    /// Run the offline demo: a temporary repository, a local tracker and a scripted agent.
    Demo(DemoArgs),
    /// Export the state machine as diagrams derived from the executable machine.
    Diagram(DiagramArgs),
    /// Print the exact worst-case number of agent invocations for a config (and the fleet's
    /// bound when it sets `workers`).
    Bounds {
        /// The config file whose limits bound the run.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Show the session's state, counters, current issue and step, whether its runner is
    /// alive, and where the logs are.
    Status {
        /// The config file of the project to inspect.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
        /// Print JSON instead of text.
        #[arg(long, conflicts_with = "watch")]
        json: bool,
        /// Keep the picture on screen, refreshed in place (a terminal UI; q quits).
        #[arg(long)]
        watch: bool,
    },
    /// Re-drive the machine from a journal's recorded events and report any divergence.
    Replay {
        /// The journal to replay (`.git/sdlc-runner/journal.jsonl` of a project).
        #[arg(value_name = "JOURNAL")]
        journal: PathBuf,
    },
    /// Answer a pending decision (manual approval): retry, skip or halt.
    Decide {
        /// What the waiting runner does next: retry, skip or halt.
        #[arg(value_name = "OPTION")]
        option: String,
        /// The config file of the project whose runner is waiting.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Check or describe the config file.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Write a commented config for the git repository in the current directory (tracker and
    /// forge detected from its remote, builtin steps); never overwrites a file.
    Init(InitArgs),
    /// Check everything `run` would refuse, and what would fail later (agent, gh auth, remote,
    /// log directory, disk space): one line per check with ok, warn or fail and the fix.
    Doctor {
        /// The config file to check.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Print a shell completion script to stdout.
    Completions {
        /// The shell to complete for.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout, or write one page per command into a directory.
    Man {
        /// Write `sdlc-runner.1` and `sdlc-runner-<command>.1` here instead of printing.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// The local tracker's issues: create, list, show and reopen them (one JSON file per
    /// issue in `tracker.dir`).
    Issue {
        #[command(subcommand)]
        command: IssueCommand,
    },
    /// Review the local forge's PR of issue N as a person would: approve it, ask for changes
    /// or comment. Stored beside the local tracker's issues; `run` reads it before merging.
    #[command(group(clap::ArgGroup::new("verdict").required(true).multiple(false)))]
    Review {
        /// The issue whose PR is reviewed.
        #[arg(value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        issue: u32,
        /// Approve the PR.
        #[arg(long, group = "verdict")]
        approve: bool,
        /// Ask for changes, saying which.
        #[arg(long, value_name = "TEXT", group = "verdict")]
        request_changes: Option<String>,
        /// Comment without deciding.
        #[arg(long, value_name = "TEXT", group = "verdict")]
        comment: Option<String>,
        /// The reviewer's name. Default: the local user ($USER).
        #[arg(long, value_name = "NAME")]
        author: Option<String>,
        /// The config file of the project.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Lift the quarantine of escalated issues in one step: the tracker's mark is removed and
    /// a halted session is acknowledged, so the next `run` selects them again.
    Release {
        /// The issues to release.
        #[arg(value_name = "N", required = true, value_parser = clap::value_parser!(u32).range(1..))]
        issues: Vec<u32>,
        /// The config file of the project.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// A scripted stand-in for the agent CLI, used by the demo and the tests.
    #[command(hide = true)]
    FakeAgent(FakeAgentArgs),
    /// The sandbox's entry under `network: "allowlist"`: relays 127.0.0.1:PORT to the runner's
    /// proxy and runs the agent (docs/security.md, "The allowlist").
    #[command(hide = true)]
    EgressRelay(EgressRelayArgs),
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The config file (docs/interfaces.md; `sdlc-runner init` writes one).
    #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Print what would run; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Accepted and ignored, for compatibility: every run continues the project's open session (after a crash, a signal or in another mode) with its counters.
    #[arg(long)]
    pub resume: bool,
    /// Work on this issue only; its merge or escalation ends the run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub issue: Option<u32>,
    /// Run one step (number 1-10 or key such as `verify`) and exit.
    #[arg(long, value_name = "N|KEY", value_parser = parse_step)]
    pub step: Option<crate::step::Step>,
    /// Discord channel for notifications (overrides `discordChannelId`).
    #[arg(long, value_name = "ID")]
    pub discord_channel: Option<String>,
    /// Acknowledge the previous session's halt and start a new session.
    #[arg(long)]
    pub ack_halt: bool,
    /// Name of this runner for issue claims, when several runners share one tracker: each
    /// issue is claimed with a lease (`claims.leaseMinutes`) before work starts. Claims are
    /// off without it.
    #[arg(long, value_name = "ID", value_parser = parse_worker_id)]
    pub worker_id: Option<String>,
    /// Work up to N issues at once, each by a worker on its own clone under the runner's
    /// state directory, with one coordinator for escalations, budget, rate limits and halts
    /// (overrides the config's `workers`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub workers: Option<u32>,
    /// Serve a read-only status page, `/api/status`, `/api/events` (SSE) and `/metrics` on
    /// this address, such as 127.0.0.1:8080 (overrides `http.listen`). Any address other
    /// than loopback needs `http.tokenEnv`.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// How stderr narrates the run: `text` (time-stamped when stderr is not a terminal) or
    /// `json` (one object per line: ts, level, msg).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: crate::console::LogFormat,
    /// Only warnings and errors on stderr (the orchestration log keeps everything).
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also the runner's diagnostics on stderr: each git, gh and tracker call, each event
    /// and effect (as `RUST_LOG=sdlc_runner=debug`); `-vv` adds what each call printed
    /// (`trace`). `RUST_LOG`, when set, decides instead.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

fn parse_worker_id(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "\"{s}\" is not a worker id: use 1-128 letters, digits, '-', '_' or '.'"
        ))
    }
}

fn parse_step(s: &str) -> Result<crate::step::Step, String> {
    crate::step::Step::parse(s).ok_or_else(|| {
        let keys: Vec<&str> = crate::step::Step::ALL.iter().map(|s| s.key()).collect();
        format!(
            "\"{s}\" is not a step: use a number 1-10 or one of {}",
            keys.join(", ")
        )
    })
}

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Where to create the demo project (default: a new temporary directory, kept).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Which story the scripted agent tells.
    #[arg(long, value_enum, default_value = "lifecycle")]
    pub scenario: DemoScenario,
    /// Which CLI's stream the scripted agent speaks: claude, codex or gemini.
    #[arg(long, value_name = "KIND", default_value = "claude", value_parser = parse_agent_kind)]
    pub agent: crate::config::AgentKind,
    /// Watch the lifecycle on a copy of this repository instead of an empty one: the demo's
    /// origin is a bare clone of it in the demo directory, so the repository itself (and its
    /// remotes) is only read, never written or pushed to.
    #[arg(long, value_name = "REPO")]
    pub repo: Option<PathBuf>,
    /// Serve the live status page on this address (as `run --http`), slow the scripted agent
    /// down so that a person can follow the issues through the machine, and keep serving the
    /// final picture after the run until Ctrl-C.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Milliseconds each scripted agent call takes (default: 2000 with --http, else 0).
    #[arg(long, value_name = "MS")]
    pub pace: Option<u64>,
    /// With --http: seconds to keep serving after the run (default: until Ctrl-C).
    #[arg(long, value_name = "SECONDS", requires = "http")]
    pub linger: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DemoScenario {
    /// Three issues merged: one verify failure repaired on retry, one dependency respected.
    Lifecycle,
    /// Every implementation fails the same way: early escalations, then a failure-loop halt.
    FailureLoop,
    /// A pull request is a conversation: the merge waits for a person's approval, a
    /// reviewer asks for changes (through the store `sdlc-runner review` writes), one
    /// `addressReview` round answers, the reviewer approves and the runner merges.
    Review,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiagramFormat {
    Mermaid,
    Dot,
    Scxml,
}

#[derive(Debug, clap::Args)]
pub struct DiagramArgs {
    /// Only this format (default: all three).
    #[arg(long, value_enum)]
    pub format: Option<DiagramFormat>,
    /// Directory to write to.
    #[arg(long, value_name = "DIR", default_value = "state-diagrams")]
    pub out: PathBuf,
    /// Do not write: exit 1 with a summary if the files in --out are stale.
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a config file against the schema and the value rules only: exit 0, or exit 2
    /// naming every bad key. `doctor` checks the environment.
    Check {
        /// The config file [default: sdlc-config.json, as for every command].
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The config file, as a positional (same as --config).
        #[arg(value_name = "FILE", conflicts_with = "config")]
        file: Option<PathBuf>,
    },
    /// Print the JSON Schema of the config.
    Schema,
}

#[derive(Debug, Subcommand)]
pub enum IssueCommand {
    /// Write a new open issue with the next free number; prints the number.
    New {
        /// The issue's title.
        #[arg(value_name = "TITLE")]
        title: String,
        /// A file holding the issue's body (`-` reads stdin).
        #[arg(long, value_name = "FILE")]
        body_file: Option<PathBuf>,
        /// A label (repeat for more). Default: the tracker's selection label (`automatable`),
        /// so that `run` works on it.
        #[arg(long, value_name = "LABEL")]
        label: Vec<String>,
        /// An issue this one waits for (repeat for more): adds `Depends on: #N` to the body.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        depends_on: Vec<u32>,
        /// The config file of the project.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// One line per issue: number, state, whether `run` would select it (and why not), title.
    List {
        /// The config file of the project.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// One issue in full: title, state, labels, dependencies, body, escalation diagnostic.
    Show {
        /// The issue.
        #[arg(value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        number: u32,
        /// The config file of the project.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Open a closed issue again.
    Reopen {
        /// The issue.
        #[arg(value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        number: u32,
        /// The config file of the project.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Where to write the config (default: `sdlc-config.json` at the repository's top level).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Which agent CLI the config drives: claude, codex or gemini.
    #[arg(long, value_name = "KIND", default_value = "claude", value_parser = parse_agent_kind)]
    pub agent: crate::config::AgentKind,
}

#[derive(Debug, clap::Args)]
pub struct FakeAgentArgs {
    /// JSON script choosing each attempt's outcome (default: $SDLC_FAKE_AGENT_SCRIPT, else all ok).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Which CLI's stream to speak: claude, codex or gemini.
    #[arg(long, value_name = "KIND", default_value = "claude", value_parser = parse_agent_kind)]
    pub kind: crate::config::AgentKind,
    /// Everything the runner passes (model, prompt, flags) is accepted and ignored.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct EgressRelayArgs {
    /// The runner's proxy socket, bound into the sandbox.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// The loopback port the agent's proxy variables name.
    #[arg(long, value_name = "PORT")]
    pub port: u16,
    /// The agent's program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

fn parse_agent_kind(s: &str) -> Result<crate::config::AgentKind, String> {
    crate::config::AgentKind::parse(s)
        .ok_or_else(|| format!("\"{s}\" is not one of claude, codex, gemini"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every visible command, argument and positional explains itself in `--help`.
    #[test]
    fn every_argument_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            if cmd.is_hide_set() {
                return;
            }
            let here = format!("{path} {}", cmd.get_name());
            if !path.is_empty() && cmd.get_about().is_none() {
                missing.push(format!("{here} (command)"));
            }
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                if arg.get_help().is_none() {
                    missing.push(format!("{here} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &here, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:?}");
    }

    /// Every command that reads a config spells it `--config FILE`.
    #[test]
    fn config_is_spelled_the_same_everywhere() {
        for argv in [
            vec!["run", "--config", "c.json"],
            vec!["bounds", "--config", "c.json"],
            vec!["status", "--config", "c.json"],
            vec!["doctor", "--config", "c.json"],
            vec!["decide", "retry", "--config", "c.json"],
            vec!["config", "check", "--config", "c.json"],
            vec!["init", "--config", "c.json"],
        ] {
            let full = std::iter::once("sdlc-runner").chain(argv.iter().copied());
            if let Err(e) = Cli::try_parse_from(full) {
                panic!("{argv:?}: {e}");
            }
        }
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
