//! The merge train measured (issue 49, "Measure"): six issues, one worker against three
//! (`run --workers N` on the local forge, builtin steps, a local CI that takes
//! `SDLC_BENCH_CI_SECS` seconds, 10 by default): the wall time of each and the speed-up, the
//! CI runs per landed issue (on the branches, and on the trees main would hold), and main
//! green at every first-parent commit (the CI's check run over main's history afterwards, and
//! each commit's tree one CI passed). Once with nothing failing, once with #3 failing together
//! with #2 (green alone, red together: the one of the two that comes second in main's order is
//! returned to its cycle, repaired, landed; either agent can repair it).
//!
//! `cargo bench --bench merge_train` (a few minutes; `SDLC_BENCH_CI_SECS=2` for a quick look,
//! `SDLC_BENCH_MAX_PARALLEL` for another `train.maxParallel` than 4)

mod common;

use common::{runner_binary, Project};
use serde_json::json;
use std::path::Path;
use std::process::Command;

const ISSUES: u32 = 6;

fn ci_secs() -> u64 {
    std::env::var("SDLC_BENCH_CI_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
}

fn max_parallel() -> u32 {
    std::env::var("SDLC_BENCH_MAX_PARALLEL")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn has(origin: &Path, sha: &str, path: &str) -> bool {
    Command::new("git")
        .args(["cat-file", "-e", &format!("{sha}:{path}")])
        .current_dir(origin)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("git cat-file")
        .success()
}

/// One run's figures.
struct Run {
    wall: f64,
    landed: usize,
    branch_runs: usize,
    tree_runs: usize,
    red_on_main: usize,
}

fn run(bin: &Path, workers: u32, failing: bool) -> Run {
    let mut script = json!({"steps": {"*": ["busy:300"]}});
    if failing {
        // Whichever of the pair lands second is returned: its agent repairs the combination.
        script["steps"]["2:monitorCI"] = json!(["fix-ci"]);
        script["steps"]["3:monitorCI"] = json!(["fix-ci"]);
    }
    let p = Project::new(bin, ISSUES, script, json!({}));
    let runs = p.root.join("ci-runs.log");
    let red = if failing {
        "[ -e src/issue_2.txt ] && [ -e src/issue_3.txt ] && [ ! -e ci-fixed ]"
    } else {
        "false"
    };
    let check = format!(
        "kind=branch; if git rev-parse -q --verify HEAD^2 >/dev/null; then kind=tree; fi; \
         echo \"start $kind $(git rev-parse HEAD)\" >> {runs}; sleep {secs}; \
         if {red}; then echo 'issue 2 and issue 3 both define the same setting'; exit 1; fi; \
         echo \"pass $(git rev-parse 'HEAD^{{tree}}')\" >> {runs}",
        runs = runs.display(),
        secs = ci_secs(),
    );
    let builtin = json!({"run": "builtin"});
    let config = json!({
        "steps": {"startCycle": builtin, "commitPush": builtin, "createPR": builtin,
                  "monitorCI": builtin, "merge": builtin},
        "localCi": {"command": ["sh", "-c", check], "timeoutMin": 5},
        // Four trees at once: with a failure, the returned PR's repair is tested beside the
        // three rebuilt behind it (`SDLC_BENCH_MAX_PARALLEL` to change it).
        "train": {"maxParallel": max_parallel()},
    });
    let mut cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&p.config).expect("config")).expect("JSON");
    if let (Some(base), Some(more)) = (cfg.as_object_mut(), config.as_object()) {
        base.extend(more.clone());
    }
    std::fs::write(&p.config, cfg.to_string()).expect("config");
    let origin = p.root.join("origin.git");
    let start = git(&origin, &["rev-parse", "main"]);
    let n = workers.to_string();
    let (out, took) = p.run(bin, &["--workers", &n]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "runner failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(&runs).unwrap_or_default();
    let count = |kind: &str| log.lines().filter(|l| l.starts_with(kind)).count();
    let passed: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("pass "))
        .collect();
    let first_parents = git(
        &origin,
        &["rev-list", "--first-parent", &format!("{start}..main")],
    );
    let red_on_main = first_parents
        .lines()
        .filter(|sha| {
            let red = failing
                && has(&origin, sha, "src/issue_2.txt")
                && has(&origin, sha, "src/issue_3.txt")
                && !has(&origin, sha, "ci-fixed");
            let tree = git(&origin, &["rev-parse", &format!("{sha}^{{tree}}")]);
            red || !passed.contains(&tree.as_str())
        })
        .count();
    Run {
        wall: took.as_secs_f64(),
        landed: first_parents.lines().count(),
        branch_runs: count("start branch "),
        tree_runs: count("start tree "),
        red_on_main,
    }
}

fn report(label: &str, one: &Run, three: &Run) {
    println!("{label}");
    for (workers, r) in [(1, one), (3, three)] {
        let per = (r.branch_runs + r.tree_runs) as f64 / r.landed.max(1) as f64;
        let trees = r.tree_runs as f64 / r.landed.max(1) as f64;
        println!(
            "  workers {workers}: {:.1} s wall, {} landed, CI runs per landed issue {per:.2} ({} on branches, {} on trees main would hold: {trees:.2} per landed issue), first-parent commits of main not green: {}",
            r.wall, r.landed, r.branch_runs, r.tree_runs, r.red_on_main
        );
    }
    println!(
        "  speed-up: {:.2}x (target >= 2.5x)",
        one.wall / three.wall.max(0.001)
    );
}

fn main() {
    let bin = runner_binary();
    println!(
        "merge train: {ISSUES} issues, CI {} s per run, agent 300 ms per step, train.maxParallel {}",
        ci_secs(),
        max_parallel()
    );
    for (label, failing) in [
        ("nothing failing:", false),
        ("#3 failing together with #2:", true),
    ] {
        let one = run(&bin, 1, failing);
        let three = run(&bin, 3, failing);
        report(label, &one, &three);
        assert_eq!(one.red_on_main + three.red_on_main, 0, "main went red");
    }
}
