//! `agent.sandbox.network: "allowlist"`, end to end: the fake agent in bubblewrap reaches
//! loopback hosts only through the runner's proxy; a host off the list is refused and
//! recorded (the attempt log, the orchestration log, `status`); with `keyOutside` the key stays in the runner and arrives at the (fake) model
//! host all the same. Each test needs `bwrap`; nothing leaves the loopback.

use crate::e2e::{code, text};
use crate::sandbox::{all_text_under, bwrap_installed, configure, project, sandboxed};
use axum::http::HeaderMap;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// A loopback HTTP server on `ip` answering `answer` to every request, recording each
/// request's headers; it lives as long as the test's process.
fn host(ip: [u8; 4], answer: &'static str) -> (SocketAddr, Arc<Mutex<Vec<HeaderMap>>>) {
    let seen: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
    let record = seen.clone();
    let listener =
        std::net::TcpListener::bind((std::net::Ipv4Addr::from(ip), 0)).expect("a loopback port");
    listener.set_nonblocking(true).expect("nonblocking");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let app = axum::Router::new().fallback(move |headers: HeaderMap| {
                let record = record.clone();
                async move {
                    record.lock().expect("lock").push(headers);
                    answer
                }
            });
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            axum::serve(listener, app).await.expect("serve");
        });
    });
    (address, seen)
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn the_allowlist_lets_the_agent_reach_an_allowed_host_only_and_records_the_refused_one() {
    bwrap_installed();
    let (allowed, allowed_seen) = host([127, 0, 0, 1], "allowed host");
    let (other, other_seen) = host([127, 0, 0, 2], "other host");
    let p = project(json!({"steps": {
        "writeSpecs": [format!("fetch:{other}")],
        "implement": [format!("fetch:{allowed}")],
    }}));
    configure(
        &p,
        sandboxed(
            &p,
            "bwrap",
            json!({"network": "allowlist", "allow": ["127.0.0.1"]}),
        ),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let logs = all_text_under(&p.root.join("logs"));
    assert!(
        logs.contains(&format!("fetched http://{allowed}/: 200 allowed host")),
        "{logs}"
    );
    assert!(
        logs.contains(&format!("fetched http://{other}/: 403 sdlc-runner egress proxy: 127.0.0.2 is not in the agent's allowlist")),
        "{logs}"
    );
    assert_eq!(allowed_seen.lock().expect("lock").len(), 1);
    assert!(
        other_seen.lock().expect("lock").is_empty(),
        "the other host was reached"
    );
    assert!(
        logs.contains("Refused hosts: 127.0.0.2\n"),
        "the attempt log: {logs}"
    );
    assert!(
        all.contains("the allowlist refused the agent 127.0.0.2"),
        "the orchestration log: {all}"
    );
    // `status` shows it after the run, as text and as JSON (the page's document).
    let config = p.config.to_str().expect("utf8");
    let status = p
        .command(&["status", "--config", config])
        .output()
        .expect("status");
    let shown = text(&status);
    assert!(
        shown.contains("refused:  127.0.0.2 by the allowlist (writeSpecs attempt 1 of #1, "),
        "{shown}"
    );
    let status = p
        .command(&["status", "--json", "--config", config])
        .output()
        .expect("status --json");
    let doc: serde_json::Value = serde_json::from_slice(&status.stdout).expect("JSON");
    let refused = doc["refusedHosts"].as_array().expect("refusedHosts");
    assert_eq!(refused.len(), 1, "{doc}");
    assert_eq!(refused[0]["host"], "127.0.0.2", "{doc}");
    assert_eq!(
        (
            &refused[0]["issue"],
            &refused[0]["step"],
            &refused[0]["attempt"]
        ),
        (&json!(1), &json!("writeSpecs"), &json!(1)),
        "{doc}"
    );
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn with_the_key_outside_the_agent_holds_no_key_and_its_requests_arrive_authenticated() {
    bwrap_installed();
    let key = "test-key-outside-4711";
    let (model, seen) = host([127, 0, 0, 1], "model answer");
    let p = project(json!({"steps": {"implement": ["model"]}}));
    configure(
        &p,
        sandboxed(
            &p,
            "bwrap",
            json!({"network": "allowlist", "keyOutside": true, "modelUrl": format!("http://{model}")}),
        ),
    );
    let out = p.run_env(&[], &[("ANTHROPIC_API_KEY", key)]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let logs = all_text_under(&p.root.join("logs"));
    assert!(
        logs.contains("model at http://127.0.0.1:3128/model/v1/messages: 200 model answer; my ANTHROPIC_API_KEY is sdlc-runner-key-outside"),
        "{logs}"
    );
    assert!(!logs.contains(key), "the key reached the agent: {logs}");
    let seen = seen.lock().expect("lock");
    assert_eq!(seen.len(), 1, "one request at the model host");
    assert_eq!(
        seen[0].get("x-api-key").and_then(|v| v.to_str().ok()),
        Some(key),
        "{:?}",
        seen[0]
    );
}
