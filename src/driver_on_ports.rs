//! The driver on in-memory ports (`launch::run_on_ports` with `ports::fake`): its decisions
//! tested in-process, each run in milliseconds, with no git, gh or agent process and no
//! real sleep. The real-binary tests with real git stay the outer ring.

use crate::config::Config;
use crate::driver::RunOptions;
use crate::launch::{run_on_ports, PortsRun};
use crate::ports::claims::Claim;
use crate::ports::fake::{
    self, FakeAgent, FakeClaims, FakeClock, Outcome, RecordingNotifier, World,
};
use crate::step::Step;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// A project directory, a config over it (the zero-token steps builtin, as `init` writes
/// them), the world of the fakes and the claim store every run on it shares.
struct Bench {
    dir: tempfile::TempDir,
    cfg: Config,
    world: World,
    claims: FakeClaims,
}

impl Bench {
    fn new(issues: &[(u32, &str)], extra: Value) -> Bench {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["project", "issues", "logs", "state"] {
            std::fs::create_dir(dir.path().join(d)).expect("dir");
        }
        let mut cfg = json!({
            "projectPath": "project",
            "logDir": "logs",
            "agent": {"command": "fake-claude"},
            "tracker": {"kind": "local", "dir": "issues"},
            "forge": "local",
            "steps": {
                "startCycle": {"run": "builtin"},
                "commitPush": {"run": "builtin"},
                "createPR": {"run": "builtin"},
                "monitorCI": {"run": "builtin"},
                "merge": {"run": "builtin"},
            },
        });
        if let (Some(base), Some(more)) = (cfg.as_object_mut(), extra.as_object()) {
            for (k, v) in more {
                base.insert(k.clone(), v.clone());
            }
        }
        let file = dir.path().join("sdlc-config.json");
        std::fs::write(&file, cfg.to_string()).expect("config");
        let cfg = Config::load(&file).expect("a valid config");
        let label = crate::wiring::tracker(&cfg)
            .expect("a local tracker needs no token")
            .label()
            .to_string();
        Bench {
            world: World::new(issues, &label),
            claims: FakeClaims::new(),
            cfg,
            dir,
        }
    }

    /// Another runner on the same tracker, world and claim store, in a clone of its own (its
    /// project, log and state directories): its config and its ports.
    fn another_runner(&self, name: &str) -> (Config, crate::ports::Ports) {
        let mut cfg = self.cfg.clone();
        cfg.project_path = self.dir.path().join(format!("project-{name}"));
        cfg.log_dir = self.dir.path().join(format!("logs-{name}"));
        let state = self.dir.path().join(format!("state-{name}"));
        for d in [&cfg.project_path, &cfg.log_dir, &state] {
            std::fs::create_dir(d).expect("dir");
        }
        let (mut ports, _) = fake::ports(&self.world, &state);
        ports.claims = Some(Box::new(self.claims.clone()));
        (cfg, ports)
    }

