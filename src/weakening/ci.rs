//! CI configuration: GitHub Actions workflows (`.github/workflows/*.yml`), GitLab CI
//! (`.gitlab-ci.yml`) read with a YAML parser, and the local forge's CI script (the
//! `localCi` command's file) read line by line. A job or step removed, or made unable to
//! fail: `continue-on-error: true`, `allow_failure: true`, `|| true` (or `|| exit 0`,
//! `|| :`), `set +e`, a job disabled with `if: false` or `when: never`.

use super::{line_of, CiScripts, Fact, Kind};
use serde_yaml_ng::{Mapping, Value};

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
        if github {
            file.github(&old, new.as_ref());
        } else {
            file.gitlab(&old, new.as_ref());
        }
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

impl Yaml<'_> {
    fn push(&mut self, line: usize, at_base: bool, kind: Kind, name: &str, what: String) {
        self.facts.push(Fact {
            path: self.path.to_string(),
            line,
            at_base,
            kind,
            name: name.to_string(),
            what,
        });
    }

    /// 1-based line of the key `name:` in the head (or the base), searched from the line
    /// of `under:`.
    fn key_line(text: &str, under: &str, name: &str) -> usize {
        let from = line_of(text, 1, &format!("{under}:"));
        line_of(text, from, &format!("{name}:"))
    }

    fn github(mut self, old: &Value, new: Option<&Value>) {
        let none = Mapping::new();
        let old_jobs = jobs_of(old, "jobs");
        let new_jobs = new.map_or(&none, |n| jobs_of(n, "jobs"));
        for (name, old_job) in old_jobs {
            let Some(name) = name.as_str() else { continue };
            let Some(new_job) = new_jobs.get(name) else {
                let line = Self::key_line(self.before, "jobs", name);
                self.push(
                    line,
                    true,
                    Kind::CiRemoved,
                    name,
                    format!("you removed the CI job `{name}`"),
                );
                continue;
            };
            let at = Self::key_line(self.after, "jobs", name);
            if truthy(new_job.get("continue-on-error")) && !truthy(old_job.get("continue-on-error"))
            {
                let line = line_of(self.after, at, "continue-on-error");
                self.push(
                    line,
                    false,
                    Kind::CiNonFailing,
                    name,
                    format!("you let the CI job `{name}` fail (`continue-on-error: true`)"),
                );
            }
            if falsy_if(new_job.get("if")) && !falsy_if(old_job.get("if")) {
                let line = line_of(self.after, at, "if:");
                self.push(
                    line,
                    false,
                    Kind::CiNonFailing,
                    name,
                    format!("you disabled the CI job `{name}` (`if: false`)"),
                );
            }
            self.steps(
                name,
                at,
                seq(old_job.get("steps")),
                seq(new_job.get("steps")),
            );
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

    fn gitlab(mut self, old: &Value, new: Option<&Value>) {
        let none = Mapping::new();
        let old_map = old.as_mapping().unwrap_or(&none);
        let new_map = new.and_then(Value::as_mapping).unwrap_or(&none);
        for (name, old_job) in old_map {
            let Some(name) = name.as_str() else { continue };
            if !gitlab_job(name, old_job) {
                continue;
            }
            let Some(new_job) = new_map.get(name) else {
                let line = line_of(self.before, 1, &format!("{name}:"));
                self.push(
                    line,
                    true,
                    Kind::CiRemoved,
                    name,
                    format!("you removed the CI job `{name}`"),
                );
                continue;
            };
            let at = line_of(self.after, 1, &format!("{name}:"));
            let lenient = |job: &Value| {
                job.get("allow_failure")
                    .is_some_and(|v| truthy(Some(v)) || v.is_mapping())
            };
            if lenient(new_job) && !lenient(old_job) {
                let line = line_of(self.after, at, "allow_failure");
                self.push(
                    line,
                    false,
                    Kind::CiNonFailing,
                    name,
                    format!("you let the CI job `{name}` fail (`allow_failure`)"),
                );
            }
            let never = |job: &Value| job.get("when").and_then(Value::as_str) == Some("never");
            if never(new_job) && !never(old_job) {
                let line = line_of(self.after, at, "when:");
                self.push(
                    line,
                    false,
                    Kind::CiNonFailing,
                    name,
                    format!("you disabled the CI job `{name}` (`when: never`)"),
                );
            }
            let old_lines: Vec<&str> = seq(old_job.get("script"))
                .iter()
                .filter_map(Value::as_str)
                .collect();
            for line_text in seq(new_job.get("script")).iter().filter_map(Value::as_str) {
                if let Some(marker) = lenient_marker(line_text, &old_lines) {
                    let line = line_of(self.after, at, marker);
                    self.push(
                        line,
                        false,
                        Kind::CiNonFailing,
                        name,
                        format!("you let the script of the CI job `{name}` go on after a failure (`{marker}`)"),
                    );
                }
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
        facts.push(Fact {
            path: path.to_string(),
            line,
            at_base,
            kind,
            name: name.to_string(),
            what,
        })
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

fn jobs_of<'v>(doc: &'v Value, key: &str) -> &'v Mapping {
    static EMPTY: std::sync::OnceLock<Mapping> = std::sync::OnceLock::new();
    doc.get(key)
        .and_then(Value::as_mapping)
        .unwrap_or_else(|| EMPTY.get_or_init(Mapping::new))
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
