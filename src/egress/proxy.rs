//! The proxy the runner serves to one sandboxed attempt, on the runtime of the attempt: a
//! Unix socket, HTTP/1 (hyper), one task per connection, every task ended by [`Proxy::stop`].
//!
//! - `CONNECT host:port` to a host of the allowlist: 200, then the bytes both ways (TLS stays
//!   end to end, the proxy sees only the host);
//! - `GET http://host/…` (any method, absolute form) to a host of the allowlist: sent on;
//! - with `keyOutside`, `…/model/…` (the agent's base URL): sent on to the model's API with
//!   the runner's key in place of whatever key header the agent sent;
//! - anything else: 403 for a host off the list (recorded, [`Proxy::stop`] returns them), 404
//!   for a path the proxy does not serve.

use super::{Plan, KEY_HEADERS, MODEL_PATH};
use axum::body::Body;
use axum::http::{
    header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode,
};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// How long a connection to an allowed host may take before the agent is answered 504.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The most refused hosts remembered for one attempt (an agent trying hosts in a loop).
const MAX_REFUSED: usize = 100;

/// Headers of one hop, never passed on (RFC 9110, 7.6.1).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// A running proxy; [`Proxy::stop`] ends it and every connection it serves.
#[derive(Debug)]
pub struct Proxy {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    refused: Arc<Mutex<Vec<String>>>,
}

struct Shared {
    plan: Plan,
    client: reqwest::Client,
    refused: Arc<Mutex<Vec<String>>>,
    stop: watch::Receiver<bool>,
}

impl Proxy {
    /// Binds `plan.socket` and serves it on the current tokio runtime.
    pub fn serve(plan: &Plan) -> io::Result<Proxy> {
        let listener = UnixListener::bind(&plan.socket).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("the egress proxy's socket {}: {e}", plan.socket.display()),
            )
        })?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(io::Error::other)?;
        let refused = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = watch::channel(false);
        let shared = Arc::new(Shared {
            plan: plan.clone(),
            client,
            refused: refused.clone(),
            stop: stopped,
        });
        let task = tokio::spawn(accept(listener, shared));
        Ok(Proxy {
            stop,
            task,
            refused,
        })
    }

    /// Ends the proxy and every connection and tunnel it serves; returns the hosts it
    /// refused, each once, in the order first asked.
    pub async fn stop(self) -> Vec<String> {
        let _ = self.stop.send(true);
        let _ = self.task.await;
        self.refused.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

async fn accept(listener: UnixListener, shared: Arc<Shared>) {
    let mut stop = shared.stop.clone();
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, shared.clone()));
                }
                Err(e) => {
                    tracing::debug!(error = %e, "egress proxy: accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}

async fn connection(stream: UnixStream, shared: Arc<Shared>) {
    let service = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(answer(req, &shared).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Err(e) = served {
        tracing::debug!(error = %e, "egress proxy: connection ended");
    }
}

async fn answer(req: Request<Incoming>, shared: &Arc<Shared>) -> Response<Body> {
    if req.method() == Method::CONNECT {
        return connect(req, shared).await;
    }
    let own = req.uri().authority().is_none_or(|a| {
        matches!(a.host(), "127.0.0.1" | "localhost") && a.port_u16() == Some(shared.plan.own_port)
    });
    if own {
        return model(req, shared).await;
    }
    let Some(host) = req.uri().host().map(str::to_string) else {
        return text(StatusCode::BAD_REQUEST, "a request without a host");
    };
    if req.uri().scheme_str() != Some("http") {
        return text(
            StatusCode::BAD_REQUEST,
            "only http:// is sent on as a request; https:// goes through CONNECT",
        );
    }
    if !shared.plan.allow.allows(&host) {
        return refuse(shared, &host);
    }
    let url = req.uri().to_string();
    send(req, shared, &url, None).await
}

/// A tunnel to an allowed `host:port`: connected first, so a host that does not answer is
/// the agent's 502 or 504 rather than a tunnel that closes.
async fn connect(req: Request<Incoming>, shared: &Arc<Shared>) -> Response<Body> {
    let Some(authority) = req.uri().authority().cloned() else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if !shared.plan.allow.allows(host) {
        return refuse(shared, host);
    }
    let port = authority.port_u16().unwrap_or(443);
    let upstream =
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((host, port))).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                return text(
                    StatusCode::BAD_GATEWAY,
                    &format!("{host}:{port} did not answer: {e}"),
                )
            }
            Err(_) => {
                return text(
                    StatusCode::GATEWAY_TIMEOUT,
                    &format!("{host}:{port} did not answer in time"),
                )
            }
        };
    let mut stop = shared.stop.clone();
    tokio::spawn(async move {
        let upgraded = tokio::select! {
            up = hyper::upgrade::on(req) => up,
            _ = stop.changed() => return,
        };
        match upgraded {
            Ok(up) => {
                let mut agent = TokioIo::new(up);
                let mut upstream = upstream;
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut agent, &mut upstream) => {}
                    _ = stop.changed() => {}
                }
            }
            Err(e) => tracing::debug!(error = %e, "egress proxy: no tunnel"),
        }
    });
    Response::new(Body::empty())
}