    fn state_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("state")
    }

    /// One run on the fakes; fails when it took anything like real time.
    fn run(&self) -> Ran {
        self.run_scripted(|_| {})
    }

    /// One run, with the agent's outcomes scripted first.
    fn run_scripted(&self, script: impl FnOnce(&FakeAgent)) -> Ran {
        self.run_as(RunOptions::default(), script)
    }

    /// One run with these flags (a worker id, say), the agent scripted first; its claims are
    /// the bench's fake store's.
    fn run_as(&self, opts: RunOptions, script: impl FnOnce(&FakeAgent)) -> Ran {
        self.run_on(opts, None, script)
    }

    /// One run with these flags whose claims are the local tracker's production store
    /// (`.claims` files beside its issues), the driver's ports otherwise the fakes.
    fn run_on_local_claims(&self, opts: RunOptions) -> Ran {
        let store = crate::services::local::LocalClaims::new(&self.dir.path().join("issues"));
        self.run_on(opts, Some(Box::new(store)), |_| {})
    }

    /// One run on the fakes, with `claims` for the bench's fake claim store where given.
    fn run_on(
        &self,
        opts: RunOptions,
        claims: Option<crate::ports::ClaimStore>,
        script: impl FnOnce(&FakeAgent),
    ) -> Ran {
        let (mut ports, fakes) = fake::ports(&self.world, &self.state_dir());
        ports.claims = Some(claims.unwrap_or_else(|| Box::new(self.claims.clone())));
        script(&fakes.agent);
        let (clock, notifier) = (fakes.clock, fakes.notifier);
        let started = Instant::now();
        let run = run_on_ports(self.cfg.clone(), opts, ports);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "the run took {took:?}");
        Ran {
            run,
            clock,
            notifier,
            log: std::fs::read_to_string(
                self.dir
                    .path()
                    .join("logs")
                    .join(crate::logs::ORCHESTRATION_LOG),
            )
            .unwrap_or_default(),
        }
    }
}

struct Ran {
    run: PortsRun,
    clock: FakeClock,
    notifier: RecordingNotifier,
    log: String,
}

