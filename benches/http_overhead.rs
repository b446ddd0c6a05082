//! What `run --http` costs the run: the runner_overhead workload (the real binary, a few
//! issues through all ten steps with the fake agent), alternately without the status server
//! and with it plus a client following `/api/events` (and fetching `/api/status` and
//! `/metrics` as a page would). Prints the median runner overhead per step of each.
//!
//! `cargo bench --bench http_overhead`

mod common;

use common::{median, runner_binary, stats, Project};
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

const ISSUES: u32 = 3;
const RUNS: usize = 5;

fn free_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// Follows the event stream until the run ends it; meanwhile asks for the status and the
/// metrics every 200 ms. Returns the bytes of events received.
fn follower(addr: SocketAddr) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut s = loop {
            match TcpStream::connect(addr) {
                Ok(s) => break s,
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => panic!("no server on {addr}: {e}"),
            }
        };
        s.write_all(b"GET /api/events HTTP/1.1\r\nHost: b\r\n\r\n")
            .expect("send");
        let poller = std::thread::spawn(move || {
            while let Ok(mut c) = TcpStream::connect(addr) {
                for path in ["/api/status", "/metrics"] {
                    let req =
                        format!("GET {path} HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n");
                    if c.write_all(req.as_bytes()).is_err() {
                        return;
                    }
                    let mut sink = Vec::new();
                    let _ = c.read_to_end(&mut sink);
                    match TcpStream::connect(addr) {
                        Ok(next) => c = next,
                        Err(_) => return,
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        let mut total = 0;
        let mut buf = [0u8; 16384];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n;
        }
        let _ = poller.join();
        total
    })
}

fn main() {
    let bin = runner_binary();
    let mut off = Vec::new();
    let mut on = Vec::new();
    let mut streamed = 0;
    for _ in 0..RUNS {
        for with_http in [false, true] {
            let p = Project::new(&bin, ISSUES, json!({}), json!({}));
            let addr = free_port();
            let flag = addr.to_string();
            let args: Vec<&str> = if with_http {
                vec!["--http", &flag]
            } else {
                Vec::new()
            };
            let client = with_http.then(|| follower(addr));
            let (out, _) = p.run(&bin, &args);
            assert!(
                out.status.code() == Some(0),
                "runner failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if let Some(c) = client {
                streamed = c.join().expect("follower");
                assert!(streamed > 0, "the follower received nothing");
            }
            let s = stats(&out);
            let gap = s.gap_median_us as f64 / 1e3;
            if with_http {
                on.push(gap)
            } else {
                off.push(gap)
            }
        }
    }
    let show = |v: &[f64]| {
        v.iter()
            .map(|g| format!("{g:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("workload: {ISSUES} issues x 10 steps, fake agent, local tracker and forge; {RUNS} runs each, alternating");
    println!(
        "runner overhead per step without --http: {:.2} ms (runs: {})",
        median(off.clone()),
        show(&off)
    );
    println!(
        "with --http and a client on /api/events (+ /api/status and /metrics every 200 ms): {:.2} ms (runs: {}; {streamed} bytes of events in the last run)",
        median(on.clone()),
        show(&on)
    );
    println!("difference: {:+.2} ms per step", median(on) - median(off));
}
