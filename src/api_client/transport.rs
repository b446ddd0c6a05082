//! The one way the runner sends an HTTP request of its own (a tracker's or a forge's API, a
//! webhook): one `reqwest` client, run on the runtime of the calling thread — the runner's
//! one runtime when the call comes from its blocking pool, as every port call does — and a
//! runtime of `runtime::build` for the length of the call where there is none (a
//! command before the run starts, the notifier's delivery thread). The stop scope of the
//! caller ends the call the moment a stop is asked for or its step runs out of time: the
//! exchange is raced against the stop itself, not polled.

use crate::call_failure::{CallFailureKind, HttpAnswer};
use crate::process::{Scope, StopToken, Stopped};
use std::future::Future;
use std::sync::LazyLock;
use std::time::Duration;

/// The most of an answer's body that is read: no list the runner asks for comes near it.
const MAX_BODY_BYTES: usize = 16 << 20;

/// One request: what to send where, and how long it may take.
#[derive(Debug)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: reqwest::Method,
    /// Where.
    pub url: reqwest::Url,
    /// Headers beyond the client's own (`User-Agent`); a token travels here, never in the URL.
    pub headers: Vec<(&'static str, String)>,
    /// A JSON body, sent with its content type.
    pub json: Option<Vec<u8>>,
    /// The limit of the whole exchange.
    pub timeout: Duration,
}

/// A request that got no answer: why, and what kind of failure that is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unanswered {
    /// What went wrong, without the request's headers.
    pub detail: String,
    /// Network, time-out, a stop, or something else.
    pub kind: CallFailureKind,
}

impl Unanswered {
    fn new(detail: impl Into<String>, kind: CallFailureKind) -> Unanswered {
        Unanswered {
            detail: detail.into(),
            kind,
        }
    }
}

