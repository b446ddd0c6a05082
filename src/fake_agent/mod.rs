//! `sdlc-runner fake-agent`: a scripted stand-in for the Claude Code CLI, for the demo and the
//! end-to-end tests. It reads the step context from the environment the runner sets
//! (`SDLC_STEP`, `SDLC_ISSUE`, `SDLC_ATTEMPT`), picks an outcome from a JSON script, acts it out
//! (real git work in the working directory, stream-json events like the real CLI's, an exit
//! code) and exits. See `script.rs` for the script format and `outcome.rs` for the outcomes.
//!
//! A room of its own: only the `fake-agent` subcommand (`commands/`) and the in-memory agent
//! fake of the crate's tests name it, so nothing the run path executes can fall back on a
//! scripted agent (`tests/it/layering.rs` holds this).

mod events;
mod git;
mod net;
mod outcome;
mod reach;
mod script;

pub use outcome::Outcome;
pub use script::Script;

use crate::config::AgentKind;
use crate::step::Step;
use events::Emitter;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Exit code for a broken script or environment: distinct from anything an outcome returns
/// by default, so a test sees a scripting mistake rather than a scripted failure.
pub const SCRIPT_ERROR_EXIT: i32 = 3;

/// Read when `--script` is not given, so a config can point at a script without changing args.
pub const SCRIPT_ENV: &str = "SDLC_FAKE_AGENT_SCRIPT";
/// If set, one line `<issue> <step> <attempt> <outcome>` is appended per invocation.
pub const LOG_ENV: &str = "SDLC_FAKE_AGENT_LOG";
/// Where the fake agent appends the prompts it was given (optional).
pub const PROMPT_LOG_ENV: &str = "SDLC_FAKE_AGENT_PROMPT_LOG";

#[derive(Debug, thiserror::Error)]
pub enum FakeAgentError {
    #[error("fake-agent: cannot read script {path}: {source}")]
    ReadScript {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("fake-agent: script {path} is not valid JSON of the form {{\"steps\": {{\"<issue>:<step>|<step>|*\": [outcomes]}}, \"costUsd\": N}}: {source}")]
    ParseScript {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("fake-agent: script {path}, key \"{key}\": {why}")]
    BadKey {
        path: PathBuf,
        key: String,
        why: String,
    },
    #[error("fake-agent: script {path}, key \"{key}\": unknown outcome \"{outcome}\"; use ok, fail-test, fail-test-<k>, soft-max-turns, soft-is-error, soft-permission, benign-permission, not-logged-in, rate-limit, overloaded, auth, hang, silent-hang, ignore-term, flood:<MB>, quota:<secs>, exit:<code>, no-branch, checkout-main, checkout-main-once, git-clean, daemon, daemon:<ms>, slow:<ms>, tool-loop, rate-limit-once, write-shared-raced, leave-conflict, tool, connect:<port>, spend:<ms>, max-budget, unreachable or via-gateway")]
    UnknownOutcome {
        path: PathBuf,
        key: String,
        outcome: String,
    },
    #[error("fake-agent: environment variable {var}={value:?} {why}")]
    Env {
        var: &'static str,
        value: String,
        why: &'static str,
    },
    #[error("fake-agent: cannot use the working directory: {0}")]
    Cwd(std::io::Error),
    #[error("fake-agent: cannot append to the invocation log {path} (from {LOG_ENV}): {source}")]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the runner told this invocation.
#[derive(Debug, Clone)]
pub struct Context {
    pub issue: Option<u32>,
    /// The issue as the runner named it in `SDLC_ISSUE`: `12`, or `ENG-12` on Linear. It
    /// leads the branch name, as the runner's branches do.
    pub issue_id: Option<String>,
    pub step: Step,
    /// What the runner told it runs (`SDLC_STEP`): `step`'s key, or `addressReview` for a
    /// review round (monitorCI's attempt to the machine).
    pub told: String,
    pub attempt: u32,
    pub cwd: PathBuf,
}

/// The step an attempt told `name` (`SDLC_STEP`) is, and whether it is a review round:
/// `addressReview` is monitorCI's attempt to the machine.
pub fn told_step(name: &str) -> Option<(Step, bool)> {
    if name == crate::config::ADDRESS_REVIEW {
        return Some((Step::MonitorCi, true));
    }
    Step::from_key(name).map(|step| (step, false))
}

impl Context {
    /// Reads `SDLC_STEP` (required key), `SDLC_ISSUE` (optional) and `SDLC_ATTEMPT` (default 1).
    pub fn from_env() -> Result<Context, FakeAgentError> {
        let var = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let step_text = var("SDLC_STEP").unwrap_or_default();
        let (step, _) = told_step(step_text.trim()).ok_or(FakeAgentError::Env {
            var: "SDLC_STEP",
            value: step_text.clone(),
            why: "is not a step key (startCycle ... merge, addressReview); the runner sets it",
        })?;
        let told = step_text.trim().to_string();
        let issue_id = var("SDLC_ISSUE").map(|v| v.trim().to_string());
        let issue = match &issue_id {
            None => None,
            Some(v) => Some(issue_number(v).ok_or_else(|| FakeAgentError::Env {
                var: "SDLC_ISSUE",
                value: v.clone(),
                why: "is not an issue number or a tracker's identifier (12, ENG-12)",
            })?),
        };
        let attempt = match var("SDLC_ATTEMPT") {
            None => 1,
            Some(v) => v.trim().parse().map_err(|_| FakeAgentError::Env {
                var: "SDLC_ATTEMPT",
                value: v.clone(),
                why: "is not an attempt number",
            })?,
        };
        let cwd = std::env::current_dir().map_err(FakeAgentError::Cwd)?;
        Ok(Context {
            issue,
            issue_id,
            step,
            told,
            attempt,
            cwd,
        })
    }
}

/// The number of `12` or of a tracker's identifier `ENG-12`.
fn issue_number(id: &str) -> Option<u32> {
    let digits = id.rsplit_once('-').map_or(id, |(_, n)| n);
    digits.parse().ok()
}

impl Context {
    /// The issue as the runner named it: `12`, `ENG-12`; `-` without one.
    pub fn named(&self) -> String {
        match (&self.issue_id, self.issue) {
            (Some(id), Some(n)) if id.contains('-') => {
                let team = id.rsplit_once('-').map_or("", |(t, _)| t);
                format!("{team}-{n}")
            }
            (_, Some(n)) => n.to_string(),
            (_, None) => "-".to_string(),
        }
    }

