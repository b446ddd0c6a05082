//! The review gate between CI's pass and the merge: the PR's review is looked at; a request
//! for changes, or no approval where one is required, keeps it from merging. The machine
//! waits on its own schedule, bounded by `review.approvalTimeoutMinutes`, a person told
//! once; past it the cycle ends waiting for that person: no attempt spent, the issue neither
//! blamed nor quarantined, and the next session looks again.
//!
//! A request for changes with feedback the agent was not given yet starts a round: the agent
//! is handed that feedback (`AddressReview`), the runner pushes, CI and the review are looked
//! at again. `review.maxReviewRounds` rounds per cycle; new feedback after them escalates.

use super::{Fx, Runner, State};
use crate::machine::types::*;
use crate::step::Step;
use statig::prelude::*;

impl Runner {
    /// Whether a look at the review comes between `step`'s success and the merge.
    pub(super) fn gates_merge(&self, step: Step) -> bool {
        self.limits.review.is_some() && self.limits.next_step(step) == Some(Step::Merge)
    }

    /// Ask for a look at the PR's review (the cycle's next look).
    pub(super) fn look_at_review(&mut self, fx: &mut Fx) -> Outcome<State> {
        self.dispatched = false;
        let look = Effect::LookAtReview {
            issue: self.current_issue(),
            look: self.review_looks + 1,
        };
        self.request(State::awaiting_review(), look, fx);
        Transition(State::awaiting_review())
    }

    /// What the reviewers decided. A PR whose review lets it merge goes on to the merge;
    /// otherwise the machine pauses and looks again while the schedule lasts, then ends the
    /// cycle waiting for a person.
    pub(super) fn review_looked(
        &mut self,
        decision: ReviewDecision,
        feedback: &[ReviewNote],
        fx: &mut Fx,
    ) -> Outcome<State> {
        let Some(gate) = self.limits.review.clone() else {
            return self.enter(Step::Merge, fx);
        };
        let merges = match decision {
            ReviewDecision::Approved => true,
            ReviewDecision::None => !gate.require_approval,
            ReviewDecision::ChangesRequested => false,
        };
        if merges {
            return self.enter(Step::Merge, fx);
        }
        if decision == ReviewDecision::ChangesRequested {
            let fresh = self.fresh_feedback(&gate, feedback);
            if !fresh.is_empty() {
                if self.review_rounds >= gate.max_rounds {
                    self.review_unresolved = fresh;
                    return self.escalate(
                        Step::MonitorCi,
                        EscalationCause::ReviewRoundsExhausted,
                        fx,
                    );
                }
                return self.address_review(fresh, fx);
            }
        }
        let issue = self.current_issue();
        if self.review_looks == 0 {
            fx.push(Effect::Notify(Notice::ReviewWanted {
                issue,
                changes_requested: decision == ReviewDecision::ChangesRequested,
                wait_secs: gate.wait_secs,
            }));
        }
        let pause = self
            .limits
            .review_polls()
            .get(self.review_looks as usize)
            .copied();
        self.review_looks += 1;
        match pause {
            Some(seconds) => {
                fx.push(Effect::Wait {
                    seconds,
                    reason: Some(WaitReason::Review),
                });
                Transition(State::waiting_for_review(seconds))
            }
            None => self.wait_for_person(issue, fx),
        }
    }

    /// The feedback the agent may be handed: not written by an ignored author (the runner's
    /// own account among them), not handed before, each id once.
    fn fresh_feedback(&self, gate: &ReviewGate, feedback: &[ReviewNote]) -> Vec<ReviewNote> {
        let mut seen = std::collections::BTreeSet::new();
        feedback
            .iter()
            .filter(|n| !gate.ignore_authors.contains(&n.author))
            .filter(|n| !self.review_handed.contains(&n.id))
            .filter(|n| seen.insert(n.id.as_str()))
            .cloned()
            .collect()
    }