/// The client. It keeps no connection between calls: a kept connection belongs to the
/// runtime that opened it, and a call may come from another (calls are seconds apart).
static CLIENT: LazyLock<Result<reqwest::Client, String>> = LazyLock::new(|| {
    reqwest::Client::builder()
        .user_agent(concat!("sdlc-runner/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(20))
        .pool_max_idle_per_host(0)
        // A redirect would carry the token to wherever it points.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
});

/// Sends `request` and waits for its answer, whatever its status, within the caller's stop
/// scope (`process::Scope::current`).
pub fn send(request: Request) -> Result<HttpAnswer, Unanswered> {
    let scope = Scope::current();
    if let Some(why) = scope.stop_now() {
        return Err(stopped(why));
    }
    let client = CLIENT.as_ref().map_err(|e| {
        Unanswered::new(
            format!("cannot build the HTTP client: {e}"),
            CallFailureKind::Other,
        )
    })?;
    let writes = !matches!(request.method, reqwest::Method::GET | reqwest::Method::HEAD);
    let mut builder = client
        .request(request.method, request.url)
        .timeout(request.timeout);
    for (name, value) in request.headers {
        builder = builder.header(name, value);
    }
    if let Some(body) = request.json {
        builder = builder
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
    }
    let answer = block_on(async move {
        tokio::select! {
            answer = exchange(builder) => answer,
            why = until_stopped(scope) => Err(stopped(why)),
        }
    });
    if writes {
        // A merge through a forge's API moves origin without a child of this process: what
        // git answered before it (a fetch, a ref) is not reused after it.
        crate::process::children::service_written();
    }
    answer
}

/// Runs `exchange` to its end on this thread: on the runtime whose blocking pool this thread
/// belongs to, else on a runtime of its own.
fn block_on<T: Send>(
    exchange: impl Future<Output = Result<T, Unanswered>> + Send,
) -> Result<T, Unanswered> {
    let own = |exchange| match crate::runtime::build(None) {
        Ok(runtime) => runtime.block_on(exchange),
        Err(e) => Err(Unanswered::new(
            format!("cannot start the HTTP client: {e}"),
            CallFailureKind::Other,
        )),
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if crate::process::may_block() => handle.block_on(exchange),
        Ok(_) => {
            // Async code must not wait for a call: the rule children obey too.
            debug_assert!(
                false,
                "an HTTP call made from async code: make it through ports::Io"
            );
            std::thread::scope(|s| s.spawn(|| own(exchange)).join()).unwrap_or_else(|_| {
                Err(Unanswered::new(
                    "the HTTP call's thread panicked",
                    CallFailureKind::Other,
                ))
            })
        }
        Err(_) => own(exchange),
    }
}

/// Resolves when `scope` says the call must stop: a stop request (when it is cancellable) or
/// its deadline. Never, for a scope with neither.
async fn until_stopped(scope: Scope) -> Stopped {
    let shutdown = async {
        if scope.cancellable() {
            StopToken::signals().stopped().await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let deadline = async {
        match scope.deadline() {
            Some(at) => tokio::time::sleep_until(at.into()).await,
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = shutdown => Stopped::Shutdown,
        () = deadline => Stopped::Deadline,
    }
}

fn stopped(why: Stopped) -> Unanswered {
    Unanswered::new(why.to_string(), CallFailureKind::of_stop(why))
}

/// Sends the request and reads the answer, its body bounded.
async fn exchange(request: reqwest::RequestBuilder) -> Result<HttpAnswer, Unanswered> {
    let mut response = request.send().await.map_err(no_answer)?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(no_answer)? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(Unanswered::new(
                format!("the answer is larger than {MAX_BODY_BYTES} bytes"),
                CallFailureKind::Other,
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(HttpAnswer {
        status,
        headers,
        body,
    })
}

/// What a request that got no answer failed on: a time-out, else the network (connection,
/// DNS, TLS, a body cut off). The words leave the URL out: a webhook's is a secret, and a
/// caller whose URL is not names it itself.
fn no_answer(e: reqwest::Error) -> Unanswered {
    let e = e.without_url();
    let mut detail = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        detail.push_str(&format!(": {s}"));
        source = s.source();
    }
    let kind = if e.is_timeout() {
        CallFailureKind::TimedOut
    } else if e.is_builder() {
        CallFailureKind::Other
    } else {
        CallFailureKind::Network
    };
    Unanswered::new(detail, kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A server that answers each connection with `status` and the request's first line as
    /// its body.
    fn server(status: &'static str) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&seen);
                let first = text.lines().next().unwrap_or_default().to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{first}",
                    first.len()
                );
            }
        });
        format!("http://{addr}")
    }

    fn get(url: &str) -> Request {
        Request {
            method: reqwest::Method::GET,
            url: reqwest::Url::parse(url).expect("url"),
            headers: vec![("PRIVATE-TOKEN", "t".into())],
            json: None,
            timeout: Duration::from_secs(10),
        }
    }

    #[test]
    fn a_call_is_answered_on_the_callers_runtime_and_without_one() {
        let base = server("201 Created");
        let answer = send(get(&format!("{base}/plain?x=1"))).expect("answer");
        assert_eq!(answer.status, 201);
        assert_eq!(answer.body, b"GET /plain?x=1 HTTP/1.1");
        let runtime = crate::runtime::build(None).expect("runtime");
        let url = format!("{base}/pooled");
        let answer = runtime
            .block_on(async {
                tokio::task::spawn_blocking(move || crate::process::off_runtime(|| send(get(&url))))
                    .await
            })
            .expect("joined")
            .expect("answer");
        assert_eq!(answer.body, b"GET /pooled HTTP/1.1");
    }

    #[test]
    fn a_failed_status_is_an_answer_not_an_error() {
        let base = server("503 Service Unavailable");
        let answer = send(get(&base)).expect("answer");
        assert_eq!(answer.status, 503);
    }

    #[test]
    fn a_silent_server_is_stopped_at_the_deadline_at_once() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", silent.local_addr().expect("addr"));
        let started = std::time::Instant::now();
        let deadline = started + Duration::from_millis(200);
        let e = crate::process::within_deadline(deadline, || send(get(&url))).unwrap_err();
        assert_eq!(e.kind, CallFailureKind::StepDeadline, "{e:?}");
        // Raced against the deadline, not polled and not left to the call's own limit.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        let passed = crate::process::within_deadline(started, || send(get(&url))).unwrap_err();
        assert_eq!(passed.kind, CallFailureKind::StepDeadline);
    }
}
