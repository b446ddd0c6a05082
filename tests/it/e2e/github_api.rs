//! A fake GitHub API for the real `gh`: a small HTTP/1.1 server on a local port that answers
//! the REST and GraphQL requests `gh` makes for the runner's calls, the way GitHub answers
//! them. `gh` reaches it through its proxy setting: with `GH_HOST=github.localhost` gh 2.23
//! talks plain HTTP to `api.github.localhost`, and `HTTP_PROXY` sends that here ([`GitHubApi::env`]).
//!
//! State ([`Api`]): issues, labels, pull requests, check runs per commit, and rate-limit
//! switches. A merge is performed on the bare origin with git, as GitHub would on its copy,
//! and closes the issues its PR's body says it closes (unless `close_on_merge` is off).
//! Every request is logged ([`Api::requests`]); one the fake does not know is answered with
//! an error and logged as `UNKNOWN …`, so a test sees what gh asked for.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// The repository the fake serves (`GH_REPO`).
pub const OWNER: &str = "o";
pub const REPO: &str = "r";

#[derive(Debug, Clone)]
pub struct Issue {
    pub number: u32,
    pub title: String,
    pub body: String,
    pub open: bool,
    pub labels: Vec<String>,
    pub comments: Vec<String>,
    /// Closed by a REST call (the runner's close), not by a merge.
    pub closed_by_runner: bool,
}

#[derive(Debug, Clone)]
pub struct Pull {
    pub number: u32,
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
    /// OPEN, CLOSED or MERGED.
    pub state: String,
}

#[derive(Debug, Clone)]
pub struct CheckRun {
    pub name: String,
    /// queued, in_progress or completed.
    pub status: String,
    /// success, failure, … once completed.
    pub conclusion: Option<String>,
}

impl CheckRun {
    pub fn passed(name: &str) -> CheckRun {
        CheckRun {
            name: name.into(),
            status: "completed".into(),
            conclusion: Some("success".into()),
        }
    }
    pub fn failed(name: &str) -> CheckRun {
        CheckRun {
            name: name.into(),
            status: "completed".into(),
            conclusion: Some("failure".into()),
        }
    }
    pub fn running(name: &str) -> CheckRun {
        CheckRun {
            name: name.into(),
            status: "in_progress".into(),
            conclusion: None,
        }
    }
}

/// One rate-limit answer, served instead of the next request that matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// 403, `X-RateLimit-Remaining: 0`, `X-RateLimit-Reset` this many seconds from now.
    Primary { reset_in_secs: u64 },
    /// 403 with `Retry-After` (or, `None`, without it: a minute, as GitHub documents).
    Secondary { retry_after: Option<u64> },
    /// GraphQL's limit: 200, `X-RateLimit-Remaining: 0`, the reset this many seconds from
    /// now, and a body with no data and a `RATE_LIMITED` error.
    GraphQl { reset_in_secs: u64 },
}

/// Everything the fake GitHub holds.
#[derive(Debug, Default)]
pub struct Api {
    pub origin: PathBuf,
    pub issues: Vec<Issue>,
    pub labels: Vec<String>,
    pub pulls: Vec<Pull>,
    /// Check runs by commit sha.
    pub checks: HashMap<String, Vec<CheckRun>>,
    /// Check runs of a commit the map does not name (none: no CI configured).
    pub default_checks: Vec<CheckRun>,
    /// Check runs of the first commit CI is asked about (a failing CI before its repair);
    /// every later commit gets `default_checks`.
    pub first_commit_checks: Vec<CheckRun>,
    /// Reads of check runs answered with every check still running (the same answer each
    /// time) before the checks settle: CI that takes a while.
    pub ci_pending_reads: u32,
    /// What GitHub says of every PR's mergeability: `mergeStateStatus` and `reviewDecision`
    /// (by default CLEAN and none).
    pub merge_gate: Option<(String, String)>,
    /// Whether a merge closes the issues its PR's body names ("Closes #N").
    pub close_on_merge: bool,
    /// How long after the merge GitHub closes those issues (on github.com a second or two:
    /// the close is asynchronous); `None`: at once, with the merge.
    pub close_delay: Option<std::time::Duration>,
    /// The closes a merge scheduled and GitHub has not made yet: (issue, when).
    pub closes_due: Vec<(u32, std::time::Instant)>,
    /// Limits served, in order, to the next requests whose log line contains the pattern
    /// (an empty pattern matches every request).
    pub limits: Vec<(String, Limit)>,
    /// `METHOD path` for REST, `graphql Operation` for GraphQL, in order.
    pub requests: Vec<String>,
    /// The conditional reads answered `304 Not Modified` (GitHub does not count them against
    /// the rate limit), as they appear in `requests`.
    pub not_modified: Vec<String>,
    /// Every request with the status it was answered with, in order.
    pub answered: Vec<(String, u16)>,
    /// A review (login, state, body) submitted on a pull request as it opens, of its head.
    pub review_on_open: Option<(String, String, String)>,
    /// The limits served, as (request, limit).
    pub limited: Vec<(String, Limit)>,
    /// Whether a person pushes to the PR's branch right before the next merge request, which
    /// GitHub then refuses (409: the head is no longer the commit the merge names).
    pub push_before_merge: bool,
    /// Whether a teammate pushes a commit to origin's main right after CI's checks are first
    /// read (CI passed the branch; main moves before the merge).
    pub main_moves_after_checks: bool,
    /// The base branch's merge queue, when it has one: its PRs read `blocked`, a direct merge
    /// is refused (405), and `enqueuePullRequest` puts a PR in it.
    pub merge_queue: Option<MergeQueue>,
    /// The `sha` each merge request (`PUT …/pulls/N/merge`) named, in order.
    pub merge_shas: Vec<String>,
    /// The assignments made (`POST …/issues/N/assignees`): (issue, login).
    pub assignees: Vec<(u32, String)>,
    /// Until when (epoch seconds) `GET /rate_limit` says the budget is spent: the reset of
    /// the last primary limit served, as GitHub's own account of the limit would.
    pub spent_until: u64,
    /// The PRs' reviews (`GET …/pulls/N/reviews`), review comments (`…/pulls/N/comments`)
    /// and conversation comments (`…/issues/N/comments` of a PR), each with its `pull`
    /// number, as GitHub lists them (oldest first).
    pub reviews: Vec<Value>,
    pub review_comments: Vec<Value>,
    pub pr_comments: Vec<Value>,
    /// Accounts without write access, with the `author_association` GitHub gives their
    /// reviews and comments (`NONE`, `CONTRIBUTOR` …); their collaborator permission is
    /// `read`. Every other account is a collaborator with `write` (the owner: `OWNER`, `admin`).
    pub outsiders: HashMap<String, String>,
    /// Comments on issues by others than the runner: (issue, login, body), after the runner's.
    pub issue_comments_by: Vec<(u32, String, String)>,
    /// Who applied a label (`…/issues/N/events`): (issue, label, actor); a label of an issue
    /// without an entry here was applied by the owner.
    pub label_events: Vec<(u32, String, String)>,
    /// The last edit of an issue's description (GraphQL `lastEditedAt`, `editor`): (issue,
    /// editor), a day after every label was applied.
    pub edits: Vec<(u32, String)>,
}

