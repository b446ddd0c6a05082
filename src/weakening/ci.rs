//! CI configuration: GitHub Actions workflows (`.github/workflows/*.yml`), GitLab CI
//! (`.gitlab-ci.yml`) read with a YAML parser, and the local forge's CI script (the
//! `localCi` command's file) read line by line. A job or step removed, or made unable to
//! fail: `continue-on-error: true`, `allow_failure: true`, `|| true` (or `|| exit 0`,
//! `|| :`), `set +e`, a job disabled with `if: false` or `when: never`.

use super::{line_of, CiScripts, Fact, Kind};
use serde_yaml_ng::Value;

/// What a shell line says to keep going whatever the command before it did.
const NON_FAILING: [&str; 4] = ["|| true", "|| exit 0", "|| :", "set +e"];

pub(super) fn compare(
    path: &str,
    before: Option<&str>,
    after: Option<&str>,
    scripts: &CiScripts,
    facts: &mut Vec<Fact>,
) {
    let Some(before) = before else { return };
    let github = path.starts_with(".github/workflows/")
        && (path.ends_with(".yml") || path.ends_with(".yaml"));
    let gitlab = path == ".gitlab-ci.yml" || path.ends_with("/.gitlab-ci.yml");
    if github || gitlab {
        let Ok(old) = serde_yaml_ng::from_str::<Value>(before) else {
            return;
        };
        let new = match after.map(serde_yaml_ng::from_str::<Value>) {
            Some(Ok(v)) => Some(v),
            // A file CI cannot read fails CI by itself.
            Some(Err(_)) => return,
            None => None,
        };
        let file = Yaml {
            path,
            before,
            after: after.unwrap_or_default(),
            facts,
        };
        let dialect = if github { &GITHUB } else { &GITLAB };
        file.jobs(dialect, &old, new.as_ref());
    } else if scripts.0.iter().any(|s| s == path) {
        script(path, before, after.unwrap_or_default(), facts);
    }
}

struct Yaml<'a> {
    path: &'a str,
    before: &'a str,
    after: &'a str,
    facts: &'a mut Vec<Fact>,
}

/// Whether a key's value switches a job off.
type SwitchesOff = fn(Option<&Value>) -> bool;

/// Where a CI system keeps its jobs, and the keys that let one fail or switch it off.
struct Dialect {
    /// The key the jobs are under (GitHub's `jobs`); `None`: the top level (GitLab's).
    jobs_under: Option<&'static str>,
    /// The key that lets a job fail (`continue-on-error`, `allow_failure`), as said.
    lenient: (&'static str, &'static str),
    /// The key that can switch a job off (`if`, `when`), whether its value does, as said.
    disabled: (&'static str, SwitchesOff, &'static str),
}

const GITHUB: Dialect = Dialect {
    jobs_under: Some("jobs"),
    lenient: ("continue-on-error", "`continue-on-error: true`"),
    disabled: ("if", falsy_if, "`if: false`"),
};

const GITLAB: Dialect = Dialect {
    jobs_under: None,
    lenient: ("allow_failure", "`allow_failure`"),
    disabled: ("when", never, "`when: never`"),
};

impl Dialect {
    /// The jobs of `doc`, by name.
    fn jobs<'v>(&self, doc: Option<&'v Value>) -> Vec<(&'v str, &'v Value)> {
        let map = match self.jobs_under {
            Some(key) => doc.and_then(|d| d.get(key)),
            None => doc,
        };
        map.and_then(Value::as_mapping)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str()?, v)))
            .filter(|(name, job)| self.jobs_under.is_some() || gitlab_job(name, job))
            .collect()
    }

    /// 1-based line of the job `name` in `text`.
    fn line(&self, text: &str, name: &str) -> usize {
        let from = self
            .jobs_under
            .map_or(1, |under| line_of(text, 1, &format!("{under}:")));
        line_of(text, from, &format!("{name}:"))
    }
}

