//! The merge train of `run --workers N` on the local forge (docs/scaling.md, "The merge
//! train"): the real binary, real git, the scripted fake agent and a CI command that records
//! every tree it tests. Each PR ready to merge is tested as main plus the PRs ahead of it plus
//! itself, several trees at once; a PR failing together with the one ahead is returned to its
//! cycle naming the combination, the others land, and main's first-parent history holds only
//! trees CI passed, also across a SIGKILL during a train's CI.

use crate::e2e;

use e2e::{git, merged_issues, text, Project};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Three issues reaching their merge three seconds apart (#1, then #2, then #3), built-in steps,
/// a train of three trees at once, and a CI command that logs to `runs` `start <HEAD> <the
/// issues' files in it> <the issues' files on origin's main>` and, when it passes,
/// `pass <HEAD's tree>`; it takes `merge_secs` on a merge commit (a
/// tree of the train) and fails a tree holding both #1's and #2's files (two files defining
/// one setting) unless the agent's `ci-fixed` is in it. #2's CI repair adds `ci-fixed`.
fn train_of_three(merge_secs: u32) -> (Project, PathBuf) {
    let p = three_issues(3000, 6000);
    let runs = p.root.join("ci-runs.log");
    let script = format!(
        "n=$(ls src/issue_*.txt 2>/dev/null | wc -l); \
         m=$(git -C {origin} ls-tree --name-only main src/ | grep -c issue_); \
         echo \"start $(git rev-parse HEAD) $n $m\" >> {runs}; \
         if git rev-parse -q --verify HEAD^2 >/dev/null; then sleep {merge_secs}; fi; \
         if [ -e src/issue_1.txt ] && [ -e src/issue_2.txt ] && [ ! -e ci-fixed ]; then \
         echo 'issue 1 and issue 2 both define the same setting'; exit 1; fi; \
         echo \"pass $(git rev-parse 'HEAD^{{tree}}')\" >> {runs}",
        origin = p.origin.display(),
        runs = runs.display(),
    );
    train_config(&p, &script, json!({"maxParallel": 3}));
    (p, runs)
}

/// Three issues whose implement steps take 0, `two_ms` and `three_ms` (so they reach their
/// merge in that order); #2's CI repair adds `ci-fixed`.
fn three_issues(two_ms: u32, three_ms: u32) -> Project {
    Project::new(
        &[(1, "One", ""), (2, "Two", ""), (3, "Three", "")],
        json!({"steps": {
            "2:implement": [format!("busy:{two_ms}")],
            "3:implement": [format!("busy:{three_ms}")],
            "2:monitorCI": ["fix-ci"],
        }}),
        json!({}),
    )
}

/// `run --workers <workers>` on `p` to its end: it exits 0 and main holds the merges of
/// `issues`, once each. What it said, after `before` (an earlier run's words).
fn fleet_lands(p: &Project, workers: &str, before: &str, issues: &[u32]) -> String {
    let out = p.run(&["--workers", workers]);
    let all = format!("{before}\n{}", text(&out));
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), issues, "{all}");
    all
}

/// Built-in steps, `script` as the local CI (by `sh -c`, a minute at most) and `train` as the
/// merge train's settings.
fn train_config(p: &Project, script: &str, train: serde_json::Value) {
    let mut extra = json!({ "steps": e2e::builtin_steps() });
    extra["localCi"] = json!({"command": ["sh", "-c", script], "timeoutMin": 1});
    extra["train"] = train;
    p.set_config(extra);
}

/// The CI log's runs: (tested commit, the issues' files in it, those on origin's main as the
/// run began).
fn started(runs: &Path) -> Vec<(String, usize, usize)> {
    std::fs::read_to_string(runs)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("start")).then_some(())?;
            let head = w.next()?.to_string();
            Some((head, w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect()
}

/// The trees CI passed.
fn passed(runs: &Path) -> Vec<String> {
    std::fs::read_to_string(runs)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("pass ").map(str::to_string))
        .collect()
}