/// A merge queue as GitHub runs one: each PR put in it is decided after `looks` looks at it
/// (its CI on the merge group taking that long), as `outcomes` say in turn (the last one for
/// every later PR).
#[derive(Debug, Default)]
pub struct MergeQueue {
    /// Looks at a queued PR before the queue decides.
    pub looks: u32,
    /// What the queue does with each PR in turn: merge it, fail its checks, or a person
    /// dequeues it.
    pub outcomes: Vec<QueueOutcome>,
    /// The PRs in the queue: (number, the `expectedHeadOid` they were enqueued with).
    pub entries: Vec<(u32, String)>,
    /// Every enqueue's `expectedHeadOid`, in order.
    pub enqueued: Vec<String>,
    /// Looks at queued PRs so far, for the one in the queue now.
    pub seen: u32,
    /// The last removal of each PR: (number, reason, actor).
    pub removed: Vec<(u32, String, String)>,
}

/// What the merge queue does with a PR once its CI on the merge group decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueOutcome {
    /// Merges it (a merge commit of the enqueued head onto main).
    Merge,
    /// Takes it out: its checks failed on the merge group.
    FailChecks,
    /// A person takes it out of the queue.
    Dequeue,
    /// A person pushes a commit onto the PR's branch: GitHub takes the PR out of the queue,
    /// its head having changed.
    Push,
}

/// GitHub's time of now, as its REST answers write it.
pub fn github_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl Api {
    /// The `author_association` of `login`'s words on the repository.
    pub fn association(&self, login: &str) -> String {
        if login == OWNER {
            return "OWNER".into();
        }
        self.outsiders
            .get(login)
            .cloned()
            .unwrap_or_else(|| "COLLABORATOR".into())
    }

    /// `login`'s collaborator permission.
    pub fn permission(&self, login: &str) -> &'static str {
        if login == OWNER {
            "admin"
        } else if self.outsiders.contains_key(login) {
            "read"
        } else {
            "write"
        }
    }

    /// `login` has no write access; GitHub calls their words `association`.
    pub fn outsider(&mut self, login: &str, association: &str) {
        self.outsiders.insert(login.into(), association.into());
    }

    /// The open PR's number and its head on origin.
    pub fn open_pull(&self) -> (u32, String) {
        let pull = self
            .pulls
            .iter()
            .find(|p| p.state == "OPEN")
            .expect("an open PR");
        (pull.number, resolve(self, &pull.head))
    }

    /// A review of the open PR by `login` (`APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`) of
    /// commit `commit` (its head now when `None`), written now.
    pub fn review(&mut self, login: &str, state: &str, body: &str, commit: Option<&str>) {
        let (number, head) = self.open_pull();
        let id = 5000 + self.reviews.len() as u64;
        let association = self.association(login);
        self.reviews.push(json!({"id": id, "pull": number, "user": {"login": login},
            "author_association": association, "state": state, "body": body, "submitted_at": github_now(),
            "commit_id": commit.unwrap_or(&head),
            "html_url": format!("https://github.localhost/{OWNER}/{REPO}/pull/{number}#pullrequestreview-{id}")}));
    }

    /// A line comment on the open PR by `login`, on `path` line `line`.
    pub fn review_comment(&mut self, login: &str, body: &str, path: &str, line: u32) {
        let (number, head) = self.open_pull();
        let id = 7000 + self.review_comments.len() as u64;
        let association = self.association(login);
        self.review_comments
            .push(json!({"id": id, "pull": number, "user": {"login": login},
            "author_association": association,
            "body": body, "path": path, "line": line, "original_line": line,
            "commit_id": head, "created_at": github_now(), "updated_at": github_now()}));
    }

    /// A comment in the open PR's conversation by `login`.
    pub fn pr_comment(&mut self, login: &str, body: &str) {
        let (number, _) = self.open_pull();
        let id = 9000 + self.pr_comments.len() as u64;
        let association = self.association(login);
        self.pr_comments
            .push(json!({"id": id, "pull": number, "user": {"login": login},
            "author_association": association,
            "body": body, "created_at": github_now(), "updated_at": github_now()}));
    }
}

/// The running server; it stops with the test process.
pub struct GitHubApi {
    pub port: u16,
    pub state: Arc<Mutex<Api>>,
}

impl GitHubApi {
    /// Serves `api` on a free local port.
    pub fn start(mut api: Api) -> GitHubApi {
        api.close_on_merge = true;
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(api));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &state);
                });
            }
        });
        GitHubApi { port, state }
    }

    /// The environment that points the real `gh` at this server.
    pub fn env(&self, config_dir: &Path) -> Vec<(String, std::ffi::OsString)> {
        let proxy = format!("http://127.0.0.1:{}", self.port);
        let mut env: Vec<(String, std::ffi::OsString)> = vec![
            ("GH_HOST".into(), "github.localhost".into()),
            ("GH_REPO".into(), format!("{OWNER}/{REPO}").into()),
            ("GH_TOKEN".into(), "fake-token".into()),
            ("GH_CONFIG_DIR".into(), config_dir.into()),
            ("GH_NO_UPDATE_NOTIFIER".into(), "1".into()),
        ];
        for var in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"] {
            env.push((var.into(), proxy.clone().into()));
        }
        for var in ["NO_PROXY", "no_proxy"] {
            env.push((var.into(), "".into()));
        }
        env
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut Api) -> T) -> T {
        f(&mut self.state.lock().expect("api state"))
    }

    pub fn requests(&self) -> Vec<String> {
        self.with(|a| a.requests.clone())
    }

    /// The requests that counted against the rate limit: all but the `304`s.
    pub fn spent_requests(&self) -> Vec<String> {
        self.with(|a| {
            let mut spent = a.requests.clone();
            for free in &a.not_modified {
                if let Some(i) = spent.iter().position(|r| r == free) {
                    spent.remove(i);
                }
            }
            spent
        })
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
    /// `If-None-Match`: the ETag of the answer the client holds.
    if_none_match: Option<String>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let raw = super::wire::read(reader)?;
    let if_none_match = raw
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("if-none-match"))
        .map(|(_, v)| v.clone());
    Some(Request {
        method: raw.method,
        path: raw.target,
        body: raw.body,
        if_none_match,
    })
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

