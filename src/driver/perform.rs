//! One effect performed: the one call it asks for, through the ports, and the event that
//! answers it. What the answer means is the machine's.

use super::*;

impl Driver {
    /// Performs one effect, counting the child processes it started (`SDLC_RUNNER_STATS`):
    /// its outcome (the answer, for a request) and what the answer reports beyond the event.
    pub(super) async fn perform(&mut self, effect: Effect, state: &State) -> (Outcome, Report) {
        self.report = Report::default();
        let before = crate::stats::spawns();
        let outcome = self.perform_effect(effect, state).await;
        crate::stats::effect_performed(effect.label(), before, crate::stats::spawns());
        (outcome, std::mem::take(&mut self.report))
    }

    /// A step's or a round's call ended: `status` stops showing it and, whatever ended it,
    /// its share of the fleet's money is given back with what it spent.
    fn call_ended(&mut self, event: &Event) {
        self.shell.live.step_ended();
        self.log_live_warning();
        let micros = event.usage().map_or(0, |u| u.cost_micros);
        super::fleet::tell(self.fleet.as_ref(), |worker| {
            sdlc_machine::fleet::Report::Spent { worker, micros }
        });
    }

    pub(super) async fn perform_effect(&mut self, effect: Effect, state: &State) -> Outcome {
        // The effect loop's diagnostics keep the driver's target, wherever the code lives.
        tracing::debug!(target: "sdlc_runner::driver", ?effect, "perform");
        if matches!(
            effect,
            Effect::RunStep { .. }
                | Effect::AddressReview { .. }
                | Effect::CheckPreconditions { .. }
        ) {
            if let Some(event) = super::fleet::gate(
                self.fleet.as_ref(),
                &*self.shell.clock,
                &self.shell.shutdown,
            ) {
                return Outcome::Next(event);
            }
        }
        match effect {
            Effect::SelectIssue => {
                let work = (&self.core, &mut self.cycle);
                let holders = (self.claims.as_mut(), self.fleet.as_ref());
                let selected =
                    select::select_issue(&self.run, &mut self.shell, work, holders).await;
                Outcome::Next(self.answer(selected))
            }
            Effect::CheckPreconditions { step } => {
                let facts = (&self.core, &self.cycle);
                let checked =
                    select::check_preconditions(&self.run, &mut self.shell, facts, step).await;
                Outcome::Next(self.answer(checked))
            }
            Effect::RunStep {
                step,
                issue,
                attempt,
                repair,
                commit,
                money_left_micros,
            } => {
                self.cycle.money_left_micros =
                    match super::fleet::share(self.fleet.as_ref(), money_left_micros) {
                        Ok(money) => money,
                        Err(event) => return Outcome::Next(event),
                    };
                crate::stats::step();
                self.shell.live.step_started(issue, step.key(), attempt);
                let event = self
                    .step_run()
                    .run_step(step, issue, attempt, repair, commit)
                    .await;
                self.call_ended(&event);
                Outcome::Next(event)
            }
            Effect::LookAtCi {
                issue,
                look,
                commit,
            } => Outcome::Next(self.step_run().look_at_ci(issue, look, commit).await),
            Effect::LookAtReview { issue, look } => {
                let hands = (&self.run, &self.shell.io, &self.shell.shutdown);
                let cycle = &mut self.cycle;
                let looked = review::look_at_review(hands, &self.core, cycle, (issue, look)).await;
                Outcome::Next(self.answer(looked))
            }
            Effect::AddressReview {
                issue,
                round,
                attempt,
                money_left_micros,
            } => {
                // A round is an agent call like a step's: the fleet's share of its money too.
                self.cycle.money_left_micros =
                    match super::fleet::share(self.fleet.as_ref(), money_left_micros) {
                        Ok(money) => money,
                        Err(event) => return Outcome::Next(event),
                    };
                crate::stats::step();
                self.shell
                    .live
                    .step_started(issue, crate::config::ADDRESS_REVIEW, attempt);
                let event = self.step_run().address_review(issue, round, attempt).await;
                self.call_ended(&event);
                Outcome::Next(event)
            }
            Effect::UpdateBranch { issue, commit } => {
                Outcome::Next(self.step_run().update_branch(issue, commit).await)
            }
            Effect::Wait { seconds, reason } => {
                let until = u64::try_from(self.shell.clock.now().timestamp())
                    .unwrap_or(0)
                    .saturating_add(seconds);
                if sdlc_machine::fleet::wait_pauses_fleet(state) {
                    super::fleet::tell(self.fleet.as_ref(), |worker| {
                        sdlc_machine::fleet::Report::Waiting { worker, until }
                    });
                }
                let until = i64::try_from(seconds)
                    .ok()
                    .and_then(chrono::TimeDelta::try_seconds)
                    .and_then(|d| self.shell.clock.now().checked_add_signed(d))
                    .map(|t| t.format(", until %Y-%m-%d %H:%M:%S UTC").to_string())
                    .unwrap_or_default();
                self.log(&format!("waiting {seconds} s{until}"));
                // A wait journaled by an earlier version says nothing of its reason.
                let reason = reason.map_or("BACKOFF", crate::machine::WaitReason::label);
                self.shell.live.wait_started(reason, seconds);
                self.log_live_warning();
                let next = self.sleep(Duration::from_secs(seconds)).await;
                self.shell.live.wait_ended();
                Outcome::Next(next)
            }
            // Short and frequent (the merge turn): not narrated, not shown as a wait.
            Effect::Pause { millis } => {
                Outcome::Next(self.sleep(Duration::from_millis(millis)).await)
            }
            Effect::TakeMergeTurn { issue } => {
                let holders = (self.fleet.as_ref(), self.claims.as_ref());
                let shell = (&self.shell.io, &*self.shell.clock, &self.shell.shutdown);
                let taken = merge::take_merge_turn(holders, shell, issue).await;
                Outcome::Next(self.answer(taken))
            }
            Effect::ClaimIssue { issue } => Outcome::Next(self.claim_issue(issue).await),
            Effect::RenewClaim {
                issue,
                secs,
                lease_secs,
                fresh_secs,
            } => {
                let claims = self.claims.as_mut();
                let terms = (issue, secs, lease_secs, fresh_secs);
                let renewed = claim::renew(claims, &self.shell.io, &*self.shell.clock, terms).await;
                Outcome::Next(self.answer(renewed))
            }
            Effect::ReleaseMergeTurn => {
                let (fleet, claims) = (self.fleet.as_ref(), self.claims.as_ref());
                let said = merge::release_merge_turn(fleet, claims, &self.shell.io).await;
                self.narrate(said);
                Outcome::Continue
            }
            Effect::AutoCommit(kind) => {
                let message = kind.message();
                match self
                    .shell
                    .io
                    .call(move |w| w.git.auto_commit(&message))
                    .await
                {
                    Ok(true) => self.log(&format!("committed: {}", kind.message())),
                    Ok(false) => {}
                    Err(e) => self.log(&format!("auto-commit skipped: {e}")),
                }
                Outcome::Continue
            }
            Effect::CheckoutMain => {
                // A post-checkout hook that hangs must not hold off a signal.
                let checkout = |w: &World| crate::process::cancellable(|| w.git.checkout_main());
                if let Err(e) = self.shell.io.call(checkout).await {
                    self.log(&format!("warning: cannot check out {}: {e}", self.run.main));
                }
                Outcome::Continue
            }
            Effect::ResetCycle => {
                self.shell.state.current_issue = None;
                self.shell.state.current_issue_ref = None;
                self.shell.state.current_branch = None;
                self.shell.state.feature_name = None;
                self.shell.state.retries.clear();
                self.shell.state.current_step = 0;
                self.shell.state.last_completed_step = 0;
                self.shell.state.pr_number = None;
                self.cycle.feature = None;
                self.save_state();
                Outcome::Continue
            }
            Effect::RecordMerged { issue } => {
                // The merge is already final (journaled with the event that led here); the
                // claim and the fleet learn of it whatever the tracker answers.
                let said = claim::release(self.claims.as_mut(), &self.shell.io, issue).await;
                self.narrate(said);
                super::fleet::tell(self.fleet.as_ref(), |worker| {
                    sdlc_machine::fleet::Report::Merged { worker, issue }
                });
                let what = format!("closing issue #{issue} in the tracker");
                let written = self
                    .patiently(&what, move |w| {
                        w.tracker.close(issue, "merged by sdlc-runner")
                    })
                    .await;
                crate::failpoint::point("tracker: closed");
                Outcome::Next(self.tracker_written(&what, written))
            }
            Effect::MarkEscalated { issue } => {
                let known = self.cycle.issue.branch.clone();
                let rescued = self
                    .shell
                    .io
                    .call(move |w| {
                        let branch = w.git.feature_branch(issue).ok().flatten().or(known);
                        branch
                            .and_then(|b| w.git.rescue_refs(&b).ok())
                            .unwrap_or_default()
                    })
                    .await;
                let mut text = report::escalation_diagnostic(
                    issue,
                    self.core.runner(),
                    self.core.last_words(),
                    &self.shell.logs.dir.display().to_string(),
                );
                text.push_str(&report::rescued(&rescued));
                let what = format!("marking issue #{issue} escalated in the tracker");
                let written = self
                    .patiently(&what, move |w| w.tracker.mark_escalated(issue, &text))
                    .await;
                crate::failpoint::point("tracker: marked escalated");
                let said = claim::release(self.claims.as_mut(), &self.shell.io, issue).await;
                self.narrate(said);
                super::fleet::tell(self.fleet.as_ref(), |worker| {
                    sdlc_machine::fleet::Report::Escalated { worker, issue }
                });
                Outcome::Next(self.tracker_written(&what, written))
            }
            Effect::Unquarantine { issue } => {
                let note = report::release_note(issue, self.core.runner());
                let what = format!("lifting the quarantine of issue #{issue} in the tracker");
                let written = {
                    let note = note.clone();
                    self.patiently(&what, move |w| w.tracker.unquarantine(issue, &note))
                        .await
                };
                if matches!(written, network::Patient::Done(Ok(()))) {
                    self.log(&format!("tracker: issue #{issue} released: {note}"));
                }
                Outcome::Next(self.tracker_written(&what, written))
            }
            Effect::Cleanup => {
                let patterns = self.run.cfg.cleanup.process_patterns.clone();
                // Its grace between SIGTERM and SIGKILL is a wait: off the runtime.
                let kill = move |_: &World| kill_matching(&patterns, &ProtectSet::current());
                let killed = self.shell.io.call(kill).await;
                for (pid, cmd) in killed {
                    self.log(&format!("cleanup: stopped pid {pid} ({cmd})"));
                }
                Outcome::Continue
            }
            Effect::Notify(n) => {
                let round = self.core.runner().round_pending();
                let (severity, mut text) = report::notice(&n, &self.refs(), round);
                match n {
                    // Who holds the turn, as the answer that found it busy said.
                    Notice::WaitingForMergeTurn { .. } => {
                        text = format!("{}; {text}", self.core.last_words());
                    }
                    // What the tracker answered, as the failed read said.
                    Notice::TrackerReadFailed => {
                        text = format!("{text}: {}", self.core.last_words());
                    }
                    _ => {}
                }
                self.shell.notifier.send(severity, &text);
                match &self.fleet {
                    Some(link) => say!("[w{}] {}", link.worker, text),
                    None => say!("{}", text),
                }
                Outcome::Continue
            }
            Effect::AskDecision {
                step,
                issue,
                budget_spent_micros,
            } => {
                let asked = decision::ask(
                    &self.run,
                    &*self.shell.notifier,
                    &self.core,
                    (step, issue, budget_spent_micros),
                );
                Outcome::Next(self.answer(asked))
            }
            Effect::LookForDecision { .. } => {
                Outcome::Next(self.answer(decision::look(&self.run.runner_dir)))
            }
            Effect::Halt(reason) => {
                if reason == HaltReason::DecisionTimeout {
                    // Nobody answered in time: the question is withdrawn with the halt.
                    let _ = std::fs::remove_file(self.run.runner_dir.decision());
                }
                super::fleet::tell(self.fleet.as_ref(), |worker| {
                    sdlc_machine::fleet::Report::Halted { worker }
                });
                let mut quarantined: Vec<u32> =
                    self.core.runner().escalated.iter().copied().collect();
                if matches!(reason, HaltReason::AllIssuesEscalated) {
                    let selected = self
                        .shell
                        .io
                        .call(|w| w.tracker.select(&Default::default(), &Default::default()))
                        .await;
                    if let Ok(Selection::AllEscalated { numbers }) = selected {
                        quarantined.extend(numbers);
                    }
                }
                quarantined.sort_unstable();
                quarantined.dedup();
                let mut text = report::halt_diagnostic(
                    &reason,
                    self.core.runner(),
                    self.core.last_words(),
                    &self.shell.logs.dir.display().to_string(),
                    &quarantined,
                    &self.run.cfg.file,
                );
                if let HaltReason::RateLimit { wait_secs } = reason {
                    // The machine keeps no clock: the reset's time is told here, from now.
                    let lifts = i64::try_from(wait_secs)
                        .ok()
                        .and_then(chrono::Duration::try_seconds)
                        .and_then(|d| self.shell.clock.now().checked_add_signed(d));
                    if let Some(lifts) = lifts {
                        let at = text.find('\n').unwrap_or(text.len());
                        let line = lifts.format("%Y-%m-%d %H:%M:%S UTC");
                        text.insert_str(at, &format!("\nthe rate limit lifts at: {line}"));
                    }
                }
                if reason == HaltReason::DayBudget {
                    let at = text.find('\n').unwrap_or(text.len());
                    text.insert_str(at, &format!("\n{}", self.day_frees_at()));
                }
                out!("{text}");
                let _ = append_line(&self.shell.logs.orchestration_log(), &text);
                self.shell.notifier.send(Severity::Alert, &text);
                if let Err(e) = self.end_session(SessionEnd::Halt {
                    reason,
                    headline: reason.headline(),
                }) {
                    self.log(&format!(
                        "warning: cannot record the halt in the journal: {e}"
                    ));
                }
                Outcome::Continue
            }
            Effect::Exit { code } => Outcome::Exit(self.exit(code, state).await),
        }
    }

