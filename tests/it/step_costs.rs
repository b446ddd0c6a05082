//! What one step costs the runner, as counts that do not depend on how loaded the machine is:
//! the real binary runs two issues through every step with the fake agent and real git, and
//! its `SDLC_RUNNER_STATS=1` line is held to budgets. A count over its budget is a regression
//! of the per-step overhead (`cargo bench --bench runner_overhead` measures the time).

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::json;
use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

/// The `stats:` line of a run, by key.
fn stats(p: &Project) -> HashMap<String, u64> {
    let config = p.config.to_str().expect("utf8");
    let child = p
        .command(&["run", "--config", config])
        .env("SDLC_RUNNER_STATS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn runner");
    let out = e2e::wait_output(child, Duration::from_secs(120));
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("stats: "))
        .unwrap_or_else(|| panic!("no stats line:\n{stderr}"));
    line.split_whitespace()
        .map(|field| {
            let (k, v) = field.split_once('=').expect("key=value");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect()
}

#[test]
fn only_the_agent_forks_the_runner_and_a_step_stays_within_its_spawn_budget() {
    let p = Project::new(&[(1, "One", ""), (2, "Two", "")], json!({}), json!({}));
    let s = stats(&p);
    let (steps, forks, spawns, git) = (s["steps"], s["forks"], s["spawns"], s["git_spawns"]);
    assert!(steps >= 16, "two issues through their steps: {s:?}");
    // Forking the multi-threaded runner (a pre-exec hook: the parent-death signal) costs a
    // copy of its page tables and a wait for the child's exec; only the agent (and local CI,
    // not configured here) needs it. Every git call is a posix_spawn.
    assert_eq!(
        forks, steps,
        "one fork per agent run, none per git call: {s:?}"
    );
    assert!(git > 0, "{s:?}");
    // Today two issues take 18 steps, 109 children: 91 git (5.1 per step, the 11 of the
    // runner's start included; the branch refs are one `for-each-ref` per moment, `git
    // status` also tells the branch and forgets no ref answer, main is brought to origin's
    // without checkouts when the tree lets it; the look at origin's branch before the merge,
    // which sees a person's move, is one fetch, one `for-each-ref` and one ancestry test per
    // issue) and the 18 agents. The few spare calls are for an answer that outlived its half
    // second on a loaded machine; one more git call per step breaks either budget. The
    // record of the repository's git setup adds 2 per session (its git directories, its
    // configuration) and the check after each agent step asks git only when .git/config
    // changed: twice an issue here (the agent's `push -u`, the branch's removal), 6 in all.
    // The runner commits each agent step's work itself (status, then add and commit when the
    // agent left changes): one more git call per step on average. A fetch of origin a moment
    // after another, with nothing of the runner's in between, is not repeated (95 before).
    assert!(
        git <= 5 * steps + 16,
        "{git} git calls for {steps} steps: over the budget of 5 per step and 16 ({s:?})"
    );
    assert!(
        spawns <= 6 * steps + 16,
        "{spawns} child processes for {steps} steps: over the budget of 6 per step and 16 ({s:?})"
    );
}
