//! The merge step among other mergers (docs/scaling.md, "Merges"): the driver's side of the
//! machine's merge requests, one call and one answer each. The machine decides the sequence:
//! take the merge turn (`TakeMergeTurn`: the fleet's turn, then the tracker's merge lease),
//! pause while it is busy (`Pause`, on the pure `fleet::LeaseWait` schedule) or halt past the
//! wait's limit, run the merge (`RunStep`: the branch brought up to date with origin's main, a
//! conflict being the merge step's MERGE_CONFLICT, then the merge, agent-run or builtin), treat
//! a lost push race as contention (`MergeRaceLost`, merged again as `fleet::Contention`
//! allows), and give the turn back (`ReleaseMergeTurn`). Nothing here waits or retries.

use super::attempt::AgentCall;
use super::builtin_step::{
    commit_of, persons_move, usage_since, weakening_gate, without_branch, Facts,
};
use super::claim::{self, ClaimKeeper};
use super::context::Context;
use super::cycle::Cycle;
use super::fleet_link::{self, Link};
use super::request::{RunStep, TakeMergeTurn};
use super::step_run::{Calls, StepRun, Voice};
use super::{network, Answer, Told};
use crate::agent::classify::classify_builtin;
use crate::call_failure::{CallFailureKind, Kinded};
use crate::failure::FailureClass;
use crate::narration as say;
use crate::ports::claims::Claimed;
use crate::ports::forge::TrainTree;
use crate::ports::Io;

use crate::machine::{Commit, Core, Event, Signal, Usage};
use crate::step::Step;
use crate::steps::builtin::{self, Failed, Head, IssueFacts, Look};
use sdlc_machine::fleet::Report;

/// `TakeMergeTurn`: one ask for the fleet's turn, then one for the tracker's merge lease
/// (the holder's ask renews it). Busy: who holds it is said for the diagnostics.
pub(super) async fn take_merge_turn(cx: Context<'_>, request: TakeMergeTurn) -> Answer {
    let TakeMergeTurn { issue } = request;
    let (fleet, claims) = (cx.fleet, cx.claims.as_deref());
    let (io, clock, shutdown) = (&cx.shell.io, &*cx.shell.clock, &cx.shell.shutdown);
    let mut told = Told::default();
    if let Some(link) = fleet {
        let car = match car(cx.core, cx.cycle, issue) {
            Some(car) => Some(car),
            None => pushed_car(io, cx.cycle, issue).await,
        };
        if let Some((commit, message)) = car {
            link.board(issue, commit, message, clock.now());
        }
        let reply = link.ask(Report::WantsMerge {
            worker: link.worker,
        });
        reply.said.into_iter().for_each(|line| told.narrate(line));
        if let Some(test) = reply.test {
            for line in run_train_test(link, io, issue, test).await {
                told.narrate(line);
            }
        }
        match reply.start {
            Some(true) => {}
            Some(false) => {
                told.say(match reply.position {
                    Some(position) => say::waiting_in_train(issue, position),
                    None => say::waiting_for_fleet_turn(issue),
                });
                return told.answer(Event::MergeTurnBusy);
            }
            None => {
                // The fleet halted: nothing is merged any more.
                shutdown.request(Signal::Term);
                return told.answer(shutdown.event());
            }
        }
    }
    // The merge lease lasts a claim's lease: a holder that died delays the others by
    // at most that.
    let Some(lease) = claims.map(|k| k.lease) else {
        return told.answer(Event::MergeTurnTaken);
    };
    let now = clock.now();
    let asked = claim::on_claims(claims, io, move |store, worker| {
        let answer = store.lease_merge(issue, worker, lease, now);
        (answer, store.merge_lease_file())
    })
    .await;
    let (answer, lease_file) = match asked {
        Some((answer, file)) => (Some(answer), file),
        None => (None, None),
    };
    let event = match answer {
        None | Some(Ok(None)) | Some(Ok(Some(Claimed::Won(_)))) => Event::MergeTurnTaken,
        Some(Ok(Some(Claimed::Held(holder)))) => {
            let text = say::waiting_for_merge_lease(
                issue,
                (&holder.worker, holder.issue, holder.expires_at),
                lease_file.as_deref(),
            );
            tracing::debug!("{text}");
            told.say(text);
            Event::MergeTurnBusy
        }
        Some(Err(e)) => {
            let text = say::cannot_take_merge_lease(&e);
            told.narrate(say::merge(&text));
            told.say(text);
            Event::TrackerWriteFailed
        }
    };
    told.answer(event)
}

