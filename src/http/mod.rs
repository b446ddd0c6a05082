//! `run --http ADDR` (config `http.listen`): a read-only status server beside the run.
//!
//! - `GET /`: the status page (HTML, styles, script and the machine's overview diagram are in
//!   the binary).
//! - `GET /api/status`: the document of `status --json`.
//! - `GET /api/events`: Server-Sent Events, one per journal record, redacted, in journal order.
//! - `GET /metrics`: Prometheus metrics counted from the journal.
//!
//! It runs on its own thread and runtime and learns everything from the files the run writes
//! (the journals, the state file), so the driver never waits for it and never shares a lock
//! with it. Connections are capped, a request head is limited in size and time, and a client
//! that stops reading is dropped from a bounded channel: no client can make it hold more than
//! a fixed amount of memory. Off loopback, every request needs the bearer token.

mod feed;
mod metrics;
mod page;
#[cfg(test)]
mod tests;
mod train_metrics;
mod weakening_metrics;

use crate::config::Config;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Request, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Connections served at once; more are closed as soon as they are accepted.
pub const MAX_CONNECTIONS: usize = 64;
/// Bytes of a request head (request line and headers) before the connection is refused.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Time a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `/api/status` answers from the last document before reading the files again.
const STATUS_TTL: Duration = Duration::from_millis(500);
/// The same with the GitHub tracker, whose claims `status` asks `gh` for: the page must not
/// spend the API rate limit the run needs.
const STATUS_TTL_GITHUB: Duration = Duration::from_secs(15);
/// How often the journals are checked for new records.
const POLL: Duration = Duration::from_millis(100);

/// Reads the `status --json` document of a config's project. The application (`commands`)
/// gives it to the server, which only serves it: the server stands below the commands.
pub type StatusDocument = fn(&Config) -> Result<String, String>;

/// Where to listen and the token to require.
#[derive(Clone)]
pub struct Settings {
    pub addr: SocketAddr,
    pub token: Option<String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// The server's settings from `--http` (which wins) or `http.listen`; `Ok(None)` when neither
/// asks for one. Off loopback a token is required: an error says how to give one.
pub fn settings(flag: Option<&str>, cfg: &Config) -> Result<Option<Settings>, String> {
    let file = cfg.file.display();
    let (listen, source) = match (flag, &cfg.http.listen) {
        (Some(addr), _) => (addr.to_string(), "--http".to_string()),
        (None, Some(addr)) => (addr.clone(), format!("{file}: http.listen")),
        (None, None) => return Ok(None),
    };
    let addr: SocketAddr = listen.parse().map_err(|_| {
        format!(
            "{source}: \"{listen}\" is not an address and port: write one such as 127.0.0.1:8080"
        )
    })?;
    let token = match &cfg.http.token_env {
        None => None,
        Some(var) => match std::env::var(var) {
            Ok(value) if !value.trim().is_empty() => Some(value.trim().to_string()),
            _ => {
                return Err(format!(
                    "{file}: http.tokenEnv names {var}, which is not set (or empty): export {var}=<a long random token> before starting the runner"
                ))
            }
        },
    };
    if token.is_none() && !addr.ip().is_loopback() {
        return Err(format!(
            "{source}: {addr} is reachable from other machines, so the status server needs a bearer token: set http.tokenEnv in {file} to the name of an environment variable holding one, or listen on 127.0.0.1"
        ));
    }
    Ok(Some(Settings { addr, token }))
}

/// The running server; dropping it sends every client the last records, ends their streams
/// and stops the thread.
pub struct Server {
    addr: SocketAddr,
    stop: crate::process::StopToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds now (so that a busy port is an error before the run starts) and serves from a
    /// thread of its own. `cfg` is the run's config: its project's journals are followed, and
    /// `/api/status` serves `document` of it.
    pub fn start(
        settings: Settings,
        cfg: &Config,
        document: StatusDocument,
    ) -> Result<Server, String> {
        let listener = std::net::TcpListener::bind(settings.addr)
            .map_err(|e| format!("--http {}: cannot listen there: {e}", settings.addr))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("--http {}: {e}", settings.addr))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("--http {}: {e}", settings.addr))?;
        let models = std::array::from_fn(|i| {
            let step = crate::step::Step::ALL[i];
            if cfg.builtin(step) {
                "builtin".to_string()
            } else {
                cfg.steps[i].model.clone()
            }
        });
        let feed = Arc::new(feed::Feed::new(metrics::Metrics::new(models)));
        let tail = feed::Tail::new(crate::journal::Journals::of(&cfg.project_path), &feed);
        let app = App {
            feed: feed.clone(),
            status: Arc::new(StatusCache {
                ttl: match cfg.tracker {
                    crate::config::TrackerConfig::Github { .. }
                    | crate::config::TrackerConfig::Gitlab { .. }
                    | crate::config::TrackerConfig::Linear { .. } => STATUS_TTL_GITHUB,
                    crate::config::TrackerConfig::Local { .. } => STATUS_TTL,
                },
                cfg: cfg.clone(),
                document,
                last: tokio::sync::Mutex::new(None),
            }),
            token: settings.token.map(Arc::from),
        };
        let stop = crate::process::StopToken::new();
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("sdlc-http".into())
            .spawn(move || serve(listener, app, tail, stopped))
            .map_err(|e| format!("--http: cannot start the server thread: {e}"))?;
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts the server the flag or the config asks for, saying where; `Err` is the exit code.
pub fn start_for(
    flag: Option<&str>,
    cfg: &Config,
    document: StatusDocument,
) -> Result<Option<Server>, i32> {
    let settings = match settings(flag, cfg) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(None),
        Err(e) => {
            say!("error: {e}");
            return Err(2);
        }
    };
    match Server::start(settings, cfg, document) {
        Ok(server) => {
            say!(
                "status page: http://{}/ (also /api/status, /api/events, /metrics)",
                server.addr()
            );
            Ok(Some(server))
        }
        Err(e) => {
            say!("error: {e}");
            Err(2)
        }
    }
}

