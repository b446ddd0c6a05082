//! Which issue next, and whether a step may start: the tracker asked (claims taken with a
//! worker id), a person's decision read, the step's preconditions checked through the ports.

use super::context::Context;
use super::cycle::Cycle;
use super::facts::{FactsAsked, Probe};
use super::request::{CheckPreconditions, SelectIssue};
use super::run_context::RunContext;
use super::shell::Shell;
use super::*;
use crate::narration as say;
use std::collections::BTreeSet;

impl TrackerQuery {
    /// What to ask the tracker for the next issue, from what this runner knows: the machine's
    /// counters, the claims of others and the merges of earlier sessions.
    pub(super) fn of(
        core: &Core,
        claims: Option<&claim::ClaimKeeper>,
        merged_before: &BTreeSet<u32>,
    ) -> TrackerQuery {
        let runner = core.runner();
        let finished: BTreeSet<u32> = runner.merged.union(&runner.withdrawn).copied().collect();
        let mut excluded = core.escalated().clone();
        excluded.extend(finished.iter().copied());
        if let Some(keeper) = claims {
            excluded.extend(keeper.others.keys().copied());
            excluded.extend(keeper.refused.iter().copied());
        }
        excluded.extend(runner.held_elsewhere.iter().copied());
        excluded.extend(runner.awaiting_person.iter().copied());
        let merged = runner.merged.union(merged_before).copied().collect();
        TrackerQuery {
            only: match runner.mode {
                Mode::SingleIssue(n) => Some(n),
                _ => None,
            },
            excluded,
            finished,
            merged,
        }
    }
}

/// A question for the tracker: which issue next.
pub(super) struct TrackerQuery {
    /// The issue named by `--issue`.
    only: Option<u32>,
    /// Issues not to be offered: escalated, finished, held by other runners.
    excluded: BTreeSet<u32>,
    /// Issues this session merged or a person withdrew.
    finished: BTreeSet<u32>,
    /// Issues the runner merged, this session or an earlier one (the journal's facts): done
    /// as dependencies whatever the tracker shows.
    merged: BTreeSet<u32>,
}

impl TrackerQuery {
    /// The issue to work on: the one named by `--issue`, else the tracker's choice. Issues this
    /// session merged or a person withdrew are never offered again, whatever the tracker still
    /// says of them; they are finished, not escalated.
    pub(super) fn ask(
        &self,
        tracker: &dyn crate::ports::TrackerPort,
    ) -> Result<Selection, tracker::TrackerError> {
        if let Some(n) = self.only {
            return tracker.get(n).map(Selection::Issue);
        }
        let finished = &self.finished;
        let selection = tracker.select(&self.excluded, &self.merged)?;
        Ok(match selection {
            Selection::AllEscalated { numbers } => {
                let left: Vec<u32> = numbers
                    .into_iter()
                    .filter(|n| !finished.contains(n))
                    .collect();
                if left.is_empty() {
                    Selection::NoIssues
                } else {
                    Selection::AllEscalated { numbers: left }
                }
            }
            other => other,
        })
    }
}

/// The tracker's selection, leaving out the issues other runners hold (the machine claims
/// the one selected, `ClaimIssue`), and whether issues other runners or this fleet's
/// other workers hold were left out: the machine decides what an empty selection then
/// means (someone is working on them).
async fn select_claimed(
    cx: &mut Context<'_>,
    told: &mut Told,
) -> Result<(Result<Selection, tracker::TrackerError>, bool), Event> {
    let (run, core, fleet) = (cx.run, cx.core, cx.fleet);
    let (shell, cycle) = (&*cx.shell, &*cx.cycle);
    let mut claims = cx.claims.as_deref_mut();
    if claims.is_some() {
        let keeper = claims.as_deref_mut();
        told.narration
            .extend(claim::claimed_by_others(keeper, &shell.io, &*shell.clock).await);
    }
    let query = TrackerQuery::of(core, claims.as_deref(), &cycle.merged_before);
    let answer = network::call(&shell.io, move |w| query.ask(&*w.tracker)).await;
    let services = || run.cfg.api_services();
    let what = "asking the tracker for the next issue";
    let (judged, failed) = network::judge(&shell.shutdown, services, what, answer);
    told.told(failed);
    let selection = match judged {
        network::Patient::Done(result) => result,
        network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => return Err(ev),
    };
    let claimed = claims.as_deref().is_some_and(|k| !k.others.is_empty());
    let others_hold = claimed || fleet_link::others_hold(fleet);
    if let Ok(Selection::AllEscalated { .. } | Selection::AllBlocked { .. }) = selection {
        told.narration
            .extend(held_elsewhere(core, claims.as_deref(), fleet));
    }
    Ok((selection, others_hold))
}

