//! `run --http`: the status server against real runs of the binary, with a plain HTTP/1.1
//! client over a TCP socket (no client library between the test and the bytes).

use crate::e2e;

use e2e::{code, signal, text, wait_output, Project};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

pub(crate) fn free_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// `GET path` with extra header lines; (status code, body).
pub(crate) fn get(addr: SocketAddr, path: &str, headers: &[&str]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    (
        status,
        if chunked {
            dechunk(body)
        } else {
            body.to_string()
        },
    )
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

/// Waits until the server answers.
fn wait_up(addr: SocketAddr, runner: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).is_err() {
        if let Ok(Some(status)) = runner.try_wait() {
            panic!("the runner exited ({status}) before serving on {addr}");
        }
        assert!(Instant::now() < deadline, "nothing listens on {addr}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An SSE client: the data of every event until the server ends the stream.
fn follow_events(addr: SocketAddr) -> std::thread::JoinHandle<Vec<Value>> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    s.write_all(b"GET /api/events HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n\r\n")
        .expect("send");
    std::thread::spawn(move || {
        let mut events = Vec::new();
        for line in BufReader::new(s).lines() {
            let Ok(line) = line else { break };
            // Chunk sizes and SSE fields arrive on their own lines; only data lines matter.
            if let Some(data) = line.strip_prefix("data: ") {
                events.push(serde_json::from_str(data).expect("an event is JSON"));
            }
        }
        events
    })
}

fn status_json(p: &Project) -> Value {
    let out = p
        .command(&[
            "status",
            "--config",
            p.config.to_str().expect("utf8"),
            "--json",
        ])
        .output()
        .expect("status");
    assert_eq!(code(&out), 0, "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("status --json is JSON")
}

/// The document without what is computed at the moment of reading (elapsed, remaining).
fn without_clock(mut v: Value) -> Value {
    if let Some(r) = v["runningStep"].as_object_mut() {
        r.remove("elapsedSeconds");
    }
    if let Some(w) = v["wait"].as_object_mut() {
        w.remove("remainingSeconds");
    }
    v
}

/// Polls `status --json` until `ready` holds for it.
fn status_until(p: &Project, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let st = status_json(p);
        if ready(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "never {what}: {st:#}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn one_issue(script: Value) -> Project {
    Project::new(&[(1, "Add a greeting", "Say hello.")], script, json!({}))
}

/// While the agent works (hangs) in implement, `/api/status` is the document of
/// `status --json`, and `/metrics` parses as Prometheus text with the run's counts.
#[test]
fn status_is_the_status_json_document_and_metrics_parse() {
    let p = Project::new(
        &[(1, "Add a greeting", "Say hello.")],
        json!({"steps": {"implement": ["hang"]}, "costUsd": 0.25}),
        json!({"budget": {"perSessionUsd": 5, "perDayUsd": 20}}),
    );
    let addr = free_port();
    let mut runner = p.spawn(&["--http", &addr.to_string()]);
    wait_up(addr, &mut runner);
    p.wait_for_invocation("1 implement", Duration::from_secs(60));
    let mut matched = false;
    for _ in 0..20 {
        let cli = status_json(&p);
        std::thread::sleep(Duration::from_millis(700));
        let (status, body) = get(addr, "/api/status", &[]);
        assert_eq!(status, 200, "{body}");
        let served: Value = serde_json::from_str(&body).expect("JSON");
        if without_clock(served.clone()) == without_clock(cli) {
            assert_eq!(served["currentStep"], "implement");
            assert_eq!(served["currentAttempt"], 1);
            // Spend against the budget: startCycle, startIssue and writeSpecs at $0.25 each.
            assert_eq!(served["budgets"]["perSessionUsd"], 5.0, "{served}");
            assert_eq!(served["budgets"]["sessionUsd"], 0.75, "{served}");
            // The day's ceiling over every journal, the page's "day spend" bar.
            assert_eq!(served["day"]["perDayUsd"], 20.0, "{served}");
            // The day's spend also counts the running cost of the call under way (journaled
            // as it grows): the three answered calls, and at most one more call's price.
            let day = served["day"]["spentUsd"].as_f64().unwrap_or_default();
            assert!((0.75..1.0).contains(&day), "{served}");
            matched = true;
            break;
        }
    }
    assert!(matched, "/api/status never equalled status --json");

    // The running attempt, live: as the fake agent streamed it (one Read, one turn).
    let st = status_until(&p, "showed the agent's Read", |st| {
        st["runningStep"]["lastTool"] == "Read"
            && st["runningStep"]["elapsedSeconds"].as_u64() > Some(0)
    });
    let running = &st["runningStep"];
    assert_eq!(running["step"], "implement", "{st:#}");
    assert_eq!(running["issue"], 1, "{st:#}");
    assert_eq!(running["attempt"], 1, "{st:#}");
    assert_eq!(running["turns"], 1, "{st:#}");
    assert!(running["startedAt"].is_string(), "{st:#}");
    assert_eq!(
        running["costUsd"],
        Value::Null,
        "reported with the result only: {st:#}"
    );
    assert_eq!(st["wait"], Value::Null, "{st:#}");
    // The server answers from a document at most half a second old.
    std::thread::sleep(Duration::from_millis(700));
    let (_, body) = get(addr, "/api/status", &[]);
    let served: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(served["runningStep"]["lastTool"], "Read", "{served:#}");
    assert!(
        served["runningStep"]["elapsedSeconds"].as_u64() > Some(0),
        "{served:#}"
    );
    let out = p
        .command(&["status", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("status");
    assert!(
        text(&out).contains("running:  implement attempt 1 of #1 · ")
            && text(&out).contains(" · 1 turn · Read"),
        "{}",
        text(&out)
    );

    let (status, body) = get(addr, "/metrics", &[]);
    assert_eq!(status, 200);
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string())))
        .expect("Prometheus text");
    let value = |name: &str, labels: &[(&str, &str)]| -> Option<f64> {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
    };
    assert_eq!(
        value("sdlc_steps_started_total", &[("step", "writeSpecs")]),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        value(
            "sdlc_steps_finished_total",
            &[("step", "writeSpecs"), ("outcome", "ok")]
        ),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        value(
            "sdlc_worker_state",
            &[("worker", "runner"), ("state", "Implement")]
        ),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        value(
            "sdlc_worker_state",
            &[("worker", "runner"), ("state", "WriteSpecs")]
        ),
        Some(0.0),
        "{body}"
    );
    assert!(
        value("sdlc_agent_cost_usd_total", &[("step", "writeSpecs")]).is_some_and(|c| c > 0.0),
        "{body}"
    );
    // Each budget and what was spent against it, as the status document has them: the
    // session's and the day's $0.75 so far; no issue or call budget is set, so none is shown.
    for (name, scope, expected) in [
        ("sdlc_budget_usd", "session", 5.0),
        ("sdlc_budget_usd", "day", 20.0),
        ("sdlc_spent_usd", "session", 0.75),
        ("sdlc_spent_usd", "issue", 0.75),
    ] {
        assert_eq!(
            value(name, &[("scope", scope)]),
            Some(expected),
            "{name}{{scope={scope}}}: {body}"
        );
    }
    // The day's spend counts the running cost of the call under way too (journaled as it
    // grows): the three answered calls, and less than one more.
    let day = value("sdlc_spent_usd", &[("scope", "day")]).unwrap_or_default();
    assert!(
        (0.75..1.0).contains(&day),
        "sdlc_spent_usd{{scope=day}} {day}: {body}"
    );
    assert_eq!(
        value("sdlc_budget_usd", &[("scope", "issue")]),
        None,
        "{body}"
    );
    assert_eq!(
        value("sdlc_left_usd", &[("scope", "call")]),
        Some(4.25),
        "{body}"
    );

    let (status, page) = get(addr, "/", &[]);
    assert_eq!(status, 200);
    assert!(
        page.contains("id=\"state-Implement\""),
        "the diagram is inlined"
    );
    assert!(
        !page.contains("src=\"http"),
        "nothing is fetched from elsewhere"
    );

    signal(&runner, libc::SIGTERM);
    let out = wait_output(runner, Duration::from_secs(60));
    assert_eq!(code(&out), 0, "{}", text(&out));
}

/// A client following `/api/events` from the start gets every record the run appends, in the
/// journal's order, redacted, and its stream ends with the run.
#[test]
fn events_arrive_in_journal_order_and_the_stream_ends_with_the_run() {
    let p = Project::new(
        &[
            (1, "Add a greeting", "Say hello."),
            (2, "Add a farewell", "Bye."),
        ],
        json!({"steps": {"*": ["busy:150"], "2:verify": ["fail-test", "ok"]}}),
        json!({}),
    );
    let addr = free_port();
    let mut runner = p.spawn(&["--http", &addr.to_string()]);
    wait_up(addr, &mut runner);
    let events = follow_events(addr);
    let out = wait_output(runner, Duration::from_secs(120));
    assert_eq!(code(&out), 0, "{}", text(&out));
    let events = events.join().expect("client");
    let journal = p.journal();
    assert!(!events.is_empty(), "no event arrived");
    let first = events[0]["seq"].as_u64().expect("seq");
    let expected: Vec<Value> = journal
        .into_iter()
        .filter(|l| l["seq"].as_u64().is_some_and(|s| s >= first))
        .map(|mut l| {
            sdlc_runner::redact::redact_json(&mut l);
            l["worker"] = json!("runner");
            l
        })
        .collect();
    assert_eq!(events.len(), expected.len(), "one event per journal record");
    assert_eq!(events, expected);
    assert_eq!(events.last().expect("last")["kind"], "sessionEnd");
    assert!(
        events.iter().any(|e| e["event"]["event"] == "stepFailed"),
        "the verify failure is among them"
    );
}

/// Off loopback the runner refuses to serve without a token; with one, a request without it
/// gets 401 and one with it (header or query) gets the document.
#[test]
fn a_token_is_required_off_loopback() {
    let p = one_issue(json!({"steps": {"implement": ["hang"]}}));
    let port = free_port().port();
    let out = p.run(&["--http", &format!("0.0.0.0:{port}")]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("http.tokenEnv"), "{}", text(&out));
    assert!(p.invocations().is_empty(), "no agent ran");

    p.set_config(
        json!({"http": {"listen": format!("0.0.0.0:{port}"), "tokenEnv": "SDLC_TEST_HTTP_TOKEN"}}),
    );
    let mut unset = p.command(&["run", "--config", p.config.to_str().expect("utf8")]);
    let out = unset
        .env_remove("SDLC_TEST_HTTP_TOKEN")
        .output()
        .expect("run");
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("SDLC_TEST_HTTP_TOKEN"),
        "{}",
        text(&out)
    );
    assert!(p.invocations().is_empty(), "no agent ran");

    let token = "s3cret-token-for-the-test";
    let mut runner = p
        .command(&["run", "--config", p.config.to_str().expect("utf8")])
        .env("SDLC_TEST_HTTP_TOKEN", token)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    wait_up(addr, &mut runner);
    for path in ["/", "/api/status", "/api/events", "/metrics"] {
        assert_eq!(get(addr, path, &[]).0, 401, "{path} without a token");
        assert_eq!(
            get(addr, path, &["Authorization: Bearer wrong"]).0,
            401,
            "{path} with a wrong token"
        );
    }
    let bearer = format!("Authorization: Bearer {token}");
    assert_eq!(get(addr, "/api/status", &[&bearer]).0, 200);
    assert_eq!(get(addr, "/metrics", &[&bearer]).0, 200);
    assert_eq!(get(addr, &format!("/?token={token}"), &[]).0, 200);
    // The runner's signal handling is set up by then.
    p.wait_for_invocation("1 implement", Duration::from_secs(60));
    signal(&runner, libc::SIGTERM);
    let out = wait_output(runner, Duration::from_secs(60));
    assert_eq!(code(&out), 0, "{}", text(&out));
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("proc status")
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

/// Clients that open the event stream and never read it, and clients that send an endless
/// request head, while the run works through issues: the runner's memory stays flat, the
/// run finishes as usual, and the server still answers a well-behaved client.
#[test]
fn clients_that_never_read_do_not_grow_the_runner_memory() {
    let issues: Vec<(u32, String)> = (1..=4).map(|n| (n, format!("Issue {n}"))).collect();
    let list: Vec<(u32, &str, &str)> = issues
        .iter()
        .map(|(n, t)| (*n, t.as_str(), "Do it."))
        .collect();
    let p = Project::new(&list, json!({"steps": {"*": ["busy:300"]}}), json!({}));
    let addr = free_port();
    let mut runner = p.spawn(&["--http", &addr.to_string()]);
    wait_up(addr, &mut runner);
    let pid = runner.id();
    // Never read: the kernel buffers fill, then the server must drop or park them.
    let mut idle = Vec::new();
    for _ in 0..40 {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /api/events HTTP/1.1\r\nHost: t\r\n\r\n")
            .expect("send");
        idle.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    let before = rss_kib(pid);
    // Heads that never end: each is cut off at the size limit.
    let junk = format!("X-Junk: {}\r\n", "a".repeat(8 * 1024));
    let mut refused = 0;
    for _ in 0..30 {
        let Ok(mut s) = TcpStream::connect(addr) else {
            refused += 1;
            continue;
        };
        s.set_write_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let _ = s.write_all(b"GET /api/status HTTP/1.1\r\nHost: t\r\n");
        let mut sent = 0usize;
        // Far more than any socket buffer holds: a head the server did not cut off would be
        // written whole; one it refused fails the write, however slow the loaded machine is
        // to close the connection.
        while sent < 64 * 1024 * 1024 {
            if s.write_all(junk.as_bytes()).is_err() {
                break;
            }
            sent += junk.len();
        }
        if sent < 64 * 1024 * 1024 {
            refused += 1;
        }
    }
    assert_eq!(
        refused, 30,
        "a request head that never ends must be refused"
    );
    let after = rss_kib(pid);
    let status = runner.try_wait().expect("try_wait");
    assert!(status.is_none(), "the runner stays up: {status:?}");
    assert!(
        after < before + 16 * 1024,
        "the runner grew from {before} KiB to {after} KiB"
    );
    // The idle clients stay connected while the run appends records: the peak stays flat.
    let mut peak = after;
    let deadline = Instant::now() + Duration::from_secs(180);
    while runner.try_wait().expect("try_wait").is_none() && Instant::now() < deadline {
        let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            });
        peak = peak.max(rss.unwrap_or(0));
        if e2e::merged_issues(&p.origin).len() >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        peak < before + 16 * 1024,
        "while clients did not read, the runner grew from {before} KiB to {peak} KiB"
    );
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    let (code_now, _) = get(addr, "/api/status", &[]);
    assert_eq!(
        code_now, 200,
        "a well-behaved client is served after the flood"
    );
    let out = wait_output(runner, Duration::from_secs(180));
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(e2e::merged_issues(&p.origin), vec![1, 2, 3, 4]);
}

/// `run --workers 2 --http`: one server for the fleet; every worker's records arrive, each
/// worker's in its own journal's order, and the status document lists the workers.
#[test]
fn a_fleet_serves_every_workers_records_in_order() {
    let p = Project::new(
        &[
            (1, "Add a greeting", "Say hello."),
            (2, "Add a farewell", "Bye."),
            (3, "Add a name", "Greet by name."),
        ],
        json!({"steps": {"implement": ["busy:300"]}}),
        json!({"steps": e2e::builtin_steps()}),
    );
    let addr = free_port();
    let mut runner = p.spawn(&["--workers", "2", "--http", &addr.to_string()]);
    wait_up(addr, &mut runner);
    let events = follow_events(addr);
    p.wait_for_invocation("", Duration::from_secs(60));
    let (status, body) = get(addr, "/api/status", &[]);
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&body).expect("JSON");
    let names: Vec<&str> = doc["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .filter_map(|w| w["name"].as_str())
        .collect();
    assert_eq!(names, ["w0", "w1"], "{body}");
    let out = wait_output(runner, Duration::from_secs(180));
    assert_eq!(code(&out), 0, "{}", text(&out));
    let events = events.join().expect("client");
    for w in ["w0", "w1"] {
        let mine: Vec<&Value> = events.iter().filter(|e| e["worker"] == w).collect();
        assert!(!mine.is_empty(), "no record of {w}");
        let journal = p.project.join(format!(
            ".git/sdlc-runner/workers/{w}/.git/sdlc-runner/journal.jsonl"
        ));
        let seqs: Vec<u64> = std::fs::read_to_string(&journal)
            .expect("worker journal")
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok()?["seq"].as_u64())
            .collect();
        let got: Vec<u64> = mine.iter().filter_map(|e| e["seq"].as_u64()).collect();
        assert_eq!(got, seqs[seqs.len() - got.len()..], "{w} in journal order");
        assert_eq!(got[0], 1, "{w} from its first record");
    }
}

/// During a rate-limit backoff, `status --json` and `/api/status` show the wait, what it waits
/// for and until when, and no running step; a dead runner's last snapshot is not shown.
#[test]
fn a_rate_limit_wait_is_shown_with_its_end_time() {
    let p = Project::new(
        &[(1, "Add a greeting", "Say hello.")],
        json!({"steps": {"implement": ["rate-limit", "hang"]}}),
        json!({"backoff": {"initialSeconds": 20, "maxSeconds": 20}}),
    );
    let addr = free_port();
    let mut runner = p.spawn(&["--http", &addr.to_string()]);
    wait_up(addr, &mut runner);
    let st = status_until(&p, "showed the wait", |st| st["wait"].is_object());
    let wait = &st["wait"];
    assert_eq!(wait["reason"], "RATE_LIMIT", "{st:#}");
    assert_eq!(wait["seconds"], 20, "{st:#}");
    let at = |key: &str| {
        chrono::DateTime::parse_from_rfc3339(wait[key].as_str().expect("a time")).expect("RFC 3339")
    };
    assert_eq!((at("until") - at("startedAt")).num_seconds(), 20, "{st:#}");
    assert!(
        wait["remainingSeconds"].as_u64().is_some_and(|s| s <= 20),
        "{st:#}"
    );
    assert_eq!(st["runningStep"], Value::Null, "{st:#}");
    std::thread::sleep(Duration::from_millis(700));
    let (_, body) = get(addr, "/api/status", &[]);
    let served: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(served["wait"]["until"], wait["until"], "{served:#}");
    let out = p
        .command(&["status", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("status");
    assert!(
        text(&out).contains("waiting:  RATE_LIMIT until "),
        "{}",
        text(&out)
    );

    // A runner killed in its wait leaves its last snapshot; it is not shown as live.
    signal(&runner, libc::SIGKILL);
    let _ = wait_output(runner, Duration::from_secs(60));
    let snapshot = p.project.join(".git/sdlc-runner/live.json");
    let left: Value =
        serde_json::from_slice(&std::fs::read(&snapshot).expect("live.json")).expect("JSON");
    assert!(left["wait"].is_object(), "{left:#}");
    let st = status_json(&p);
    assert_eq!(
        st["wait"],
        Value::Null,
        "a dead runner waits for nothing: {st:#}"
    );
}

/// With `--workers 2`, each worker's running step is shown under its own name, live.
#[test]
fn each_worker_shows_its_running_step() {
    let p = Project::new(
        &[
            (1, "Add a greeting", "Say hello."),
            (2, "Add a farewell", "Bye."),
        ],
        json!({"steps": {"implement": ["hang"]}}),
        json!({"steps": e2e::builtin_steps()}),
    );
    let runner = p.spawn(&["--workers", "2"]);
    let st = status_until(&p, "showed both workers' Read", |st| {
        st["workers"].as_array().is_some_and(|ws| {
            ws.len() == 2 && ws.iter().all(|w| w["runningStep"]["lastTool"] == "Read")
        })
    });
    let mut issues: Vec<u64> = st["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .map(|w| {
            assert_eq!(w["runningStep"]["step"], "implement", "{st:#}");
            assert_eq!(w["runningStep"]["turns"], 1, "{st:#}");
            w["runningStep"]["issue"].as_u64().expect("issue")
        })
        .collect();
    issues.sort_unstable();
    assert_eq!(issues, [1, 2], "{st:#}");
    signal(&runner, libc::SIGTERM);
    let out = wait_output(runner, Duration::from_secs(60));
    assert_eq!(code(&out), 0, "{}", text(&out));
}
