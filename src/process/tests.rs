use super::*;

fn sh(script: &str) -> ChildSpec {
    let mut cmd = ChildSpec::new("sh");
    cmd.args(["-c", script]);
    cmd
}

#[test]
fn output_past_the_budget_keeps_its_head_and_its_tail() {
    let mut kept = Kept::new(Budget(1000));
    kept.push(b"HEAD");
    for _ in 0..10_000 {
        kept.push(&[b'.'; 100]);
    }
    kept.push(b"the error at the end");
    let text = kept.text();
    assert!(text.starts_with("HEAD"), "{text}");
    assert!(text.ends_with("the error at the end"), "{text}");
    assert!(text.len() < 1100, "{}", text.len());
    assert!(text.contains("bytes of output cut"), "{text}");
    let mut small = Kept::new(Budget(1000));
    small.push(b"all of it");
    assert_eq!(small.text(), "all of it");
}

#[test]
fn a_background_process_dies_with_the_command_that_started_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let script = format!("sleep 600 & echo $! > {}", pid_file.display());
    let out = output_within(sh(&script), Duration::from_secs(10))
        .expect("runs")
        .expect("ends");
    assert!(out.status.success());
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    let pid = rustix::process::Pid::from_raw(pid).expect("a positive pid");
    while rustix::process::test_kill_process(pid).is_ok() {
        assert!(Instant::now() < deadline, "the background sleep survived");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_deadline_stops_the_whole_group_and_says_why() {
    let started = Instant::now();
    let err = within_deadline(Instant::now() + Duration::from_millis(300), || {
        output_within(sh("trap '' TERM; sleep 600"), Duration::from_secs(60))
    })
    .expect_err("stopped");
    assert_eq!(stopped(&err), Some(Stopped::Deadline));
    assert!(started.elapsed() < Duration::from_secs(5));
    // Outside the scope the deadline no longer applies.
    let out = output_within(sh("sleep 0.4; echo done"), Duration::from_secs(10));
    assert!(out.expect("runs").is_some());
}

#[test]
fn a_withdrawn_call_is_stopped_and_says_why_and_no_other_call_is() {
    let call = call_id();
    let other = call_id();
    let started = Instant::now();
    let withdrawer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        withdraw(call);
    });
    let err = withdrawable(call, || {
        output_within(sh("trap '' TERM; sleep 600"), Duration::from_secs(60))
    })
    .expect_err("stopped");
    assert_eq!(stopped(&err), Some(Stopped::Withdrawn));
    assert!(started.elapsed() < Duration::from_secs(5));
    let _ = withdrawer.join();
    // Another call, and the same id's next use after the withdrawal was taken, run.
    let out = withdrawable(other, || {
        output_within(sh("sleep 0.3; echo done"), Duration::from_secs(10))
    });
    assert!(out.expect("runs").is_some());
    let out = withdrawable(call, || {
        output_within(sh("echo again"), Duration::from_secs(10))
    });
    assert!(out.expect("runs").is_some());
}

#[test]
fn the_earlier_deadline_of_nested_scopes_wins() {
    let soon = Instant::now() + Duration::from_millis(200);
    let err = within_deadline(soon, || {
        within_deadline(soon + Duration::from_secs(60), || {
            output_within(sh("sleep 600"), Duration::from_secs(60))
        })
    })
    .expect_err("stopped");
    assert_eq!(stopped(&err), Some(Stopped::Deadline));
}

#[test]
fn what_a_step_left_outside_its_groups_ends_with_the_step() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    // A hook's daemon: its own session, so the group kill at the command's end misses it.
    // (The pause lets it leave the group before the command's end kills the group.)
    let script = format!(
        "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > {}; sleep 0.3",
        pid_file.display()
    );
    within_deadline(Instant::now() + Duration::from_secs(60), || {
        let out = output_within(sh(&script), Duration::from_secs(10))
            .expect("runs")
            .expect("ends");
        assert!(out.status.success());
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .expect("pid")
            .trim()
            .parse()
            .expect("a pid");
        thread::sleep(Duration::from_millis(100));
        assert!(crate::cleanup::process_alive(pid), "alive within the step");
    });
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(
        !crate::cleanup::process_alive(pid),
        "{pid} outlived its step"
    );
}