/// CI runs that tested a PR with one ahead of it that main did not hold yet: the tree holds
/// at least two more of the issues' files than origin's main did as the run began.
fn speculative(runs: &Path) -> Vec<(String, usize, usize)> {
    started(runs)
        .into_iter()
        .filter(|(_, tree, main)| *tree >= main + 2)
        .collect()
}

fn tree_of(origin: &Path, sha: &str) -> String {
    git(origin, &["rev-parse", &format!("{sha}^{{tree}}")])
}

/// Every commit of origin's main's first-parent history since `since` (exclusive) whose tree
/// CI never passed (no passing run on it, nor on a commit with the same tree), and every one
/// that fails the CI check when run over it now.
fn untested_on_main(origin: &Path, since: &str, runs: &Path) -> Vec<String> {
    not_passed_on_main(origin, since, runs, |has| {
        has("src/issue_1.txt") && has("src/issue_2.txt") && !has("ci-fixed")
    })
}

/// Every commit of origin's main's first-parent history since `since` (exclusive) whose tree
/// CI never passed, and every one `red` (asked whether the commit has a path) says CI fails.
fn not_passed_on_main(
    origin: &Path,
    since: &str,
    runs: &Path,
    red: impl Fn(&dyn Fn(&str) -> bool) -> bool,
) -> Vec<String> {
    let passed_trees = passed(runs);
    let range = format!("{since}..main");
    git(origin, &["rev-list", "--first-parent", &range])
        .lines()
        .filter(|sha| {
            let has = |path: &str| {
                std::process::Command::new("git")
                    .args(["cat-file", "-e", &format!("{sha}:{path}")])
                    .current_dir(origin)
                    .stderr(std::process::Stdio::null())
                    .status()
                    .expect("git cat-file")
                    .success()
            };
            red(&has) || !passed_trees.contains(&tree_of(origin, sha))
        })
        .map(str::to_string)
        .collect()
}

/// #1, #2 and #3 join the train in that order; a PR is tested behind one that main does not
/// hold yet (speculatively: #3 behind #2 while #2's CI runs). #2 fails together with #1: it
/// is returned to its cycle as a CI failure that names the combination, #3 is tested again
/// without it, and #1 and #3 land; #2's repair lands after them. Every first-parent commit of main is a tree CI
/// passed, checked by running the CI's check over main's history.
#[test]
fn three_prs_in_a_train_the_middle_one_failing_together_is_returned_and_the_others_land() {
    let (p, runs) = train_of_three(6);
    let start = git(&p.origin, &["rev-parse", "main"]);
    let all = fleet_lands(&p, "3", "", &[1, 2, 3]);
    assert!(
        all.contains("merge train: #2 is returned to its cycle: CI failed main + #1 + "),
        "#2 is returned naming the combination: {all}"
    );
    assert!(all.contains("merged onto main"), "{all}");
    assert!(
        !speculative(&runs).is_empty(),
        "a PR was tested behind one main did not hold yet: {:?}\n{all}",
        started(&runs)
    );
    assert_eq!(
        untested_on_main(&p.origin, &start, &runs),
        Vec::<String>::new(),
        "{all}"
    );
    // #3 landed before #2's repair: the one failing did not hold up the one behind it.
    let order = git(&p.origin, &["log", "--first-parent", "--format=%s", "main"]);
    let at = |n: u32| order.find(&format!("Merge issue #{n}:")).expect("merged");
    assert!(
        at(3) > at(2),
        "#3 landed before #2 (newest first):\n{order}"
    );
    for n in 1..=3 {
        assert_eq!(p.issue(n)["escalated"], json!(false), "#{n}\n{all}");
    }
}