/// Names the issues held elsewhere (other runners' claims, the ones this session found
/// held, or else the fleet's other workers) when the selection found nothing else.
fn held_elsewhere(
    core: &Core,
    claims: Option<&claim::ClaimKeeper>,
    fleet: Option<&fleet_link::Link>,
) -> Option<String> {
    let mut others = claim::describe_others(claims);
    let held: Vec<String> = core
        .runner()
        .held_elsewhere
        .iter()
        .filter(|n| claims.is_none_or(|k| !k.others.contains_key(n)))
        .map(|n| format!("#{n}"))
        .collect();
    if !held.is_empty() {
        let held = held.join(", ");
        others = if others.is_empty() {
            held
        } else {
            format!("{others}, {held}")
        };
    }
    if others.is_empty() && !fleet_link::others_hold(fleet) {
        return None;
    }
    Some(say::held_elsewhere(&fleet_link::held_elsewhere(others)))
}

/// `SelectIssue`: the next event from the tracker (`TrackerReadFailed` when the tracker
/// itself failed).
pub(super) async fn select_issue(mut cx: Context<'_>, _: SelectIssue) -> Answer {
    let mut told = Told::default();
    let mode = cx.core.runner().mode;
    let selection = match mode {
        Mode::SingleStep(_) if cx.cycle.issue.number > 0 => {
            return told.answer(Event::IssueSelected {
                issue: cx.cycle.issue.number,
            });
        }
        Mode::SingleStep(_) if cx.shell.state.current_issue.is_some() => {
            let n = cx.shell.state.current_issue.unwrap_or_default();
            cx.cycle.issue = IssueContext {
                number: n,
                title: String::new(),
                branch: cx.shell.state.current_branch.clone(),
            };
            return told.answer(Event::IssueSelected { issue: n });
        }
        // As many workers as may be are at work: this one ends; the fleet starts it again.
        _ if !fleet_link::may_take_issue(cx.fleet) => return told.answer(Event::StandBy),
        _ => match select_claimed(&mut cx, &mut told).await {
            Ok(result) => result,
            Err(ev) => return told.answer(ev),
        },
    };
    let (selection, others_hold) = selection;
    let (run, shell, core, cycle) = (cx.run, cx.shell, cx.core, cx.cycle);
    let event = match selection {
        Ok(Selection::Issue(issue))
            if cycle.merged_before.contains(&issue.number)
                && !core.runner().merged.contains(&issue.number) =>
        {
            // The journal's fact, reported as such: the machine records the merge again
            // (the tracker closes the issue) instead of working on finished work.
            told.narrate(say::merged_earlier(issue.number));
            Event::AlreadyMerged {
                issue: issue.number,
            }
        }
        Ok(Selection::Issue(issue)) => {
            told.narrate(say::selected(
                issue.number,
                &crate::sanitize::title(&issue.title),
            ));
            told.narration.extend(take_up(run, shell, cycle, &issue));
            Event::IssueSelected {
                issue: issue.number,
            }
        }
        Ok(Selection::NoIssues) => {
            told.narration.extend(unlabelled(&shell.io).await);
            Event::NoIssues
        }
        Ok(Selection::AllEscalated { .. }) => Event::AllEscalated { others_hold },
        Ok(Selection::AllBlocked { numbers }) => {
            told.narrate(say::blocked(&issue_list(&numbers)));
            Event::AllBlocked { others_hold }
        }
        Err(e) => {
            // What the machine makes of it (the run stops, the session stays open) is its
            // own; the error is what the notice and the log name.
            told.narrate(say::tracker_failed(&e));
            told.say(e.to_string());
            Event::TrackerReadFailed
        }
    };
    told.answer(event)
}

/// The selected issue becomes the cycle's: its facts for the prompts, the state file's
/// issue and branch (written); what that narrates.
fn take_up(
    run: &RunContext,
    shell: &mut Shell,
    cycle: &mut Cycle,
    issue: &tracker::Issue,
) -> Option<String> {
    let refs = run.refs();
    let branch = issue.branch_in(&refs);
    cycle.issue = IssueContext {
        number: issue.number,
        title: issue.title.clone(),
        branch: Some(branch.clone()),
    };
    shell.state.current_issue = Some(issue.number);
    shell.state.current_issue_ref = Some(refs.issue(issue.number));
    shell.state.current_branch = Some(branch);
    shell.state.signal_shutdown = None;
    shell.save_state(&run.cfg.project_path)
}