fn ok(body: Value) -> Answer {
    Answer {
        status: 200,
        headers: vec![],
        body,
    }
}

fn status(status: u16, message: &str) -> Answer {
    Answer {
        status,
        headers: vec![],
        body: json!({"message": message, "documentation_url": "https://docs.github.com/rest"}),
    }
}

fn serve(stream: TcpStream, state: &Mutex<Api>) -> std::io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let Some(req) = read_request(&mut reader) else {
        return Ok(());
    };
    let answer = {
        let mut api = state.lock().expect("api state");
        answer(&mut api, &req)
    };
    let mut body = if answer.status == 204 {
        Vec::new()
    } else {
        answer.body.to_string().into_bytes()
    };
    let mut headers = answer.headers.clone();
    let mut status = answer.status;
    // Every successful REST read carries an ETag of its body, and a read that names the
    // current one is answered 304 with no body, as GitHub does.
    if req.method == "GET" && answer.status == 200 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        body.hash(&mut hasher);
        let etag = format!("W/\"{:016x}\"", hasher.finish());
        if req.if_none_match.as_deref() == Some(etag.as_str()) {
            status = 304;
            body.clear();
            let mut api = state.lock().expect("api state");
            let line = format!("{} {}", req.method, req.path);
            api.not_modified.push(line);
        }
        headers.push(("ETag".to_string(), etag));
    }
    {
        let line = if req.path == "/graphql" {
            state
                .lock()
                .expect("api state")
                .requests
                .last()
                .cloned()
                .unwrap_or_default()
        } else {
            format!("{} {}", req.method, req.path)
        };
        state
            .lock()
            .expect("api state")
            .answered
            .push((line, status));
    }
    let has = |name: &str| {
        answer
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
    };
    if !has("x-ratelimit-remaining") {
        headers.extend([
            ("X-RateLimit-Limit".to_string(), "5000".to_string()),
            ("X-RateLimit-Remaining".to_string(), "4999".to_string()),
            ("X-RateLimit-Reset".to_string(), (now() + 3600).to_string()),
        ]);
    }
    super::wire::write(&mut writer, status, &headers, &body)
}

fn answer(api: &mut Api, req: &Request) -> Answer {
    let graphql: Value = if req.path == "/graphql" {
        serde_json::from_slice(&req.body).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let line = if req.path == "/graphql" {
        let query = graphql["query"].as_str().unwrap_or_default();
        format!("graphql {}", operation(query))
    } else {
        format!("{} {}", req.method, req.path)
    };
    api.requests.push(line.clone());
    // GitHub's own closes after a merge, made when they are due (before this request is
    // answered, as GitHub's background job would have).
    let instant = std::time::Instant::now();
    let due: Vec<u32> = api
        .closes_due
        .iter()
        .filter(|(_, at)| *at <= instant)
        .map(|(n, _)| *n)
        .collect();
    api.closes_due.retain(|(_, at)| *at > instant);
    for issue in api.issues.iter_mut().filter(|i| due.contains(&i.number)) {
        issue.open = false;
    }
    if req.method == "CONNECT" {
        // A git transfer through the proxy (gh pulling the clone after a merge), not an API
        // call: logged, and refused.
        return status(405, "the fake GitHub API serves no git transfers");
    }
    if let Some(i) = api
        .limits
        .iter()
        .position(|(pattern, _)| line.contains(pattern.as_str()))
    {
        let (_, limit) = api.limits.remove(i);
        api.limited.push((line, limit));
        if let Limit::Primary { reset_in_secs } | Limit::GraphQl { reset_in_secs } = limit {
            api.spent_until = now() + reset_in_secs;
        }
        return limited(limit);
    }
    let answer = if req.path == "/graphql" {
        graphql_answer(api, &graphql)
    } else {
        rest_answer(api, req)
    };
    if let Some(a) = answer {
        return a;
    }
    api.requests.push(format!("UNKNOWN {line}"));
    status(
        404,
        "Not Found (the fake GitHub API does not know this request)",
    )
}

fn limited(limit: Limit) -> Answer {
    match limit {
        Limit::Primary { reset_in_secs } => Answer {
            status: 403,
            headers: vec![
                ("X-RateLimit-Limit".into(), "5000".into()),
                ("X-RateLimit-Remaining".into(), "0".into()),
                (
                    "X-RateLimit-Reset".into(),
                    (now() + reset_in_secs).to_string(),
                ),
            ],
            body: json!({"message": "API rate limit exceeded for user ID 1.",
                "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}),
        },
        Limit::GraphQl { reset_in_secs } => Answer {
            status: 200,
            headers: vec![
                ("X-RateLimit-Limit".into(), "5000".into()),
                ("X-RateLimit-Remaining".into(), "0".into()),
                (
                    "X-RateLimit-Reset".into(),
                    (now() + reset_in_secs).to_string(),
                ),
            ],
            body: json!({"data": null, "errors": [{"type": "RATE_LIMITED",
                "message": "API rate limit exceeded for user ID 1."}]}),
        },
        Limit::Secondary { retry_after } => Answer {
            status: 403,
            headers: retry_after
                .map(|s| vec![("Retry-After".to_string(), s.to_string())])
                .unwrap_or_default(),
            body: json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}),
        },
    }
}

/// The operation's name: `query IssueSearch(` → `IssueSearch`.
fn operation(query: &str) -> String {
    for kw in ["query ", "mutation "] {
        if let Some(i) = query.find(kw) {
            let rest = &query[i + kw.len()..];
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                return name;
            }
        }
    }
    "anonymous".to_string()
}

/// A query parameter of a REST address.
fn param<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Percent-decoding of a path segment or a query value.
fn decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if let Some(b) = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An issue as GitHub's REST API answers it; its `updated_at` moves with its description's
/// last edit (`edits`), a day after the labels were applied.
fn issue_rest(i: &Issue, edits: &[(u32, String)]) -> Value {
    let updated = if edits.iter().any(|(n, _)| *n == i.number) {
        "2026-01-02T00:00:00Z"
    } else {
        "2026-01-01T00:00:00Z"
    };
    json!({"number": i.number, "title": i.title, "body": i.body, "updated_at": updated,
        "state": if i.open { "open" } else { "closed" },
        "labels": i.labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>(),
        "milestone": null,
        "html_url": format!("https://github.localhost/{OWNER}/{REPO}/issues/{}", i.number)})
}

