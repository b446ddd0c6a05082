//! The project's spend over the last 24 hours, summed from every journal of the project (its
//! own and each fleet worker's): `budget.perDayUsd` is a ceiling no restart and no number of
//! workers can pass, so it is counted from what was recorded, not from what one process saw.

use super::{read_contents, JournalError, Record};
use chrono::{DateTime, Utc};
use std::path::PathBuf;

/// The window the daily ceiling counts over.
pub const DAY: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// What the project spent inside the window ending at `now`: each recorded cost with its time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DaySpend {
    /// `(when, micro-dollars)`, oldest first.
    spends: Vec<(DateTime<Utc>, u64)>,
    /// The window's end.
    now: DateTime<Utc>,
}

impl DaySpend {
    /// Sums the journals' recorded costs over the 24 hours before `now`. A journal that does
    /// not exist yet counts nothing; one that cannot be read is an error naming it (a ceiling
    /// must not be passed because its records were unreadable).
    pub fn read(journals: &[PathBuf], now: DateTime<Utc>) -> Result<DaySpend, JournalError> {
        let since = now - DAY;
        let mut spends = Vec::new();
        for path in journals {
            if !path.exists() {
                continue;
            }
            // The running cost of a call no event answered yet (a runner killed in it, or
            // one still running): counted until the event that answers it, which carries the
            // whole call's cost (or, after a restart, `KilledCallSpent` what was journaled).
            let mut unanswered = None;
            for line in read_contents(path)?.lines {
                // A line whose time cannot be read is counted: over-counting holds the ceiling.
                let at = DateTime::parse_from_rfc3339(&line.time)
                    .map(|t| t.with_timezone(&Utc))
                    .unwrap_or(now);
                let cost = match &line.record {
                    Record::Spending { cost_micros } => {
                        unanswered = Some((at, *cost_micros));
                        continue;
                    }
                    Record::Event { event, .. } => {
                        unanswered = None;
                        event.usage().map_or(0, |u| u.cost_micros)
                    }
                    _ => continue,
                };
                if cost > 0 && at > since {
                    spends.push((at, cost));
                }
            }
            spends.extend(unanswered.filter(|(at, c)| *c > 0 && *at > since));
        }
        spends.sort_by_key(|(at, _)| *at);
        Ok(DaySpend { spends, now })
    }

    /// The window's sum, in micro-dollars.
    pub fn total_micros(&self) -> u64 {
        self.spends.iter().map(|(_, c)| c).sum()
    }

    /// When the window's sum first falls below `budget_micros` again as its oldest spends age
    /// out; `None` when it is below already.
    pub fn frees_at(&self, budget_micros: u64) -> Option<DateTime<Utc>> {
        let mut total = self.total_micros();
        if total < budget_micros {
            return None;
        }
        for (at, cost) in &self.spends {
            total -= cost;
            if total < budget_micros {
                return Some(*at + DAY);
            }
        }
        Some(self.now + DAY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Journal;
    use sdlc_machine::machine::{Event, Limits, Mode, Usage};
    use sdlc_machine::step::Step;

    fn spent(cost_micros: u64) -> Event {
        Event::StepSucceeded {
            step: Step::Implement,
            usage: Usage {
                cost_micros,
                ..Usage::default()
            },
        }
    }

    fn journal_with(path: &std::path::Path, costs: &[u64]) {
        let (mut j, _) = Journal::open(path).unwrap();
        j.begin(&Limits::default(), Mode::Continuous).unwrap();
        for c in costs {
            j.append(&[Record::Event {
                event: spent(*c),
                state: "Implement".into(),
                said: None,
            }])
            .unwrap();
        }
    }

    /// Rewrites every line's time to `at`.
    fn dated(path: &std::path::Path, at: DateTime<Utc>) {
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["time"] = serde_json::Value::String(at.to_rfc3339());
                v.to_string()
            })
            .collect();
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    #[test]
    fn every_journal_counts_and_only_inside_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let own = dir.path().join("own.jsonl");
        let worker = dir.path().join("w0.jsonl");
        let old = dir.path().join("old.jsonl");
        journal_with(&own, &[1_000_000, 0, 500_000]);
        journal_with(&worker, &[2_000_000]);
        journal_with(&old, &[9_000_000]);
        dated(&own, now - chrono::TimeDelta::hours(3));
        dated(&worker, now - chrono::TimeDelta::hours(20));
        dated(&old, now - chrono::TimeDelta::hours(25));
        let missing = dir.path().join("none.jsonl");
        let day = DaySpend::read(&[own, worker, old, missing], now).unwrap();
        assert_eq!(day.total_micros(), 3_500_000);
        // $3.50 against a $3 ceiling: the worker's $2, the oldest, must age out first.
        assert_eq!(
            day.frees_at(3_000_000),
            Some(now - chrono::TimeDelta::hours(20) + DAY)
        );
        // Against $1.20, the $1.50 of three hours ago must go too.
        assert_eq!(
            day.frees_at(1_200_000),
            Some(now - chrono::TimeDelta::hours(3) + DAY)
        );
        assert_eq!(day.frees_at(4_000_000), None);
    }

    #[test]
    fn a_calls_running_cost_counts_until_an_event_answers_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let (mut j, _) = Journal::open(&path).unwrap();
        j.begin(&Limits::default(), Mode::Continuous).unwrap();
        j.append(&[Record::Event {
            event: spent(1_000_000),
            state: "Implement".into(),
            said: None,
        }])
        .unwrap();
        let spending = |c| Record::Spending { cost_micros: c };
        j.append(&[spending(300_000), spending(700_000)]).unwrap();
        let now = Utc::now();
        // Killed in the call: its last running cost counts, once.
        let day = DaySpend::read(std::slice::from_ref(&path), now).unwrap();
        assert_eq!(day.total_micros(), 1_700_000);
        // Answered: the answer carries the whole call, the running cost no longer counts.
        j.append(&[Record::Event {
            event: spent(900_000),
            state: "Implement".into(),
            said: None,
        }])
        .unwrap();
        let day = DaySpend::read(&[path], now).unwrap();
        assert_eq!(day.total_micros(), 1_900_000);
    }

    #[test]
    fn an_unreadable_journal_is_an_error_not_zero() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        std::fs::create_dir(&path).unwrap();
        assert!(DaySpend::read(&[path], Utc::now()).is_err());
    }
}
