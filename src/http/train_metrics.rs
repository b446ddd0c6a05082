//! The merge train's metrics of `GET /metrics`: gauges of the status document's `train` (the
//! fleet's train as `status --json` shows it), read when scraped. A train the document does not
//! hold (no fleet running one) leaves them out rather than zero.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Metric, Registry};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Car {
    issue: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CarVerdict {
    issue: String,
    /// `untested`, `testing`, `passed` or `failed`.
    verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TrainFigure {
    /// `cars`, `settled` or `ci_runs`.
    kind: String,
}

/// A new gauge family, registered under `name` (the registry adds the prefix).
fn family<M: Metric + Clone + Default>(r: &mut Registry, name: &str, help: &str) -> M {
    let metric = M::default();
    r.register(name, help, metric.clone());
    metric
}

/// The train's gauges, registered once.
pub struct TrainMetrics {
    figures: Family<TrainFigure, Gauge>,
    position: Family<Car, Gauge>,
    tree: Family<Car, Gauge>,
    verdict: Family<CarVerdict, Gauge>,
    waiting: Family<Car, Gauge>,
}

impl TrainMetrics {
    /// Registers the train's gauges in `r`.
    pub fn register(r: &mut Registry) -> TrainMetrics {
        TrainMetrics {
            figures: family(
                r,
                "train",
                "The merge train of run --workers: cars (PRs in it), settled (PRs settled to land or to be returned, waiting for their merge turn), ci_runs (CI runs it asked for so far)",
            ),
            position: family(r, "train_position", "Each PR's place in the merge train (0: the head), by issue"),
            tree: family(
                r,
                "train_tree_size",
                "How many PRs the tree each PR is tested in merges onto main (those ahead of it, landed since main moved, and itself), by issue",
            ),
            verdict: family(
                r,
                "train_verdict",
                "1 for the verdict of the tree each PR of the merge train is tested in (untested, testing, passed, failed), by issue",
            ),
            waiting: family(
                r,
                "train_waiting_seconds",
                "Seconds each PR has waited in the merge train since it asked to merge, by issue",
            ),
        }
    }

    /// Sets the gauges from the status document's `train`.
    pub fn set(&self, status: &serde_json::Value) {
        self.figures.clear();
        self.position.clear();
        self.tree.clear();
        self.verdict.clear();
        self.waiting.clear();
        let train = &status["train"];
        let Some(cars) = train["cars"].as_array() else {
            return;
        };
        let settled = train["settled"].as_array().map_or(0, Vec::len);
        for (kind, value) in [
            ("cars", Some(cars.len() as i64)),
            ("settled", Some(settled as i64)),
            ("ci_runs", train["runs"].as_i64()),
        ] {
            if let Some(v) = value {
                let kind = kind.to_string();
                self.figures.get_or_create(&TrainFigure { kind }).set(v);
            }
        }
        for car in cars {
            let Some(issue) = car["issue"].as_u64().map(|n| n.to_string()) else {
                continue;
            };
            let label = Car {
                issue: issue.clone(),
            };
            let gauges = [
                (&self.position, car["position"].as_i64()),
                (&self.tree, car["tree"].as_array().map(|t| t.len() as i64)),
                (&self.waiting, car["waitingSeconds"].as_i64()),
            ];
            for (family, value) in gauges {
                if let Some(v) = value {
                    family.get_or_create(&label).set(v);
                }
            }
            if let Some(verdict) = car["verdict"].as_str() {
                let verdict = verdict.to_string();
                self.verdict
                    .get_or_create(&CarVerdict { issue, verdict })
                    .set(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trains_positions_trees_verdicts_and_waiting_times_are_gauges_of_the_status_document() {
        let mut r = Registry::with_prefix("sdlc");
        let m = TrainMetrics::register(&mut r);
        let encode = |r: &Registry| {
            let mut out = String::new();
            let _ = prometheus_client::encoding::text::encode(&mut out, r);
            out
        };
        m.set(&serde_json::json!({"train": {"cars": [
            {"issue": 2, "position": 0, "tree": [1, 2], "verdict": "testing", "waitingSeconds": 75},
            {"issue": 3, "position": 1, "tree": [1, 2, 3], "verdict": "passed", "waitingSeconds": 12},
        ], "settled": [1], "runs": 4}}));
        let text = encode(&r);
        for line in [
            "sdlc_train{kind=\"cars\"} 2",
            "sdlc_train{kind=\"settled\"} 1",
            "sdlc_train{kind=\"ci_runs\"} 4",
            "sdlc_train_position{issue=\"3\"} 1",
            "sdlc_train_tree_size{issue=\"3\"} 3",
            "sdlc_train_verdict{issue=\"2\",verdict=\"testing\"} 1",
            "sdlc_train_verdict{issue=\"3\",verdict=\"passed\"} 1",
            "sdlc_train_waiting_seconds{issue=\"2\"} 75",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        // The train moved on: #2 landed, #3 is the head; then no train at all.
        m.set(&serde_json::json!({"train": {"cars": [
            {"issue": 3, "position": 0, "tree": [3], "verdict": "testing"},
        ], "settled": [], "runs": 5}}));
        let text = encode(&r);
        assert!(!text.contains("issue=\"2\""), "{text}");
        assert!(
            text.contains("sdlc_train_position{issue=\"3\"} 0"),
            "{text}"
        );
        m.set(&serde_json::json!({}));
        assert!(!encode(&r).contains("sdlc_train"), "{}", encode(&r));
    }
}