impl Ran {
    fn alerts(&self) -> String {
        self.notifier
            .sent()
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn journal_has(&self, needle: &str) -> bool {
        self.run.journal_lines().iter().any(|l| l.contains(needle))
    }

    /// Fails naming the first of `records` the journal lacks.
    fn journaled(&self, records: &[&str]) {
        for recorded in records {
            assert!(
                self.journal_has(recorded),
                "{recorded} not journaled\n{}",
                self.log
            );
        }
    }

    /// `replay` reproduces the run from its journal.
    fn replays_exactly(&self) {
        let contents = crate::journal::read_contents(&self.run.journal).expect("the journal reads");
        let reports =
            crate::commands::replay::replay(&contents, &self.run.journal).expect("replay");
        assert!(!reports.is_empty(), "no session replayed\n{}", self.log);
        for report in &reports {
            assert!(report.divergence.is_none(), "{}", report.summary());
        }
    }
}

fn exists(path: &Path) -> bool {
    path.exists()
}

#[test]
fn every_issue_is_merged_once_and_nothing_waits() {
    let b = Bench::new(&[(1, "First"), (2, "Second"), (3, "Third")], json!({}));
    let ran = b.run();
    let w = b.world.lock();
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(w.merges, vec![1, 2, 3], "{}", ran.log);
    assert_eq!(
        w.tracker_writes,
        vec!["close #1", "close #2", "close #3"],
        "{}",
        ran.log
    );
    assert!(w.issues.values().all(|i| !i.state_open && !i.escalated));
    // The agent ran the model steps of each issue, once each; the runner did the rest.
    for n in [1, 2, 3] {
        for step in [Step::StartIssue, Step::WriteSpecs, Step::Implement] {
            assert_eq!(
                w.invocations.iter().filter(|i| **i == (n, step, 1)).count(),
                1,
                "#{n} {step:?}: {:?}",
                w.invocations
            );
        }
        assert!(!w.invocations.iter().any(
            |(i, s, _)| *i == n && matches!(s, Step::CommitPush | Step::CreatePr | Step::Merge)
        ));
    }
    assert!(ran.clock.waits().is_empty(), "{:?}", ran.clock.waits());
    // Each merge's check finds the commit CI passed on origin's main the first time, as with
    // real git: a fake whose commit ids disagree would test the retry path instead.
    assert!(!ran.log.contains("failed"), "{}", ran.log);
    assert!(exists(&ran.run.journal));
    assert!(ran.journal_has("\"recordMerged\""), "{}", ran.log);
}

#[test]
fn a_read_only_tracker_halts_after_exactly_one_merge() {
    let b = Bench::new(&[(1, "First"), (2, "Second")], json!({}));
    b.world.script(|s| s.tracker_read_only = true);
    let ran = b.run();
    let w = b.world.lock();
    assert_eq!(ran.run.code, 1, "{}", ran.log);
    assert_eq!(w.merges, vec![1], "{}", ran.log);
    assert!(
        ran.log.contains("ENVIRONMENT FAILURE: TRACKER"),
        "{}",
        ran.log
    );
    assert!(ran.alerts().contains("ENVIRONMENT FAILURE: TRACKER"));
    assert!(
        !w.invocations.iter().any(|(i, _, _)| *i == 2),
        "{:?}",
        w.invocations
    );
}

#[test]
fn tracker_network_failures_are_waited_out_on_the_machines_schedule() {
    let b = Bench::new(&[(1, "First")], json!({}));
    b.world.script(|s| s.tracker_network_failures = 3);
    let ran = b.run();
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(b.world.lock().merges, vec![1]);
    assert_eq!(
        ran.clock.waits(),
        [2, 4, 8].map(Duration::from_secs).to_vec(),
        "{}",
        ran.log
    );
}

#[test]
fn a_network_that_stays_down_halts_after_max_network_waits() {
    let b = Bench::new(
        &[(1, "First")],
        json!({"maxNetworkWaits": 4, "backoff": {"initialSeconds": 60, "maxSeconds": 900}}),
    );
    b.world.script(|s| s.forge_network_failures = u32::MAX);
    let ran = b.run();
    assert_eq!(ran.run.code, 1, "{}", ran.log);
    assert!(
        ran.log.contains("ENVIRONMENT FAILURE: NETWORK"),
        "{}",
        ran.log
    );
    assert_eq!(
        ran.clock.waits(),
        [2, 4, 8, 16].map(Duration::from_secs).to_vec(),
        "{}",
        ran.log
    );
    let w = b.world.lock();
    assert!(w.merges.is_empty());
    assert!(
        !w.issues[&1].escalated,
        "the network is not the issue's fault"
    );
}

#[test]
fn an_issue_a_person_closes_mid_run_is_withdrawn_and_never_merged() {
    let b = Bench::new(&[(1, "First"), (2, "Second")], json!({}));
    b.world
        .script(|s| s.close_after = Some((1, Step::Implement)));
    let ran = b.run();
    let w = b.world.lock();
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(w.merges, vec![2], "{}", ran.log);
    assert!(!w.issues[&1].escalated);
    assert!(ran.journal_has("\"issueWithdrawn\""), "{}", ran.log);
    // Nothing after implement ran for #1, and the runner wrote nothing to it.
    assert!(
        !w.invocations.contains(&(1, Step::Simplify, 1)),
        "{:?}",
        w.invocations
    );
    assert!(!w.tracker_writes.iter().any(|t| t.ends_with("#1")));
}

#[test]
fn a_hook_rejecting_every_push_halts_for_the_environment_and_releases_the_first_issue() {
    let b = Bench::new(&[(1, "First"), (2, "Second"), (3, "Third")], json!({}));
    b.world.script(|s| s.reject_pushes = true);
    let ran = b.run();
    let w = b.world.lock();
    assert_eq!(ran.run.code, 1, "{}", ran.log);
    assert!(ran.log.contains("on two issues in a row"), "{}", ran.log);
    // #1 was quarantined for the hook's failure alone: the machine lifted it again.
    assert!(!w.issues[&1].escalated, "#1 left quarantined: {}", ran.log);
    assert_eq!(
        w.tracker_writes,
        ["escalate #1", "release #1"],
        "{}",
        ran.log
    );
    assert!(ran.journal_has("\"unquarantine\""), "{}", ran.log);
    assert!(
        ran.log.contains("#1's quarantine was lifted") && ran.log.contains("#1 and then #2"),
        "{}",
        ran.log
    );
    assert!(!w.issues[&2].escalated, "#2 quarantined: {}", ran.log);
    assert!(!w.issues[&3].escalated, "#3 reached: {}", ran.log);
    assert!(w.merges.is_empty());
}

#[test]
fn a_lost_push_race_is_contention_not_an_attempt() {
    let b = Bench::new(&[(1, "First")], json!({}));
    b.world.script(|s| s.lost_races = 1);
    let ran = b.run();
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(b.world.lock().merges, vec![1], "{}", ran.log);
    assert!(ran.log.contains("lost a push race"), "{}", ran.log);
    // One merge attempt, and no failure of it recorded for the machine.
    assert!(!ran.journal_has("\"stepFailed\""), "{}", ran.log);
    // The pause before merging again went through the clock.
    assert_eq!(ran.clock.waits().len(), 1, "{:?}", ran.clock.waits());
}

/// A person closes the issue while its merge pauses after a lost push race: the runner reads
/// the issue again before merging again, drops it (withdrawn, nobody blamed) and merges the
/// next one. Before, the merge ran again straight after the pause and merged a closed issue.
#[test]
fn an_issue_closed_while_its_merge_paused_is_not_merged() {
    let b = Bench::new(&[(1, "First"), (2, "Second")], json!({}));
    b.world.script(|s| {
        s.lost_races = 1;
        s.close_on_lost_race = Some(1);
    });
    let ran = b.run();
    let w = b.world.lock();
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(
        w.merges,
        vec![2],
        "#1 was merged after it was closed: {}",
        ran.log
    );
    assert!(!w.issues[&1].escalated, "{}", ran.log);
    assert!(ran.journal_has("\"issueWithdrawn\""), "{}", ran.log);
    assert!(
        !w.tracker_writes.iter().any(|t| t.ends_with("#1")),
        "{:?}",
        w.tracker_writes
    );
}

/// The local tracker's claims directory of `b`, made.
fn claims_dir(b: &Bench) -> std::path::PathBuf {
    let claims = b.dir.path().join("issues").join(".claims");
    std::fs::create_dir_all(&claims).expect("claims dir");
    claims
}

/// A claim (or the merge lease) of `worker` on `issue`, taken when the fake clock starts and
/// running out `secs` later.
fn lease(issue: u32, worker: &str, secs: i64) -> String {
    use crate::ports::Clock;
    let start = FakeClock::default().now();
    json!({
        "issue": issue, "worker": worker,
        "claimedAt": start.to_rfc3339(),
        "expiresAt": (start + chrono::Duration::seconds(secs)).to_rfc3339(),
    })
    .to_string()
}

/// Claims are the machine's: the selected issue is claimed (`ClaimIssue`), and the claim is
/// renewed before every request that works on the issue or waits (`RenewClaim`, answered
/// before the request goes out). When another runner has taken the issue over meanwhile (this
/// runner's lease ran out), the renewal answers `ClaimLost`: the runner stops before the next
/// request, nothing more is done on the issue, and the run can be replayed.
#[test]
fn a_claim_taken_over_mid_run_stops_the_runner_before_its_next_request() {
    let b = Bench::new(&[(1, "First")], json!({"claims": {"leaseMinutes": 600}}));
    let claims = claims_dir(&b);
    // Another runner's merge lease, so that the merge pauses (a wait renews the claim).
    std::fs::write(claims.join("merge.json"), lease(9, "ghost", 1)).expect("lease");
    // After implement, another runner holds #1's claim.
    let stolen = lease(1, "w2", 86_400);
    b.world.script(|s| {
        s.write_after = Some((1, Step::Implement, claims.join("1.json"), stolen.clone()));
    });
    let opts = RunOptions {
        worker_id: Some("w1".into()),
        ..RunOptions::default()
    };
    let ran = b.run_on_local_claims(opts);
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert!(b.world.lock().merges.is_empty(), "{}", ran.log);
    ran.journaled(&[
        r#""effect":"claimIssue""#,
        r#""event":"claimTaken""#,
        // The renewal's terms are the machine's: a lease from now, no write while more than
        // half of it is left.
        r#""effect":"renewClaim","issue":1,"secs":0,"lease_secs":36000,"fresh_secs":18000"#,
        r#""event":"claimRenewed""#,
        r#""event":"claimLost""#,
        r#""notice":"claimLost""#,
    ]);
    assert!(ran.log.contains("now claimed by worker w2"), "{}", ran.log);
    // The other runner's claim is left as it is.
    let now = std::fs::read_to_string(claims.join("1.json")).expect("claim");
    assert!(now.contains("\"w2\""), "{now}");
    ran.replays_exactly();
}

/// A runner with a worker id shares its merges: the machine asks for the merge turn, pauses
/// on the LeaseWait schedule while another runner's merge lease holds it (the holder named),
/// takes the lease over once it ran out, merges again after a lost push race without
/// spending an attempt, and gives the turn back. Each step is a journaled event or effect,
/// and `replay` reproduces the run from the journal.
#[test]
fn a_wait_for_the_merge_lease_and_a_lost_race_are_journaled_and_replay_exactly() {
    let b = Bench::new(&[(1, "First")], json!({"claims": {"leaseMinutes": 600}}));
    let claims = claims_dir(&b);
    // Another runner's merge lease, running out 1 s into the fake clock's run.
    std::fs::write(claims.join("merge.json"), lease(9, "ghost", 1)).expect("lease");
    b.world.script(|s| s.lost_races = 1);
    let opts = RunOptions {
        worker_id: Some("w1".into()),
        ..RunOptions::default()
    };
    let ran = b.run_on_local_claims(opts);
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(b.world.lock().merges, vec![1], "{}", ran.log);
    // The wait is told once, naming the holder.
    let told = ran.alerts();
    assert_eq!(
        told.matches("waiting for the merge lease, held by worker ghost (merging #9)")
            .count(),
        1,
        "{told}"
    );
    ran.journaled(&[
        r#""effect":"takeMergeTurn""#,
        r#""event":"mergeTurnBusy""#,
        r#""effect":"pause""#,
        r#""event":"mergeTurnTaken""#,
        r#""event":"mergeRaceLost""#,
        r#""notice":"mergeRaceLost""#,
        r#""effect":"releaseMergeTurn""#,
    ]);
    // The race was no attempt: nothing failed, and the turn was given back.
    assert!(!ran.journal_has("\"stepFailed\""), "{}", ran.log);
    assert!(
        !claims.join("merge.json").exists(),
        "the lease is given back"
    );
    // The pauses went through the clock: 200 ms doubling, until the ghost's lease ran out,
    // then the one after the lost race.
    let waits = ran.clock.waits();
    assert_eq!(
        waits[..3],
        [
            Duration::from_millis(200),
            Duration::from_millis(400),
            Duration::from_millis(800)
        ],
        "{waits:?}"
    );
    assert_eq!(waits.last(), Some(&Duration::from_millis(250)), "{waits:?}");
    ran.replays_exactly();
}

#[test]
fn a_failed_agent_attempt_is_retried_and_the_issue_still_merges() {
    let b = Bench::new(&[(1, "First")], json!({}));
    let ran = b.run_scripted(|agent| {
        agent.script(
            1,
            Step::WriteSpecs,
            1,
            Outcome::Fail("error: the model gave up".to_string()),
        )
    });
    let w = b.world.lock();
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(w.merges, vec![1], "{}", ran.log);
    let specs: Vec<u32> = w
        .invocations
        .iter()
        .filter(|(i, s, _)| *i == 1 && *s == Step::WriteSpecs)
        .map(|(_, _, attempt)| *attempt)
        .collect();
    assert_eq!(specs, vec![1, 2], "{}", ran.log);
    assert!(ran.journal_has("\"stepFailed\""), "{}", ran.log);
}

/// What an agent's step changed of the repository's git setup fails that attempt as
/// GIT_TAMPERED, quoting the change, before the runner's next git call; the next attempt
/// does the work and the issue merges. The session recorded the setup before any agent ran.
#[test]
fn a_step_that_tampers_with_git_fails_as_git_tampered_and_the_next_attempt_merges() {
    let b = Bench::new(&[(1, "First")], json!({}));
    let world = b.world.clone();
    let ran = b.run_scripted(|agent| {
        agent.during(1, Step::Implement, move || {
            world.lock().tampering = vec!["hook pre-push added".to_string()];
        })
    });
    let w = b.world.lock();
    assert!(w.trust_recorded, "recorded at the session's start");
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(w.merges, vec![1], "{}", ran.log);
    let implement: Vec<u32> = w
        .invocations
        .iter()
        .filter(|(i, s, _)| *i == 1 && *s == Step::Implement)
        .map(|(_, _, attempt)| *attempt)
        .collect();
    assert_eq!(implement, vec![1, 2], "{}", ran.log);
    assert!(ran.journal_has("GIT_TAMPERED"), "{}", ran.log);
    assert!(ran.log.contains("hook pre-push added"), "{}", ran.log);
}

/// Manual approval: the wait for a person's decision lasts the machine's decision time
/// (`Limits::decision_wait_secs`, from `decisionTimeoutMinutes`) on the clock port, then the
/// machine halts `DecisionTimeout`; nothing real waits.
#[test]
fn a_decision_nobody_gives_times_out_on_the_clock_port() {
    let b = Bench::new(
        &[(1, "First")],
        json!({"approval": "manual", "decisionTimeoutMinutes": 1, "maxRetriesPerStep": 1}),
    );
    let ran = b.run_scripted(|agent| {
        agent.script(
            1,
            Step::WriteSpecs,
            1,
            Outcome::Fail("error: the model gave up".to_string()),
        )
    });
    assert_eq!(ran.run.code, 1, "{}", ran.log);
    assert!(ran.journal_has("\"effect\":\"askDecision\""), "{}", ran.log);
    // Looked for the answer after 2, 4, 8, 16 and 30 s, then halted: the next wait would
    // have passed the decision time.
    ran.journaled(&[
        r#""event":"decisionPending""#,
        r#""effect":"lookForDecision""#,
        r#""reason":"decisionTimeout""#,
    ]);
    let waited: Duration = ran.clock.waits().iter().sum();
    assert!(
        waited >= Duration::from_secs(60) && waited < Duration::from_secs(62),
        "waited {waited:?}"
    );
    assert!(b.world.lock().merges.is_empty());
}

/// The flags of a runner with worker id `id`.
fn worker(id: &str) -> RunOptions {
    RunOptions {
        worker_id: Some(id.into()),
        ..RunOptions::default()
    }
}

/// `worker`'s claim on `issue`, taken an hour before the fake clock starts and running out
/// `secs` after it starts (before it, for a negative `secs`).
fn claim(issue: u32, worker: &str, secs: i64) -> Claim {
    use crate::ports::Clock;
    let start = FakeClock::default().now();
    Claim {
        issue,
        worker: worker.to_string(),
        claimed_at: start - chrono::Duration::hours(1),
        expires_at: start + chrono::Duration::seconds(secs),
    }
}

/// The issues `run`'s journal records a `claimTaken` for, in order.
fn claims_taken(run: &PortsRun) -> Vec<u32> {
    run.journal_lines()
        .iter()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            (v.pointer("/event/event")? == "claimTaken")
                .then(|| v.pointer("/event/issue")?.as_u64())
                .flatten()
        })
        .filter_map(|n| u32::try_from(n).ok())
        .collect()
}