/// `…/model/rest` sent on to the model's API as `upstream/rest`, the key header replaced.
async fn model(req: Request<Incoming>, shared: &Arc<Shared>) -> Response<Body> {
    let path = req.uri().path();
    let rest = path
        .strip_prefix(MODEL_PATH)
        .filter(|r| r.is_empty() || r.starts_with('/'));
    let (Some(route), Some(rest)) = (&shared.plan.model, rest) else {
        return text(
            StatusCode::NOT_FOUND,
            "this proxy serves CONNECT, absolute http:// requests and, with keyOutside, /model/…",
        );
    };
    let query = req
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let url = format!("{}{rest}{query}", route.upstream.trim_end_matches('/'));
    let (name, value) = route.header.header(route.key.expose());
    send(req, shared, &url, Some((name, value))).await
}

/// `req` sent on to `url` with its body streamed both ways; `key` replaces every key header.
async fn send(
    req: Request<Incoming>,
    shared: &Arc<Shared>,
    url: &str,
    key: Option<(&'static str, String)>,
) -> Response<Body> {
    use hyper::body::Body as _;
    let (parts, body) = req.into_parts();
    let mut headers = passed_on(&parts.headers);
    headers.remove(header::HOST);
    if let Some((name, value)) = key {
        for h in KEY_HEADERS {
            headers.remove(h);
        }
        match HeaderValue::from_str(&value) {
            Ok(mut v) => {
                v.set_sensitive(true);
                headers.insert(HeaderName::from_static(name), v);
            }
            Err(_) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the runner's model key cannot be sent in a header: check the key variable",
                )
            }
        }
    }
    let mut request = shared.client.request(parts.method, url).headers(headers);
    if !body.is_end_stream() {
        request = request.body(reqwest::Body::wrap_stream(
            Body::new(body).into_data_stream(),
        ));
    }
    match request.send().await {
        Ok(upstream) => {
            let mut answer = Response::builder().status(upstream.status());
            if let Some(h) = answer.headers_mut() {
                *h = passed_on(upstream.headers());
            }
            answer
                .body(Body::from_stream(upstream.bytes_stream()))
                .unwrap_or_else(|_| text(StatusCode::BAD_GATEWAY, "an answer that is not HTTP"))
        }
        Err(e) => text(
            StatusCode::BAD_GATEWAY,
            &format!(
                "{} did not answer: {e}",
                reqwest::Url::parse(url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_string))
                    .unwrap_or_default()
            ),
        ),
    }
}

/// `headers` without those of one hop.
fn passed_on(headers: &HeaderMap) -> HeaderMap {
    let mut out = headers.clone();
    for h in HOP_BY_HOP {
        out.remove(h);
    }
    out
}

/// 403 for a host off the allowlist, recorded once.
fn refuse(shared: &Shared, host: &str) -> Response<Body> {
    let host = host.to_ascii_lowercase();
    if let Ok(mut refused) = shared.refused.lock() {
        if !refused.contains(&host) && refused.len() < MAX_REFUSED {
            refused.push(host.clone());
        }
    }
    text(
        StatusCode::FORBIDDEN,
        &format!(
            "{host} is not in the agent's allowlist (agent.sandbox.allow); the runner recorded \
             the refusal"
        ),
    )
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut r = Response::new(Body::from(format!("sdlc-runner egress proxy: {message}\n")));
    *r.status_mut() = status;
    r
}