/// The tracker's REST calls on one issue: read it, close it, comment, label.
fn issue_rest_answer(api: &mut Api, method: &str, parts: &[&str], body: &Value) -> Option<Answer> {
    let number: u32 = parts.first()?.parse().ok()?;
    let api_assignees = &mut api.assignees;
    let edits = &api.edits;
    let Some(issue) = api.issues.iter_mut().find(|i| i.number == number) else {
        return Some(status(404, "Not Found"));
    };
    Some(match (method, &parts[1..]) {
        ("GET", []) => ok(issue_rest(issue, edits)),
        ("PATCH", []) => {
            if body["state"] == "closed" {
                issue.open = false;
                issue.closed_by_runner = true;
            }
            ok(issue_rest(issue, edits))
        }
        ("GET", ["comments"]) => {
            let comments: Vec<Value> = issue
                .comments
                .iter()
                .map(|c| {
                    json!({"body": c, "created_at": "2026-01-01T00:00:00Z",
                    "user": {"login": "runner"}})
                })
                .collect();
            ok(json!(comments))
        }
        ("POST", ["comments"]) => {
            let text = body["body"].as_str().unwrap_or_default().to_string();
            issue.comments.push(text.clone());
            Answer {
                status: 201,
                headers: vec![],
                body: json!({"body": text}),
            }
        }
        ("POST", ["assignees"]) => {
            for a in body["assignees"].as_array().into_iter().flatten() {
                let login = a.as_str().unwrap_or_default().to_string();
                api_assignees.push((number, login));
            }
            Answer {
                status: 201,
                headers: vec![],
                body: issue_rest(issue, edits),
            }
        }
        ("POST", ["labels"]) => {
            for l in body["labels"].as_array().into_iter().flatten() {
                let l = l.as_str().unwrap_or_default().to_string();
                if !issue.labels.contains(&l) {
                    issue.labels.push(l);
                }
            }
            let labels: Vec<Value> = issue.labels.iter().map(|l| json!({"name": l})).collect();
            ok(json!(labels))
        }
        ("DELETE", ["labels", name]) => {
            let name = decoded(name);
            if !issue.labels.contains(&name) {
                return Some(status(404, "Label does not exist"));
            }
            issue.labels.retain(|l| *l != name);
            let labels: Vec<Value> = issue.labels.iter().map(|l| json!({"name": l})).collect();
            ok(json!(labels))
        }
        _ => return None,
    })
}

