//! The metrics of the test-weakening check (`TESTS_WEAKENED`, docs/operating.md): what was
//! decided each time a branch weakened the tests, counted from the journal (handed back to
//! the agent, escalated, asked of a person, and the person's answer), and the facts of the
//! last failure as the status document has them.

use crate::failure::FailureClass;
use crate::journal::Record;
use crate::machine::{DecisionOption, Effect, EscalationCause, Event, Notice};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeSet;

/// `handed_back`, `escalated`, `asked`, then the person's answer: `approved`, `skip`, `halt`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Decided {
    decided: String,
}

/// The check's metrics, registered once.
pub(super) struct Weakening {
    facts: Gauge,
    decisions: Family<Decided, Counter>,
    /// Workers whose last step failed as `TESTS_WEAKENED`, until the machine's next move.
    found: BTreeSet<String>,
    /// Workers waiting for a person's answer about a weakening.
    asked: BTreeSet<String>,
}

impl Weakening {
    /// Registers the metrics in `r`.
    pub(super) fn register(r: &mut Registry) -> Weakening {
        let facts = Gauge::default();
        r.register(
            "tests_weakened_facts",
            "Test-weakening facts of the last failure, as the status document has them (lastFailure.weakened)",
            facts.clone(),
        );
        let decisions = Family::<Decided, Counter>::default();
        r.register(
            "tests_weakened_decisions",
            "What was decided when a branch weakened the tests: handed_back, escalated, asked (a person), then approved, skip or halt",
            decisions.clone(),
        );
        Weakening {
            facts,
            decisions,
            found: BTreeSet::new(),
            asked: BTreeSet::new(),
        }
    }

    /// The facts gauge from the status document (`status --json`), read when scraped.
    pub(super) fn set(&self, status: &serde_json::Value) {
        let facts = status["lastFailure"]["weakened"]
            .as_array()
            .map_or(0, Vec::len);
        self.facts.set(i64::try_from(facts).unwrap_or(i64::MAX));
    }

    /// Counts what `record` of `worker`'s journal decided about a weakening.
    pub(super) fn observe(&mut self, worker: &str, record: &Record) {
        match record {
            Record::Event { event, .. } => match event {
                Event::StepFailed { class, .. } if *class == FailureClass::TestsWeakened => {
                    self.found.insert(worker.to_string());
                }
                Event::StepFailed { .. } | Event::StepSucceeded { .. } => {
                    self.found.remove(worker);
                }
                Event::Decided { option } if self.asked.remove(worker) => {
                    self.count(match option {
                        DecisionOption::Retry => "approved",
                        other => other.name(),
                    });
                }
                _ => {}
            },
            Record::Effect { effect, .. } => match effect {
                Effect::Notify(Notice::Escalated {
                    cause: EscalationCause::TestsWeakened,
                    ..
                }) => {
                    self.found.remove(worker);
                    self.count("escalated");
                }
                Effect::AskDecision { .. } if self.found.remove(worker) => {
                    self.asked.insert(worker.to_string());
                    self.count("asked");
                }
                Effect::RunStep { .. } if self.found.remove(worker) => self.count("handed_back"),
                _ => {}
            },
            _ => {}
        }
    }

    fn count(&self, decided: &str) {
        self.decisions
            .get_or_create(&Decided {
                decided: decided.to_string(),
            })
            .inc();
    }
}
