//! The status page in a real browser: headless Chromium (the distribution's package; `.ci/run`
//! installs it) opens the page of a running `demo --http`, and its DOM (read through the
//! DevTools protocol on a pipe, as `--dump-dom` would print it once the page's script has
//! run) shows the workers, the current state highlighted in the diagram, and records that
//! arrive while the page is open.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sdlc-runner");

fn chromium() -> String {
    for name in ["chromium", "chromium-browser"] {
        if which(name) {
            return name.to_string();
        }
    }
    panic!("the browser test needs Chromium: apt-get install -y chromium (.ci/run installs it)");
}

fn which(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

fn free_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

fn status(addr: SocketAddr) -> Option<Value> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.write_all(b"GET /api/status HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    serde_json::from_str(raw.split_once("\r\n\r\n")?.1).ok()
}

/// The DevTools protocol over `--remote-debugging-pipe`: NUL-terminated JSON on fds 3 and 4.
struct DevTools {
    child: Child,
    to: std::fs::File,
    from: std::fs::File,
    pending: Vec<u8>,
    next: u64,
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2");
    // SAFETY: both were just created and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

impl DevTools {
    fn launch(url: &str, profile: &std::path::Path) -> DevTools {
        let (child_in, to) = pipe();
        let (from, child_out) = pipe();
        let (cin, cout) = (child_in.as_raw_fd(), child_out.as_raw_fd());
        let mut cmd = Command::new(chromium());
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-pipe",
            "--window-size=1000,1300",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only async-signal-safe fcntl/dup2 between fork and exec. Both ends move
        // above 10 first: one of them may itself be descriptor 3 or 4.
        unsafe {
            cmd.pre_exec(move || {
                let high_in = libc::fcntl(cin, libc::F_DUPFD, 10);
                let high_out = libc::fcntl(cout, libc::F_DUPFD, 10);
                if high_in < 0
                    || high_out < 0
                    || libc::dup2(high_in, 3) < 0
                    || libc::dup2(high_out, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start chromium");
        drop((child_in, child_out));
        DevTools {
            child,
            to: std::fs::File::from(to),
            from: std::fs::File::from(from),
            pending: Vec::new(),
            next: 0,
        }
    }

    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(0);
        self.to.write_all(&bytes).expect("write to chromium");
        loop {
            while let Some(end) = self.pending.iter().position(|&b| b == 0) {
                let frame: Vec<u8> = self.pending.drain(..=end).collect();
                let v: Value = serde_json::from_slice(&frame[..end]).expect("protocol JSON");
                if v["id"] == json!(id) {
                    assert!(v.get("error").is_none(), "{method}: {v}");
                    return v["result"].clone();
                }
            }
            let mut buf = [0u8; 65536];
            let n = self.from.read(&mut buf).expect("read from chromium");
            assert!(n > 0, "chromium closed the pipe during {method}");
            self.pending.extend_from_slice(&buf[..n]);
        }
    }
}

impl Drop for DevTools {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the page shows, read in the page.
const PROBE: &str = r#"JSON.stringify({
  workers: [...document.querySelectorAll('#workers tr.worker')].map(r => r.dataset.worker),
  current: [...document.querySelectorAll('#diagram .current')].map(e => e.id),
  badges: [...document.querySelectorAll('#diagram .badge')].map(e => e.textContent),
  events: [...document.querySelectorAll('#events li.event')].map(e => e.textContent),
  live: document.getElementById('conn').textContent,
  html: document.documentElement.outerHTML.length
})"#;

/// The demo process, stopped however the test ends (a panic included): SIGTERM stops the
/// run, the next one ends the linger.
struct Demo(Child);

impl Drop for Demo {
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let pid = i32::try_from(self.0.id()).expect("pid");
        while matches!(self.0.try_wait(), Ok(None)) {
            if Instant::now() > deadline {
                let _ = self.0.kill();
                let _ = self.0.wait();
                return;
            }
            // SAFETY: kill(2) on the child we spawned.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

#[test]
#[ignore = "needs Chromium; .ci/run installs it: cargo test -- --ignored"]
fn the_page_of_a_running_demo_shows_workers_the_current_state_and_live_events() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let addr = free_port();
    let demo = Demo(
        Command::new(BIN)
            .args([
                "demo",
                "--pace",
                "1200",
                "--http",
                &addr.to_string(),
                "--dir",
            ])
            .arg(tmp.path().join("demo"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("demo"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    // Until an agent step runs: the picture then has a worker in a step state.
    loop {
        if status(addr).is_some_and(|s| s["currentStep"].is_string()) {
            break;
        }
        assert!(Instant::now() < deadline, "the demo never reached a step");
        std::thread::sleep(Duration::from_millis(100));
    }
    let profile = tempfile::tempdir().expect("profile");
    let mut chrome = DevTools::launch(&format!("http://{addr}/"), profile.path());
    let targets = chrome.call(None, "Target.getTargets", json!({}));
    let page = targets["targetInfos"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["type"] == "page"))
        .and_then(|t| t["targetId"].as_str())
        .expect("a page target")
        .to_string();
    let attached = chrome.call(
        None,
        "Target.attachToTarget",
        json!({"targetId": page, "flatten": true}),
    );
    let session = attached["sessionId"].as_str().expect("session").to_string();
    let probe = |chrome: &mut DevTools| -> Value {
        let r = chrome.call(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": PROBE, "returnByValue": true}),
        );
        serde_json::from_str(r["result"]["value"].as_str().unwrap_or("{}")).unwrap_or(json!({}))
    };
    let mut first: Option<Value> = None;
    let mut last = json!({});
    let deadline = Instant::now() + Duration::from_secs(40);
    let shown = loop {
        let now = probe(&mut chrome);
        let ready = now["workers"] == json!(["runner"])
            && now["current"].as_array().is_some_and(|c| c.len() >= 2)
            && now["live"] == "live";
        match &first {
            None if ready => first = Some(now.clone()),
            Some(f) => {
                let before = f["events"].as_array().map_or(0, Vec::len);
                let after = now["events"].as_array().map_or(0, Vec::len);
                if after > before {
                    break now;
                }
            }
            None => {}
        }
        last = now;
        assert!(
            Instant::now() < deadline,
            "the page never showed a worker, its state and a live record: {last}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // The phase and the exact step state are highlighted, with the worker's badge.
    let current: Vec<&str> = shown["current"]
        .as_array()
        .expect("current")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        current
            .iter()
            .any(|id| ["state-Specify", "state-Build", "state-Deliver"].contains(id)),
        "{shown}"
    );
    assert_eq!(shown["badges"], json!(["runner"]), "{shown}");
    let newest = shown["events"][0].as_str().expect("an event");
    assert!(newest.contains("[runner]"), "{newest}");
    // Once the run stops (the demo's server lingers), the page no longer says "live".
    let pid = i32::try_from(demo.0.id()).expect("pid");
    // SAFETY: kill(2) on the child we spawned.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = probe(&mut chrome);
        if now["live"] == "run ended" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the page still says {} after the run stopped",
            now["live"]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(chrome);
}