fn rest_answer(api: &mut Api, req: &Request) -> Option<Answer> {
    let (path, query) = req.path.split_once('?').unwrap_or((req.path.as_str(), ""));
    if req.method == "GET" && path == "/user" {
        return Some(ok(json!({"login": OWNER, "id": 1, "type": "User"})));
    }
    if req.method == "GET" && path == "/rate_limit" {
        // GitHub's account of the budget; asking for it costs nothing.
        let spent = api.spent_until > now();
        let resource = json!({"limit": 5000, "used": if spent { 5000 } else { 1 },
            "remaining": if spent { 0 } else { 4999 },
            "reset": if spent { api.spent_until } else { now() + 3600 }});
        return Some(ok(
            json!({"resources": {"core": resource, "graphql": resource},
            "rate": resource}),
        ));
    }
    let prefix = format!("/repos/{OWNER}/{REPO}");
    let rest = path.strip_prefix(&prefix)?;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match (req.method.as_str(), parts.as_slice()) {
        ("GET", ["collaborators", login, "permission"]) => {
            let login = decoded(login);
            Some(ok(
                json!({"permission": api.permission(&login), "user": {"login": login}}),
            ))
        }
        ("GET", ["issues", number, "events"]) => {
            let issue = api
                .issues
                .iter()
                .find(|i| i.number.to_string() == *number)?;
            let events: Vec<Value> = issue
                .labels
                .iter()
                .map(|label| {
                    let actor = api
                        .label_events
                        .iter()
                        .rev()
                        .find(|(n, l, _)| *n == issue.number && l == label)
                        .map_or(OWNER.to_string(), |(_, _, a)| a.clone());
                    json!({"id": 1, "event": "labeled", "actor": {"login": actor},
                        "label": {"name": label, "color": "ededed"},
                        "created_at": "2026-01-01T00:00:00Z"})
                })
                .collect();
            Some(paged(path, query, events))
        }
        ("GET", ["issues", number, "comments"])
            if !api.pulls.iter().any(|p| p.number.to_string() == *number) =>
        {
            let issue = api
                .issues
                .iter()
                .find(|i| i.number.to_string() == *number)?;
            let mut all: Vec<Value> = issue
                .comments
                .iter()
                .map(|c| {
                    json!({"body": c, "created_at": "2026-01-01T00:00:00Z",
                    "user": {"login": "runner"}, "author_association": "OWNER"})
                })
                .collect();
            for (n, login, body) in &api.issue_comments_by {
                if *n == issue.number {
                    all.push(json!({"body": body, "created_at": "2026-01-01T00:00:00Z",
                        "user": {"login": login}, "author_association": api.association(login)}));
                }
            }
            Some(paged(path, query, all))
        }
        ("GET", []) => Some(ok(repository_rest())),
        ("GET", ["milestones"]) => Some(ok(json!([]))),
        ("GET", ["commits", git_ref, "check-runs"]) => {
            let sha = resolve(api, git_ref);
            if !api.first_commit_checks.is_empty() && api.checks.is_empty() {
                let first = std::mem::take(&mut api.first_commit_checks);
                api.checks.insert(sha.clone(), first);
            }
            if std::mem::take(&mut api.main_moves_after_checks) {
                if let Err(e) = teammate_pushes_main(&api.origin) {
                    return Some(status(500, &e));
                }
            }
            let pending: Vec<CheckRun>;
            let all = if api.ci_pending_reads > 0 {
                api.ci_pending_reads -= 1;
                pending = vec![CheckRun::running("unit-tests")];
                &pending
            } else {
                api.checks.get(&sha).unwrap_or(&api.default_checks)
            };
            // GitHub's pages: 30 runs unless per_page (at most 100) says otherwise.
            let per_page: usize = param(query, "per_page")
                .and_then(|p| p.parse().ok())
                .unwrap_or(30)
                .min(100);
            let page: usize = param(query, "page")
                .and_then(|p| p.parse().ok())
                .unwrap_or(1)
                .max(1);
            let runs: Vec<Value> = all
                .iter()
                .enumerate()
                .skip((page - 1) * per_page)
                .take(per_page)
                .map(|(i, r)| {
                    json!({"id": 1000 + i, "name": r.name, "head_sha": sha, "status": r.status,
                        "conclusion": r.conclusion,
                        "html_url": format!("https://github.localhost/{OWNER}/{REPO}/runs/{}", 1000 + i)})
                })
                .collect();
            Some(ok(json!({"total_count": all.len(), "check_runs": runs})))
        }
        ("GET", ["commits", git_ref, "status"]) => {
            let sha = resolve(api, git_ref);
            Some(ok(
                json!({"state": "pending", "sha": sha, "statuses": [], "total_count": 0}),
            ))
        }
        ("DELETE", ["git", "refs", "heads", branch @ ..]) => {
            let branch = branch.join("/");
            Some(match git(&api.origin, &["branch", "-D", &branch]) {
                Ok(_) => Answer {
                    status: 204,
                    headers: vec![],
                    body: Value::Null,
                },
                Err(_) => status(422, "Reference does not exist"),
            })
        }
        ("POST", ["labels"]) => {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let name = body["name"].as_str().unwrap_or_default().to_string();
            if api.labels.contains(&name) {
                return Some(status(422, "Validation Failed"));
            }
            api.labels.push(name.clone());
            Some(Answer {
                status: 201,
                headers: vec![],
                body: json!({"name": name, "id": 1}),
            })
        }
        ("GET", ["labels", name]) => {
            let name = decoded(name);
            Some(if api.labels.contains(&name) {
                ok(json!({"name": name, "id": 1}))
            } else {
                status(404, "Not Found")
            })
        }
        ("GET", ["issues"]) => {
            let state = param(query, "state").unwrap_or("open");
            let label = param(query, "labels").map(decoded);
            let list: Vec<Value> = api
                .issues
                .iter()
                .rev()
                .filter(|i| state == "all" || (state == "open") == i.open)
                .filter(|i| label.as_ref().is_none_or(|l| i.labels.contains(l)))
                .map(|i| issue_rest(i, &api.edits))
                .collect();
            Some(paged(path, query, list))
        }
        ("GET", ["pulls"]) => {
            let head = param(query, "head").map(decoded);
            let list: Vec<Value> = api
                .pulls
                .iter()
                .rev()
                .filter(|p| {
                    head.as_ref()
                        .is_none_or(|h| *h == format!("{OWNER}:{}", p.head))
                })
                .map(|p| pull_rest(api, p))
                .collect();
            Some(paged(path, query, list))
        }
        ("POST", ["pulls"]) => {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let text = |k: &str| body[k].as_str().unwrap_or_default().to_string();
            let head = text("head");
            if git(
                &api.origin,
                &["rev-parse", "--verify", "-q", &format!("refs/heads/{head}")],
            )
            .is_err()
            {
                return Some(status(422, "Validation Failed"));
            }
            if api
                .pulls
                .iter()
                .any(|p| p.head == head && p.state == "OPEN")
            {
                // GitHub refuses a second open pull request for a head, naming it.
                let mut refusal = status(422, "Validation Failed");
                refusal.body["errors"] = json!([{"resource": "PullRequest", "code": "custom",
                    "message": format!("A pull request already exists for {OWNER}:{head}.")}]);
                return Some(refusal);
            }
            let pull = Pull {
                number: 100 + api.pulls.len() as u32 + 1,
                head,
                base: text("base"),
                title: text("title"),
                body: text("body"),
                state: "OPEN".into(),
            };
            let answer = pull_rest(api, &pull);
            api.pulls.push(pull);
            if let Some((login, state, body)) = api.review_on_open.take() {
                api.review(&login, &state, &body, None);
            }
            Some(Answer {
                status: 201,
                headers: vec![],
                body: answer,
            })
        }
        ("GET", ["pulls", number]) => {
            let pull = api.pulls.iter().find(|p| p.number.to_string() == *number)?;
            // The single pull request counts its conversation and its line comments (the
            // list of pull requests does not).
            let on_it = |list: &[Value]| {
                list.iter()
                    .filter(|c| c["pull"].as_u64() == Some(u64::from(pull.number)))
                    .count()
            };
            let mut answer = pull_rest(api, pull);
            answer["comments"] = json!(on_it(&api.pr_comments));
            answer["review_comments"] = json!(on_it(&api.review_comments));
            Some(ok(answer))
        }
        ("GET", ["pulls", number, list @ ("reviews" | "comments")]) => {
            let of = if *list == "reviews" {
                &api.reviews
            } else {
                &api.review_comments
            };
            let all: Vec<Value> = of
                .iter()
                .filter(|r| r["pull"].as_u64().is_some_and(|n| n.to_string() == *number))
                .cloned()
                .collect();
            Some(paged(path, query, all))
        }
        ("GET", ["issues", number, "comments"])
            if api.pulls.iter().any(|p| p.number.to_string() == *number) =>
        {
            let all: Vec<Value> = api
                .pr_comments
                .iter()
                .filter(|r| r["pull"].as_u64().is_some_and(|n| n.to_string() == *number))
                .cloned()
                .collect();
            Some(paged(path, query, all))
        }
        ("PUT", ["pulls", number, "merge"]) => {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let id = format!("PR_{number}");
            if let Some(sha) = body["sha"].as_str() {
                api.merge_shas.push(sha.to_string());
            }
            if std::mem::take(&mut api.push_before_merge) {
                let pull = api.pulls.iter().find(|p| p.number.to_string() == *number)?;
                person_pushes(&api.origin, &pull.head.clone());
            }
            if api.merge_queue.is_some() {
                return Some(status(405, "Changes must be made through the merge queue"));
            }
            let gate = api.merge_gate.clone().map(|(m, _)| m.to_ascii_lowercase());
            if matches!(
                gate.as_deref(),
                Some("blocked" | "draft" | "dirty" | "behind")
            ) {
                return Some(status(405, "Pull Request is not mergeable"));
            }
            Some(match merge(api, &id, body["sha"].as_str()) {
                Ok(()) => {
                    ok(json!({"merged": true, "message": "Pull Request successfully merged"}))
                }
                Err(message) if message.contains("Head branch was modified") => {
                    status(409, &message)
                }
                Err(message) => status(405, &message),
            })
        }
        (method, ["issues", rest @ ..]) => {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            issue_rest_answer(api, method, rest, &body)
        }
        _ => None,
    }
}