/// The car `issue` boards the merge train with: the commit CI passed in this cycle and the
/// message its builtin merge will carry (none before CI passed a commit).
pub(super) fn car(core: &Core, cycle: &Cycle, issue: u32) -> Option<(String, String)> {
    let title = &cycle.issue.title;
    let message = crate::steps::builtin::merge_message(issue, title);
    core.runner().verified.map(|c| (c.hex(), message))
}

/// The car `issue` boards the merge train with when CI's verdict is the train's
/// (`Limits::train_tests_ci`, no verdict on the branch alone): the commit this clone last
/// pushed to the issue's branch. The merge lands only the tree CI passed whatever it is.
async fn pushed_car(io: &Io, cycle: &Cycle, issue: u32) -> Option<(String, String)> {
    let message = crate::steps::builtin::merge_message(issue, &cycle.issue.title);
    let branch = cycle.issue.branch.clone();
    let head = io
        .call(move |w| {
            let found = w.git.feature_branch(issue).ok().flatten();
            let branch = found.or(branch)?;
            w.git.last_pushed(&branch).ok().flatten()
        })
        .await?;
    Some((head, message))
}

/// One test of the merge train, handed to this worker while it waits: the tree built from
/// the cars' merges (as the builtin merge builds each) on the epoch's main, CI run on it
/// (or its verdict read), and the verdict reported. A tree that could not be tested for the
/// environment's reason is reported abandoned (tested again); main found moved without the
/// train is reported, and every tree is built again. What it narrates.
async fn run_train_test(
    link: &Link,
    io: &Io,
    issue: u32,
    test: sdlc_machine::fleet::Test,
) -> Vec<String> {
    let worker = link.worker;
    let (id, epoch) = (test.id, test.tree.epoch);
    let cars = test.tree.cars.clone();
    let mut said = vec![say::train_testing(issue, &cars, epoch)];
    let Some(merges) = link.merges_of(&cars) else {
        link.report(Report::TestAbandoned { worker, id });
        return said;
    };
    let base = link.base_of(epoch);
    let call = crate::process::call_id();
    let watch = link.watch_test(id, call);
    let ran = io
        .call(move |w| {
            crate::process::withdrawable(call, || w.forge.test_train(base.as_deref(), &merges))
        })
        .await;
    watch.abort();
    crate::process::forget_withdrawal(call);
    match ran {
        Ok(TrainTree::Tested {
            base,
            merge,
            passed,
        }) if link.settle_base(epoch, &base) => {
            said.push(say::train_tested(&cars, merge.as_deref(), passed));
            let reply = link.ask(Report::Tested { worker, id, passed });
            if reply.said.is_empty() {
                // A verdict known behind a head not settled yet: the train's journal holds it.
                crate::failpoint::point("merge train: a verdict waits behind the head");
            }
            said.extend(reply.said);
        }
        Ok(TrainTree::Tested { base, .. }) => {
            said.push(say::train_main_moved(&base));
            link.report(Report::MainMoved { worker, epoch });
            link.report(Report::TestAbandoned { worker, id });
        }
        Ok(TrainTree::MainMoved { main }) => {
            said.push(say::train_main_moved(&main));
            link.report(Report::MainMoved { worker, epoch });
            link.report(Report::TestAbandoned { worker, id });
        }
        Err(_) if !link.test_wanted(id) => said.push(say::train_withdrawn(&cars)),
        Err(e) => {
            said.push(say::train_not_tested(&cars, &e));
            link.report(Report::TestAbandoned { worker, id });
        }
    }
    said
}

/// `ReleaseMergeTurn`: the tracker's lease and then the fleet's turn given back (merged or
/// not), so that the next worker to get the turn finds the lease free. Idempotent. What it
/// narrates.
pub(super) async fn release_merge_turn(cx: Context<'_>) -> Vec<String> {
    give_turn_back(cx.fleet, cx.claims.as_deref(), &cx.shell.io).await
}

/// The tracker's lease and then the fleet's turn given back (`release_merge_turn`, and when
/// the run ends); what it narrates.
pub(super) async fn give_turn_back(
    fleet: Option<&Link>,
    claims: Option<&ClaimKeeper>,
    io: &Io,
) -> Vec<String> {
    let said = release_merge_lease(claims, io).await;
    fleet_link::tell(fleet, |worker| Report::MergeDone { worker });
    said
}

