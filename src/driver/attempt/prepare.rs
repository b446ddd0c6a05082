//! An attempt made ready: the agent's argument vector, environment and limits, the issue's
//! text in the file the prompt names, room made in the log budget.

use super::super::request::RunStep;
use super::super::step_run::StepRun;
use super::super::{KILL_GRACE, TAIL_BYTES};
use super::AgentCall;
use crate::agent::cli::{self, AttemptInfo};
use crate::agent::{sandbox, AgentRun};
use crate::logs::LiveCap;
use crate::narration as say;
use crate::prompt::{self, RepairContext};
use crate::step::Step;
use crate::tracker::IssueText;

impl StepRun<'_> {
    /// The agent's argument vector, environment and limits for this attempt, with room made
    /// in the log budget; `Err` when the step's skill file cannot be read, the issue's text
    /// cannot be written or is too large.
    pub(super) fn prepare(
        &mut self,
        call: &AgentCall<'_>,
        text: Option<&IssueText>,
    ) -> Result<AgentRun, Unprepared> {
        let RunStep {
            step,
            issue,
            attempt,
            repair,
            money_left_micros,
            ..
        } = call.request;
        let cfg = call.cfg;
        let skill_text = skill_text(cfg, step)?;
        let text_file = text
            .map(|t| write_issue_text(&self.run.runner_dir, t))
            .transpose()?;
        // The failure this step last had, recorded in the journal, so a restarted runner
        // repairs with the same context.
        let repair_ctx = if repair {
            self.core.failure(step).map(|c| RepairContext {
                class: c.class.to_string(),
                summary: c.summary.clone(),
                excerpt: c.excerpt.clone(),
            })
        } else {
            None
        };
        let prompt = match call.review_feedback {
            Some(feedback) => {
                prompt::address_review_prompt(
                    cfg,
                    &self.cycle.issue,
                    feedback,
                    text_file.as_deref(),
                ) + &repair_ctx
                    .as_ref()
                    .map(prompt::previous_failure)
                    .unwrap_or_default()
            }
            None => prompt::prompt_with(
                cfg,
                step,
                &self.cycle.issue,
                repair_ctx.as_ref(),
                text_file.as_deref(),
            ),
        };
        let issue_id = self.run.refs().id(issue);
        let info = AttemptInfo {
            step,
            name: self.voice.step_name(step),
            issue,
            issue_id: &issue_id,
            attempt,
            prompt: &prompt,
            skill: skill_text.as_deref(),
            money_left_micros,
        };
        let command = &cfg.agent(step).command;
        let program = if *command == cfg.agent.command {
            self.run.program.clone()
        } else {
            which::which(command).map_err(|e| {
                Unprepared::Environment(format!(
                    "steps.{}.agent.command `{command}` not found on PATH ({e}); install it or set the step's agent.command",
                    step.key()
                ))
            })?
        };
        let mut inv = cli::invocation(cfg, program, &info);
        if let Some(file) = &text_file {
            inv.env
                .push((ISSUE_FILE_VAR.to_string(), file.display().to_string()));
        }
        self.sandboxed(call, inv, text_file)
    }

    /// The invocation `inv` of `call`, wrapped in the step's sandbox (handed the issue's text
    /// file), with room made in the log budget for its live log and archive.
    fn sandboxed(
        &mut self,
        call: &AgentCall<'_>,
        mut inv: cli::Invocation,
        text_file: Option<std::path::PathBuf>,
    ) -> Result<AgentRun, Unprepared> {
        let (cfg, step) = (call.cfg, call.request.step);
        let agent = cfg.agent(step);
        let home = sandbox::runner_home();
        let handed: Vec<std::path::PathBuf> = text_file.iter().cloned().collect();
        let spec = sandbox::Spec {
            config: &agent.sandbox,
            agent: Some(agent.kind),
            // The agent changes the work tree; every branch, commit and push is the
            // runner's (docs/security.md, "What the agent leaves in .git").
            git_dir_writable: false,
            work_tree: &cfg.project_path,
            runner_dir: &self.run.runner_dir.dir,
            handed: &handed,
            home: home.as_deref(),
        };
        let wrapped = sandbox::wrap(
            &spec,
            &inv.program,
            &inv.args,
            &inv.env,
            &sandbox::runner_var,
        )
        .map_err(|e| Unprepared::Environment(e.to_string()))?;
        let isolated_env = wrapped.is_some();
        let mut egress = None;
        if let Some(w) = wrapped {
            inv.program = w.program;
            inv.args = w.args;
            inv.env = w.env;
            egress = w.egress;
        }
        let live_log = self.shell.logs.live_log(self.voice.step_name(step));
        let budget = cfg.max_log_disk_usage_bytes;
        let live_log_cap = LiveCap::for_budget(budget);
        // Room for this attempt's live log and archive first, so the budget holds throughout.
        if let Err(e) = self.shell.logs.prune(
            budget.saturating_sub(live_log_cap.reserve()),
            std::slice::from_ref(&live_log),
        ) {
            self.voice.log(&say::pruning_failed(&e));
        }
        Ok(AgentRun {
            program: inv.program,
            args: inv.args,
            cwd: cfg.project_path.clone(),
            env: inv.env,
            isolated_env,
            timeout: cfg.timeout(step),
            idle_timeout: cfg.idle_timeout(step),
            kill_grace: KILL_GRACE,
            live_log,
            live_log_cap,
            tail_bytes: TAIL_BYTES,
            egress,
        })
    }
}

/// The step's skill file, read; `None` when the step has none.
fn skill_text(cfg: &crate::config::Config, step: Step) -> Result<Option<String>, Unprepared> {
    let Some(path) = cfg.skill_file(step) else {
        return Ok(None);
    };
    std::fs::read_to_string(&path).map(Some).map_err(|e| {
        Unprepared::Environment(format!(
            "skill file {} for step {} cannot be read: {e}",
            path.display(),
            step.key()
        ))
    })
}

/// The issue's text in the file the prompt names, redacted like every text the runner
/// hands out; refused when it is larger than an agent is ever handed.
fn write_issue_text(
    runner_dir: &crate::runner_dir::RunnerDir,
    text: &IssueText,
) -> Result<std::path::PathBuf, Unprepared> {
    let rendered = text.render_within().map_err(Unprepared::TooLarge)?;
    runner_dir
        .write_issue_text(text.number, &crate::redact::redact(&rendered))
        .map_err(|e| Unprepared::Environment(e.to_string()))
}

/// The environment variable that names the file of the issue's whole text for the agent
/// (the prompt names it too).
pub const ISSUE_FILE_VAR: &str = "SDLC_ISSUE_FILE";

/// Why an attempt could not be prepared.
pub(super) enum Unprepared {
    /// The runner's environment (a skill file, the agent command, the runner directory).
    Environment(String),
    /// The issue is larger than an agent is handed.
    TooLarge(String),
}