/// One page of a REST list as GitHub serves it: 30 entries unless `per_page` (at most 100)
/// says otherwise, and a `Link` header naming the next and last pages while more follow.
fn paged(path: &str, query: &str, all: Vec<Value>) -> Answer {
    let per_page: usize = param(query, "per_page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page: usize = param(query, "page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let last = all.len().div_ceil(per_page).max(1);
    let mut headers = vec![];
    if page < last {
        let at = |n: usize| {
            let others: Vec<&str> = query
                .split('&')
                .filter(|p| !p.starts_with("page=") && !p.is_empty())
                .collect();
            format!(
                "<http://api.github.localhost{path}?{}&page={n}>",
                others.join("&")
            )
        };
        headers.push((
            "Link".to_string(),
            format!("{}; rel=\"next\", {}; rel=\"last\"", at(page + 1), at(last)),
        ));
    }
    let body: Vec<Value> = all
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    Answer {
        status: 200,
        headers,
        body: json!(body),
    }
}

/// A pull request as GitHub's REST API answers it: `state` open or closed, `merged_at` once
/// merged, `mergeable_state` from the gate the test set (clean by default).
fn pull_rest(api: &Api, p: &Pull) -> Value {
    let sha = resolve(api, &p.head);
    let (merge_state, _) = api
        .merge_gate
        .clone()
        .unwrap_or_else(|| ("CLEAN".into(), String::new()));
    let mut merge_state = merge_state.to_ascii_lowercase();
    if api.merge_queue.is_some() && merge_state == "clean" {
        // GitHub shows a PR whose base merges only through its queue as blocked.
        merge_state = "blocked".into();
    }
    json!({"number": p.number, "title": p.title, "body": p.body, "node_id": format!("PR_{}", p.number),
        "html_url": format!("https://github.localhost/{OWNER}/{REPO}/pull/{}", p.number),
        "state": if p.state == "OPEN" { "open" } else { "closed" },
        "merged": p.state == "MERGED",
        "merged_at": (p.state == "MERGED").then_some("2026-01-01T00:00:00Z"),
        "draft": merge_state == "draft",
        "mergeable": merge_state != "dirty",
        "mergeable_state": merge_state,
        "head": {"ref": p.head, "sha": sha, "label": format!("{OWNER}:{}", p.head)},
        "base": {"ref": p.base}})
}

/// A person's commit on top of `branch` on the bare origin, made without a work tree.
pub fn person_pushes(origin: &Path, branch: &str) {
    let run = |args: &[&str], input: Option<&str>| -> String {
        use std::io::Write;
        let mut child = Command::new("git")
            .args(args)
            .current_dir(origin)
            .env("GIT_AUTHOR_NAME", "Person")
            .env("GIT_AUTHOR_EMAIL", "p@example.invalid")
            .env("GIT_COMMITTER_NAME", "Person")
            .env("GIT_COMMITTER_EMAIL", "p@example.invalid")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git");
        if let Some(text) = input {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())
                .expect("write");
        }
        let out = child.wait_with_output().expect("git");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let head = run(&["rev-parse", &format!("refs/heads/{branch}")], None);
    let tree = run(&["rev-parse", &format!("{head}^{{tree}}")], None);
    let commit = run(
        &["commit-tree", &tree, "-p", &head, "-m", "a person's commit"],
        None,
    );
    run(
        &[
            "update-ref",
            &format!("refs/heads/{branch}"),
            &commit,
            &head,
        ],
        None,
    );
}

/// A teammate's commit on origin's main (a file of its own), pushed from a clone of theirs.
fn teammate_pushes_main(origin: &Path) -> Result<(), String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = work.path();
    git(dir, &["clone", "--quiet", &origin.to_string_lossy(), "w"])?;
    let w = dir.join("w");
    std::fs::write(w.join("teammate.txt"), "a teammate's change\n").map_err(|e| e.to_string())?;
    git(&w, &["add", "teammate.txt"])?;
    git(
        &w,
        &[
            "-c",
            "user.name=Teammate",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "--quiet",
            "-m",
            "a teammate's commit on main",
        ],
    )?;
    git(&w, &["push", "--quiet", "origin", "HEAD:main"])?;
    Ok(())
}

fn repository_rest() -> Value {
    json!({"id": 1, "name": REPO, "full_name": format!("{OWNER}/{REPO}"),
        "owner": {"login": OWNER}, "default_branch": "main", "private": false})
}

/// A branch name or a sha, as the origin knows it.
fn resolve(api: &Api, git_ref: &str) -> String {
    let decoded = git_ref.replace("%2F", "/");
    let out = Command::new("git")
        .args([
            "rev-parse",
            "--verify",
            "-q",
            &format!("{decoded}^{{commit}}"),
        ])
        .current_dir(&api.origin)
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => decoded,
    }
}

use super::wire::git;

fn repository_gql() -> Value {
    json!({"id": "R_1", "name": REPO, "owner": {"login": OWNER}, "hasIssuesEnabled": true,
        "description": "", "hasWikiEnabled": false, "viewerPermission": "ADMIN",
        "defaultBranchRef": {"name": "main"}, "parent": null, "isPrivate": false,
        "mergeCommitAllowed": true, "rebaseMergeAllowed": true, "squashMergeAllowed": true})
}

fn issue_gql(i: &Issue) -> Value {
    let labels: Vec<Value> = i
        .labels
        .iter()
        .map(|l| json!({"id": format!("L_{l}"), "name": l, "description": "", "color": "ededed"}))
        .collect();
    let comments: Vec<Value> = i
        .comments
        .iter()
        .enumerate()
        .map(|(n, c)| {
            json!({"id": format!("C_{n}"), "author": {"login": "runner"}, "authorAssociation": "OWNER",
                "body": c, "createdAt": "2026-01-01T00:00:00Z", "includesCreatedEdit": false,
                "isMinimized": false, "minimizedReason": "", "reactionGroups": [],
                "url": "", "viewerDidAuthor": true})
        })
        .collect();
    json!({"__typename": "Issue", "id": format!("I_{}", i.number), "number": i.number,
        "title": i.title, "body": i.body,
        "url": format!("https://github.localhost/{OWNER}/{REPO}/issues/{}", i.number),
        "state": if i.open { "OPEN" } else { "CLOSED" },
        "labels": {"nodes": labels, "totalCount": i.labels.len()},
        "milestone": null,
        "comments": {"nodes": comments, "totalCount": i.comments.len(),
            "pageInfo": {"hasNextPage": false, "endCursor": null}}})
}

