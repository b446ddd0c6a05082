//! One agent attempt: prompt and invocation, the run itself, the attempt log, and the
//! classification or post-step check that becomes the machine's next event.

use super::*;
use crate::logs::LiveCap;

impl Driver {
    pub(super) async fn run_step(
        &mut self,
        step: Step,
        issue: u32,
        attempt: u32,
        repair: bool,
    ) -> Event {
        if self.pending_signal().is_some() {
            return self.shutdown_event();
        }
        let skill_text = match self.cfg.skill_file(step) {
            Some(path) => match std::fs::read_to_string(&path) {
                Ok(text) => Some(text),
                Err(e) => {
                    let msg = format!(
                        "skill file {} for step {} cannot be read: {e}",
                        path.display(),
                        step.key()
                    );
                    return self.environment_failure(step, &msg);
                }
            },
            None => None,
        };
        // The failure this step last had, recorded in the journal, so a restarted runner
        // repairs with the same context.
        let repair_ctx = if repair {
            self.failures[step.index()].as_ref().map(|c| RepairContext {
                class: c.class.to_string(),
                summary: c.summary.clone(),
                excerpt: c.excerpt.clone(),
            })
        } else {
            None
        };
        if self.issue.number != issue {
            // Restarted mid-cycle with nothing in git to show for it yet: ask the tracker.
            self.issue = IssueContext {
                number: issue,
                title: self.tracker.get(issue).map(|i| i.title).unwrap_or_default(),
                branch: self.repo.feature_branch(issue).ok().flatten(),
            };
        }
        let prompt = invoke::prompt(&self.cfg, step, &self.issue, repair_ctx.as_ref());
        let info = AttemptInfo {
            step,
            issue,
            attempt,
            prompt: &prompt,
            skill: skill_text.as_deref(),
        };
        let inv = invoke::invocation(&self.cfg, self.program.clone(), &info);
        let live_log = self.logs.live_log(step.key());
        let budget = self.cfg.max_log_disk_usage_bytes;
        let live_log_cap = LiveCap::for_budget(budget);
        // Room for this attempt's live log and archive first, so the budget holds throughout.
        if let Err(e) = self.logs.prune(
            budget.saturating_sub(live_log_cap.reserve()),
            std::slice::from_ref(&live_log),
        ) {
            self.log(&format!("warning: log pruning failed: {e}"));
        }
        let run = AgentRun {
            program: inv.program,
            args: inv.args,
            cwd: self.cfg.project_path.clone(),
            env: inv.env,
            timeout: self.cfg.timeout(step),
            idle_timeout: self.cfg.idle_timeout(step),
            kill_grace: KILL_GRACE,
            live_log: live_log.clone(),
            live_log_cap,
            tail_bytes: TAIL_BYTES,
        };
        self.log(&format!(
            "issue #{issue} step {} {} attempt {attempt}{}",
            step.number(),
            step.key(),
            if repair { " (repair)" } else { "" }
        ));
        self.notifier.send(
            Severity::Info,
            &format!("issue #{issue}: {} started (attempt {attempt})", step.key()),
        );
        let started_at = chrono::Utc::now();
        let started = Instant::now();
        let mut reader = StreamReader::new();
        let mut record_error = None;
        let exit = {
            let mut sink = |bytes: &[u8]| reader.feed(bytes);
            let journal = &mut self.journal;
            let mut on_spawn = |pgid: i32| {
                let group = crate::journal::AgentGroup {
                    pgid,
                    start_ticks: crate::cleanup::read_stat(pgid).map_or(0, |s| s.start_time),
                };
                if let Some(j) = journal.as_mut() {
                    if let Err(e) = j.append(&[crate::journal::Record::Agent { group }]) {
                        record_error = Some(e.to_string());
                    }
                }
                crate::failpoint::point("agent spawned");
            };
            run_agent_with(&run, &mut sink, self.cancel_rx.clone(), &mut on_spawn).await
        };
        crate::failpoint::point("agent exited");
        if let Some(e) = record_error {
            self.log(&format!(
                "warning: the agent's process group was not recorded ({e}); if the runner dies now, its children may outlive it"
            ));
        }
        let summary = reader.finish();
        let exit = match exit {
            Ok(exit) => exit,
            Err(e) => return self.environment_failure(step, &e.to_string()),
        };
        let header = AttemptHeader {
            step_key: step.key().to_string(),
            session: self.session.clone(),
            attempt,
            started_at,
            exit_code: exit.exit_code,
            signal: exit.signal,
            duration: exit.duration,
            timed_out: exit.timed_out,
            idle_timed_out: exit.idle_timed_out,
            cancelled: exit.cancelled,
        };
        match self.logs.archive_attempt(&header, &live_log) {
            Ok(path) => {
                self.log(&format!("attempt log: {}", path.display()));
                // Older logs make room, never the log whose path was just printed.
                if let Err(e) = self.logs.prune(budget, &[live_log.clone(), path]) {
                    self.log(&format!("warning: log pruning failed: {e}"));
                }
            }
            Err(e) => self.log(&format!("warning: cannot archive the attempt log: {e}")),
        }
        // What a person should read first: the agent's own final words, else its raw tail.
        self.last_output = match summary.result.as_ref().and_then(|r| r.result_text.clone()) {
            Some(text) if !text.trim().is_empty() => text,
            _ if !exit.stdout_tail.is_empty() => exit.stdout_tail.clone(),
            _ => exit.stderr_tail.clone(),
        };
        if exit.cancelled {
            return self.shutdown_event();
        }
        let result = summary.result.as_ref();
        let usage = Usage {
            cost_micros: result
                .and_then(|r| r.total_cost_usd)
                .map_or(0, |c| (c.max(0.0) * 1e6) as u64),
            elapsed_ms: started.elapsed().as_millis() as u64,
            turns: result.and_then(|r| r.num_turns).unwrap_or(0),
        };
        if let Some(id) = summary
            .session_id
            .as_ref()
            .or(result.and_then(|r| r.session_id.as_ref()))
        {
            self.log(&format!("agent session {id}"));
        }
        let temp = std::env::temp_dir();
        let obs = Observation {
            exit_code: exit.exit_code,
            timed_out: exit.timed_out,
            idle_timed_out: exit.idle_timed_out,
            killed: exit.signal.is_some() && !exit.killed_by_runner(),
            summary: &summary,
            stderr_tail: &exit.stderr_tail,
            output_tail: &exit.stdout_tail,
            now_epoch_secs: chrono::Utc::now().timestamp(),
            temp_dir: &temp,
        };
        let failure = match classify(&obs) {
            Some(c) => Some(c),
            None => {
                let ctx = self.step_context();
                let what = format!("checking the outcome of {}", step.key());
                match self
                    .patiently(&what, |d| probe::post_check(&d.repo, &d.forge, step, &ctx))
                    .await
                {
                    network::Patient::Done(Ok(Ok(()))) => None,
                    network::Patient::Done(Ok(Err(what))) => {
                        Some(classify_post_check(step.key(), &what))
                    }
                    network::Patient::Done(Err(e)) => {
                        Some(classify_post_check(step.key(), &e.to_string()))
                    }
                    network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => return ev,
                }
            }
        };
        match failure {
            None => {
                self.log(&format!(
                    "{}: succeeded ({} turns, ${:.2})",
                    step.key(),
                    usage.turns,
                    usage.cost_micros as f64 / 1e6
                ));
                if step == Step::StartIssue {
                    if let Ok(Some(branch)) = self.repo.current_branch() {
                        self.issue.branch = Some(branch.clone());
                        self.state.current_branch = Some(branch);
                    }
                }
                self.state.last_completed_step = step.number();
                self.state.retries.remove(step.key());
                self.save_state();
                self.notifier.send(
                    Severity::Info,
                    &format!("issue #{issue}: {} finished", step.key()),
                );
                Event::StepSucceeded { step, usage }
            }
            Some(c) => {
                self.notifier.send(
                    Severity::Warning,
                    &format!(
                        "issue #{issue}: {} failed ({}): {}",
                        step.key(),
                        c.class,
                        c.summary
                    ),
                );
                self.log(&format!(
                    "{}: failed: {} {} — {}",
                    step.key(),
                    c.class,
                    c.signature,
                    c.summary
                ));
                *self
                    .state
                    .retries
                    .entry(step.key().to_string())
                    .or_default() += 1;
                self.save_state();
                // The journal is a sink like any other: no secret the agent printed goes in.
                let detail = FailureDetail {
                    step,
                    class: c.class,
                    summary: crate::redact::redact(&c.summary),
                    excerpt: crate::redact::redact(&c.excerpt),
                };
                self.failures[step.index()] = Some(detail.clone());
                self.pending_failure = Some(detail);
                Event::StepFailed {
                    step,
                    class: c.class,
                    signature: c.signature,
                    usage,
                    wait_hint_secs: c.wait_hint_secs,
                }
            }
        }
    }

    /// The agent could not even be run (binary vanished, skill file unreadable): the
    /// environment is broken, not the issue.
    pub(super) fn environment_failure(&mut self, step: Step, message: &str) -> Event {
        self.log(&format!("{}: {message}", step.key()));
        self.last_output = message.to_string();
        let normalized = crate::classify::normalize(message);
        Event::StepFailed {
            step,
            class: FailureClass::ToolingEnv,
            signature: crate::classify::signature(FailureClass::ToolingEnv, &normalized),
            usage: Usage::default(),
            wait_hint_secs: None,
        }
    }
}
