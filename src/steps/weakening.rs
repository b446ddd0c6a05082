//! The test-weakening check where the runner pushes an issue's branch for CI (commitPush's
//! push, a CI repair's, a review round's): the branch compared with its base
//! (`crate::weakening`), the removals the spec lists (`Removes:`) set apart. What
//! the spec does not call for fails the push as `TESTS_WEAKENED` (`builtin.rs`), the facts
//! its words, and nothing is pushed (docs/classification.md). Each head is checked once: the
//! head let through is recorded in the runner's directory (`check_once`).

use crate::ports::git::GitError;
use crate::ports::GitPort;
use crate::weakening::{self, CiScripts, Findings, Removals};

/// The check as a push runs it: the files of the local CI's script (read like a CI
/// workflow). A push without a `Gate` is not checked (`tests.weakening: "allow"`, or a
/// person approved the weakening in this cycle).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    /// The local CI command's files inside the repository.
    pub scripts: CiScripts,
    /// A person approved the weakening in this cycle (`tests.weakening: "ask"`): a push is
    /// not held, and the PR body says what was approved.
    pub approved: bool,
}

impl Gate {
    /// The check as `cfg` sets it, as the PR body reports it: `None` when `tests.weakening`
    /// is `allow`; `approved` when the machine holds a person's approval of this cycle's
    /// weakening.
    pub fn configured(cfg: &crate::config::Config, approved: bool) -> Option<Gate> {
        if cfg.tests.weakening == crate::config::Weakening::Allow {
            return None;
        }
        let command = cfg.local_ci.as_ref().map(|c| &c.command[..]).unwrap_or(&[]);
        let mut gate = Gate::new(&cfg.project_path, command);
        gate.approved = approved;
        Some(gate)
    }

    /// The gate of a project whose local CI runs `command` in `project`: each argument that
    /// names a file inside the repository is a script of its CI.
    pub fn new(project: &std::path::Path, command: &[String]) -> Gate {
        let scripts = command
            .iter()
            .filter_map(|arg| {
                let path = std::path::Path::new(arg);
                let relative = if path.is_absolute() {
                    path.strip_prefix(project).ok()?.to_path_buf()
                } else {
                    path.to_path_buf()
                };
                let text = relative.to_string_lossy();
                let text = text.trim_start_matches("./").to_string();
                project.join(&text).is_file().then_some(text)
            })
            .collect();
        Gate {
            scripts: CiScripts(scripts),
            approved: false,
        }
    }
}

/// What the check finds on `branch` of issue `number` (its spec directory recorded as
/// `feature`, if any), whatever it is: the push refuses what is weakened, the PR body says it.
pub fn findings(
    repo: &dyn GitPort,
    branch: &str,
    (number, feature): (u32, Option<&str>),
    gate: &Gate,
) -> Result<Findings, GitError> {
    let files = repo.changed_files(branch)?;
    let removals = removals(repo, number, feature);
    Ok(weakening::check(&files, &removals, &gate.scripts))
}

/// Whether an agent's attempt of `step` pushes the branch for CI, so that the check follows
/// it (`check_once`): commitPush, and createPR and monitorCI when an agent runs them (the
/// agent that watches CI pushes its repairs itself). Not a merge's agent: what it merges is
/// final by the time it exits.
pub fn agent_pushes(step: crate::step::Step) -> bool {
    use crate::step::Step;
    matches!(step, Step::CommitPush | Step::CreatePr | Step::MonitorCi)
}

/// The check of `branch` once per head, wherever its commits reach origin (a push of the
/// runner's, an agent's own push during commitPush, createPR or monitorCI): `Ok(None)` when
/// its head is the one the check last let through (the runner's record,
/// `RunnerDir::weakening_checked`); else what it finds, the head recorded as let through when
/// nothing is weakened. A head git cannot name is checked every time; a record that cannot be
/// written only means the next look checks again.
pub fn check_once(
    repo: &dyn GitPort,
    branch: &str,
    (number, feature): (u32, Option<&str>),
    gate: &Gate,
) -> Result<Option<Findings>, GitError> {
    let record = repo.branch_head(branch)?.map(|h| format!("{branch} {h}\n"));
    let dir = repo.runner_dir().ok();
    if let (Some(record), Some(dir)) = (&record, &dir) {
        let recorded = crate::safe_fs::read_no_follow(&dir.weakening_checked(number));
        if recorded.is_ok_and(|r| r == record.as_bytes()) {
            return Ok(None);
        }
    }
    let found = findings(repo, branch, (number, feature), gate)?;
    if let (true, Some(record), Some(dir)) = (found.weakened.is_empty(), &record, &dir) {
        if let Err(e) = dir.record_weakening_checked(number, record) {
            tracing::debug!("{e}");
        }
    }
    Ok(Some(found))
}

/// The PR body's section on the tests: what the check found and what was decided.
pub fn pr_section(found: &Findings, approved: bool) -> String {
    let mut text = String::from("\n## Tests\n\n");
    if found.weakened.is_empty() && found.allowed.is_empty() {
        text.push_str("sdlc-runner compared the branch with its base: no test removed, skipped or emptied, no assertion removed, no snapshot rewritten, no CI job made unable to fail, no threshold lowered.\n");
        return text;
    }
    if !found.allowed.is_empty() {
        text.push_str("Removed as the issue's spec lists (`Removes:`):\n");
        text.push_str(&weakening::describe(&found.allowed));
        text.push('\n');
    }
    if !found.weakened.is_empty() {
        text.push_str(if approved {
            "Weakened, approved by a person (`tests.weakening: ask`):\n"
        } else {
            "Weakened (`tests.weakening` let it through):\n"
        });
        text.push_str(&weakening::describe(&found.weakened));
        text.push('\n');
    }
    text
}

/// What the spec says it removes (every spec file read, the section `Removes:`).
fn removals(repo: &dyn GitPort, number: u32, feature: Option<&str>) -> Removals {
    let Some(dir) = repo.spec_dir(number, feature) else {
        return Removals::default();
    };
    let text: String = crate::ports::git::SPEC_FILES
        .iter()
        .filter_map(|f| crate::safe_fs::read_no_follow(&dir.join(f)).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned() + "\n\n")
        .collect();
    Removals::from_spec(&text)
}