    /// The branch this fake agent uses for issue `n`: `<id>-issue-<n>`, so `12-issue-12` or
    /// `ENG-12-issue-12`, matching the runner's `<id>-<slug>`.
    pub fn branch(&self, n: u32) -> String {
        match &self.issue_id {
            Some(id) if id.contains('-') && self.issue == Some(n) => {
                format!("{}-issue-{n}", self.named())
            }
            _ => git::branch_name(n),
        }
    }
}

/// What the fake agent was started with: the hidden subcommand's arguments (`cli` parses
/// them; the fake CLI stands below the command line).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The script (`--script`); else `$SDLC_FAKE_AGENT_SCRIPT`, else every attempt succeeds.
    pub script: Option<&'a Path>,
    /// Which CLI's stream to speak.
    pub kind: AgentKind,
    /// Everything else the runner passed (model, prompt, flags).
    pub rest: &'a [String],
}

/// Entry point of the hidden subcommand; returns the process exit code.
pub fn run(args: &Request) -> i32 {
    if let Some(code) = probe(args) {
        return code;
    }
    match prepare(args) {
        Ok((ctx, script, outcome)) => {
            log_prompt(&ctx, args);
            let default_model = match args.kind {
                AgentKind::Claude => "claude-fake",
                AgentKind::Codex => "gpt-fake",
                AgentKind::Gemini => "auto",
            };
            let model = model_arg(args.rest).unwrap_or(default_model);
            let cwd = ctx.cwd.display().to_string();
            let stdout: Box<dyn Write> = Box::new(std::io::BufWriter::new(std::io::stdout()));
            let mut out = Emitter::new(args.kind, stdout, model, &cwd, script.cost_usd);
            out.set_max_budget_usd(flag_arg(args.rest, "--max-budget-usd").map(str::to_string));
            match outcome.perform(&ctx, &mut out) {
                Ok(code) => code,
                Err(e) => {
                    // Usually the runner closed the pipe after killing us; nothing to tell it.
                    eprintln!("fake-agent: cannot write to stdout: {e}");
                    1
                }
            }
        }
        Err(e) => {
            eprintln!("{e}");
            SCRIPT_ERROR_EXIT
        }
    }
}