    /// A round: the agent is handed `fresh` (remembered as handed from now on, so no restart
    /// or later round hands it again) within monitorCI's attempt budget; the runner's push
    /// and CI's look follow as after monitorCI's repair.
    fn address_review(&mut self, fresh: Vec<ReviewNote>, fx: &mut Fx) -> Outcome<State> {
        if let Some(outcome) = self.over_budget(Step::MonitorCi, fx) {
            return outcome;
        }
        self.review_rounds += 1;
        self.review_handed
            .extend(fresh.iter().map(|n| n.id.clone()));
        self.review_handout = fresh;
        self.run_round(fx)
    }

    /// Whether a round was asked for and not yet answered by `Repaired`: until it is, every
    /// attempt of monitorCI is that round's (its feedback is handed already, so no later
    /// round would take it up).
    pub fn round_pending(&self) -> bool {
        !self.review_handout.is_empty()
    }

    /// An attempt of the round under way (`review_handout`): its first, or its retry after
    /// a failure, a wait or a restart. A retry is no new round: `review_rounds` stays, and
    /// monitorCI's attempts bound the retries.
    pub(super) fn run_round(&mut self, fx: &mut Fx) -> Outcome<State> {
        let step = Step::MonitorCi;
        self.dispatched = true;
        self.ci_waits = 0;
        self.ci_waited_secs = 0;
        self.ci_commit = None;
        self.verified = None;
        self.pending_usage = Usage::default();
        let run = Effect::AddressReview {
            issue: self.current_issue(),
            round: self.review_rounds,
            attempt: self.attempts[step.index()] + 1,
            money_left_micros: self.money_left_micros(),
        };
        self.request(State::monitor_ci(), run, fx);
        Transition(State::monitor_ci())
    }

    /// Nobody's review let the PR merge in time: the cycle ends, the branch and its PR stay
    /// as they are, and the issue is left out of this session's selections.
    fn wait_for_person(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        self.awaiting_person.insert(issue);
        self.dispatched = false;
        fx.push(Effect::Cleanup);
        fx.push(Effect::CheckoutMain);
        fx.push(Effect::Notify(Notice::WaitingForPerson { issue }));
        if let Mode::SingleIssue(_) = self.mode {
            return self.finish(0, fx);
        }
        fx.push(Effect::ResetCycle);
        self.select_next(fx)
    }

    /// Selection found nothing to offer: with issues waiting for a person, or held by
    /// other runners or workers (`others_hold`, and the claims this session found held), the
    /// session ends as done for now (someone is on them; they are not failures); otherwise
    /// `otherwise` stands.
    pub(super) fn nothing_selectable(
        &mut self,
        otherwise: HaltReason,
        others_hold: bool,
        fx: &mut Fx,
    ) -> Outcome<State> {
        if self.awaiting_person.is_empty() && !others_hold && self.held_elsewhere.is_empty() {
            return self.halt(otherwise, fx);
        }
        fx.push(Effect::Notify(Notice::NothingToDo));
        self.finish(0, fx)
    }
}

#[cfg(test)]
mod tests {
    use crate::failure::{FailureClass, Signature};
    use crate::machine::*;
    use crate::step::Step;

    /// The review gate's wait of `seconds`: what a look that finds no verdict yet asks for.
    fn review_wait(seconds: u64) -> Effect {
        Effect::Wait {
            seconds,
            reason: Some(WaitReason::Review),
        }
    }

    fn gated(require_approval: bool, wait_secs: u64) -> Limits {
        Limits {
            review: Some(ReviewGate::new(require_approval, wait_secs)),
            ..Limits::default()
        }
    }

    /// A core whose monitorCI just passed CI on issue 4.
    fn after_ci(limits: Limits, mode: Mode) -> (Core, Vec<Effect>) {
        let mut core = Core::new(limits, mode);
        core.handle(&Event::Start);
        core.handle(&Event::IssueSelected { issue: 4 });
        for step in Step::ALL {
            core.handle(&Event::PreconditionsOk { step });
            if step == Step::MonitorCi {
                let commit = Commit::parse(&"ab".repeat(20)).expect("commit");
                let fx = core
                    .handle(&Event::CiPassed {
                        commit,
                        usage: Usage::default(),
                    })
                    .to_vec();
                return (core, fx);
            }
            core.handle(&Event::StepSucceeded {
                step,
                usage: Usage::default(),
            });
        }
        unreachable!("monitorCI is a step")
    }