/// Two runners on one tracker and one claim store, each in a clone of its own: while the
/// first starts #1, the second runs to its end. Neither works an issue the other holds, and
/// together they merge every issue once.
#[test]
fn two_runners_sharing_one_claim_store_never_work_the_same_issue() {
    let b = Bench::new(
        &[(1, "First"), (2, "Second"), (3, "Third")],
        json!({"claims": {"leaseMinutes": 600}}),
    );
    let (cfg, ports) = b.another_runner("w2");
    let second = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = std::sync::Arc::clone(&second);
    let ran = b.run_as(worker("w1"), move |agent| {
        agent.during(1, Step::StartIssue, move || {
            // On a thread of its own: this one drives the first runner's runtime.
            let run = std::thread::spawn(move || run_on_ports(cfg, worker("w2"), ports))
                .join()
                .expect("the second runner");
            *slot.lock().expect("slot") = Some(run);
        })
    });
    let second = second
        .lock()
        .expect("slot")
        .take()
        .expect("the second runner ran");
    assert_eq!((ran.run.code, second.code), (0, 0), "{}", ran.log);
    assert_eq!(claims_taken(&ran.run), vec![1], "{}", ran.log);
    assert_eq!(
        claims_taken(&second),
        vec![2, 3],
        "{:?}",
        second.journal_lines()
    );
    let w = b.world.lock();
    assert_eq!(w.merges, vec![2, 3, 1], "{}", ran.log);
    for n in [1, 2, 3] {
        assert_eq!(
            w.invocations
                .iter()
                .filter(|i| **i == (n, Step::StartIssue, 1))
                .count(),
            1,
            "#{n}: {:?}",
            w.invocations
        );
    }
    assert!(w.issues.values().all(|i| !i.state_open));
    assert_eq!(b.claims.claims(), vec![], "every claim is given back");
}