impl Yaml<'_> {
    fn push(&mut self, line: usize, at_base: bool, kind: Kind, name: &str, what: String) {
        self.facts
            .push(Fact::new(self.path, line, at_base, kind, name, what));
    }

    /// Each job of the base: removed, made able to fail, switched off, and what it runs.
    fn jobs(mut self, d: &Dialect, old: &Value, new: Option<&Value>) {
        let new_jobs = d.jobs(new);
        for (name, old_job) in d.jobs(Some(old)) {
            let Some((_, new_job)) = new_jobs.iter().find(|(n, _)| *n == name) else {
                let line = d.line(self.before, name);
                let what = format!("you removed the CI job `{name}`");
                self.push(line, true, Kind::CiRemoved, name, what);
                continue;
            };
            let at = d.line(self.after, name);
            let (key, said) = d.lenient;
            if lenient(new_job.get(key)) && !lenient(old_job.get(key)) {
                let line = line_of(self.after, at, key);
                let what = format!("you let the CI job `{name}` fail ({said})");
                self.push(line, false, Kind::CiNonFailing, name, what);
            }
            let (key, off, said) = d.disabled;
            if off(new_job.get(key)) && !off(old_job.get(key)) {
                let line = line_of(self.after, at, &format!("{key}:"));
                let what = format!("you disabled the CI job `{name}` ({said})");
                self.push(line, false, Kind::CiNonFailing, name, what);
            }
            if d.jobs_under.is_some() {
                let (old, new) = (seq(old_job.get("steps")), seq(new_job.get("steps")));
                self.steps(name, at, old, new);
            } else {
                self.script(name, at, old_job, new_job);
            }
        }
    }

    /// The steps of the job `job` (at line `at` of the head): removed, made non-failing.
    fn steps(&mut self, job: &str, at: usize, old: &[Value], new: &[Value]) {
        let old_ids: Vec<String> = old.iter().map(step_id).collect();
        let new_ids: Vec<String> = new.iter().map(step_id).collect();
        if new.len() < old.len() {
            let mut missing = old.len() - new.len();
            for id in old_ids.iter().filter(|id| !new_ids.contains(id)) {
                if missing == 0 {
                    break;
                }
                missing -= 1;
                let line = line_of(self.before, 1, first_line(id));
                self.push(
                    line,
                    true,
                    Kind::CiRemoved,
                    id,
                    format!("you removed the step `{id}` of the CI job `{job}`"),
                );
            }
        }
        for (i, step) in new.iter().enumerate() {
            let id = &new_ids[i];
            let was = old_ids.iter().position(|o| o == id).map(|p| &old[p]);
            let was_lenient = was.is_some_and(|w| truthy(w.get("continue-on-error")));
            if truthy(step.get("continue-on-error")) && !was_lenient {
                let from = line_of(self.after, at, first_line(id));
                let line = line_of(self.after, from, "continue-on-error");
                self.push(
                    line,
                    false,
                    Kind::CiNonFailing,
                    id,
                    format!("you let the step `{id}` of the CI job `{job}` fail (`continue-on-error: true`)"),
                );
            }
            let run = step.get("run").and_then(Value::as_str).unwrap_or_default();
            let old_runs: Vec<&str> = old
                .iter()
                .filter_map(|s| s.get("run").and_then(Value::as_str))
                .collect();
            if let Some(marker) = lenient_marker(run, &old_runs) {
                let line = line_of(self.after, at, marker);
                self.push(
                    line,
                    false,
                    Kind::CiNonFailing,
                    id,
                    format!("you let the step `{id}` of the CI job `{job}` fail (`{marker}`)"),
                );
            }
        }
    }

    /// The lines of the script of the GitLab job `job` (at line `at` of the head) newly
    /// made to go on after a failure.
    fn script(&mut self, job: &str, at: usize, old_job: &Value, new_job: &Value) {
        let old_lines: Vec<&str> = seq(old_job.get("script"))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for line_text in seq(new_job.get("script")).iter().filter_map(Value::as_str) {
            if let Some(marker) = lenient_marker(line_text, &old_lines) {
                let line = line_of(self.after, at, marker);
                let what = format!(
                    "you let the script of the CI job `{job}` go on after a failure (`{marker}`)"
                );
                self.push(line, false, Kind::CiNonFailing, job, what);
            }
        }
    }
}

