//! The fake agent's script: which outcome each (issue, step, attempt) gets.

use super::outcome::Outcome;
use super::FakeAgentError;
#[cfg(test)]
use crate::step::Step;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Cost reported by every invocation when the script does not say.
pub const DEFAULT_COST_USD: f64 = 0.01;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ScriptFile {
    #[serde(default)]
    steps: BTreeMap<String, Vec<String>>,
    cost_usd: Option<f64>,
}

/// A parsed, validated script. Every outcome in it is known, so a typo fails the first
/// invocation instead of the one attempt that would have reached it.
#[derive(Debug)]
pub struct Script {
    steps: BTreeMap<String, Vec<(String, Outcome)>>,
    pub cost_usd: f64,
}

impl Default for Script {
    fn default() -> Script {
        Script {
            steps: BTreeMap::new(),
            cost_usd: DEFAULT_COST_USD,
        }
    }
}

impl Script {
    pub fn load(path: &Path) -> Result<Script, FakeAgentError> {
        let text = std::fs::read_to_string(path).map_err(|source| FakeAgentError::ReadScript {
            path: path.to_path_buf(),
            source,
        })?;
        Script::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Script, FakeAgentError> {
        let file: ScriptFile =
            serde_json::from_str(text).map_err(|source| FakeAgentError::ParseScript {
                path: path.to_path_buf(),
                source,
            })?;
        let bad = |key: &str, why: String| FakeAgentError::BadKey {
            path: path.to_path_buf(),
            key: key.to_string(),
            why,
        };
        let mut steps = BTreeMap::new();
        for (key, list) in file.steps {
            let step_part = match key.split_once(':') {
                Some((issue, step)) => {
                    if issue.parse::<u32>().is_err() {
                        return Err(bad(&key, format!("\"{issue}\" is not an issue number")));
                    }
                    step
                }
                None => key.as_str(),
            };
            if step_part != "*" && super::told_step(step_part).is_none() {
                return Err(bad(
                    &key,
                    format!("\"{step_part}\" is not a step key (startCycle ... merge, addressReview) or \"*\""),
                ));
            }
            if list.is_empty() {
                return Err(bad(&key, "the outcome list is empty".to_string()));
            }
            let mut parsed = Vec::with_capacity(list.len());
            for name in list {
                let outcome =
                    Outcome::parse(&name).ok_or_else(|| FakeAgentError::UnknownOutcome {
                        path: path.to_path_buf(),
                        key: key.clone(),
                        outcome: name.clone(),
                    })?;
                parsed.push((name, outcome));
            }
            steps.insert(key, parsed);
        }
        let cost_usd = file.cost_usd.unwrap_or(DEFAULT_COST_USD);
        if !cost_usd.is_finite() || cost_usd < 0.0 {
            return Err(bad("costUsd", "must be a non-negative number".to_string()));
        }
        Ok(Script { steps, cost_usd })
    }

    /// The outcome for this attempt: `"<issue>:<step>"` beats `"<step>"` beats `"*"`, else
    /// `ok`. Attempt 1 takes the first entry; past the end the last entry repeats.
    #[cfg(test)]
    pub fn pick(&self, issue: Option<u32>, step: Step, attempt: u32) -> (&str, Outcome) {
        self.pick_told(issue, step.key(), attempt)
    }

    /// [`Script::pick`] for an attempt told `told` (`SDLC_STEP`): a review round
    /// (`addressReview`) takes its own keys first, then monitorCI's (the machine's step of a
    /// round, which scripts written before the round had its name still key it by).
    pub fn pick_told(&self, issue: Option<u32>, told: &str, attempt: u32) -> (&str, Outcome) {
        let mut names = vec![told];
        if let Some((step, true)) = super::told_step(told) {
            names.push(step.key());
        }
        let specific = names
            .iter()
            .find_map(|name| issue.and_then(|n| self.steps.get(&format!("{n}:{name}"))));
        let list = specific
            .or_else(|| names.iter().find_map(|name| self.steps.get(*name)))
            .or_else(|| self.steps.get("*"));
        match list {
            Some(list) => {
                let index = (attempt.max(1) as usize - 1).min(list.len() - 1);
                let (name, outcome) = &list[index];
                (name.as_str(), *outcome)
            }
            None => ("ok", Outcome::Ok),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(text: &str) -> Result<Script, FakeAgentError> {
        Script::parse(text, Path::new("script.json"))
    }

    #[test]
    fn specific_key_beats_step_key_beats_star() {
        let s = script(
            r#"{"steps": {"verify": ["fail-test", "ok"], "2:verify": ["hang"], "*": ["exit:4"]}}"#,
        )
        .unwrap();
        assert_eq!(s.pick(Some(2), Step::Verify, 1).0, "hang");
        assert_eq!(s.pick(Some(3), Step::Verify, 1).0, "fail-test");
        assert_eq!(s.pick(None, Step::Verify, 2).0, "ok");
        assert_eq!(s.pick(Some(2), Step::Merge, 1).0, "exit:4");
    }

    #[test]
    fn a_review_round_takes_its_own_key_then_monitor_cis() {
        let s = script(
            r#"{"steps": {"monitorCI": ["write-shared"], "addressReview": ["fail-test", "ok"], "2:monitorCI": ["hang"]}}"#,
        )
        .unwrap();
        assert_eq!(s.pick_told(Some(1), "addressReview", 1).0, "fail-test");
        assert_eq!(s.pick_told(Some(1), "addressReview", 2).0, "ok");
        assert_eq!(s.pick_told(Some(1), "monitorCI", 1).0, "write-shared");
        // An issue's own key beats every general one, as for any step.
        assert_eq!(s.pick_told(Some(2), "addressReview", 1).0, "hang");
        let older = script(r#"{"steps": {"monitorCI": ["write-shared"]}}"#).unwrap();
        assert_eq!(
            older.pick_told(Some(1), "addressReview", 1).0,
            "write-shared"
        );
    }

    #[test]
    fn the_last_entry_repeats_and_attempt_zero_is_the_first() {
        let s = script(r#"{"steps": {"verify": ["fail-test", "fail-test-2", "ok"]}}"#).unwrap();
        let picks: Vec<&str> = (0..6).map(|a| s.pick(None, Step::Verify, a).0).collect();
        assert_eq!(
            picks,
            ["fail-test", "fail-test", "fail-test-2", "ok", "ok", "ok"]
        );
    }

    #[test]
    fn no_matching_key_means_ok() {
        let s = script(r#"{"steps": {"verify": ["hang"]}, "costUsd": 0.5}"#).unwrap();
        assert_eq!(s.pick(Some(1), Step::Merge, 1), ("ok", Outcome::Ok));
        assert_eq!(s.cost_usd, 0.5);
        assert_eq!(script("{}").unwrap().cost_usd, DEFAULT_COST_USD);
    }

    #[test]
    fn bad_scripts_name_the_file_and_the_key() {
        for (text, needle) in [
            (r#"{"steps": {"verify": ["explode"]}}"#, "explode"),
            (r#"{"steps": {"verfy": ["ok"]}}"#, "verfy"),
            (r#"{"steps": {"x:verify": ["ok"]}}"#, "x:verify"),
            (r#"{"steps": {"verify": []}}"#, "empty"),
            (r#"{"step": {}}"#, "step"),
            (r#"{"costUsd": -1}"#, "costUsd"),
        ] {
            let message = script(text).unwrap_err().to_string();
            assert!(message.contains("script.json"), "{message}");
            assert!(message.contains(needle), "{needle}: {message}");
        }
    }
}