fn pull_gql(api: &Api, p: &Pull) -> Value {
    let oid = resolve(api, &p.head);
    let (merge_state, review) = api
        .merge_gate
        .clone()
        .unwrap_or_else(|| ("CLEAN".into(), String::new()));
    let review = (!review.is_empty()).then_some(review);
    json!({"id": format!("PR_{}", p.number), "number": p.number, "title": p.title,
        "url": format!("https://github.localhost/{OWNER}/{REPO}/pull/{}", p.number),
        "state": p.state, "headRefName": p.head, "baseRefName": p.base, "headRefOid": oid,
        "isCrossRepository": false, "mergeStateStatus": merge_state,
        "reviewDecision": review, "isDraft": false, "mergeable": "MERGEABLE",
        "headRepositoryOwner": {"id": "U_1", "login": OWNER, "name": OWNER},
        "commits": {"nodes": [{"commit": {"oid": oid}}]}})
}

fn graphql_answer(api: &mut Api, request: &Value) -> Option<Answer> {
    let query = request["query"].as_str().unwrap_or_default();
    let vars = &request["variables"];
    let data = match operation(query).as_str() {
        "IssueSearch" => {
            // "label:automatable repo:o/r state:open type:issue"
            let q = vars["query"].as_str().unwrap_or_default();
            let label = q
                .split_whitespace()
                .find_map(|w| w.strip_prefix("label:"))
                .map(|l| l.trim_matches('"').to_string());
            let want_open = !q.contains("state:closed");
            let nodes: Vec<Value> = api
                .issues
                .iter()
                .filter(|i| i.open == want_open || !q.contains("state:"))
                .filter(|i| label.as_ref().is_none_or(|l| i.labels.contains(l)))
                .map(issue_gql)
                .collect();
            json!({"repository": {"hasIssuesEnabled": true},
                "search": {"issueCount": nodes.len(), "nodes": nodes,
                    "pageInfo": {"hasNextPage": false, "endCursor": null}}})
        }
        "IssueList" => {
            let nodes: Vec<Value> = api.issues.iter().map(issue_gql).collect();
            json!({"repository": {"hasIssuesEnabled": true,
                "issues": {"totalCount": nodes.len(), "nodes": nodes,
                    "pageInfo": {"hasNextPage": false, "endCursor": null}}}})
        }
        "IssueByNumber" => {
            let n = vars["number"].as_u64().unwrap_or(0);
            let issue = api.issues.iter().find(|i| u64::from(i.number) == n);
            match issue {
                Some(i) => json!({"repository": {"hasIssuesEnabled": true, "issue": issue_gql(i)}}),
                None => {
                    return Some(ok(
                        json!({"data": {"repository": {"hasIssuesEnabled": true, "issue": null}},
                        "errors": [{"type": "NOT_FOUND", "path": ["repository", "issue"],
                        "message": format!("Could not resolve to an issue or pull request with the number of {n}.")}]}),
                    ))
                }
            }
        }
        "RepositoryInfo" | "RepositoryNetwork" => json!({"repository": repository_gql()}),
        "PullRequestReviewDecision" => {
            // gh fills `{owner}` and `{repo}` in the variables; a PR the fake knows.
            let known = api
                .pulls
                .iter()
                .any(|p| Some(u64::from(p.number)) == vars["number"].as_u64());
            if vars["owner"] != OWNER || vars["repo"] != REPO || !known {
                return None;
            }
            let review = api.merge_gate.clone().map(|(_, r)| r).unwrap_or_default();
            let review = (!review.is_empty()).then_some(review);
            json!({"repository": {"pullRequest": {"reviewDecision": review,
                "isMergeQueueEnabled": api.merge_queue.is_some()}}})
        }
        "PullRequestQueue" => {
            let branch = vars["branch"].as_str().unwrap_or_default().to_string();
            queue_look(api, &branch)?
        }
        "PullRequestEnqueue" => {
            let id = vars["id"].as_str().unwrap_or_default().to_string();
            let head = vars["head"].as_str().unwrap_or_default().to_string();
            match enqueue(api, &id, &head) {
                Ok(()) => json!({"enqueuePullRequest": {"mergeQueueEntry": {"position": 1}}}),
                Err(message) => {
                    return Some(ok(json!({"data": {"enqueuePullRequest": null},
                        "errors": [{"type": "UNPROCESSABLE", "path": ["enqueuePullRequest"], "message": message}]})))
                }
            }
        }
        "UserCurrent" => json!({"viewer": {"login": OWNER}}),
        "IssueLastEdit" => {
            if vars["owner"] != OWNER || vars["repo"] != REPO {
                return None;
            }
            let n = vars["number"].as_u64().unwrap_or(0);
            let edit = api.edits.iter().rev().find(|(i, _)| u64::from(*i) == n);
            match edit {
                Some((_, editor)) => json!({"repository": {"issue": {
                    "lastEditedAt": "2026-01-02T00:00:00Z", "editor": {"login": editor}}}}),
                None => json!({"repository": {"issue": {"lastEditedAt": null, "editor": null}}}),
            }
        }
        "CommentsForIssue" => {
            let n = vars["number"].as_u64().unwrap_or(0);
            let issue = api.issues.iter().find(|i| u64::from(i.number) == n);
            let comments = issue.map_or(json!({"nodes": [], "totalCount": 0}), |i| {
                issue_gql(i)["comments"].clone()
            });
            json!({"repository": {"issue": {"comments": comments}}})
        }
        "PullRequestList" => {
            let head = vars["headBranch"].as_str();
            let states: Vec<String> = vars["state"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_else(|| vec!["OPEN".into()]);
            let nodes: Vec<Value> = api
                .pulls
                .iter()
                .rev()
                .filter(|p| head.is_none_or(|h| p.head == h) && states.contains(&p.state))
                .map(|p| pull_gql(api, p))
                .collect();
            json!({"repository": {"pullRequests": {"totalCount": nodes.len(), "nodes": nodes,
                "pageInfo": {"hasNextPage": false, "endCursor": null}}}})
        }
        "PullRequestForBranch" => {
            let head = vars["headRefName"].as_str().unwrap_or_default();
            let states: Option<Vec<String>> = vars["states"].as_array().map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            });
            let nodes: Vec<Value> = api
                .pulls
                .iter()
                .rev()
                .filter(|p| p.head == head && states.as_ref().is_none_or(|s| s.contains(&p.state)))
                .map(|p| pull_gql(api, p))
                .collect();
            json!({"repository": {"pullRequests": {"nodes": nodes}, "defaultBranchRef": {"name": "main"}}})
        }
        "PullRequest_fields" => {
            let fields: Vec<Value> = ["id", "number", "state", "mergeStateStatus", "headRefOid"]
                .iter()
                .map(|f| json!({"name": f}))
                .collect();
            json!({"PullRequest": {"fields": fields}})
        }
        "PullRequestCreate" => {
            let input = &vars["input"];
            let number = 100 + api.pulls.len() as u32 + 1;
            let pull = Pull {
                number,
                head: input["headRefName"].as_str().unwrap_or_default().into(),
                base: input["baseRefName"].as_str().unwrap_or_default().into(),
                title: input["title"].as_str().unwrap_or_default().into(),
                body: input["body"].as_str().unwrap_or_default().into(),
                state: "OPEN".into(),
            };
            let node = pull_gql(api, &pull);
            api.pulls.push(pull);
            json!({"createPullRequest": {"pullRequest": node}})
        }
        "PullRequestMerge" => {
            let input = &vars["input"];
            let id = input["pullRequestId"].as_str().unwrap_or_default();
            let expected = input["expectedHeadOid"].as_str();
            if std::mem::take(&mut api.push_before_merge) {
                let number = id.trim_start_matches("PR_");
                if let Some(pull) = api.pulls.iter().find(|p| p.number.to_string() == number) {
                    person_pushes(&api.origin, &pull.head.clone());
                }
            }
            match merge(api, id, expected) {
                Ok(()) => json!({"mergePullRequest": {"clientMutationId": null}}),
                Err(message) => {
                    return Some(ok(json!({"data": {"mergePullRequest": null},
                        "errors": [{"type": "UNPROCESSABLE", "path": ["mergePullRequest"], "message": message}]})))
                }
            }
        }
        _ => return None,
    };
    Some(ok(json!({"data": data})))
}