/// What `doctor` asks of an agent CLI: its version, and Codex's login status.
fn probe(args: &Request) -> Option<i32> {
    let rest: Vec<&str> = args.rest.iter().map(String::as_str).collect();
    match (args.kind, rest.as_slice()) {
        (_, ["--version"]) => println!("{}-fake 0.0.0", args.kind),
        (AgentKind::Codex, ["login", "status"]) => println!("Logged in using an API key (fake)"),
        _ => return None,
    }
    Some(0)
}

fn prepare(args: &Request) -> Result<(Context, Script, Outcome), FakeAgentError> {
    let path = args
        .script
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(SCRIPT_ENV).map(PathBuf::from));
    let script = match path {
        Some(path) => Script::load(&path)?,
        None => Script::default(),
    };
    let ctx = Context::from_env()?;
    let (name, outcome) = script.pick_told(ctx.issue, &ctx.told, ctx.attempt);
    log_invocation(&ctx, name)?;
    Ok((ctx, script, outcome))
}

fn log_invocation(ctx: &Context, outcome: &str) -> Result<(), FakeAgentError> {
    let Some(path) = std::env::var_os(LOG_ENV).map(PathBuf::from) else {
        return Ok(());
    };
    let issue = ctx.named();
    // The pid lets a test stop an agent whose runner it killed with SIGKILL.
    let line = format!(
        "{issue} {} {} {outcome} {}\n",
        ctx.told,
        ctx.attempt,
        std::process::id()
    );
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|source| FakeAgentError::Log { path, source })
}

/// With `SDLC_FAKE_AGENT_PROMPT_LOG` set, appends `== <issue> <step> <attempt>` and the
/// prompt the runner passed (`-p`, or Codex's last argument), so a test can read what an
/// attempt was told.
fn log_prompt(ctx: &Context, args: &Request) {
    let Some(path) = std::env::var_os(PROMPT_LOG_ENV) else {
        return;
    };
    let rest = &args.rest;
    let prompt = match args.kind {
        AgentKind::Codex => rest.last().map_or("", String::as_str),
        _ => rest
            .iter()
            .position(|a| a == "-p")
            .and_then(|i| rest.get(i + 1))
            .map_or("", String::as_str),
    };
    let issue = ctx.issue.map_or_else(|| "-".to_string(), |n| n.to_string());
    let text = format!("== {issue} {} {}\n{prompt}\n", ctx.told, ctx.attempt);
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
}

/// Where `checkout-main-once` remembers that it acted (beside the invocation log); `None`
/// without a log.
pub fn once_marker(ctx: &Context) -> Option<PathBuf> {
    let log = PathBuf::from(std::env::var_os(LOG_ENV)?);
    let issue = ctx.issue.map_or_else(|| "-".to_string(), |n| n.to_string());
    let mut name = log.file_name()?.to_os_string();
    name.push(format!(".once-{issue}-{}", ctx.step.key()));
    Some(log.with_file_name(name))
}

/// Records one priced model request the agent made (`spent <agent pid>`), after its message
/// went out: what a test sums as the money really spent, whatever the runner saw of it.
pub fn log_spent() {
    if let Some(path) = std::env::var_os(LOG_ENV) {
        let line = format!("spent {}\n", std::process::id());
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
    }
}

/// Records a child process the agent started (`child <pid> of <agent pid>`), so that a test
/// can check that no process of a killed runner's agent survives.
pub fn log_child(pid: u32) {
    if let Some(path) = std::env::var_os(LOG_ENV) {
        let line = format!("child {pid} of {}\n", std::process::id());
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
    }
}

/// The value after `--model` among the runner's arguments, echoed in the events.
fn model_arg(rest: &[String]) -> Option<&str> {
    flag_arg(rest, "--model")
}

/// The value after `flag` among the runner's arguments.
fn flag_arg<'a>(rest: &'a [String], flag: &str) -> Option<&'a str> {
    rest.iter()
        .position(|a| a == flag)
        .and_then(|i| rest.get(i + 1))
        .map(String::as_str)
}