    fn looked(core: &mut Core, decision: ReviewDecision) -> Vec<Effect> {
        core.handle(&Event::ReviewLooked {
            decision,
            feedback: Vec::new(),
        })
        .to_vec()
    }

    fn note(id: &str, author: &str, body: &str) -> ReviewNote {
        ReviewNote {
            id: id.into(),
            author: author.into(),
            time: "2026-01-01T00:00:00Z".into(),
            body: body.into(),
            path: None,
            line: None,
        }
    }

    fn changes(core: &mut Core, feedback: Vec<ReviewNote>) -> Vec<Effect> {
        core.handle(&Event::ReviewLooked {
            decision: ReviewDecision::ChangesRequested,
            feedback,
        })
        .to_vec()
    }

    /// The round's agent succeeded and the runner pushed; CI passes the new head.
    fn round_pushed_and_ci_passed(core: &mut Core) -> Vec<Effect> {
        let fx = core.handle(&Event::Repaired {
            step: Step::MonitorCi,
            usage: Usage::default(),
        });
        assert!(
            matches!(fx.effects(), [Effect::LookAtCi { commit: None, .. }]),
            "CI is looked at for the pushed head: {fx:?}"
        );
        let commit = Commit::parse(&"cd".repeat(20)).expect("commit");
        core.handle(&Event::CiPassed {
            commit,
            usage: Usage::default(),
        })
        .to_vec()
    }

