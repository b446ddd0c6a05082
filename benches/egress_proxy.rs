//! What the allowlist's proxy costs a request (docs/performance.md, "The egress proxy"): a
//! loopback server answers a streamed 50 MB body and 1,000 small requests, asked directly and
//! through the relay and the proxy as a sandboxed agent asks them (TCP to the relay, the Unix
//! socket, the proxy's forward), in one run. Plain `http://` is sent on by the proxy (the
//! path of `keyOutside`'s model route); the 50 MB body also goes through a `CONNECT` tunnel
//! (the path of every `https://` host). Prints the median of each.
//!
//! `cargo bench --bench egress_proxy`

use axum::body::Body;
use axum::body::Bytes;
use sdlc_runner::egress::proxy::Proxy;
use sdlc_runner::egress::{relay, Allowlist, Plan};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIG: usize = 50 * 1024 * 1024;
const CHUNK: usize = 64 * 1024;
const SMALL: usize = 1000;
const RUNS: usize = 5;

async fn upstream() -> SocketAddr {
    let app = axum::Router::new()
        .route(
            "/big",
            axum::routing::get(|| async {
                let chunk = Bytes::from(vec![b'x'; CHUNK]);
                let chunks = (0..BIG / CHUNK).map(move |_| Ok::<_, std::io::Error>(chunk.clone()));
                Body::from_stream(futures_util::stream::iter(chunks))
            }),
        )
        .route("/small", axum::routing::get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

async fn big(client: &reqwest::Client, url: &str) -> Duration {
    let started = Instant::now();
    let mut answer = client.get(url).send().await.expect("big");
    let mut got = 0;
    while let Some(chunk) = answer.chunk().await.expect("chunk") {
        got += chunk.len();
    }
    assert_eq!(got, BIG);
    started.elapsed()
}

async fn small(client: &reqwest::Client, url: &str) -> Duration {
    let started = Instant::now();
    for _ in 0..SMALL {
        let body = client
            .get(url)
            .send()
            .await
            .expect("small")
            .text()
            .await
            .expect("text");
        assert_eq!(body, "ok");
    }
    started.elapsed()
}

/// 50 MB through a CONNECT tunnel: the request by hand, as a TLS client would open it.
async fn tunnelled(relay: SocketAddr, upstream: SocketAddr) -> Duration {
    let started = Instant::now();
    let mut s = tokio::net::TcpStream::connect(relay).await.expect("relay");
    let connect = format!("CONNECT {upstream} HTTP/1.1\r\nHost: {upstream}\r\n\r\n");
    s.write_all(connect.as_bytes()).await.expect("connect");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.expect("the proxy's answer");
        head.push(b[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let get = format!("GET /big HTTP/1.1\r\nHost: {upstream}\r\nConnection: close\r\n\r\n");
    s.write_all(get.as_bytes()).await.expect("get");
    let mut n = 0;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let k = s.read(&mut buf).await.expect("read");
        if k == 0 {
            break;
        }
        n += k;
    }
    assert!(n > BIG, "{n} bytes");
    started.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let up = upstream().await;
    let dir = tempfile::tempdir().expect("dir");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("relay");
    let relay_at = listener.local_addr().expect("addr");
    let socket = dir.path().join("proxy.sock");
    let plan = Plan::at(
        &socket,
        relay_at.port(),
        Allowlist::new(["127.0.0.1"]),
        None,
    );
    let proxy = Proxy::serve(&plan).expect("proxy");
    tokio::spawn(relay::relay(listener, socket.clone()));
    let direct = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let proxied = reqwest::Client::builder()
        .proxy(reqwest::Proxy::http(format!("http://{relay_at}")).expect("proxy url"))
        .build()
        .expect("client");
    let (big_url, small_url) = (format!("http://{up}/big"), format!("http://{up}/small"));
    let mut rows: Vec<(&str, Vec<Duration>)> = vec![
        ("50 MB, direct", vec![]),
        ("50 MB, through the proxy (http forward)", vec![]),
        ("50 MB, through a CONNECT tunnel", vec![]),
        ("1,000 small requests, direct", vec![]),
        ("1,000 small requests, through the proxy", vec![]),
    ];
    for _ in 0..RUNS {
        rows[0].1.push(big(&direct, &big_url).await);
        rows[1].1.push(big(&proxied, &big_url).await);
        rows[2].1.push(tunnelled(relay_at, up).await);
        rows[3].1.push(small(&direct, &small_url).await);
        rows[4].1.push(small(&proxied, &small_url).await);
    }
    println!("egress proxy, {RUNS} runs each, median:");
    for (name, times) in rows {
        let m = median(times);
        println!("  {name:<42} {:>8.1} ms", m.as_secs_f64() * 1000.0);
    }
    let refused = proxy.stop().await;
    assert!(refused.is_empty(), "{refused:?}");
}
