//! A scripted agent: no process, an outcome per (issue, step, attempt), and on success the
//! step's work done in the world (a branch, spec files, a commit, a push, a PR, a merge).

use super::world::World;
use crate::ports::agent::{AgentError, AgentExit, AgentRun};
use crate::ports::forge::{Pr, PrState};
use crate::ports::{AgentPort, BoxFuture};
use crate::step::Step;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// What one invocation does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The step's work, then a successful result.
    Ok,
    /// Exits 1 with this on stderr, without a result.
    Fail(String),
}

/// Outcomes by (issue, step, attempt).
type Scripted = BTreeMap<(u32, Step, u32), Outcome>;

/// What the world does while a step runs, by (issue, step): each runs once.
#[derive(Default)]
struct During(BTreeMap<(u32, Step), Box<dyn FnOnce() + Send>>);

impl std::fmt::Debug for During {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// The fake agent port. Unscripted invocations succeed.
#[derive(Debug, Clone)]
pub struct FakeAgent {
    world: World,
    script: Arc<Mutex<Scripted>>,
    during: Arc<Mutex<During>>,
}

impl FakeAgent {
    /// The agent of `world`.
    pub fn new(world: World) -> FakeAgent {
        FakeAgent {
            world,
            script: Arc::default(),
            during: Arc::default(),
        }
    }

    /// Has `act` done, once, while the first invocation of `step` on `issue` runs, before its
    /// work: what others do meanwhile (another runner's whole run, a takeover of the claim).
    pub fn during(&self, issue: u32, step: Step, act: impl FnOnce() + Send + 'static) {
        if let Ok(mut d) = self.during.lock() {
            d.0.insert((issue, step), Box::new(act));
        }
    }

    /// Scripts attempt `attempt` of `step` on `issue`.
    pub fn script(&self, issue: u32, step: Step, attempt: u32, outcome: Outcome) {
        if let Ok(mut s) = self.script.lock() {
            s.insert((issue, step, attempt), outcome);
        }
    }

    /// The step's work in the world, as a real agent's would show in git and the forge.
    fn work(&self, issue: u32, step: Step) {
        let mut w = self.world.lock();
        let branch = w.issues.get(&issue).map(|i| i.branch());
        match (step, branch) {
            (Step::StartIssue, Some(branch)) => {
                let base = w.origin_main;
                w.branches.entry(branch.clone()).or_default().base = base;
                w.current = branch;
            }
            (Step::WriteSpecs, _) => {
                w.specs.insert(issue);
            }
            (Step::Implement, Some(branch)) => {
                w.branches.entry(branch).or_default().commits += 1;
            }
            (Step::CommitPush, Some(branch)) => {
                let b = w.branches.entry(branch).or_default();
                b.pushed = b.commits;
                b.on_origin = true;
            }
            (Step::CreatePr, Some(branch)) => {
                w.prs.insert(
                    branch.clone(),
                    Pr {
                        number: 0,
                        url: format!("fake://pulls/{branch}"),
                        state: PrState::Open,
                    },
                );
            }
            (Step::Merge, Some(branch)) => {
                if let Some(looks) = w.script.merge_queue_looks {
                    w.queued.insert(branch, looks);
                } else {
                    w.merge(issue, &branch);
                }
                w.current = "main".to_string();
            }
            _ => {}
        }
        if w.script.close_after == Some((issue, step)) {
            if let Some(i) = w.issues.get_mut(&issue) {
                i.state_open = false;
            }
        }
        if let Some((i, s, path, text)) = &w.script.write_after {
            if (*i, *s) == (issue, step) {
                if let Err(e) = std::fs::write(path, text) {
                    panic!("the scripted write of {} failed: {e}", path.display());
                }
            }
        }
    }
}

fn env<'a>(run: &'a AgentRun, key: &str) -> Option<&'a str> {
    run.env
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The stream-json result line of a successful Claude run.
const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"fake","total_cost_usd":0.01}
"#;

impl AgentPort for FakeAgent {
    fn run<'a>(
        &'a self,
        run: &'a AgentRun,
        on_stdout: &'a mut (dyn FnMut(&[u8]) -> bool + Send),
        _cancel: watch::Receiver<bool>,
        _on_spawn: &'a mut (dyn FnMut(i32) + Send),
    ) -> BoxFuture<'a, Result<AgentExit, AgentError>> {
        // A review round is told `addressReview`; its script entry is monitorCI's.
        let step = env(run, "SDLC_STEP")
            .and_then(crate::fake_agent::told_step)
            .map(|(step, _)| step);
        let issue = env(run, "SDLC_ISSUE").and_then(|v| v.parse().ok());
        let attempt = env(run, "SDLC_ATTEMPT").and_then(|v| v.parse().ok());
        let result = match (step, issue, attempt) {
            (Some(step), Some(issue), Some(attempt)) => {
                // No process, so no process group to journal (a pgid of 0 would name the
                // runner's own group to a restarted runner's cleanup).
                self.world.lock().invocations.push((issue, step, attempt));
                let act = self
                    .during
                    .lock()
                    .ok()
                    .and_then(|mut d| d.0.remove(&(issue, step)));
                if let Some(act) = act {
                    act();
                }
                let outcome = self
                    .script
                    .lock()
                    .ok()
                    .and_then(|s| s.get(&(issue, step, attempt)).cloned())
                    .unwrap_or(Outcome::Ok);
                Ok(match outcome {
                    Outcome::Ok => {
                        self.work(issue, step);
                        on_stdout(RESULT.as_bytes());
                        exit(Some(0), RESULT.to_string(), String::new())
                    }
                    Outcome::Fail(stderr) => exit(Some(1), String::new(), stderr),
                })
            }
            _ => Err(AgentError::Spawn {
                program: run.program.display().to_string(),
                source: std::io::Error::other(
                    "the fake agent needs SDLC_STEP, SDLC_ISSUE and SDLC_ATTEMPT",
                ),
            }),
        };
        Box::pin(std::future::ready(result))
    }
}

fn exit(code: Option<i32>, stdout_tail: String, stderr_tail: String) -> AgentExit {
    AgentExit {
        exit_code: code,
        signal: None,
        timed_out: false,
        idle_timed_out: false,
        cancelled: false,
        stopped: false,
        stdout_bytes: stdout_tail.len() as u64,
        stderr_bytes: stderr_tail.len() as u64,
        stdout_tail,
        stderr_tail,
        duration: Duration::from_millis(1),
        pid: 0,
        live_log_error: None,
        refused_hosts: Vec::new(),
    }
}
