//! The Prometheus metrics of `GET /metrics`, counted from the journal records the feed reads
//! (never from the driver: the run pays nothing for them). Counters start at zero when the
//! server starts, as a process's counters do; the names and labels are listed in docs/operating.md.

use crate::journal::{Line, Record};
use crate::machine::{Effect, Event, Notice, Usage};
use crate::step::Step;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Metric, Registry};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabel {
    step: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Finished {
    step: String,
    /// `ok`, or the failure class (`TEST_FAILURE`, `QUOTA`, …).
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepModel {
    step: String,
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WaitKind {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerState {
    worker: String,
    state: String,
}

/// `issue`, `session`, `day` or `call`: what a budget bounds.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Scope {
    scope: String,
}

/// `requests`, `not_modified` or `rate_limit_remaining`: a figure of GitHub's API.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GithubKind {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabel {
    worker: String,
}

type FloatCounter = Counter<f64, AtomicU64>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// Every metric, registered once.
pub struct Metrics {
    registry: Registry,
    /// The model of each step (`builtin` for the runner's own steps), for the agent labels.
    models: [String; Step::COUNT],
    steps_started: Family<StepLabel, Counter>,
    attempts: Family<StepLabel, Counter>,
    steps_finished: Family<Finished, Counter>,
    agent_seconds: Family<StepModel, FloatCounter>,
    agent_turns: Family<StepModel, Counter>,
    agent_cost: Family<StepModel, FloatCounter>,
    escalations: Counter,
    releases: Counter,
    halts: Family<Reason, Counter>,
    waits: Family<WaitKind, Counter>,
    wait_seconds: Family<WaitKind, Counter>,
    merged: Counter,
    review_rounds: Counter,
    reviews_wanted: Counter,
    waiting_for_person: Counter,
    worker_state: Family<WorkerState, Gauge>,
    records: Family<WorkerLabel, Counter>,
    budget: Family<Scope, FloatGauge>,
    spent: Family<Scope, FloatGauge>,
    left: Family<Scope, FloatGauge>,
    github: Family<GithubKind, Gauge>,
    /// The merge train's gauges.
    pub train: super::train_metrics::TrainMetrics,
    /// The test-weakening check's facts and decisions.
    weakening: super::weakening_metrics::Weakening,
    /// Each worker's state as last set to 1, so that the gauge of the previous one drops to 0.
    current: BTreeMap<String, String>,
    /// The class of the `Waiting` notice of the batch being read, for the next `Wait`.
    wait_class: BTreeMap<String, String>,
}

impl Metrics {
    pub fn new(models: [String; Step::COUNT]) -> Metrics {
        let mut registry = Registry::with_prefix("sdlc");
        let r = &mut registry;
        // Registered in this order, which is the order of the exposition.
        Metrics {
            steps_started: metric(
                r,
                "steps_started",
                "Steps started (first attempts), by step",
            ),
            attempts: metric(
                r,
                "step_attempts",
                "Attempts dispatched (first ones and retries), by step",
            ),
            steps_finished: metric(
                r,
                "steps_finished",
                "Attempts finished, by step and outcome (ok or the failure class)",
            ),
            agent_seconds: metric(
                r,
                "agent_seconds",
                "Wall-clock time of finished attempts, by step and model",
            ),
            agent_turns: metric(
                r,
                "agent_turns",
                "Agent turns of finished attempts, by step and model",
            ),
            agent_cost: metric(
                r,
                "agent_cost_usd",
                "Cost the agent reported for finished attempts, in US dollars, by step and model",
            ),
            escalations: metric(r, "escalations", "Issues escalated"),
            releases: metric(
                r,
                "escalations_released",
                "Escalations lifted again: the same failure ended the next issue too, so it was the environment's",
            ),
            halts: metric(r, "halts", "Session halts, by reason"),
            waits: metric(
                r,
                "waits",
                "Waits begun (rate limit, quota, backoff), by kind",
            ),
            wait_seconds: metric(r, "wait_seconds", "Seconds of the waits begun, by kind"),
            merged: metric(r, "issues_merged", "Issues merged"),
            review_rounds: metric(
                r,
                "review_rounds",
                "addressReview rounds begun: the agent handed a reviewer's new feedback",
            ),
            reviews_wanted: metric(
                r,
                "reviews_wanted",
                "Cycles whose merge waited for a person's review (the state WaitingForReview while it lasts)",
            ),
            waiting_for_person: metric(
                r,
                "waiting_for_person",
                "Cycles that ended waiting for a person's review, nobody blamed",
            ),
            worker_state: metric(
                r,
                "worker_state",
                "1 for the machine state each worker is in, 0 for the states it left",
            ),
            records: metric(r, "journal_records", "Journal records read, by worker"),
            budget: metric(
                r,
                "budget_usd",
                "Each dollar budget set in the config, in US dollars, by scope (issue, session, day, call)",
            ),
            spent: metric(
                r,
                "spent_usd",
                "Spend against each budget as the status document has it: the current issue's, the session's and the day's over every journal, in US dollars",
            ),
            left: metric(
                r,
                "left_usd",
                "What may still be spent, in US dollars: scope call is what the next agent call is handed (only with a dollar budget)",
            ),
            github: metric(
                r,
                "github_api",
                "GitHub's API as the live runner used it (status, github): requests answered, not_modified (the 304s among them, free of the rate limit) and rate_limit_remaining (the budget GitHub's last answer named)",
            ),
            train: super::train_metrics::TrainMetrics::register(r),
            weakening: super::weakening_metrics::Weakening::register(r),
            registry,
            models,
            current: BTreeMap::new(),
            wait_class: BTreeMap::new(),
        }
    }

    /// The text exposition (OpenMetrics, which Prometheus reads).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Sets the money gauges from the status document (`status --json`), read when scraped:
    /// a budget the config does not set, or spend the document does not hold, is left out
    /// rather than shown as zero.
    pub fn set_money(&mut self, status: &serde_json::Value) {
        let budgets = &status["budgets"];
        let day = &status["day"];
        let gauges = [
            (&self.budget, "issue", &budgets["perIssueUsd"]),
            (&self.budget, "session", &budgets["perSessionUsd"]),
            (&self.budget, "day", &day["perDayUsd"]),
            (&self.budget, "call", &budgets["perCallUsd"]),
            (&self.spent, "issue", &budgets["issueUsd"]),
            (&self.spent, "session", &budgets["sessionUsd"]),
            (&self.spent, "day", &day["spentUsd"]),
        ];
        for (family, scope, value) in gauges {
            let scope = Scope {
                scope: scope.to_string(),
            };
            match value.as_f64() {
                Some(v) => {
                    family.get_or_create(&scope).set(v);
                }
                None => {
                    family.remove(&scope);
                }
            }
        }
        let call = Scope {
            scope: "call".to_string(),
        };
        match budgets["callLeftUsd"].as_f64() {
            Some(v) => {
                self.left.get_or_create(&call).set(v);
            }
            None => {
                self.left.remove(&call);
            }
        }
    }

    /// Sets GitHub's figures from the status document's `github` (the live runner's
    /// requests), read when scraped; a figure the document does not hold is left out.
    pub fn set_github(&mut self, status: &serde_json::Value) {
        let github = &status["github"];
        for (kind, key) in [
            ("requests", "requests"),
            ("not_modified", "notModified"),
            ("rate_limit_remaining", "rateLimitRemaining"),
        ] {
            let label = GithubKind {
                kind: kind.to_string(),
            };
            match github[key].as_i64() {
                Some(v) => {
                    self.github.get_or_create(&label).set(v);
                }
                None => {
                    self.github.remove(&label);
                }
            }
        }
    }

    /// Sets the test-weakening facts gauge from the status document, read when scraped.
    pub fn set_weakening(&mut self, status: &serde_json::Value) {
        self.weakening.set(status);
    }

    /// Moves `worker`'s state gauge; also used for the records before the server started.
    pub fn set_state(&mut self, worker: &str, state: &str) {
        if let Some(old) = self.current.get(worker) {
            if old == state {
                return;
            }
            self.worker_state
                .get_or_create(&WorkerState {
                    worker: worker.to_string(),
                    state: old.clone(),
                })
                .set(0);
        }
        self.worker_state
            .get_or_create(&WorkerState {
                worker: worker.to_string(),
                state: state.to_string(),
            })
            .set(1);
        self.current.insert(worker.to_string(), state.to_string());
    }

    fn usage(&self, step: Step, usage: &Usage) {
        let labels = StepModel {
            step: step.key().to_string(),
            model: self.models[step.index()].clone(),
        };
        self.agent_seconds
            .get_or_create(&labels)
            .inc_by(usage.elapsed_ms as f64 / 1000.0);
        self.agent_turns
            .get_or_create(&labels)
            .inc_by(u64::from(usage.turns));
        self.agent_cost
            .get_or_create(&labels)
            .inc_by(usage.cost_micros as f64 / 1_000_000.0);
    }

    /// Counts one record read after the server started.
    pub fn observe(&mut self, worker: &str, line: &Line) {
        self.records
            .get_or_create(&WorkerLabel {
                worker: worker.to_string(),
            })
            .inc();
        self.weakening.observe(worker, &line.record);
        match &line.record {
            Record::Event { event, state, .. } => {
                self.wait_class.remove(worker);
                self.set_state(worker, state);
                match event {
                    Event::StepSucceeded { step, usage } => {
                        self.finished(*step, "ok");
                        self.usage(*step, usage);
                    }
                    Event::StepFailed {
                        step, class, usage, ..
                    } => {
                        self.finished(*step, class.name());
                        self.usage(*step, usage);
                    }
                    _ => {}
                }
            }
            Record::Effect { effect, .. } => self.effect(worker, effect),
            _ => {}
        }
    }

    fn finished(&self, step: Step, outcome: &str) {
        self.steps_finished
            .get_or_create(&Finished {
                step: step.key().to_string(),
                outcome: outcome.to_string(),
            })
            .inc();
    }

    fn effect(&mut self, worker: &str, effect: &Effect) {
        match effect {
            Effect::RunStep { step, attempt, .. } => {
                let label = StepLabel {
                    step: step.key().to_string(),
                };
                self.attempts.get_or_create(&label).inc();
                if *attempt <= 1 {
                    self.steps_started.get_or_create(&label).inc();
                }
            }
            Effect::Notify(Notice::Waiting { class, .. }) => {
                self.wait_class
                    .insert(worker.to_string(), class.name().to_string());
            }
            Effect::Wait { seconds, reason } => {
                // The wait says what it is for; a journal of an earlier version's wait has
                // only the notice before it.
                let kind = WaitKind {
                    kind: match reason {
                        Some(reason) => reason.label().to_string(),
                        None => self
                            .wait_class
                            .get(worker)
                            .cloned()
                            .unwrap_or_else(|| "backoff".to_string()),
                    },
                };
                self.waits.get_or_create(&kind).inc();
                self.wait_seconds.get_or_create(&kind).inc_by(*seconds);
            }
            Effect::MarkEscalated { .. } => {
                self.escalations.inc();
            }
            // A counter never goes down: a lifted escalation is counted on its own, so that
            // escalations minus releases is what stays quarantined.
            Effect::Unquarantine { .. } => {
                self.releases.inc();
            }
            Effect::RecordMerged { .. } => {
                self.merged.inc();
            }
            Effect::AddressReview { .. } => {
                self.review_rounds.inc();
            }
            Effect::Notify(Notice::ReviewWanted { .. }) => {
                self.reviews_wanted.inc();
            }
            Effect::Notify(Notice::WaitingForPerson { .. }) => {
                self.waiting_for_person.inc();
            }
            Effect::Halt(reason) => {
                let reason = serde_json::to_value(reason)
                    .ok()
                    .and_then(|v| v.get("reason")?.as_str().map(str::to_string))
                    .unwrap_or_else(|| "unknown".to_string());
                self.halts.get_or_create(&Reason { reason }).inc();
            }
            _ => {}
        }
    }
}

/// A new metric, registered under `name` (the registry adds the prefix and the unit suffix).
fn metric<M: Metric + Clone + Default>(r: &mut Registry, name: &str, help: &str) -> M {
    let metric = M::default();
    r.register(name, help, metric.clone());
    metric
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::{FailureClass, Signature};
    use crate::machine::{EscalationCause, HaltReason};

    fn line(record: Record) -> Line {
        Line {
            v: crate::journal::FORMAT,
            seq: 1,
            time: "2026-01-01T00:00:00.000Z".into(),
            session: "s".into(),
            record,
        }
    }

    fn effect(effect: Effect) -> Line {
        line(Record::Effect {
            effect,
            state: "Verify".into(),
        })
    }

    #[test]
    fn records_move_the_counters_they_name() {
        let mut m = Metrics::new(std::array::from_fn(|i| {
            if i == Step::Verify.index() {
                "opus".to_string()
            } else {
                "builtin".to_string()
            }
        }));
        m.observe(
            "w1",
            &effect(Effect::RunStep {
                step: Step::Verify,
                issue: 4,
                attempt: 2,
                repair: true,
                commit: None,
                money_left_micros: None,
            }),
        );
        let usage = Usage {
            cost_micros: 1_500_000,
            elapsed_ms: 2_500,
            turns: 7,
        };
        m.observe(
            "w1",
            &line(Record::Event {
                said: None,
                event: Event::StepFailed {
                    step: Step::Verify,
                    class: FailureClass::RateLimit,
                    signature: Signature(1),
                    usage,
                    wait_hint_secs: None,
                },
                state: "BackingOff".into(),
            }),
        );
        m.observe(
            "w1",
            &effect(Effect::Notify(Notice::Waiting {
                step: Step::Verify,
                class: FailureClass::RateLimit,
                seconds: 60,
            })),
        );
        m.observe(
            "w1",
            &effect(Effect::Wait {
                seconds: 60,
                reason: Some(crate::machine::WaitReason::Backoff(Some(
                    FailureClass::RateLimit,
                ))),
            }),
        );
        m.observe("w1", &effect(Effect::MarkEscalated { issue: 1 }));
        m.observe("w1", &effect(Effect::MarkEscalated { issue: 2 }));
        m.observe("w1", &effect(Effect::Unquarantine { issue: 1 }));
        m.observe("w1", &effect(Effect::Halt(HaltReason::SessionBudget)));
        m.observe(
            "w1",
            &effect(Effect::Notify(Notice::ReviewWanted {
                issue: 3,
                changes_requested: true,
                wait_secs: 60,
            })),
        );
        m.observe(
            "w1",
            &effect(Effect::AddressReview {
                issue: 3,
                round: 1,
                attempt: 1,
                money_left_micros: None,
            }),
        );
        m.observe(
            "w1",
            &effect(Effect::Notify(Notice::WaitingForPerson { issue: 3 })),
        );
        let text = m.encode();
        let class = FailureClass::RateLimit.name();
        for expected in [
            "sdlc_step_attempts_total{step=\"verify\"} 1".to_string(),
            format!("sdlc_steps_finished_total{{step=\"verify\",outcome=\"{class}\"}} 1"),
            "sdlc_agent_seconds_total{step=\"verify\",model=\"opus\"} 2.5".to_string(),
            "sdlc_agent_turns_total{step=\"verify\",model=\"opus\"} 7".to_string(),
            "sdlc_agent_cost_usd_total{step=\"verify\",model=\"opus\"} 1.5".to_string(),
            format!("sdlc_waits_total{{kind=\"{class}\"}} 1"),
            format!("sdlc_wait_seconds_total{{kind=\"{class}\"}} 60"),
            "sdlc_halts_total{reason=\"sessionBudget\"} 1".to_string(),
            "sdlc_escalations_total 2".to_string(),
            "sdlc_escalations_released_total 1".to_string(),
            "sdlc_review_rounds_total 1".to_string(),
            "sdlc_reviews_wanted_total 1".to_string(),
            "sdlc_waiting_for_person_total 1".to_string(),
            "sdlc_worker_state{worker=\"w1\",state=\"BackingOff\"} 1".to_string(),
        ] {
            assert!(text.contains(&expected), "{expected} missing from:\n{text}");
        }
        // A retry is an attempt, not a step started.
        assert!(!text.contains("sdlc_steps_started_total{"), "{text}");
    }

    #[test]
    fn githubs_requests_and_the_budget_left_are_gauges_of_the_status_document() {
        let mut m = Metrics::new(std::array::from_fn(|_| "m".to_string()));
        let doc = serde_json::json!({"github": {"requests": 23, "notModified": 8, "rateLimitRemaining": 4977}});
        m.set_github(&doc);
        let text = m.encode();
        for line in [
            "sdlc_github_api{kind=\"requests\"} 23",
            "sdlc_github_api{kind=\"not_modified\"} 8",
            "sdlc_github_api{kind=\"rate_limit_remaining\"} 4977",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        // A runner no longer live (no `github` in the document): left out, not zero.
        m.set_github(&serde_json::json!({}));
        assert!(!m.encode().contains("sdlc_github_api{"), "{}", m.encode());
    }

    /// Each time a branch weakened the tests, what was decided is counted from the journal;
    /// the facts of the last failure are a gauge of the status document.
    #[test]
    fn what_was_decided_about_weakened_tests_is_counted() {
        let mut m = Metrics::new(std::array::from_fn(|_| "m".to_string()));
        let weakened = || {
            line(Record::Event {
                said: None,
                event: Event::StepFailed {
                    step: Step::CommitPush,
                    class: FailureClass::TestsWeakened,
                    signature: Signature(1),
                    usage: Usage::default(),
                    wait_hint_secs: None,
                },
                state: "CommitPush".into(),
            })
        };
        let run = || {
            effect(Effect::RunStep {
                step: Step::CommitPush,
                issue: 1,
                attempt: 2,
                repair: true,
                commit: None,
                money_left_micros: None,
            })
        };
        // Handed back once (a later attempt is no second hand-back), then escalated.
        m.observe("w1", &weakened());
        m.observe("w1", &run());
        m.observe("w1", &run());
        m.observe("w1", &weakened());
        m.observe(
            "w1",
            &effect(Effect::Notify(Notice::Escalated {
                issue: 1,
                step: Step::CommitPush,
                cause: EscalationCause::TestsWeakened,
                consecutive: 1,
            })),
        );
        // Asked of a person, who approves.
        m.observe("w2", &weakened());
        m.observe(
            "w2",
            &effect(Effect::AskDecision {
                step: Step::CommitPush,
                issue: 2,
                budget_spent_micros: None,
            }),
        );
        m.observe(
            "w2",
            &line(Record::Event {
                said: None,
                event: Event::Decided {
                    option: crate::machine::DecisionOption::Retry,
                },
                state: "AwaitingDecision".into(),
            }),
        );
        m.set_weakening(&serde_json::json!({"lastFailure": {"weakened": ["a", "b", "c"]}}));
        let text = m.encode();
        for line in [
            "sdlc_tests_weakened_decisions_total{decided=\"handed_back\"} 1",
            "sdlc_tests_weakened_decisions_total{decided=\"escalated\"} 1",
            "sdlc_tests_weakened_decisions_total{decided=\"asked\"} 1",
            "sdlc_tests_weakened_decisions_total{decided=\"approved\"} 1",
            "sdlc_tests_weakened_facts 3",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        m.set_weakening(&serde_json::json!({}));
        assert!(m.encode().contains("sdlc_tests_weakened_facts 0"));
    }
}