    /// When the day's ceiling lets an attempt like the last one start again, told with its
    /// halt: the machine keeps no clock, and the window is the journals'.
    fn day_frees_at(&self) -> String {
        let r = self.core.runner();
        let budget = r.limits.per_day_budget_micros.unwrap_or(0);
        // A worker's runner directory holds its clone's journal only: the fleet knows them all.
        let journals = match &self.fleet {
            Some(link) => link.shared.journals.paths(),
            None => crate::journal::Journals::in_dir(&self.run.runner_dir).paths(),
        };
        let now = self.shell.clock.now();
        let day = match crate::journal::DaySpend::read(&journals, now) {
            Ok(day) => day,
            Err(e) => return format!("the daily budget's window could not be read: {e}"),
        };
        // The machine stops when one more attempt like the last would pass the ceiling.
        let room = (budget + 1).saturating_sub(r.last_usage.cost_micros);
        let at = day.frees_at(room).unwrap_or(now);
        format!(
            "the daily budget frees at: {} (spent over the last 24 hours: ${:.2} of budget.perDayUsd ${:.2}); run again then with --ack-halt",
            at.format("%Y-%m-%d %H:%M:%S UTC"),
            day.total_micros() as f64 / 1e6,
            budget as f64 / 1e6
        )
    }