/// Another runner's claim whose lease ran out (it died or hung) is taken over and its issue
/// worked; a live one is left alone and its issue never selected.
#[test]
fn an_expired_claim_is_taken_over_and_a_live_one_is_left_alone() {
    let b = Bench::new(
        &[(1, "First"), (2, "Second")],
        json!({"claims": {"leaseMinutes": 600}}),
    );
    b.claims.plant(claim(1, "w0", -60));
    let live = claim(2, "w9", 3600);
    b.claims.plant(live.clone());
    let ran = b.run_as(worker("w1"), |_| {});
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(b.world.lock().merges, vec![1], "{}", ran.log);
    assert_eq!(claims_taken(&ran.run), vec![1], "{}", ran.log);
    assert!(
        !ran.journal_has(r#""effect":"claimIssue","issue":2"#),
        "{}",
        ran.log
    );
    assert!(
        !b.world.lock().invocations.iter().any(|(i, _, _)| *i == 2),
        "{}",
        ran.log
    );
    assert!(b.world.lock().issues[&2].state_open);
    // The taken-over claim was given back with the merge; the live one is as it was.
    assert_eq!(b.claims.claims(), vec![live]);
}

/// A claim lost while a step runs (the store hands the issue to another worker, as when this
/// runner's lease ran out): the next renewal that asks the store answers `ClaimLost`, the
/// runner stops before its next request, and the other worker's claim stays.
#[test]
fn a_claim_lost_while_a_step_runs_stops_the_runner_and_leaves_the_new_holders_claim() {
    let b = Bench::new(&[(1, "First")], json!({"claims": {"leaseMinutes": 600}}));
    // Another runner's merge lease, so that the merge pauses (a wait renews the claim).
    b.claims.plant_merge(claim(9, "ghost", 1));
    let stolen = claim(1, "w2", 86_400);
    let (claims, taken) = (b.claims.clone(), stolen.clone());
    let ran = b.run_as(worker("w1"), move |agent| {
        agent.during(1, Step::Implement, move || claims.plant(taken));
    });
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert!(b.world.lock().merges.is_empty(), "{}", ran.log);
    ran.journaled(&[r#""event":"claimLost""#, r#""notice":"claimLost""#]);
    assert!(ran.log.contains("now claimed by worker w2"), "{}", ran.log);
    // Nothing more is asked of the world for the issue once the loss is known.
    let lines = ran.run.journal_lines();
    let lost = lines
        .iter()
        .position(|l| l.contains(r#""event":"claimLost""#))
        .expect("claimLost");
    for later in &lines[lost..] {
        for request in ["runStep", "takeMergeTurn", "renewClaim", "recordMerged"] {
            assert!(
                !later.contains(&format!(r#""effect":"{request}""#)),
                "{request} after the loss: {later}"
            );
        }
    }
    assert_eq!(b.claims.claims(), vec![stolen]);
    ran.replays_exactly();
}

/// A claim store that cannot be written when the selected issue is claimed (`ClaimError::Io`:
/// the claims directory is not writable): the claim is refused, and the machine halts
/// `ClaimRefused` naming the issue, before any step and without blaming the issue.
#[test]
fn a_claim_store_failing_at_claim_time_halts_before_any_step_and_blames_no_issue() {
    let b = Bench::new(&[(1, "First")], json!({"claims": {"leaseMinutes": 600}}));
    b.claims.fail_claims(1);
    let ran = b.run_as(worker("w1"), |_| {});
    assert_eq!(ran.run.code, 1, "{}", ran.log);
    ran.journaled(&[
        r#""effect":"claimIssue","issue":1"#,
        r#""event":"trackerWriteFailed""#,
        r#""reason":"claimRefused""#,
    ]);
    assert!(ran.log.contains("fake-claims"), "{}", ran.log);
    let w = b.world.lock();
    assert!(w.invocations.is_empty(), "{:?}", w.invocations);
    assert!(w.tracker_writes.is_empty(), "{:?}", w.tracker_writes);
    assert!(w.issues[&1].state_open && !w.issues[&1].escalated);
    assert_eq!(b.claims.claims(), vec![]);
}

/// An agent-run merge where main takes its merges through a merge queue: the agent's
/// `gh pr merge` puts the PR in the queue and exits 0, so the merge's check finds nothing on
/// main yet. The runner looks at the queue once, waits for it on CI's schedule as after the
/// builtin merge, and takes the merge the queue made. Before, the check's failure was the
/// attempt's: the agent was asked to merge again, and the issue escalated while the queue
/// merged it.
#[test]
fn an_agent_merge_that_queues_the_pr_is_waited_for_in_the_queue_and_merged_once() {
    let builtin = json!({"run": "builtin"});
    let steps = json!({
        "startCycle": builtin, "commitPush": builtin, "createPR": builtin,
        "monitorCI": builtin, "merge": {"run": "agent"},
    });
    let b = Bench::new(&[(1, "First")], json!({ "steps": steps }));
    b.world.script(|s| s.merge_queue_looks = Some(2));
    let ran = b.run();
    let w = b.world.lock();
    assert_eq!(ran.run.code, 0, "{}", ran.log);
    assert_eq!(w.merges, vec![1], "{}", ran.log);
    assert!(w.queued.is_empty(), "{:?}", w.queued);
    let merges = w.invocations.iter().filter(|(_, s, _)| *s == Step::Merge);
    assert_eq!(merges.count(), 1, "{:?}", w.invocations);
    assert!(!w.issues[&1].escalated, "{}", ran.log);
    assert!(
        ran.log
            .contains("the agent put the pull request in main's merge queue"),
        "{}",
        ran.log
    );
    // Queued at the look after the agent's merge and at the next one: a wait after each, on
    // CI's schedule; the third look finds it merged.
    assert_eq!(ran.clock.waits().len(), 2, "{:?}", ran.clock.waits());
    ran.journaled(&["\"mergeQueued\"", "\"recordMerged\""]);
    drop(w);
    ran.replays_exactly();
}