/// The local CI's script: lines that run something removed (more removed than added), and
/// lines newly made unable to fail.
fn script(path: &str, before: &str, after: &str, facts: &mut Vec<Fact>) {
    let commands = |text: &str| -> Vec<(usize, String)> {
        text.lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim().to_string()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
            .collect()
    };
    let old = commands(before);
    let new = commands(after);
    let push = |facts: &mut Vec<Fact>, line, at_base, kind, name: &str, what| {
        facts.push(Fact::new(path, line, at_base, kind, name, what))
    };
    if new.len() < old.len() {
        let mut missing = old.len() - new.len();
        for (line, cmd) in &old {
            if missing == 0 {
                break;
            }
            if new.iter().any(|(_, n)| n == cmd) {
                continue;
            }
            missing -= 1;
            push(
                facts,
                *line,
                true,
                Kind::CiRemoved,
                cmd,
                format!("you removed `{cmd}` from the CI script"),
            );
        }
    }
    let old_lines: Vec<&str> = old.iter().map(|(_, l)| l.as_str()).collect();
    for (line, cmd) in &new {
        if let Some(marker) = lenient_marker(cmd, &old_lines) {
            push(
                facts,
                *line,
                false,
                Kind::CiNonFailing,
                cmd,
                format!("you made the CI script go on after a failure (`{marker}`)"),
            );
        } else if cmd == "exit 0" && !old_lines.contains(&"exit 0") {
            push(
                facts,
                *line,
                false,
                Kind::CiNonFailing,
                cmd,
                "you made the CI script stop early with success (`exit 0`)".to_string(),
            );
        }
    }
}

/// The marker in `text` that keeps a shell going after a failure, when none of `old` had it.
fn lenient_marker(text: &str, old: &[&str]) -> Option<&'static str> {
    let marker = NON_FAILING.into_iter().find(|m| text.contains(m))?;
    (!old.iter().any(|o| o.contains(marker))).then_some(marker)
}

fn seq(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_sequence).map_or(&[], Vec::as_slice)
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.trim() == "true" || s.contains("true }}"),
        _ => false,
    }
}

/// A value that lets a job fail: `true`, or GitLab's `allow_failure: { exit_codes: … }`.
fn lenient(v: Option<&Value>) -> bool {
    truthy(v) || v.is_some_and(Value::is_mapping)
}

fn never(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str) == Some("never")
}

fn falsy_if(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => !*b,
        Some(Value::String(s)) => {
            let s = s.replace(' ', "");
            s == "false" || s == "${{false}}"
        }
        _ => false,
    }
}

/// How a step is known across the two versions: its name, else what it uses, else the first
/// line of what it runs.
fn step_id(step: &Value) -> String {
    ["name", "uses", "run"]
        .iter()
        .find_map(|k| step.get(*k).and_then(Value::as_str))
        .map(|s| first_line(s).to_string())
        .unwrap_or_else(|| "(unnamed step)".to_string())
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default().trim()
}

/// Keys of `.gitlab-ci.yml` that are not jobs.
const GITLAB_RESERVED: [&str; 10] = [
    "stages",
    "variables",
    "include",
    "default",
    "workflow",
    "image",
    "services",
    "before_script",
    "after_script",
    "cache",
];

fn gitlab_job(name: &str, value: &Value) -> bool {
    !name.starts_with('.') && !GITLAB_RESERVED.contains(&name) && value.is_mapping()
}