    /// The machine's event for a tracker write: written, refused (the environment's, with the
    /// error kept for the halt diagnostic) or failed on the network.
    pub(super) fn tracker_written(
        &mut self,
        what: &str,
        written: network::Patient<(), tracker::TrackerError>,
    ) -> Event {
        match written {
            network::Patient::Done(Ok(())) => Event::TrackerUpdated,
            network::Patient::Done(Err(e)) => {
                self.say(format!("{what}: {e}"));
                self.log(&format!("tracker: {what} failed: {e}"));
                Event::TrackerWriteFailed
            }
            network::Patient::GaveUp(event) | network::Patient::Cancelled(event) => event,
        }
    }

    /// The machine's wait (`Wait`, `Pause`), cut short by a shutdown: its answer.
    pub(super) async fn sleep(&mut self, duration: Duration) -> Event {
        tokio::select! {
            _ = self.shell.clock.sleep(duration) => Event::WaitOver,
            _ = self.shell.shutdown.wait() => self.shell.shutdown.event(),
        }
    }

    /// `ClaimIssue`: claims the selected issue. `ClaimTaken` (also when this runner keeps no
    /// claims), `ClaimHeld` when another runner holds it or the fleet gives it to another
    /// worker, `TrackerWriteFailed` when the claim cannot be written, or the network's event.
    async fn claim_issue(&mut self, issue: u32) -> Event {
        let what = format!("claiming issue #{issue}");
        let asked = self
            .claims
            .as_ref()
            .map(|k| (k.worker.clone(), k.lease, self.shell.clock.now()));
        let answer = match self
            .patiently(&what, move |w| match (&w.claims, asked) {
                (Some(store), Some((worker, lease, now))) => {
                    store.claim(issue, &worker, lease, now).map(Some)
                }
                _ => Ok(None),
            })
            .await
        {
            network::Patient::Done(answer) => answer,
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => return ev,
        };
        let mut said = Vec::new();
        let io = &self.shell.io;
        let noted = claim::note_claim(self.claims.as_mut(), io, issue, answer, &mut said).await;
        let event = match noted {
            Ok(true) => {
                // The fleet's coordinator may give the issue to another of its workers.
                let wants = |worker| sdlc_machine::fleet::Report::WantsIssue { worker, issue };
                if fleet::tell(self.fleet.as_ref(), wants) == Some(false) {
                    let claims = self.claims.as_mut();
                    said.extend(claim::refused_by_fleet(claims, io, issue).await);
                    Event::ClaimHeld { issue }
                } else {
                    Event::ClaimTaken { issue }
                }
            }
            Ok(false) => Event::ClaimHeld { issue },
            Err(detail) => {
                self.say(format!("{what}: {detail}"));
                said.push(crate::narration::tracker_write_failed(&what, &detail));
                Event::TrackerWriteFailed
            }
        };
        self.narrate(said);
        event
    }
}