#[derive(Clone)]
struct App {
    feed: Arc<feed::Feed>,
    status: Arc<StatusCache>,
    token: Option<Arc<str>>,
}

struct StatusCache {
    cfg: Config,
    document: StatusDocument,
    ttl: Duration,
    last: tokio::sync::Mutex<Option<(Instant, Arc<str>)>>,
}

impl StatusCache {
    /// The status document, read again at most every `ttl` however many ask.
    async fn get(&self) -> Result<Arc<str>, String> {
        let mut last = self.last.lock().await;
        if let Some((at, doc)) = last.as_ref() {
            if at.elapsed() < self.ttl {
                return Ok(doc.clone());
            }
        }
        let (cfg, document) = (self.cfg.clone(), self.document);
        let doc =
            tokio::task::spawn_blocking(move || crate::process::off_runtime(|| document(&cfg)))
                .await
                .map_err(|e| format!("the status reader failed: {e}"))??;
        let doc: Arc<str> = Arc::from(doc);
        *last = Some((Instant::now(), doc.clone()));
        Ok(doc)
    }
}

fn router(app: App) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/api/status", get(status))
        .route("/api/events", get(events))
        .route("/metrics", get(metrics))
        .layer(axum::middleware::from_fn_with_state(app.clone(), authorize))
        .with_state(app)
}

/// A query parameter, decoded as a form encodes it (`%XX`, `+` for a space).
fn query_value(uri: &Uri, key: &str) -> Option<String> {
    form_urlencoded::parse(uri.query()?.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// Equal strings, in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// With a token, a request carries it as `Authorization: Bearer <token>`, or (for the page
/// and its event stream, which a browser opens without headers) as `?token=<token>`.
async fn authorize(
    State(app): State<App>,
    request: Request<axum::body::Body>,
    next: Next,
) -> Response {
    let Some(token) = &app.token else {
        return next.run(request).await;
    };
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let query = query_value(request.uri(), "token");
    let given = bearer.map(str::to_string).or(query);
    if given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
        return next.run(request).await;
    }
    let mut response = (
        StatusCode::UNAUTHORIZED,
        "a bearer token is required: send Authorization: Bearer <token> (the value of the variable http.tokenEnv names)\n",
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"sdlc-runner\""),
    );
    response
}

async fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        page::html(),
    )
        .into_response()
}

async fn status(State(app): State<App>) -> Response {
    match app.status.get().await {
        Ok(doc) => (
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            doc.to_string(),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
    }
}

async fn metrics(State(app): State<App>) -> Response {
    // The money gauges come from the status document (at most `ttl` old), which sums the
    // day over every journal; a document that cannot be read leaves them as they were.
    let status = app
        .status
        .get()
        .await
        .ok()
        .and_then(|doc| serde_json::from_str::<serde_json::Value>(&doc).ok());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.feed.metrics(status.as_ref()),
    )
        .into_response()
}

/// The backlog, then every record as it is appended. `Last-Event-ID` (sent by a reconnecting
/// browser) skips what the client already has.
async fn events(State(app): State<App>, headers: HeaderMap, uri: Uri) -> Response {
    let Some((backlog, receiver)) = app.feed.subscribe() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "the run is over\n").into_response();
    };
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| query_value(&uri, "after"));
    let backlog: Vec<feed::Item> = match after
        .as_deref()
        .and_then(|id| backlog.iter().position(|i| i.id == id))
    {
        Some(at) => backlog[at + 1..].to_vec(),
        None => backlog,
    };
    let sse = |item: feed::Item| -> Result<SseEvent, std::convert::Infallible> {
        Ok(SseEvent::default().id(item.id).data(&*item.data))
    };
    let old = futures_util::stream::iter(backlog.into_iter().map(sse));
    let live = futures_util::stream::unfold(receiver, move |mut rx| async move {
        match rx.recv().await {
            Ok(item) => Some((sse(item), rx)),
            // Fallen behind (or the server is stopping): end the stream; a browser
            // reconnects with Last-Event-ID and gets what the backlog still has.
            Err(_) => None,
        }
    });
    use futures_util::StreamExt as _;
    Sse::new(old.chain(live))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The server thread: accept under the connection cap until stopped, then let every stream
/// end after the last records.
fn serve(
    listener: std::net::TcpListener,
    app: App,
    mut tail: feed::Tail,
    stopped: crate::process::StopToken,
) {
    let runtime = match crate::runtime::build(None) {
        Ok(rt) => rt,
        Err(e) => {
            say!("warning: the status server cannot start its runtime: {e}");
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                say!("warning: the status server cannot listen: {e}");
                return;
            }
        };
        let feed = app.feed.clone();
        let router = router(app);
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = stopped.stopped() => break,
                _ = poll.tick() => tail.poll(&feed),
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else {
                        // Out of descriptors, or the peer gave up: go on after a breath.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    };
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        drop(stream);
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let service = hyper_util::service::TowerToHyperService::new(router.clone());
                    let stop = stopped.clone();
                    tokio::spawn(async move {
                        let io = hyper_util::rt::TokioIo::new(stream);
                        let conn = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(HEAD_TIMEOUT)
                            .max_buf_size(MAX_HEAD_BYTES)
                            .serve_connection(io, service);
                        tokio::pin!(conn);
                        tokio::select! {
                            _ = conn.as_mut() => {}
                            _ = stop.stopped() => {
                                conn.as_mut().graceful_shutdown();
                                let _ = tokio::time::timeout(Duration::from_secs(2), conn).await;
                            }
                        }
                        drop(slot);
                    });
                }
            }
        }
        // The run is over: the last records, then the end of every stream.
        tail.poll(&feed);
        feed.close();
        let _ = tokio::time::timeout(
            Duration::from_secs(3),
            slots.acquire_many(MAX_CONNECTIONS as u32),
        )
        .await;
    });
}