    #[test]
    fn new_feedback_on_a_request_for_changes_is_handed_to_the_agent_once_then_pushed_and_looked_at_again(
    ) {
        let (mut core, _) = after_ci(gated(false, 60), Mode::Continuous);
        let fx = changes(
            &mut core,
            vec![
                note("r1", "ann", "Rename foo."),
                note("r1", "ann", "Rename foo."),
                note("c2", "bob", "And the docs."),
            ],
        );
        assert_eq!(
            fx,
            [Effect::AddressReview {
                issue: 4,
                round: 1,
                attempt: 1,
                money_left_micros: None
            }]
        );
        assert_eq!(core.state().name(), "MonitorCi");
        let r = core.runner();
        let ids: Vec<&str> = r.review_handout.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["r1", "c2"], "deduplicated by id");
        // (A restart before the round's answer asks for the round again: see
        // `a_restart_mid_round_replays_the_handout_and_asks_for_the_round_again`.)
        assert_eq!(
            round_pushed_and_ci_passed(&mut core),
            [Effect::LookAtReview { issue: 4, look: 1 }]
        );
        // The same request still stands, nothing new: the merge waits, nothing handed again.
        let fx = changes(
            &mut core,
            vec![note("r1", "ann", "Rename foo."), note("c2", "bob", "x")],
        );
        assert_eq!(fx.last(), Some(&review_wait(10)), "{fx:?}");
        assert_eq!(core.runner().review_rounds, 1);
        core.handle(&Event::WaitOver);
        assert_eq!(
            looked(&mut core, ReviewDecision::Approved),
            [Effect::CheckPreconditions { step: Step::Merge }]
        );
    }

    fn round_failed(core: &mut Core, class: FailureClass, signature: u64) -> Vec<Effect> {
        core.handle(&Event::StepFailed {
            step: Step::MonitorCi,
            class,
            signature: Signature(signature),
            usage: Usage::default(),
            wait_hint_secs: None,
        })
        .to_vec()
    }

    fn handout_ids(core: &Core) -> Vec<String> {
        core.runner()
            .review_handout
            .iter()
            .map(|n| n.id.clone())
            .collect()
    }

    fn round(round: u32, attempt: u32) -> Effect {
        Effect::AddressReview {
            issue: 4,
            round,
            attempt,
            money_left_micros: None,
        }
    }

    #[test]
    fn a_failed_round_is_retried_as_the_same_round_until_the_retries_run_out() {
        let (mut core, _) = after_ci(gated(false, 60), Mode::Continuous);
        assert_eq!(
            changes(&mut core, vec![note("r1", "ann", "Rename foo.")]),
            [round(1, 1)]
        );
        for attempt in 2..=Limits::default().max_retries_per_step {
            let fx = round_failed(&mut core, FailureClass::TestAssertion, u64::from(attempt));
            assert_eq!(
                fx.last(),
                Some(&Effect::CheckPreconditions {
                    step: Step::MonitorCi
                }),
                "{fx:?}"
            );
            // The retry is the round again: same round, the next attempt, the same handout.
            let fx = core
                .handle(&Event::PreconditionsOk {
                    step: Step::MonitorCi,
                })
                .to_vec();
            assert_eq!(fx, [round(1, attempt)]);
            assert_eq!(handout_ids(&core), ["r1"]);
            assert_eq!(core.runner().review_rounds, 1, "a retry is no new round");
        }
        // Past maxRetriesPerStep the issue escalates; the handout goes with the cycle.
        let fx = round_failed(&mut core, FailureClass::TestAssertion, 99);
        assert!(fx.contains(&Effect::MarkEscalated { issue: 4 }), "{fx:?}");
        assert!(core.runner().review_handout.is_empty());
    }

    #[test]
    fn a_round_waited_out_asks_for_the_round_again_without_spending_an_attempt() {
        let (mut core, _) = after_ci(gated(false, 60), Mode::Continuous);
        changes(&mut core, vec![note("r1", "ann", "Rename foo.")]);
        let fx = round_failed(&mut core, FailureClass::RateLimit, 1);
        assert!(matches!(fx.last(), Some(Effect::Wait { .. })), "{fx:?}");
        core.handle(&Event::WaitOver);
        let fx = core.handle(&Event::PreconditionsOk {
            step: Step::MonitorCi,
        });
        assert_eq!(fx, [round(1, 1)]);
    }

    #[test]
    fn once_a_round_is_repaired_a_later_failure_of_monitor_ci_is_monitor_cis_own_retry() {
        let (mut core, _) = after_ci(gated(false, 60), Mode::Continuous);
        changes(&mut core, vec![note("r1", "ann", "Rename foo.")]);
        core.handle(&Event::Repaired {
            step: Step::MonitorCi,
            usage: Usage::default(),
        });
        assert!(
            core.runner().review_handout.is_empty(),
            "the round answered"
        );
        // CI fails on the round's push: monitorCI's retry repairs CI, it hands no feedback.
        round_failed(&mut core, FailureClass::TestAssertion, 1);
        let fx = core.handle(&Event::PreconditionsOk {
            step: Step::MonitorCi,
        });
        assert!(
            matches!(
                fx.effects(),
                [Effect::RunStep {
                    step: Step::MonitorCi,
                    attempt: 2,
                    ..
                }]
            ),
            "{fx:?}"
        );
        assert_eq!(core.runner().review_rounds, 1);
    }

    #[test]
    fn a_restart_mid_round_replays_the_handout_and_asks_for_the_round_again() {
        let (mut core, _) = after_ci(gated(false, 60), Mode::Continuous);
        let look = Event::ReviewLooked {
            decision: ReviewDecision::ChangesRequested,
            feedback: vec![note("r1", "ann", "Rename foo.")],
        };
        assert_eq!(core.handle(&look), [round(1, 1)]);
        // The journal's events, replayed into a fresh machine as a restart does: the round
        // was asked for and never answered (the runner was killed under its agent).
        let events = journal_to_round(look.clone());
        let mut fresh = Core::new(gated(false, 60), Mode::Continuous);
        for e in &events {
            fresh.handle(e);
        }
        assert_eq!(
            fresh.snapshot(),
            core.snapshot(),
            "replay rebuilds the handout"
        );
        let fx = fresh.handle(&Event::Start).to_vec();
        assert!(
            fx.contains(&Effect::Notify(Notice::Retrying {
                step: Step::MonitorCi,
                attempt: 2,
                class: FailureClass::Killed
            })),
            "the killed round is a KILLED attempt: {fx:?}"
        );
        let fx = fresh.handle(&Event::PreconditionsOk {
            step: Step::MonitorCi,
        });
        assert_eq!(fx, [round(1, 2)]);
        assert_eq!(handout_ids(&fresh), ["r1"]);
        // A stop by a signal mid-round: the restart asks for the same attempt of the round.
        let mut stopped = Core::new(gated(false, 60), Mode::Continuous);
        for e in &events {
            stopped.handle(e);
        }
        stopped.handle(&Event::ShutdownRequested {
            signal: Signal::Term,
            usage: Usage::default(),
        });
        stopped.handle(&Event::Start);
        let fx = stopped.handle(&Event::PreconditionsOk {
            step: Step::MonitorCi,
        });
        assert_eq!(fx, [round(1, 1)]);
    }

    /// The events of `after_ci` and then `look`, as the journal holds them.
    fn journal_to_round(look: Event) -> Vec<Event> {
        let mut events = vec![Event::Start, Event::IssueSelected { issue: 4 }];
        for step in Step::ALL {
            events.push(Event::PreconditionsOk { step });
            if step == Step::MonitorCi {
                events.push(Event::CiPassed {
                    commit: Commit::parse(&"ab".repeat(20)).expect("commit"),
                    usage: Usage::default(),
                });
                break;
            }
            events.push(Event::StepSucceeded {
                step,
                usage: Usage::default(),
            });
        }
        events.push(look);
        events
    }

    #[test]
    fn feedback_still_new_after_max_rounds_escalates_quoting_it() {
        let (mut core, _) = after_ci(gated(false, 60), Mode::Continuous);
        for round in 1..=ReviewGate::DEFAULT_MAX_ROUNDS {
            let fx = changes(&mut core, vec![note(&format!("r{round}"), "ann", "again")]);
            assert!(
                matches!(fx[..], [Effect::AddressReview { round: r, .. }] if r == round),
                "{fx:?}"
            );
            round_pushed_and_ci_passed(&mut core);
        }
        let fx = changes(&mut core, vec![note("r9", "ann", "Still wrong.")]);
        assert!(fx.contains(&Effect::MarkEscalated { issue: 4 }), "{fx:?}");
        let fx = core.handle(&Event::TrackerUpdated).to_vec();
        assert!(
            fx.contains(&Effect::Notify(Notice::Escalated {
                issue: 4,
                step: Step::MonitorCi,
                cause: EscalationCause::ReviewRoundsExhausted,
                consecutive: 1
            })),
            "{fx:?}"
        );
        assert_eq!(
            core.runner().review_unresolved,
            [note("r9", "ann", "Still wrong.")]
        );
    }

    #[test]
    fn ignored_authors_are_never_handed_and_alone_hold_the_merge_without_a_round() {
        let mut limits = gated(false, 60);
        if let Some(gate) = limits.review.as_mut() {
            gate.ignore_authors = vec!["lint-bot".into()];
        }
        let (mut core, _) = after_ci(limits, Mode::Continuous);
        let fx = changes(&mut core, vec![note("b1", "lint-bot", "nit")]);
        assert_eq!(fx.last(), Some(&review_wait(10)), "{fx:?}");
        core.handle(&Event::WaitOver);
        let fx = changes(
            &mut core,
            vec![note("b1", "lint-bot", "nit"), note("h1", "ann", "fix it")],
        );
        assert!(matches!(fx[..], [Effect::AddressReview { .. }]), "{fx:?}");
        let ids: Vec<&str> = core
            .runner()
            .review_handout
            .iter()
            .map(|n| n.id.as_str())
            .collect();
        assert_eq!(ids, ["h1"]);
    }

    #[test]
    fn an_older_journals_look_without_feedback_still_reads() {
        let old = r#"{"event":"reviewLooked","decision":"changesRequested"}"#;
        let read: Event = serde_json::from_str(old).expect("an older journal's look");
        assert_eq!(
            read,
            Event::ReviewLooked {
                decision: ReviewDecision::ChangesRequested,
                feedback: Vec::new()
            }
        );
        let gate: ReviewGate =
            serde_json::from_str(r#"{"require_approval":false,"wait_secs":60}"#).expect("gate");
        assert_eq!(gate, ReviewGate::new(false, 60));
    }

    #[test]
    fn without_a_gate_ci_passing_goes_straight_to_the_merge() {
        let (_, fx) = after_ci(Limits::default(), Mode::Continuous);
        assert_eq!(fx, [Effect::CheckPreconditions { step: Step::Merge }]);
    }

    #[test]
    fn the_review_is_looked_at_after_ci_and_a_pr_nobody_objects_to_merges() {
        let (mut core, fx) = after_ci(gated(false, 60), Mode::Continuous);
        assert_eq!(fx, [Effect::LookAtReview { issue: 4, look: 1 }]);
        assert_eq!(core.state().name(), "AwaitingReview");
        // A restart looks again; a network failure of the look is waited out and looked again.
        assert_eq!(
            core.handle(&Event::Start),
            [Effect::LookAtReview { issue: 4, look: 1 }]
        );
        core.handle(&Event::NetworkFailed);
        assert_eq!(
            core.handle(&Event::WaitOver),
            [Effect::LookAtReview { issue: 4, look: 1 }]
        );
        assert_eq!(
            looked(&mut core, ReviewDecision::None),
            [Effect::CheckPreconditions { step: Step::Merge }]
        );
    }

    #[test]
    fn changes_requested_keep_the_merge_waiting_until_approved_a_person_told_once() {
        let (mut core, _) = after_ci(gated(false, 3600), Mode::Continuous);
        let fx = looked(&mut core, ReviewDecision::ChangesRequested);
        assert_eq!(
            fx,
            [
                Effect::Notify(Notice::ReviewWanted {
                    issue: 4,
                    changes_requested: true,
                    wait_secs: 3600
                }),
                review_wait(10)
            ]
        );
        assert_eq!(core.state().name(), "WaitingForReview");
        // A restart in the wait waits again, then looks.
        assert_eq!(core.handle(&Event::Start), [review_wait(10)]);
        assert_eq!(
            core.handle(&Event::WaitOver),
            [Effect::LookAtReview { issue: 4, look: 2 }]
        );
        assert_eq!(
            looked(&mut core, ReviewDecision::ChangesRequested),
            [review_wait(20)],
            "the person is told once"
        );
        core.handle(&Event::WaitOver);
        assert_eq!(
            looked(&mut core, ReviewDecision::Approved),
            [Effect::CheckPreconditions { step: Step::Merge }]
        );
    }

    #[test]
    fn a_required_approval_never_given_ends_the_cycle_waiting_for_a_person_not_blamed() {
        let limits = gated(true, 15);
        assert_eq!(limits.review_polls(), [10, 5]);
        let (mut core, _) = after_ci(limits, Mode::Continuous);
        assert_eq!(
            looked(&mut core, ReviewDecision::None).last(),
            Some(&review_wait(10))
        );
        core.handle(&Event::WaitOver);
        assert_eq!(looked(&mut core, ReviewDecision::None), [review_wait(5)]);
        core.handle(&Event::WaitOver);
        let fx = looked(&mut core, ReviewDecision::None);
        assert_eq!(
            fx,
            [
                Effect::Cleanup,
                Effect::CheckoutMain,
                Effect::Notify(Notice::WaitingForPerson { issue: 4 }),
                Effect::ResetCycle,
                Effect::SelectIssue
            ]
        );
        let r = core.runner();
        assert!(
            r.escalated.is_empty() && r.awaiting_person.contains(&4),
            "{r:?}"
        );
        assert!(r.excluded(4));
        assert_eq!(r.attempts, [0; Step::COUNT], "no attempt spent");
        // Nothing else to work on: the session ends as done for now, not halted.
        assert_eq!(
            core.handle(&Event::AllEscalated { others_hold: false }),
            [
                Effect::Notify(Notice::NothingToDo),
                Effect::Exit { code: 0 }
            ]
        );
    }

    #[test]
    fn a_single_issue_run_waiting_for_a_person_ends_with_success() {
        let (mut core, _) = after_ci(gated(true, 0), Mode::SingleIssue(4));
        assert_eq!(
            looked(&mut core, ReviewDecision::ChangesRequested).last(),
            Some(&Effect::Exit { code: 0 })
        );
        assert!(core.is_terminal());
    }

    #[test]
    fn a_limits_record_without_a_review_gate_reads_as_none() {
        let json = serde_json::to_value(Limits::default()).expect("limits");
        assert!(json.get("review").is_none(), "{json}");
        let read: Limits = serde_json::from_value(json).expect("an older journal's limits");
        assert_eq!(read.review, None);
    }
}