/// Gives this runner's merge lease back, if it holds it. Also at the start of a fleet's
/// worker: a lease left under its id by a killed run is stale (the project's lock is this
/// run's), and keeping it would make the worker that has the fleet's turn wait for it.
pub(super) async fn release_merge_lease(claims: Option<&ClaimKeeper>, io: &Io) -> Vec<String> {
    let released = claim::on_claims(claims, io, |store, worker| store.release_merge(worker)).await;
    match released {
        Some(Err(e)) => vec![say::cannot_give_merge_lease_back(&e)],
        _ => Vec::new(),
    }
}

impl StepRun<'_> {
    /// One merge run (`RunStep` of merge, within the turn): origin's branch looked at first
    /// (one fetch: a person's merge, a closed PR or deleted branch, a moved head are the
    /// machine's events, and nothing is merged), then exactly `commit`, the one CI passed in
    /// this cycle, merged (builtin: an atomic push that fails should the branch or main move;
    /// without a verdict of this cycle, origin's head once CI lets it merge; only a tree CI
    /// passed lands, so a main that moved since the verdict is `CiFailedTogether` when CI
    /// fails the commit main would hold, or `BranchBehind` on a remote forge). An agent-run
    /// merge has the branch brought up to date first, as before. A failure that lost a push
    /// race is answered as `MergeRaceLost`: the machine decides whether it is merged again.
    pub(super) async fn run_merge(&mut self, request: RunStep) -> Event {
        let RunStep { issue, commit, .. } = request;
        let step = Step::Merge;
        if self.core.runner().queue_waits > 0 {
            return self.look_at_queue(issue).await;
        }
        let (target, main) = match self.look_before_merge(issue, commit).await {
            Ok(found) => found,
            Err(event) => return event,
        };
        // A conflict's repair attempt (the machine's word) has the agent bring the branch up
        // to date; doing it here first would only meet the same conflict again.
        let conflict_repair = self.core.runner().conflict_repair().is_some();
        let builtin = self.run.cfg.builtin(step);
        let base = if builtin || conflict_repair {
            // The builtin merge merges the verified commit itself, never a branch updated
            // after CI passed it.
            main.filter(|_| self.run.forge_local)
        } else {
            match self.up_to_date(issue, target.hex()).await {
                Ok(base) => base,
                Err(event) => return event,
            }
        };
        if !builtin && !conflict_repair {
            if let Some(event) = self.gate_before_the_agent(issue).await {
                return event;
            }
        }
        let event = if builtin {
            let merged = RunStep {
                commit: Some(target),
                ..request
            };
            self.run_builtin(merged, commit.is_some()).await
        } else {
            let run = self.run;
            self.run_agent(AgentCall::step(request, &run.cfg)).await
        };
        let failed = match event {
            Event::StepFailed {
                class,
                signature,
                usage,
                ..
            } => (class, signature, usage),
            other => return other,
        };
        if !builtin && failed.0 == FailureClass::PostCheck && self.agent_queued(issue).await {
            return Event::MergeQueued { usage: failed.2 };
        }
        // The merge was refused: a person's move since the look (the atomic push's lease on
        // the branch failed) is the answer, not the attempt's failure.
        if builtin {
            let (calls, cycle, voice) = self.calls();
            if let network::Patient::Done(Ok(look)) =
                look_raw(calls, cycle, voice, Some(target)).await
            {
                if !matches!(look.head, Head::At(_)) {
                    return persons_move(
                        &mut self.voice,
                        &self.cycle.issue,
                        &self.run.main,
                        look.head,
                    );
                }
            }
        }
        if !lost_race(&self.shell.io, issue, base).await {
            return event;
        }
        self.voice.log(&say::lost_push_race(issue, &self.run.main));
        let (class, signature, usage) = failed;
        Event::MergeRaceLost {
            class,
            signature,
            usage,
        }
    }

    /// `UpdateBranch`, after the agent repaired the merge's conflict: the branch brought up to
    /// date with origin's main (a merge left half done is aborted first and kept on a rescue
    /// ref; one that still conflicts is the merge's MERGE_CONFLICT, both sides in its words;
    /// markers are refused) and pushed. `BranchUpdated` with origin's head, which CI passes
    /// before any merge.
    pub(super) async fn update_branch(&mut self, issue: u32, commit: Option<Commit>) -> Event {
        let step = Step::Merge;
        self.know(issue).await;
        let started = self.shell.clock.instant();
        let verified = commit.map(|c| c.hex()).unwrap_or_default();
        let gate = weakening_gate(&self.run.cfg, self.core);
        let facts = Facts::of(self.cycle, self.run.refs()).gated(gate);
        let what = format!("bringing the branch up to date with {}", self.run.main);
        let updated = self
            .patiently(&what, move |w| {
                facts.with(&*w.git, |facts| {
                    builtin::update_branch(&*w.git, &*w.forge, facts, &verified)
                })
            })
            .await;
        let usage = usage_since(&*self.shell.clock, started);
        let failed = match updated {
            network::Patient::Done(Ok(builtin::Update::Person(head))) => {
                return persons_move(&mut self.voice, &self.cycle.issue, &self.run.main, head)
            }
            network::Patient::Done(Ok(builtin::Update::Pushed(head))) => match commit_of(&head) {
                Ok(head) => {
                    crate::failpoint::point("branch updated: pushed");
                    let said = say::pushed_for_ci(&self.run.main, &head.short());
                    self.voice.say(said.clone());
                    self.voice.log(&say::of_step(step.key(), &said));
                    return Event::BranchUpdated { head, usage };
                }
                Err(failed) => failed,
            },
            network::Patient::Done(Err(failed)) => failed,
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => return ev,
        };
        if !failed.weakened.is_empty() {
            return self.builtin_failed(step, issue, failed, usage).await;
        }
        let text = say::call_failed(&what, &failed.what);
        if failed.kind == CallFailureKind::Conflict {
            return self.merge_conflict(&text, failed.paths, usage);
        }
        self.voice.say(text.clone());
        let text = without_branch(&self.shell.io, &self.cycle.issue, &text).await;
        let c = classify_builtin(step.key(), &text, failed.kind, false);
        self.failed(step, issue, c, usage)
    }

    /// The branch conflicts with main (`what` says where, with both sides where git gave
    /// them): said, logged and kept as the merge's failure context (the repair's prompt and
    /// the journal), and answered as `MergeConflict` with the files, for the machine to meet.
    pub(super) fn merge_conflict(&mut self, what: &str, paths: Vec<String>, usage: Usage) -> Event {
        let issue = self.cycle.issue.number;
        let named = if paths.is_empty() {
            "the forge names no file".to_string()
        } else {
            paths.join(", ")
        };
        let summary = say::conflicts_in(&self.run.main, &named);
        self.voice.say(what.to_string());
        self.voice.log(&say::merge_conflict(&summary));
        self.shell.notifier.send(
            crate::notify::Severity::Warning,
            &say::of_issue(issue, &summary),
        );
        let class = FailureClass::MergeConflict;
        self.voice
            .remember_failure(Step::Merge, class, &summary, what);
        self.save_state();
        Event::MergeConflict { paths, usage }
    }

    /// Before an agent is asked to merge: what the forge's fields say keeps the PR from
    /// merging, answered as the builtin merge answers it (a branch behind its base:
    /// `BranchBehind`, the machine's update and CI again; a rule of the base branch: the
    /// halt naming it). `None`: the agent may merge (a look that fails otherwise leaves the
    /// verdict to the agent's merge and its post-check).
    async fn gate_before_the_agent(&mut self, issue: u32) -> Option<Event> {
        let step = Step::Merge;
        let branch = self
            .shell
            .io
            .call(move |w| w.git.feature_branch(issue))
            .await;
        let Ok(Some(branch)) = branch else {
            return None;
        };
        let started = self.shell.clock.instant();
        let looked = self
            .patiently("reading the pull request's merge state", move |w| {
                w.forge.merge_gate(&branch)
            })
            .await;
        let usage = usage_since(&*self.shell.clock, started);
        match looked {
            network::Patient::Done(Ok(())) => None,
            network::Patient::Done(Err(e)) if e.kind() == CallFailureKind::Behind => {
                let said = e.to_string();
                self.voice.say(said.clone());
                self.voice.log(&say::of_step(step.key(), &said));
                Some(Event::BranchBehind { usage })
            }
            network::Patient::Done(Err(e)) if e.kind() == CallFailureKind::Policy => {
                let text = e.to_string();
                self.voice.say(text.clone());
                let c = classify_builtin(step.key(), &text, e.kind(), false);
                Some(self.failed(step, issue, c, usage))
            }
            network::Patient::Done(Err(_)) => None,
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => Some(ev),
        }
    }

    /// The look before the merge: `Ok` with the commit to merge (`commit`, when origin's head
    /// still is it; without one, origin's head as the runner pushed it) and origin's main as
    /// the fetch saw it; `Err` with the event of a person's move or of a failed look.
    async fn look_before_merge(
        &mut self,
        issue: u32,
        commit: Option<Commit>,
    ) -> Result<(Commit, Option<String>), Event> {
        let step = Step::Merge;
        let (calls, cycle, voice) = self.calls();
        let looked = look_raw(calls, cycle, voice, commit).await;
        match looked {
            network::Patient::Done(Ok(look)) => match look.head {
                Head::At(head) => match Commit::parse(&head) {
                    Some(c) => Ok((c, look.main)),
                    None => Err(persons_move(
                        &mut self.voice,
                        &self.cycle.issue,
                        &self.run.main,
                        Head::At(head),
                    )),
                },
                other => Err(persons_move(
                    &mut self.voice,
                    &self.cycle.issue,
                    &self.run.main,
                    other,
                )),
            },
            network::Patient::Done(Err(failed)) => {
                let text = say::looked_before_merge(&failed);
                self.voice.say(text.clone());
                let c = classify_builtin(step.key(), &text, failed.kind, false);
                Err(self.failed(step, issue, c, Usage::default()))
            }
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => Err(ev),
        }
    }

    /// Brings the issue's branch up to date with origin's main (local forge: on GitHub the
    /// forge merges against its newest main itself). `Ok(origin's main)` as it stood;
    /// `Err(event)` for a conflict (MERGE_CONFLICT) or another failure of the step. The push
    /// is leased on `seen`, origin's head the look before the merge found.
    async fn up_to_date(&mut self, issue: u32, seen: String) -> Result<Option<String>, Event> {
        let step = Step::Merge;
        if !self.run.forge_local {
            return Ok(None);
        }
        let branch = match self
            .shell
            .io
            .call(move |w| w.git.feature_branch(issue))
            .await
        {
            Ok(Some(branch)) => branch,
            _ => {
                // No branch to bring up to date: the step's own checks say what is missing.
                let main = self
                    .shell
                    .io
                    .call(|w| w.git.origin_main().ok().flatten())
                    .await;
                return Ok(main);
            }
        };
        let what = format!("bringing {branch} up to date with {}", self.run.main);
        match self
            .patiently(&what, move |w| w.git.bring_up_to_date(&branch, Some(&seen)))
            .await
        {
            network::Patient::Done(Ok(base)) => Ok(base),
            network::Patient::Done(Err(e)) => {
                let text = say::call_failed(&what, &e);
                if let Some(paths) = e.conflict_paths() {
                    return Err(self.merge_conflict(&text, paths.to_vec(), Usage::default()));
                }
                self.voice.say(text.clone());
                let c = classify_builtin(step.key(), &text, e.kind(), false);
                Err(self.failed(step, issue, c, Usage::default()))
            }
            network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => Err(ev),
        }
    }
}