/// `CheckPreconditions`: the facts the runner owns, a person's decision, whether the step is
/// already done and its preconditions: asked in one call off the runtime, judged in that order.
pub(super) async fn check_preconditions(cx: Context<'_>, request: CheckPreconditions) -> Answer {
    let CheckPreconditions { step } = request;
    let (run, shell, core, cycle) = (cx.run, cx.shell, cx.core, &*cx.cycle);
    let mut told = Told::default();
    let ctx = cycle.step_context(core, &run.cfg, step);
    shell.state.current_step = step.number();
    told.narration
        .extend(shell.save_state(&run.cfg.project_path));
    let facts = FactsAsked::before(core, step == Step::StartCycle);
    let probe = shell
        .io
        .call(move |w| {
            crate::process::cancellable(|| Probe::ask(w, facts, |w| StepProbe::ask(w, step, &ctx)))
        })
        .await;
    let asked = match super::facts::verdict(&run.cfg, core, &shell.shutdown, step, probe, &mut told)
    {
        Ok(asked) => asked,
        Err(event) => return told.answer(event),
    };
    let services = || run.cfg.api_services();
    let what = format!("checking whether {} is already done", step.key());
    let (judged, failed) = network::judge(&shell.shutdown, services, &what, asked.done);
    told.told(failed);
    match judged {
        network::Patient::Done(Ok(true)) => {
            told.narrate(say::already_done(step.key()));
            shell.state.last_completed_step = step.number();
            return told.answer(Event::AlreadyDone { step });
        }
        network::Patient::Done(Ok(false)) => {}
        network::Patient::Done(Err(e)) => told.narrate(say::done_probe_failed(step.key(), &e)),
        network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => return told.answer(ev),
    }
    let Some(checked) = asked.checked else {
        // Only an answer that ends the sequence leaves the preconditions unasked.
        return told.answer(Event::PreconditionsOk { step });
    };
    let what = format!("checking the preconditions of {}", step.key());
    let (judged, failed) = network::judge(&shell.shutdown, services, &what, checked);
    told.told(failed);
    let event = match judged {
        network::Patient::Done(Ok(Ok(()))) => Event::PreconditionsOk { step },
        network::Patient::Done(Ok(Err(check))) => Event::PreconditionFailed { step, check },
        network::Patient::Done(Err(e)) => {
            told.narrate(say::precondition_probe_failed(step.key(), &e));
            match crate::step::Check::of(step).first() {
                Some(&check) => Event::PreconditionFailed { step, check },
                None => Event::PreconditionsOk { step },
            }
        }
        network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => ev,
    };
    told.answer(event)
}

/// What a step's own checks said: already done, then (unless that settled it) its
/// preconditions.
struct StepProbe {
    done: Result<bool, checks::ProbeError>,
    checked: Option<Result<Result<(), crate::step::Check>, checks::ProbeError>>,
}

impl StepProbe {
    fn ask(world: &World, step: Step, ctx: &StepContext) -> StepProbe {
        let done = checks::already_done(&*world.git, &*world.forge, step, ctx);
        let settled = match &done {
            Ok(done) => *done,
            Err(e) => network::ends_the_sequence(crate::call_failure::Kinded::kind(e)),
        };
        StepProbe {
            checked: (!settled)
                .then(|| checks::precondition(&*world.git, &*world.forge, step, ctx)),
            done,
        }
    }
}

/// An open issue skipped for lacking the selection label is said, not silently passed over:
/// what to narrate.
pub(super) async fn unlabelled(io: &Io) -> Vec<String> {
    let (skipped, label) = io
        .call(|w| {
            (
                w.tracker.open_without_label(),
                w.tracker.label().to_string(),
            )
        })
        .await;
    if skipped.is_empty() {
        return Vec::new();
    }
    vec![crate::narration::unlabelled(&issue_list(&skipped), &label)]
}

/// `#1, #2` for messages.
pub(super) fn issue_list(numbers: &[u32]) -> String {
    numbers
        .iter()
        .map(|n| format!("#{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