/// The runner is killed (SIGKILL) while CI tests a tree of the train (which `status`, text and
/// JSON, shows meanwhile, with the time each PR has waited); run again, it resumes: every issue lands and main's first-parent
/// history holds only trees CI passed.
#[test]
fn a_kill_during_a_trains_ci_resumes_without_landing_an_untested_tree() {
    let (p, runs) = train_of_three(5);
    let start = git(&p.origin, &["rev-parse", "main"]);
    let addr = crate::http::free_port();
    let mut child = p.spawn(&["--workers", "3", "--http", &addr.to_string()]);
    let deadline = Instant::now() + Duration::from_secs(90);
    while speculative(&runs).is_empty() {
        if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "no tree of a train was tested: {:?}\n{}",
                started(&runs),
                text(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // `/metrics` shows it too: positions, the tree under test, verdicts, time waiting.
    let (code, metrics) = crate::http::get(addr, "/metrics", &[]);
    assert_eq!(code, 200, "{metrics}");
    for part in [
        "sdlc_train{kind=\"cars\"} ",
        "sdlc_train_position{issue=\"",
        "\",verdict=\"testing\"} 1",
        "sdlc_train_waiting_seconds{issue=\"",
    ] {
        assert!(metrics.contains(part), "{part}: {metrics}");
    }
    // `status` shows the train while it runs: the PRs in it, the trees under test, verdicts.
    let config = p.config.to_str().expect("utf8");
    let json = p
        .command(&["status", "--json", "--config", config])
        .output()
        .expect("status --json");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("status JSON");
    let cars = v["train"]["cars"].as_array().cloned().unwrap_or_default();
    assert!(
        cars.iter().any(
            |c| c["verdict"] == "testing" && c["tree"].as_array().is_some_and(|t| t.len() >= 2)
        ),
        "a tree under test: {}",
        v["train"]
    );
    assert!(
        cars.iter().all(|c| c["waitingSeconds"].is_u64()),
        "each PR's time waiting: {}",
        v["train"]
    );
    let shown = p
        .command(&["status", "--config", config])
        .output()
        .expect("status");
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(
        shown.contains("train:    #")
            && shown.contains(": testing (main + #")
            && shown.contains("), waiting "),
        "{shown}"
    );
    child.kill().expect("kill -9");
    let killed = child.wait_with_output().expect("output");
    // The killed CI command ends on its own; then the fleet runs again.
    std::thread::sleep(Duration::from_secs(6));
    let all = fleet_lands(&p, "3", &text(&killed), &[1, 2, 3]);
    assert_eq!(
        untested_on_main(&p.origin, &start, &runs),
        Vec::<String>::new(),
        "{all}"
    );
}

/// `bounds` prints the train's worst case of CI runs from its limits: a train of 4 PRs, 3
/// trees at once, batches of one, settles in at most 4 runs (one per PR) plus, for each
/// returned PR, the runs behind it already started (0 + 1 + 2 + 2): 9, exact; 4 when none
/// fails. A config without a train says so.
#[test]
fn bounds_prints_the_trains_worst_case_of_ci_runs() {
    let (p, _) = train_of_three(0);
    let mut extra = json!({ "steps": e2e::builtin_steps() });
    extra["localCi"] = json!({"command": ["true"], "timeoutMin": 1});
    extra["train"] = json!({"maxParallel": 3, "maxLength": 4});
    p.set_config(extra);
    let bounds = |p: &Project| {
        let out = p
            .command(&["bounds", "--config", p.config.to_str().expect("utf8")])
            .output()
            .expect("bounds");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let stdout = bounds(&p);
    assert!(
        stdout.contains(
            "merge train (run --workers; maxParallel 3, maxLength 4, batch 1): at most 9 CI runs to settle a train of 4 PRs"
        ) && stdout.contains("exact")
            && stdout.contains("when no run fails, at most 4 runs for 4 PRs"),
        "{stdout}"
    );
    let limits = sdlc_machine::fleet::TrainLimits {
        max_parallel: 3,
        max_length: 4,
        batch: 1,
    };
    assert_eq!(limits.max_ci_runs(4, 0), 9, "the figure is the machine's");
    p.set_config(json!({}));
    assert!(
        bounds(&p).contains("merge train (run --workers): none for this config"),
        "an agent-run merge forms no train"
    );
}

/// Three issues reaching their merge three seconds apart, built-in steps, a train of three
/// trees at once, and a CI command that logs `start <HEAD> …` as `train_of_three`'s, then
/// `pass <HEAD's tree>` and `passed <HEAD>`; it takes `slow_secs` on a tree of the train that
/// holds #2 without #3 (the head's, once #1 landed), so #3's tree behind it passes first.
fn a_verdict_behind_the_head(slow_secs: u32) -> (Project, PathBuf) {
    let p = Project::new(
        &[(1, "One", ""), (2, "Two", ""), (3, "Three", "")],
        json!({"steps": {"2:implement": ["busy:3000"], "3:implement": ["busy:6000"]}}),
        json!({}),
    );
    let runs = p.root.join("ci-runs.log");
    let script = format!(
        "n=$(ls src/issue_*.txt 2>/dev/null | wc -l); \
         m=$(git -C {origin} ls-tree --name-only main src/ | grep -c issue_); \
         echo \"start $(git rev-parse HEAD) $n $m\" >> {runs}; \
         if git rev-parse -q --verify HEAD^2 >/dev/null && [ -e src/issue_2.txt ] \
         && [ ! -e src/issue_3.txt ]; then sleep {slow_secs}; fi; \
         echo \"pass $(git rev-parse 'HEAD^{{tree}}')\" >> {runs}; \
         echo \"passed $(git rev-parse HEAD)\" >> {runs}",
        origin = p.origin.display(),
        runs = runs.display(),
    );
    train_config(&p, &script, json!({"maxParallel": 3}));
    (p, runs)
}

/// The runner is killed (SIGKILL, a crash point) the moment CI passed #3's tree (main + #2 +
/// #3) while #2's, the head's, is still under test. Run again, the fleet starts from the
/// train's journal: #2 and #3 in that order, #3's verdict standing; only #2's tree, whose run
/// the kill cut short, is tested again, #3's tree is not, and they land in the train's order
/// with main's first-parent history holding only trees CI passed. (Rebuilt by the workers
/// joining again as they resume, the train would take them in the order they resume, and
/// build and test trees CI never saw.)
#[test]
fn a_kill_after_a_verdict_behind_the_head_resumes_the_train_from_its_journal() {
    let (p, runs) = a_verdict_behind_the_head(10);
    let start = git(&p.origin, &["rev-parse", "main"]);
    let point = "merge train: a verdict waits behind the head";
    let killed = p.run_env(
        &["--workers", "3"],
        &[(sdlc_runner::failpoint::CRASH_AT_ENV, point)],
    );
    assert_eq!(killed.status.code(), None, "killed: {}", text(&killed));
    let log = |runs: &Path| std::fs::read_to_string(runs).unwrap_or_default();
    let before = log(&runs);
    let passed_before: Vec<String> = before
        .lines()
        .filter_map(|l| l.strip_prefix("passed ").map(str::to_string))
        .collect();
    assert!(!passed_before.is_empty(), "{before}\n{}", text(&killed));
    // The cut-short run of #2's tree ends on its own; then the fleet runs again.
    std::thread::sleep(Duration::from_secs(11));
    let runs_at_kill = log(&runs);
    let out = p.run(&["--workers", "3"]);
    let all = format!("{}\n{}", text(&killed), text(&out));
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        text(&out).contains("merge train: resumed from its journal: PRs in it #2, #3"),
        "{all}"
    );
    let after = log(&runs)[runs_at_kill.len()..].to_string();
    let tested_again: Vec<&str> = after
        .lines()
        .filter_map(|l| l.strip_prefix("start "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        tested_again.len(),
        1,
        "only the run the kill cut short is made again: {after}\n{all}"
    );
    assert!(
        tested_again
            .iter()
            .all(|h| !passed_before.iter().any(|p| p == h)),
        "no tree with a verdict is tested again: {after}\n{all}"
    );
    assert_eq!(merged_issues(&p.origin), vec![1, 2, 3], "{all}");
    let order = git(&p.origin, &["log", "--first-parent", "--format=%s", "main"]);
    let at = |n: u32| order.find(&format!("Merge issue #{n}:")).expect("merged");
    assert!(
        at(3) < at(2),
        "#2 landed before #3 (newest first):\n{order}"
    );
    assert_eq!(
        not_passed_on_main(&p.origin, &start, &runs, |_| false),
        Vec::<String>::new(),
        "{all}"
    );
}

/// A person pushes to main while CI tests a tree of the train: the trees are built again on
/// the new main, everything lands, and every first-parent commit of main but the person's is
/// a tree CI passed (checked by running the CI's check over main's history).
#[test]
fn a_persons_push_to_main_mid_train_rebuilds_the_trees_and_nothing_untested_lands() {
    let (p, runs) = train_of_three(5);
    let start = git(&p.origin, &["rev-parse", "main"]);
    let mut child = p.spawn(&["--workers", "3"]);
    let deadline = Instant::now() + Duration::from_secs(90);
    while speculative(&runs).is_empty() {
        if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "no tree of a train was tested: {:?}\n{}",
                started(&runs),
                text(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let person = p.root.join("person");
    let origin = p.origin.to_str().expect("utf8");
    git(
        &p.root,
        &["clone", "-q", origin, person.to_str().expect("utf8")],
    );
    std::fs::write(person.join("person.txt"), "a person's change\n").expect("write");
    git(&person, &["add", "person.txt"]);
    let who = ["-c", "user.name=p", "-c", "user.email=p@p"];
    git(
        &person,
        &[&who[..], &["commit", "-q", "-m", "a person's push"]].concat(),
    );
    git(&person, &["push", "-q", "origin", "HEAD:main"]);
    let pushed = git(&person, &["rev-parse", "HEAD"]);
    let out = child.wait_with_output().expect("output");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), vec![1, 2, 3], "{all}");
    assert!(
        all.contains("without the train: every tree is built again on it"),
        "{all}"
    );
    let first_parents = git(&p.origin, &["rev-list", "--first-parent", "main"]);
    assert!(
        first_parents.contains(&pushed),
        "the person's commit stays on main"
    );
    let untested: Vec<String> = untested_on_main(&p.origin, &start, &runs)
        .into_iter()
        .filter(|sha| *sha != pushed)
        .collect();
    assert_eq!(untested, Vec::<String>::new(), "{all}");
}

/// `train.batch: 2`, one tree at a time: #2's tree keeps CI busy (eight seconds) while #3 and
/// #4 join, so they are tested as one batch; they fail together, and bisection tests the
/// first without the second: the first lands, only the second is returned, naming the
/// combination it failed in; its repair lands after. Which joins first is the machine's
/// timing (half a second apart: a loaded machine let #4 join first), so either may be.
#[test]
fn a_failing_batch_of_two_is_bisected_and_only_the_failing_pr_is_returned() {
    let p = Project::new(
        &[
            (1, "One", ""),
            (2, "Two", ""),
            (3, "Three", ""),
            (4, "Four", ""),
        ],
        json!({"steps": {
            "2:implement": ["busy:2000"],
            "3:implement": ["busy:3000"],
            "4:implement": ["busy:3500"],
            "3:monitorCI": ["fix-ci"],
            "4:monitorCI": ["fix-ci"],
        }}),
        json!({}),
    );
    let runs = p.root.join("ci-runs.log");
    let script = format!(
        "n=$(ls src/issue_*.txt 2>/dev/null | wc -l); \
         m=$(git -C {origin} ls-tree --name-only main src/ | grep -c issue_); \
         echo \"start $(git rev-parse HEAD) $n $m\" >> {runs}; \
         if git rev-parse -q --verify HEAD^2 >/dev/null && [ -e src/issue_2.txt ] \
         && [ ! -e src/issue_3.txt ] && [ ! -e src/issue_4.txt ]; then sleep 8; fi; \
         if [ -e src/issue_3.txt ] && [ -e src/issue_4.txt ] && [ ! -e ci-fixed ]; then \
         echo 'issue 3 and issue 4 both define the same setting'; exit 1; fi; \
         echo \"pass $(git rev-parse 'HEAD^{{tree}}')\" >> {runs}",
        origin = p.origin.display(),
        runs = runs.display(),
    );
    train_config(&p, &script, json!({"maxParallel": 1, "batch": 2}));
    let start = git(&p.origin, &["rev-parse", "main"]);
    let all = fleet_lands(&p, "4", "", &[1, 2, 3, 4]);
    let returned: Vec<u32> = (1..=4)
        .filter(|n| all.contains(&format!("merge train: #{n} is returned")))
        .collect();
    let (first, second) = match returned[..] {
        [4] => (3, 4),
        [3] => (4, 3),
        // #1 and #2 are never blamed, nor both of #3 and #4.
        _ => panic!("only the second of #3 and #4 is returned: {returned:?}\n{all}"),
    };
    assert!(
        all.contains(&format!(
            "merge train: #{second} is returned to its cycle: CI failed main + "
        )) && all.contains(&format!(" + #{first} + #{second} and passed main + ")),
        "#{second} is returned naming the combination: {all}"
    );
    assert!(
        started(&runs)
            .iter()
            .any(|(_, tree, main)| *tree >= main + 2),
        "#3 and #4 were tested as one batch: {:?}\n{all}",
        started(&runs)
    );
    let untested = not_passed_on_main(&p.origin, &start, &runs, |has| {
        has("src/issue_3.txt") && has("src/issue_4.txt") && !has("ci-fixed")
    });
    assert_eq!(untested, Vec::<String>::new(), "{all}");
}

/// Four issues, built-in steps and a CI of 3 s per run that logs, as each run ends, how many
/// issues origin's main holds and which issues the agent has been invoked for
/// (`end <main's issues> <agent's issues,>`), then `pass <tree>`.
fn four_issues_standing_by() -> (Project, PathBuf) {
    let p = Project::new(
        &[
            (1, "One", ""),
            (2, "Two", ""),
            (3, "Three", ""),
            (4, "Four", ""),
        ],
        json!({}),
        json!({}),
    );
    let runs = p.root.join("ci-runs.log");
    let script = format!(
        "sleep 3; \
         m=$(git -C {origin} ls-tree --name-only main src/ | grep -c issue_); \
         a=$(cut -d' ' -f1 {agents} | sort -u | tr '\\n' ,); \
         echo \"end $m $a\" >> {runs}; \
         echo \"pass $(git rev-parse 'HEAD^{{tree}}')\" >> {runs}",
        origin = p.origin.display(),
        agents = p.agent_log.display(),
        runs = runs.display(),
    );
    train_config(&p, &script, json!({}));
    (p, runs)
}

/// `--workers 2` with `train.standby` (the default): while the first PRs wait in the train, the
/// two workers standing by take the next issues. A CI run that ended with main still empty
/// and the agent already at work on #3 or #4 shows an issue begun while the PRs ahead of it
/// waited. Without a worker standing by, #3 could only begin once #1 or #2 landed.
#[test]
fn workers_standing_by_take_the_next_issues_while_prs_wait_in_the_train() {
    let (p, runs) = four_issues_standing_by();
    let start = git(&p.origin, &["rev-parse", "main"]);
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("fleet: 2 workers (and 2 standing by"),
        "the fleet says it: {all}"
    );
    assert_eq!(merged_issues(&p.origin), vec![1, 2, 3, 4], "{all}");
    let log = std::fs::read_to_string(&runs).unwrap_or_default();
    let early = log.lines().any(|l| {
        let mut w = l.split_whitespace();
        w.next() == Some("end")
            && w.next() == Some("0")
            && w.next()
                .is_some_and(|a| a.split(',').any(|i| i == "3" || i == "4"))
    });
    assert!(
        early,
        "#3 or #4 began before either PR ahead landed:\n{log}\n{all}"
    );
    let untested = not_passed_on_main(&p.origin, &start, &runs, |_| false);
    assert_eq!(untested, Vec::<String>::new(), "{all}");
}

/// A SIGKILL of a fleet whose workers standing by are at work on #3 and #4 while #1's and
/// #2's PRs wait in the train: run again, each clone resumes its issue (more of them than
/// may be at work, those waiting in the train among them), every issue lands once, and
/// main's first-parent history holds only trees CI passed.
#[test]
fn a_kill_while_workers_stand_by_resumes_every_issue_and_lands_each_once() {
    let (p, runs) = four_issues_standing_by();
    let start = git(&p.origin, &["rev-parse", "main"]);
    let mut child = p.spawn(&["--workers", "2"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let standing_by_at_work = || {
        e2e::invocations_in(&p.agent_log)
            .iter()
            .any(|(issue, _)| *issue >= 3)
            && merged_issues(&p.origin).is_empty()
    };
    while !standing_by_at_work() {
        if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("no worker standing by took an issue:\n{}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("kill -9");
    let killed = child.wait_with_output().expect("output");
    // The killed CI commands end on their own; then the fleet runs again.
    std::thread::sleep(Duration::from_secs(4));
    let all = fleet_lands(&p, "2", &text(&killed), &[1, 2, 3, 4]);
    for n in 1..=4 {
        assert!(
            all.contains(&format!("merge train: #{n} lands")),
            "#{n} lands through the train, not beside it: {all}"
        );
    }
    let untested = not_passed_on_main(&p.origin, &start, &runs, |_| false);
    assert_eq!(untested, Vec::<String>::new(), "{all}");
}

/// A test of a tree behind a PR whose own tree then fails is obsolete: the train no longer
/// waits for its verdict, and its CI is stopped at once instead of running to its end on the
/// worker that took it. #3's tree holds #2 (main + #1 + #2 + #3, tested speculatively while
/// #2's own runs); #2's fails; #3's run, which would take 20 s and then log `doomed-end`, is
/// stopped and never logs it. The others land, #2 after its repair.
#[test]
fn a_test_made_obsolete_by_a_failure_ahead_is_stopped() {
    let p = three_issues(1000, 2000);
    let runs = p.root.join("ci-runs.log");
    let script = format!(
        "echo \"start $(git rev-parse HEAD)\" >> {runs}; \
         if [ -e src/issue_1.txt ] && [ -e src/issue_2.txt ] && [ ! -e ci-fixed ]; then \
         if [ -e src/issue_3.txt ]; then sleep 20; echo doomed-end >> {runs}; exit 1; fi; \
         sleep 4; echo 'issue 1 and issue 2 both define the same setting'; exit 1; fi; \
         sleep 1; echo \"pass $(git rev-parse 'HEAD^{{tree}}')\" >> {runs}",
        runs = runs.display(),
    );
    train_config(&p, &script, json!({"maxParallel": 3}));
    let start = git(&p.origin, &["rev-parse", "main"]);
    let all = fleet_lands(&p, "3", "", &[1, 2, 3]);
    assert!(
        all.contains("merge train: CI on main + #1 + #2 + #3 was stopped: a PR ahead of it failed"),
        "the obsolete test is stopped and said: {all}"
    );
    let log = std::fs::read_to_string(&runs).unwrap_or_default();
    assert!(
        !log.contains("doomed-end"),
        "it did not run to its end:\n{log}"
    );
    let untested = untested_on_main(&p.origin, &start, &runs);
    assert_eq!(untested, Vec::<String>::new(), "{all}");
}