/// One look at origin's branch against `commit` (none: the local head).
pub(super) async fn look_raw(
    calls: Calls<'_>,
    cycle: &Cycle,
    voice: &mut Voice<'_>,
    commit: Option<Commit>,
) -> network::Patient<Look, Failed> {
    let expected = commit.map(|c| c.hex());
    let number = cycle.issue.number;
    let title = cycle.issue.title.clone();
    let branch = cycle.issue.branch.clone();
    let refs = calls.run.refs();
    let what = "looking at the branch before the merge";
    calls
        .patiently(voice, what, move |w| {
            let found = w.git.feature_branch(number).ok().flatten();
            let facts = IssueFacts {
                number,
                title: &title,
                branch: found.as_deref().or(branch.as_deref()),
                feature: None,
                refs: &refs,
                gate: None,
            };
            builtin::look(&*w.git, &*w.forge, &facts, expected.as_deref())
        })
        .await
}

/// Whether the failed merge lost a race: origin's main moved on from `base` and the
/// branch is not in it. A question git cannot answer counts as no race (the failure then
/// stands as the attempt's).
async fn lost_race(io: &Io, issue: u32, base: Option<String>) -> bool {
    io.call(move |w| match w.git.feature_branch(issue) {
        Ok(Some(branch)) => w.git.lost_race(&branch, base.as_deref()).unwrap_or(false),
        _ => false,
    })
    .await
}