/// The newest PR of `branch` and where it stands in the merge queue; a look at a queued PR
/// counts towards the queue's decision, which is made when it is due.
fn queue_look(api: &mut Api, branch: &str) -> Option<Value> {
    let number = api.pulls.iter().rev().find(|p| p.head == branch)?.number;
    let due = api.merge_queue.as_mut().is_some_and(|q| {
        let queued = q.entries.iter().any(|(n, _)| *n == number);
        if queued {
            q.seen += 1;
        }
        queued && q.seen > q.looks
    });
    if due {
        decide(api, number);
    }
    let queue = api.merge_queue.as_ref();
    let pull = api.pulls.iter().find(|p| p.number == number)?;
    let in_queue = queue.is_some_and(|q| q.entries.iter().any(|(n, _)| *n == number));
    let removal: Vec<Value> = queue
        .and_then(|q| q.removed.iter().rev().find(|(n, _, _)| *n == number))
        .map(|(_, reason, actor)| json!({"reason": reason, "actor": {"login": actor}}))
        .into_iter()
        .collect();
    Some(json!({"repository": {"pullRequests": {"nodes": [{
        "id": format!("PR_{number}"), "number": number, "state": pull.state,
        "isInMergeQueue": in_queue, "isMergeQueueEnabled": queue.is_some(),
        "timelineItems": {"nodes": removal}}]}}}))
}

/// The queue's CI decided on PR `number`: merged (its enqueued head), or taken out.
fn decide(api: &mut Api, number: u32) {
    let Some(q) = api.merge_queue.as_mut() else {
        return;
    };
    q.seen = 0;
    let Some(at) = q.entries.iter().position(|(n, _)| *n == number) else {
        return;
    };
    let (_, head) = q.entries.remove(at);
    let outcome = if q.outcomes.len() > 1 {
        q.outcomes.remove(0)
    } else {
        q.outcomes.first().copied().unwrap_or(QueueOutcome::Merge)
    };
    match outcome {
        QueueOutcome::Merge => {
            if let Err(e) = merge(api, &format!("PR_{number}"), Some(&head)) {
                panic!("the fake queue cannot merge PR {number}: {e}");
            }
        }
        QueueOutcome::FailChecks => {
            q.removed.push((
                number,
                "Failed status checks".into(),
                "github-merge-queue".into(),
            ));
        }
        QueueOutcome::Dequeue => {
            q.removed
                .push((number, "Manually removed".into(), "alice".into()));
        }
        QueueOutcome::Push => {
            q.removed.push((
                number,
                "The pull request's head was changed".into(),
                "github-merge-queue".into(),
            ));
            let branch = api
                .pulls
                .iter()
                .find(|p| p.number == number)
                .map(|p| p.head.clone());
            if let Some(branch) = branch {
                person_pushes(&api.origin, &branch);
            }
        }
    }
}

/// `enqueuePullRequest`: PR `id` put in the queue while its head is `head`.
fn enqueue(api: &mut Api, id: &str, head: &str) -> Result<(), String> {
    let pull = api
        .pulls
        .iter()
        .find(|p| format!("PR_{}", p.number) == id && p.state == "OPEN")
        .ok_or_else(|| "Pull request is not open".to_string())?;
    let number = pull.number;
    if resolve(api, &pull.head) != head {
        return Err("Head branch was modified. Review and try again.".into());
    }
    let q = api
        .merge_queue
        .as_mut()
        .ok_or_else(|| "The base branch has no merge queue".to_string())?;
    q.entries.push((number, head.to_string()));
    q.enqueued.push(head.to_string());
    q.seen = 0;
    Ok(())
}

/// Merges the PR with a merge commit on the bare origin, as GitHub would.
fn merge(api: &mut Api, id: &str, expected: Option<&str>) -> Result<(), String> {
    let Some(i) = api
        .pulls
        .iter()
        .position(|p| format!("PR_{}", p.number) == id && p.state == "OPEN")
    else {
        return Err("Pull request is not open".into());
    };
    let pull = api.pulls[i].clone();
    let head = resolve(api, &pull.head);
    if expected.is_some_and(|e| e != head) {
        return Err("Head branch was modified. Review and try the merge again.".into());
    }
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = work.path();
    let origin = api.origin.to_string_lossy().to_string();
    let message = format!("Merge pull request #{} from {}", pull.number, pull.head);
    git(dir, &["clone", "--quiet", &origin, "w"])?;
    let w = dir.join("w");
    git(
        &w,
        &[
            "-c",
            "user.name=GitHub",
            "-c",
            "user.email=noreply@github.localhost",
            "merge",
            "--no-ff",
            "--quiet",
            "-m",
            &message,
            &head,
        ],
    )?;
    git(
        &w,
        &["push", "--quiet", "origin", &format!("HEAD:{}", pull.base)],
    )?;
    api.pulls[i].state = "MERGED".into();
    if api.close_on_merge {
        let body = pull.body.to_ascii_lowercase();
        for issue in &mut api.issues {
            if body.contains(&format!("closes #{}", issue.number)) {
                match api.close_delay {
                    Some(delay) => api
                        .closes_due
                        .push((issue.number, std::time::Instant::now() + delay)),
                    None => issue.open = false,
                }
            }
        }
    }
    Ok(())
}
