//! A fake GitLab REST API v4 for the runner's own HTTP client: a small HTTP/1.1 server on a
//! loopback port answering the calls of the GitLab tracker and forge the way GitLab's API
//! documentation says GitLab answers them (issues, notes, labels, merge requests, pipelines,
//! jobs and their traces, the merge with `sha`, merge trains, merged results pipelines). Test
//! code only.
//!
//! State ([`Lab`]): issues, merge requests, pipelines per commit (created when first asked
//! for, with the next status of [`Lab::pipeline_plan`]), and switches for a rate limit, a
//! refused token, a project without CI, a stale head pipeline, and merged results pipelines
//! (on merge commits, [`Lab::merged_results`]). A merge is performed on the bare origin with
//! git and closes the issues its description says it closes. Every request is logged
//! ([`Lab::requests`]); one the fake does not know is answered 404 and logged as `UNKNOWN …`.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The project the fake serves, as `gitlab.project` names it.
pub const PROJECT: &str = "group/sub/project";
/// The token it accepts in `PRIVATE-TOKEN`.
pub const TOKEN: &str = "glpat-fake-token-0123456789";

#[derive(Debug, Clone)]
pub struct Issue {
    pub iid: u32,
    pub title: String,
    pub description: String,
    pub open: bool,
    pub labels: Vec<String>,
    pub notes: Vec<String>,
    /// When each note was written (`created_at`), beside `notes`.
    pub note_times: Vec<String>,
    /// Issues this one is linked to (`…/issues/:iid/links`): (`link_type`, other iid).
    pub links: Vec<(String, u32)>,
}

#[derive(Debug, Clone)]
pub struct MergeRequest {
    pub iid: u32,
    pub source: String,
    pub target: String,
    pub title: String,
    pub description: String,
    /// opened, merged or closed.
    pub state: String,
    /// The `sha` the merge named.
    pub merged_sha: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Pipeline {
    pub id: u64,
    pub sha: String,
    pub status: String,
    /// The merge request whose merged result it ran on (ref `refs/merge-requests/:iid/merge`;
    /// `sha` is then the merge commit), `None` for a branch's pipeline.
    pub merge_of: Option<u32>,
    /// The source branch's head a merged result pipeline merged (GitLab's `source_sha`).
    pub source_sha: Option<String>,
}

#[derive(Debug, Default)]
pub struct Lab {
    pub origin: PathBuf,
    pub issues: Vec<Issue>,
    pub mrs: Vec<MergeRequest>,
    pub pipelines: Vec<Pipeline>,
    /// The status of each next commit's pipeline, in order; `success` once empty.
    pub pipeline_plan: Vec<String>,
    /// The project has no CI: no `.gitlab-ci.yml` in any commit, and no pipeline is ever
    /// created. Without it every commit holds one.
    pub no_ci: bool,
    /// The project is on Auto DevOps (`auto_devops_enabled`): it keeps no `.gitlab-ci.yml`,
    /// and GitLab runs a pipeline for each commit all the same.
    pub auto_devops: bool,
    /// Pipelines appear only at the n-th look for their commit (GitLab creates them a moment
    /// after the push).
    pub pipeline_after_looks: u32,
    looks: Vec<(String, u32)>,
    /// A merge request's `head_pipeline` while its own commit has none: an older commit's.
    pub stale_head_pipeline: Option<Value>,
    /// The project runs merged results pipelines (`merge_pipelines_enabled`) and only them
    /// (its workflow rules run no branch pipelines): a push to the source branch of an open
    /// merge request gets a pipeline on a merge commit of that head onto the target's
    /// (first parent the target's head, second the source's), kept at
    /// `refs/merge-requests/:iid/merge`; no commit gets a pipeline of its own.
    pub merged_results: bool,
    /// Fields every merge request shows over the fake's own (`draft`,
    /// `detailed_merge_status`, …).
    pub mr_fields: Option<Value>,
    /// Fields shown only once a merge was asked for and refused with 405 (GitLab finds a
    /// rule only when it tries).
    pub refuse_merge_with: Option<Value>,
    merge_refused: bool,
    /// The next n requests are refused with 429 and `Retry-After: 1`.
    pub rate_limited: u32,
    /// Refusals to serve once each: the first request whose `METHOD path` contains the
    /// pattern gets the status (a 5xx, a 401 of a revoked token).
    pub failures: Vec<(String, u16)>,
    /// Issue links are refused (403), as for a token or plan that may not read them.
    pub links_forbidden: bool,
    /// The access level of the token's account.
    pub access_level: u64,
    /// Every request: `METHOD path?query`.
    pub requests: Vec<String>,
    /// The project's merge trains, when it has them on (`merge_trains_enabled` and
    /// `merge_pipelines_enabled`).
    pub train: Option<Train>,
    next_id: u64,
    /// The merge requests' discussions (`…/merge_requests/:iid/discussions`), each with its
    /// `mr` iid, as GitLab lists them.
    pub discussions: Vec<Value>,
    /// Who approved each merge request (`…/approvals`' `approved_by`), by iid.
    pub approved_by: Vec<(u32, String)>,
    /// Access levels in the project by username (`members/all/:user_id`), `None` for no
    /// member; an account not listed is a Developer (30).
    pub access: HashMap<String, Option<u64>>,
    /// Notes on issues by others than the runner: (iid, username, body), after the runner's.
    pub issue_notes_by: Vec<(u32, String, String)>,
    /// Who added a label (`…/issues/:iid/resource_label_events`): (iid, label, username); a
    /// label of an issue without an entry here was added by the runner's account.
    pub label_events: Vec<(u32, String, String)>,
    /// Who changed an issue's description after its labels were added: (iid, username),
    /// served as GitLab's system note "changed the description".
    pub description_edits: Vec<(u32, String)>,
}

/// A project's merge train as GitLab runs it: a merge request added to it
/// (`POST merge_trains/merge_requests/:iid`, with `sha` the source branch's head) gets a car
/// and a train pipeline; its pipeline decides after `looks` looks at the car
/// (`GET merge_trains/merge_requests/:iid`), as `outcomes` say in turn (the last one for every
/// later car). A merged car stays, with status `merged`; a dropped one is destroyed (404), its
/// pipeline failed (the train's CI) or canceled (a person took it off). The fake builds no
/// train ref: the train pipeline's `sha` is the car's.
#[derive(Debug, Default)]
pub struct Train {
    /// Looks at a car before its pipeline decides.
    pub looks: u32,
    /// What becomes of each car in turn.
    pub outcomes: Vec<TrainOutcome>,
    /// The cars on the train now.
    pub cars: Vec<Car>,
    /// The cars the train merged.
    pub merged: Vec<Car>,
    /// Every add's `sha`, in order.
    pub added: Vec<String>,
    /// The train pipelines: (merge request iid, pipeline).
    pub pipelines: Vec<(u32, Pipeline)>,
    /// Looks at the car on the train so far.
    pub seen: u32,
}

/// A merge request on the train.
#[derive(Debug, Clone)]
pub struct Car {
    pub id: u64,
    pub iid: u32,
    /// The source branch's head it was added with.
    pub sha: String,
    /// Its train pipeline.
    pub pipeline: u64,
}

/// What a car's train pipeline decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainOutcome {
    /// It passes: GitLab merges the merge request (a merge commit of the car's `sha`).
    Merge,
    /// It fails: GitLab drops the merge request from the train.
    FailPipeline,
    /// A person takes the merge request off the train (its pipeline canceled).
    Remove,
    /// A person pushes a commit onto the merge request's branch: GitLab drops it from the
    /// train (its pipeline canceled), its head having changed.
    Push,
}

/// The id GitLab gives user `username` (stable, distinct for the tests' few names).
pub fn user_id(username: &str) -> u64 {
    if username == RUNNER_USER {
        return 1;
    }
    username.bytes().fold(1469598103_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(1099511) % 1_000_000_007
    }) + 100
}

/// A user as GitLab's answers name one.
pub fn user_json(username: &str) -> Value {
    json!({"id": user_id(username), "username": username})
}

/// The username of the token's account (`GET /user`).
pub const RUNNER_USER: &str = "sdlc-bot";

impl Lab {
    /// The open merge request's iid and its head.
    pub fn open_mr(&self) -> (u32, String) {
        let mr = self
            .mrs
            .iter()
            .find(|m| m.state == "opened")
            .expect("an open merge request");
        (mr.iid, head_of(self, &mr.source).unwrap_or_default())
    }

    /// A thread on the open merge request by `username`: a line comment on `path`:`line`
    /// when given, resolvable and unresolved.
    pub fn thread(&mut self, username: &str, body: &str, at: Option<(&str, u32)>) {
        let (iid, head) = self.open_mr();
        self.next_id += 1;
        let id = self.next_id;
        let position = at.map(|(path, line)| {
            json!({"base_sha": null, "head_sha": head, "position_type": "text",
                "new_path": path, "new_line": line, "old_path": path, "old_line": null})
        });
        let note = json!({"id": id, "type": if at.is_some() { "DiffNote" } else { "DiscussionNote" },
            "body": body, "author": user_json(username), "created_at": now_rfc3339(),
            "system": false, "resolvable": true, "resolved": false, "position": position});
        self.discussions
            .push(json!({"id": format!("d{id}"), "mr": iid,
            "individual_note": false, "notes": [note]}));
    }

    /// A note outside any thread (a system note when `system`) on the open merge request.
    pub fn note(&mut self, username: &str, body: &str, system: bool) {
        let (iid, _) = self.open_mr();
        self.next_id += 1;
        let id = self.next_id;
        let note = json!({"id": id, "type": null, "body": body, "author": user_json(username),
            "created_at": now_rfc3339(), "system": system, "resolvable": false});
        self.discussions
            .push(json!({"id": format!("d{id}"), "mr": iid,
            "individual_note": true, "notes": [note]}));
    }

    /// Every thread of the open merge request resolved, as its reviewer would.
    pub fn resolve_all(&mut self) {
        for d in &mut self.discussions {
            for n in d["notes"].as_array_mut().into_iter().flatten() {
                if n["resolvable"] == json!(true) {
                    n["resolved"] = json!(true);
                }
            }
        }
    }

    /// `username` approves the open merge request.
    pub fn approve(&mut self, username: &str) {
        let (iid, _) = self.open_mr();
        self.approved_by.push((iid, username.to_string()));
    }
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The running server; it stops with the test process.
pub struct FakeGitLab {
    pub port: u16,
    pub state: Arc<Mutex<Lab>>,
}

impl FakeGitLab {
    /// Serves a project whose repository is the bare `origin`, with `issues` (iid, title,
    /// description) open and labelled `automatable`.
    pub fn start(origin: &Path, issues: &[(u32, &str, &str)]) -> FakeGitLab {
        let lab = Lab {
            origin: origin.to_path_buf(),
            issues: issues
                .iter()
                .map(|(iid, title, description)| Issue {
                    iid: *iid,
                    title: title.to_string(),
                    description: description.to_string(),
                    open: true,
                    labels: vec!["automatable".into()],
                    notes: Vec::new(),
                    note_times: Vec::new(),
                    links: Vec::new(),
                })
                .collect(),
            access_level: 40,
            next_id: 1000,
            ..Lab::default()
        };
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(lab));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &state);
                });
            }
        });
        FakeGitLab { port, state }
    }

    /// `gitlab.url` for the config.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut Lab) -> T) -> T {
        f(&mut self.state.lock().expect("lab state"))
    }

    pub fn requests(&self) -> Vec<String> {
        self.with(|l| l.requests.clone())
    }

    pub fn issue(&self, iid: u32) -> Issue {
        self.with(|l| l.issues.iter().find(|i| i.iid == iid).cloned())
            .expect("issue")
    }
}

pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub token: Option<String>,
    pub authorization: Option<String>,
    pub body: Value,
}

impl Request {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let raw = super::wire::read(reader)?;
    Some(Request {
        token: raw.header("private-token").map(str::to_string),
        authorization: raw.header("authorization").map(str::to_string),
        body: serde_json::from_slice(&raw.body).unwrap_or(Value::Null),
        method: raw.method,
        path: raw.path,
        query: raw.query,
    })
}

pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub fn ok(body: Value) -> Answer {
    Answer {
        status: 200,
        headers: vec![],
        body: body.to_string().into_bytes(),
    }
}

fn status(status: u16, message: &str) -> Answer {
    Answer {
        status,
        headers: vec![],
        body: json!({ "message": message }).to_string().into_bytes(),
    }
}

fn serve(stream: TcpStream, state: &Mutex<Lab>) -> std::io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let Some(req) = read_request(&mut reader) else {
        return Ok(());
    };
    let answer = {
        let mut lab = state.lock().expect("lab state");
        answer(&mut lab, &req)
    };
    write_answer(&mut writer, &answer)
}

/// The answer on the wire, closing the connection after it.
pub fn write_answer(writer: &mut TcpStream, answer: &Answer) -> std::io::Result<()> {
    super::wire::write(writer, answer.status, &answer.headers, &answer.body)
}

use super::wire::{decode, git};

fn head_of(lab: &Lab, branch: &str) -> Option<String> {
    git(
        &lab.origin,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ],
    )
    .ok()
}

fn issue_json(i: &Issue) -> Value {
    json!({
        "id": 90_000 + i.iid, "iid": i.iid, "project_id": 7, "title": i.title,
        "description": i.description, "state": if i.open { "opened" } else { "closed" },
        "labels": i.labels, "milestone": null, "web_url": format!("http://gitlab.test/{PROJECT}/-/issues/{}", i.iid),
    })
}

fn pipeline_json(p: &Pipeline) -> Value {
    let (git_ref, source) = match p.merge_of {
        Some(iid) => (
            format!("refs/merge-requests/{iid}/merge"),
            "merge_request_event",
        ),
        None => ("x".to_string(), "push"),
    };
    json!({"id": p.id, "iid": p.id - 999, "project_id": 7, "sha": p.sha, "ref": git_ref,
        "status": p.status, "source": source, "web_url": format!("http://gitlab.test/{PROJECT}/-/pipelines/{}", p.id)})
}

/// The pipeline of `sha`, created at the configured look.
fn pipeline_for(lab: &mut Lab, sha: &str) -> Option<Pipeline> {
    if let Some(p) = lab.pipelines.iter().find(|p| p.sha == sha) {
        return Some(p.clone());
    }
    if lab.no_ci || lab.merged_results {
        return None;
    }
    let looks = match lab.looks.iter_mut().find(|(s, _)| s == sha) {
        Some((_, n)) => {
            *n += 1;
            *n
        }
        None => {
            lab.looks.push((sha.to_string(), 1));
            1
        }
    };
    if looks <= lab.pipeline_after_looks {
        return None;
    }
    let status = if lab.pipeline_plan.is_empty() {
        "success".to_string()
    } else {
        lab.pipeline_plan.remove(0)
    };
    lab.next_id += 1;
    let p = Pipeline {
        id: lab.next_id,
        sha: sha.to_string(),
        status,
        merge_of: None,
        source_sha: None,
    };
    lab.pipelines.push(p.clone());
    Some(p)
}

fn mr_json(lab: &Lab, mr: &MergeRequest) -> Value {
    let sha = mr
        .merged_sha
        .clone()
        .or_else(|| head_of(lab, &mr.source))
        .unwrap_or_default();
    // GitLab's head pipeline is the newest of the head or of a merged result of it.
    let head_pipeline = lab
        .pipelines
        .iter()
        .rev()
        .find(|p| p.sha == sha || p.source_sha.as_deref() == Some(sha.as_str()))
        .map(pipeline_json)
        .or_else(|| lab.stale_head_pipeline.clone());
    let mut v = json!({
        "id": 50_000 + mr.iid, "iid": mr.iid, "project_id": 7, "title": mr.title,
        "description": mr.description, "state": mr.state, "source_branch": mr.source,
        "target_branch": mr.target, "sha": sha, "draft": false, "work_in_progress": false,
        "has_conflicts": false,
        "detailed_merge_status": if mr.state == "opened" { "mergeable" } else { "not_open" },
        "merge_status": "can_be_merged", "head_pipeline": head_pipeline,
        "web_url": format!("http://gitlab.test/{PROJECT}/-/merge_requests/{}", mr.iid),
    });
    let refused = lab.refuse_merge_with.as_ref().filter(|_| lab.merge_refused);
    for extra in [lab.mr_fields.as_ref(), refused].into_iter().flatten() {
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
    }
    v
}

fn answer(lab: &mut Lab, req: &Request) -> Answer {
    let mut line = format!("{} {}", req.method, req.path);
    if !req.query.is_empty() {
        let q: Vec<String> = req.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        line.push('?');
        line.push_str(&q.join("&"));
    }
    lab.requests.push(line.clone());
    if lab.rate_limited > 0 {
        lab.rate_limited -= 1;
        let mut a = status(429, "Retry later");
        a.headers = vec![
            ("Retry-After".into(), "1".into()),
            ("RateLimit-Limit".into(), "600".into()),
            ("RateLimit-Remaining".into(), "0".into()),
        ];
        return a;
    }
    if let Some(i) = lab
        .failures
        .iter()
        .position(|(pattern, _)| line.contains(pattern.as_str()))
    {
        let (_, code) = lab.failures.remove(i);
        return status(
            code,
            if code == 401 {
                "401 Unauthorized"
            } else {
                "Bad Gateway"
            },
        );
    }
    if req.token.as_deref() != Some(TOKEN) {
        return status(401, "401 Unauthorized");
    }
    let Some(rest) = req.path.strip_prefix("/api/v4/") else {
        lab.requests.push(format!("UNKNOWN {line}"));
        return status(404, "404 Not Found");
    };
    let project_prefix = format!("projects/{}", PROJECT.replace('/', "%2F"));
    let Some(rest) = rest.strip_prefix(&project_prefix) else {
        if rest == "version" {
            return ok(json!({"version": "17.5.0", "revision": "fake"}));
        }
        if rest == "user" {
            return ok(json!({"id": 1, "username": RUNNER_USER, "bot": true}));
        }
        lab.requests.push(format!("UNKNOWN {line}"));
        return status(404, "404 Project Not Found");
    };
    let parts: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    let page = req.param("page").unwrap_or("1");
    let page_one = |v: Vec<Value>| -> Answer {
        if page == "1" {
            ok(Value::Array(v))
        } else {
            ok(json!([]))
        }
    };
    match (req.method.as_str(), parts.as_slice()) {
        ("GET", [""]) => ok(json!({
            "id": 7, "path_with_namespace": PROJECT, "default_branch": "main",
            "permissions": {"project_access": {"access_level": lab.access_level}, "group_access": null},
            "merge_pipelines_enabled": lab.train.is_some() || lab.merged_results,
            "merge_trains_enabled": lab.train.is_some(),
            "auto_devops_enabled": lab.auto_devops,
        })),
        ("POST", ["merge_trains", "merge_requests", iid]) => add_car(lab, iid, req),
        ("GET", ["merge_trains", "merge_requests", iid]) => look_at_car(lab, iid),
        ("GET", ["merge_requests", iid, "pipelines"]) => {
            if let Ok(iid) = iid.parse::<u32>() {
                merged_pipeline_for(lab, iid);
            }
            let merged = lab
                .pipelines
                .iter()
                .filter(|p| p.merge_of.is_some_and(|m| m.to_string() == *iid))
                .map(|p| (p.id, pipeline_json(p)));
            let trains = lab
                .train
                .iter()
                .flat_map(|t| t.pipelines.iter())
                .filter(|(m, _)| m.to_string() == *iid)
                .map(|(m, p)| (p.id, train_pipeline_json(*m, p)));
            let mut list: Vec<(u64, Value)> = merged.chain(trains).collect();
            // GitLab lists a merge request's pipelines newest first.
            list.sort_by_key(|(id, _)| std::cmp::Reverse(*id));
            page_one(list.into_iter().map(|(_, p)| p).collect())
        }
        ("GET", ["repository", "commits", sha]) => commit_json(lab, &decode(sha)),
        ("GET", ["milestones"]) => page_one(vec![]),
        ("GET", ["members", "all", id]) => {
            let level = if *id == user_id(RUNNER_USER).to_string() {
                Some(lab.access_level)
            } else {
                let known = lab
                    .access
                    .iter()
                    .find(|(who, _)| user_id(who).to_string() == *id);
                match known {
                    Some((_, level)) => *level,
                    None => Some(30),
                }
            };
            match level {
                Some(level) => ok(json!({"id": id.parse::<u64>().unwrap_or(0),
                    "access_level": level, "state": "active"})),
                None => status(404, "404 Not found"),
            }
        }
        ("GET", ["issues", iid, "resource_label_events"]) => {
            let Some(i) = lab.issues.iter().find(|i| i.iid.to_string() == *iid) else {
                return status(404, "404 Not found");
            };
            let events: Vec<Value> = i
                .labels
                .iter()
                .enumerate()
                .map(|(n, label)| {
                    let who = lab
                        .label_events
                        .iter()
                        .rev()
                        .find(|(at, l, _)| *at == i.iid && l == label)
                        .map_or(RUNNER_USER.to_string(), |(_, _, w)| w.clone());
                    json!({"id": 800 + n, "user": user_json(&who), "action": "add",
                        "label": {"id": 1, "name": label},
                        "created_at": "2026-01-01T00:00:00.000Z",
                        "resource_type": "Issue", "resource_id": i.iid})
                })
                .collect();
            page_one(events)
        }
        ("GET", ["labels", name]) => {
            let name = decode(name);
            if name == "automatable" {
                ok(json!({"id": 1, "name": name}))
            } else {
                status(404, "404 Label Not Found")
            }
        }
        ("GET", ["issues"]) => {
            let label = req.param("labels").unwrap_or_default().to_string();
            let opened = req.param("state") == Some("opened");
            let list = lab
                .issues
                .iter()
                .filter(|i| (!opened || i.open) && (label.is_empty() || i.labels.contains(&label)))
                .map(issue_json)
                .collect();
            page_one(list)
        }
        ("GET", ["issues", iid]) => match lab.issues.iter().find(|i| i.iid.to_string() == *iid) {
            Some(i) => ok(issue_json(i)),
            None => status(404, "404 Not found"),
        },
        ("PUT", ["issues", iid]) => {
            let Some(i) = lab.issues.iter_mut().find(|i| i.iid.to_string() == *iid) else {
                return status(404, "404 Not found");
            };
            if let Some(add) = req.body["add_labels"].as_str() {
                for l in add.split(',') {
                    if !i.labels.iter().any(|x| x == l) {
                        i.labels.push(l.to_string());
                    }
                }
            }
            if let Some(remove) = req.body["remove_labels"].as_str() {
                i.labels.retain(|x| !remove.split(',').any(|r| r == x));
            }
            if req.body["state_event"] == "close" {
                i.open = false;
            }
            ok(issue_json(i))
        }
        ("GET", ["issues", iid, "notes"]) => {
            let Some(i) = lab.issues.iter().find(|i| i.iid.to_string() == *iid) else {
                return status(404, "404 Not found");
            };
            let mut notes: Vec<Value> = i
                .notes
                .iter()
                .enumerate()
                .map(|(n, b)| json!({"id": n + 1, "body": b, "system": false,
                    "created_at": i.note_times.get(n), "author": user_json(RUNNER_USER)}))
                .collect();
            for (n, (_, who, body)) in lab
                .issue_notes_by
                .iter()
                .filter(|(at, _, _)| *at == i.iid)
                .enumerate()
            {
                notes.push(json!({"id": 500 + n, "body": body, "system": false,
                    "created_at": now_rfc3339(), "author": user_json(who)}));
            }
            for (n, (_, who)) in lab
                .description_edits
                .iter()
                .filter(|(at, _)| *at == i.iid)
                .enumerate()
            {
                notes.push(json!({"id": 600 + n, "body": "changed the description",
                    "system": true, "created_at": now_rfc3339(), "author": user_json(who)}));
            }
            if req.param("sort") == Some("desc") {
                notes.reverse();
            }
            if let Some(n) = req.param("per_page").and_then(|n| n.parse::<usize>().ok()) {
                notes.truncate(n);
            }
            page_one(notes)
        }
        ("GET", ["issues", iid, "links"]) => {
            if lab.links_forbidden {
                return status(403, "403 Forbidden");
            }
            let Some(i) = lab.issues.iter().find(|i| i.iid.to_string() == *iid) else {
                return status(404, "404 Not found");
            };
            let list: Vec<Value> = i
                .links
                .iter()
                .filter_map(|(kind, other)| {
                    let o = lab.issues.iter().find(|x| x.iid == *other)?;
                    let mut v = issue_json(o);
                    v["link_type"] = json!(kind);
                    v["issue_link_id"] = json!(1000 + other);
                    Some(v)
                })
                .collect();
            ok(Value::Array(list))
        }
        ("POST", ["issues", iid, "notes"]) => {
            let Some(i) = lab.issues.iter_mut().find(|i| i.iid.to_string() == *iid) else {
                return status(404, "404 Not found");
            };
            i.notes
                .push(req.body["body"].as_str().unwrap_or_default().to_string());
            i.note_times.push(now_rfc3339());
            let mut a = ok(json!({"id": i.notes.len(), "body": req.body["body"], "system": false}));
            a.status = 201;
            a
        }
        ("GET", ["repository", "branches", name]) => match head_of(lab, &decode(name)) {
            Some(sha) => ok(json!({"name": decode(name), "commit": {"id": sha}})),
            None => status(404, "404 Branch Not Found"),
        },
        ("GET", ["repository", "files", file]) if decode(file) == ".gitlab-ci.yml" => {
            if lab.no_ci || lab.auto_devops {
                status(404, "404 File Not Found")
            } else {
                ok(json!({"file_name": ".gitlab-ci.yml", "file_path": ".gitlab-ci.yml",
                    "ref": req.param("ref").unwrap_or_default(), "encoding": "base64",
                    "content": "dGVzdDoKICBzY3JpcHQ6IGNhcmdvIHRlc3QK"}))
            }
        }
        ("GET", ["merge_requests"]) => {
            let source = req.param("source_branch").map(str::to_string);
            // GitLab's list does not recheck the merge status: an open merge request reads
            // `unchecked` there (after a push it stays so) unless the list is asked to.
            let recheck = req.param("with_merge_status_recheck") == Some("true");
            let list = lab
                .mrs
                .iter()
                .filter(|m| source.as_ref().is_none_or(|s| *s == m.source))
                .map(|m| {
                    let mut v = mr_json(lab, m);
                    if m.state == "opened" && !recheck {
                        v["detailed_merge_status"] = json!("unchecked");
                        v["merge_status"] = json!("unchecked");
                    }
                    v
                })
                .collect();
            page_one(list)
        }
        ("POST", ["merge_requests"]) => {
            let source = req.body["source_branch"].as_str().unwrap_or_default().to_string();
            if head_of(lab, &source).is_none() {
                return status(422, "Source branch does not exist");
            }
            let iid = lab.mrs.len() as u32 + 1;
            let mr = MergeRequest {
                iid,
                source,
                target: req.body["target_branch"].as_str().unwrap_or_default().to_string(),
                title: req.body["title"].as_str().unwrap_or_default().to_string(),
                description: req.body["description"].as_str().unwrap_or_default().to_string(),
                state: "opened".into(),
                merged_sha: None,
            };
            let v = mr_json(lab, &mr);
            lab.mrs.push(mr);
            let mut a = ok(v);
            a.status = 201;
            a
        }
        ("GET", ["merge_requests", iid]) => {
            match lab.mrs.iter().find(|m| m.iid.to_string() == *iid) {
                Some(m) => ok(mr_json(lab, m)),
                None => status(404, "404 Not found"),
            }
        }
        ("PUT", ["merge_requests", iid, "merge"]) => merge(lab, iid, req),
        ("GET", ["merge_requests", iid, "discussions"]) => {
            let list = lab
                .discussions
                .iter()
                .filter(|d| d["mr"].as_u64().is_some_and(|m| m.to_string() == *iid))
                .cloned()
                .collect();
            page_one(list)
        }
        ("GET", ["merge_requests", iid, "approvals"]) => {
            let by: Vec<Value> = lab
                .approved_by
                .iter()
                .filter(|(m, _)| m.to_string() == *iid)
                .map(|(_, u)| json!({"user": user_json(u)}))
                .collect();
            ok(json!({"iid": iid.parse::<u64>().unwrap_or(0), "approved": true,
                "approvals_required": 0, "approvals_left": 0, "approved_by": by}))
        }
        ("GET", ["pipelines"]) => {
            let sha = req.param("sha").unwrap_or_default().to_string();
            pushed_to_merge_request(lab, &sha);
            let list: Vec<Value> = pipeline_for(lab, &sha).iter().map(pipeline_json).collect();
            ok(Value::Array(list))
        }
        ("GET", ["pipelines", id, "jobs"]) => {
            let trains = lab.train.iter().flat_map(|t| t.pipelines.iter().map(|(_, p)| p));
            let failed = lab
                .pipelines
                .iter()
                .chain(trains)
                .find(|p| p.id.to_string() == *id)
                .is_some_and(|p| p.status == "failed");
            let merged = lab
                .pipelines
                .iter()
                .any(|p| p.id.to_string() == *id && p.merge_of.is_some());
            let job = if merged { 7002 } else { 7001 };
            let jobs = if failed {
                vec![json!({"id": job, "name": "unit-tests", "status": "failed", "stage": "test",
                    "web_url": format!("http://gitlab.test/{PROJECT}/-/jobs/{job}")})]
            } else {
                vec![]
            };
            page_one(jobs)
        }
        ("GET", ["jobs", "7001", "trace"]) => Answer {
            status: 200,
            headers: vec![],
            body: b"$ cargo test\nrunning 3 tests\ntest greets ... FAILED\nassertion `left == right` failed\n  left: \"hi\"\n right: \"hello\"\n".to_vec(),
        },
        ("GET", ["jobs", "7002", "trace"]) => Answer {
            status: 200,
            headers: vec![],
            body: MERGED_RESULT_TRACE.as_bytes().to_vec(),
        },
        _ => {
            lab.requests.push(format!("UNKNOWN {line}"));
            status(404, "404 Not Found")
        }
    }
}

/// The log of a merged result pipeline's failing job.
pub const MERGED_RESULT_TRACE: &str = "$ cargo test (on the merged result)\ntest greets_on_main ... FAILED\nassertion failed: the merged result says \"hi\"\n";

/// A look at `sha`'s pipelines when it is the head of an open merge request of a project with
/// merged results pipelines: its merged result pipeline is created (if due).
fn pushed_to_merge_request(lab: &mut Lab, sha: &str) {
    if !lab.merged_results {
        return;
    }
    let of_mr = lab
        .mrs
        .iter()
        .find(|m| m.state == "opened" && head_of(lab, &m.source).as_deref() == Some(sha))
        .map(|m| m.iid);
    if let Some(iid) = of_mr {
        merged_pipeline_for(lab, iid);
    }
}

/// The merged result pipeline of open merge request `iid`'s head, created at the configured
/// look (GitLab creates it a moment after the push) on a merge commit of the head onto the
/// target's head at `refs/merge-requests/:iid/merge`; none while GitLab cannot merge them.
fn merged_pipeline_for(lab: &mut Lab, iid: u32) -> Option<Pipeline> {
    if !lab.merged_results || lab.no_ci {
        return None;
    }
    let mr = lab
        .mrs
        .iter()
        .find(|m| m.iid == iid && m.state == "opened")?
        .clone();
    let head = head_of(lab, &mr.source)?;
    let existing = lab
        .pipelines
        .iter()
        .rev()
        .find(|p| p.merge_of == Some(iid) && p.source_sha.as_deref() == Some(head.as_str()));
    if let Some(p) = existing {
        return Some(p.clone());
    }
    let key = format!("merged result of {head}");
    let looks = match lab.looks.iter_mut().find(|(s, _)| *s == key) {
        Some((_, n)) => {
            *n += 1;
            *n
        }
        None => {
            lab.looks.push((key, 1));
            1
        }
    };
    if looks <= lab.pipeline_after_looks {
        return None;
    }
    let target = head_of(lab, &mr.target)?;
    let origin = lab.origin.clone();
    let tree = git(&origin, &["merge-tree", "--write-tree", &target, &head]).ok()?;
    let message = format!("Merge {head} into {target}");
    let commit = git(
        &origin,
        &[
            "-c",
            "user.name=GitLab",
            "-c",
            "user.email=gitlab@gitlab.test",
            "commit-tree",
            tree.lines().next()?,
            "-p",
            &target,
            "-p",
            &head,
            "-m",
            &message,
        ],
    )
    .ok()?;
    let merge_ref = format!("refs/merge-requests/{iid}/merge");
    git(&origin, &["update-ref", &merge_ref, &commit]).ok()?;
    let status = if lab.pipeline_plan.is_empty() {
        "success".to_string()
    } else {
        lab.pipeline_plan.remove(0)
    };
    lab.next_id += 1;
    let p = Pipeline {
        id: lab.next_id,
        sha: commit,
        status,
        merge_of: Some(iid),
        source_sha: Some(head),
    };
    lab.pipelines.push(p.clone());
    Some(p)
}

/// `GET repository/commits/:sha`: the commit with its `parent_ids`, or 404.
fn commit_json(lab: &Lab, sha: &str) -> Answer {
    let Ok(line) = git(
        &lab.origin,
        &["rev-list", "--parents", "-n", "1", sha, "--"],
    ) else {
        return status(404, "404 Commit Not Found");
    };
    let mut ids = line.split_whitespace().map(str::to_string);
    let id = ids.next().unwrap_or_default();
    let parents: Vec<String> = ids.collect();
    ok(
        json!({"id": id, "short_id": id.get(..8), "title": "a commit",
        "parent_ids": parents, "web_url": format!("http://gitlab.test/{PROJECT}/-/commit/{id}")}),
    )
}

/// The merge as GitLab performs it: refused (409) when `sha` is not the source branch's
/// head; a merge commit on the target, the source branch removed, the issues its
/// description closes closed.
fn merge(lab: &mut Lab, iid: &str, req: &Request) -> Answer {
    let Some(i) = lab
        .mrs
        .iter()
        .position(|m| m.iid.to_string() == iid && m.state == "opened")
    else {
        return status(405, "405 Method Not Allowed");
    };
    let mr = lab.mrs[i].clone();
    let Some(head) = head_of(lab, &mr.source) else {
        return status(405, "405 Method Not Allowed");
    };
    if lab.refuse_merge_with.is_some() {
        lab.merge_refused = true;
        return status(405, "405 Method Not Allowed");
    }
    if req.body["sha"].as_str() != Some(head.as_str()) {
        return status(409, "SHA does not match HEAD of source branch");
    }
    let message = req.body["merge_commit_message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("Merge branch '{}' into '{}'", mr.source, mr.target));
    let remove = req.body["should_remove_source_branch"] == true;
    if let Err(e) = land(lab, i, &head, &message, remove) {
        return status(406, &format!("Branch cannot be merged: {e}"));
    }
    let v = mr_json(lab, &lab.mrs[i].clone());
    ok(v)
}

/// Merge request `i` merged at `head` onto its target with `message` on the bare origin (its
/// source branch removed when `remove`), marked merged, and the issues its description closes
/// closed.
fn land(lab: &mut Lab, i: usize, head: &str, message: &str, remove: bool) -> Result<(), String> {
    let mr = lab.mrs[i].clone();
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let origin = lab.origin.to_string_lossy().to_string();
    let w = work.path().join("w");
    let merged = git(work.path(), &["clone", "--quiet", &origin, "w"])
        .and_then(|_| {
            git(
                &w,
                &[
                    "-c",
                    "user.name=GitLab",
                    "-c",
                    "user.email=gitlab@gitlab.test",
                    "merge",
                    "--no-ff",
                    "--quiet",
                    "-m",
                    message,
                    head,
                ],
            )
        })
        .and_then(|_| {
            git(
                &w,
                &["push", "--quiet", "origin", &format!("HEAD:{}", mr.target)],
            )
        })
        .and_then(|_| {
            if remove {
                git(&w, &["push", "--quiet", "origin", "--delete", &mr.source])
            } else {
                Ok(String::new())
            }
        });
    merged.map_err(|e| e.to_string())?;
    lab.mrs[i].state = "merged".into();
    lab.mrs[i].merged_sha = Some(head.to_string());
    let description = mr.description.to_ascii_lowercase();
    for issue in &mut lab.issues {
        if description.contains(&format!("closes #{}", issue.iid)) {
            issue.open = false;
        }
    }
    Ok(())
}

fn train_pipeline_json(iid: u32, p: &Pipeline) -> Value {
    let mut v = pipeline_json(p);
    v["ref"] = json!(format!("refs/merge-requests/{iid}/train"));
    v["source"] = json!("merge_request_event");
    v
}

fn car_json(lab: &Lab, car: &Car, status: &str) -> Value {
    let mr = lab.mrs.iter().find(|m| m.iid == car.iid);
    let pipeline = lab
        .train
        .iter()
        .flat_map(|t| t.pipelines.iter())
        .find(|(_, p)| p.id == car.pipeline)
        .map(|(m, p)| train_pipeline_json(*m, p));
    json!({"id": car.id, "merge_request": {"id": 50_000 + car.iid, "iid": car.iid,
        "project_id": 7, "title": mr.map(|m| m.title.clone()),
        "state": mr.map(|m| m.state.clone()),
        "web_url": format!("http://gitlab.test/{PROJECT}/-/merge_requests/{}", car.iid)},
        "user": user_json(RUNNER_USER), "pipeline": pipeline, "target_branch": "main",
        "status": status, "created_at": now_rfc3339(), "updated_at": now_rfc3339(),
        "merged_at": if status == "merged" { json!(now_rfc3339()) } else { Value::Null },
        "duration": null})
}

/// `POST merge_trains/merge_requests/:iid`: refused (409) when `sha` is not the source
/// branch's head, 400 ("Failed to merge") when the merge request is not open or is on the
/// train already; else a car and its pipeline, answered 201 with the train's cars.
fn add_car(lab: &mut Lab, iid: &str, req: &Request) -> Answer {
    if lab.train.is_none() {
        return status(403, "403 Forbidden");
    }
    let Some(mr) = lab.mrs.iter().find(|m| m.iid.to_string() == iid).cloned() else {
        return status(404, "404 Not found");
    };
    let head = head_of(lab, &mr.source).unwrap_or_default();
    if req.body["sha"].as_str().is_some_and(|sha| sha != head) {
        return status(409, "SHA does not match HEAD of source branch");
    }
    lab.next_id += 1;
    let id = lab.next_id;
    let Some(train) = lab.train.as_mut() else {
        return status(403, "403 Forbidden");
    };
    if mr.state != "opened" || train.cars.iter().any(|c| c.iid == mr.iid) {
        return status(400, "Failed to merge");
    }
    let pipeline = Pipeline {
        id,
        sha: head.clone(),
        status: "running".into(),
        merge_of: None,
        source_sha: None,
    };
    train.pipelines.push((mr.iid, pipeline));
    train.cars.push(Car {
        id,
        iid: mr.iid,
        sha: head.clone(),
        pipeline: id,
    });
    train.added.push(head);
    train.seen = 0;
    let on_train = train.cars.clone();
    let cars: Vec<Value> = on_train.iter().map(|c| car_json(lab, c, "fresh")).collect();
    let mut a = ok(Value::Array(cars));
    a.status = 201;
    a
}

/// `GET merge_trains/merge_requests/:iid`: the car (its pipeline deciding when due), or 404
/// when the merge request is on no train.
fn look_at_car(lab: &mut Lab, iid: &str) -> Answer {
    let due = lab.train.as_mut().is_some_and(|t| {
        let on = t.cars.iter().any(|c| c.iid.to_string() == iid);
        if on {
            t.seen += 1;
        }
        on && t.seen > t.looks
    });
    if due {
        decide_car(lab, iid);
    }
    let Some(train) = lab.train.as_ref() else {
        return status(403, "403 Forbidden");
    };
    let on = train.cars.iter().find(|c| c.iid.to_string() == iid);
    let merged = train.merged.iter().rev().find(|c| c.iid.to_string() == iid);
    match (on, merged) {
        (Some(car), _) => ok(car_json(lab, car, "fresh")),
        (None, Some(car)) => ok(car_json(lab, car, "merged")),
        (None, None) => status(404, "404 Merge Train Merge Request Not Found"),
    }
}

/// The car of merge request `iid` decided by its pipeline: merged, or dropped.
fn decide_car(lab: &mut Lab, iid: &str) {
    let Some(train) = lab.train.as_mut() else {
        return;
    };
    train.seen = 0;
    let Some(at) = train.cars.iter().position(|c| c.iid.to_string() == iid) else {
        return;
    };
    let car = train.cars.remove(at);
    let outcome = if train.outcomes.len() > 1 {
        train.outcomes.remove(0)
    } else {
        train
            .outcomes
            .first()
            .copied()
            .unwrap_or(TrainOutcome::Merge)
    };
    let pipeline_status = match outcome {
        TrainOutcome::Merge => "success",
        TrainOutcome::FailPipeline => "failed",
        TrainOutcome::Remove | TrainOutcome::Push => "canceled",
    };
    if let Some((_, p)) = train
        .pipelines
        .iter_mut()
        .find(|(_, p)| p.id == car.pipeline)
    {
        p.status = pipeline_status.into();
    }
    train
        .merged
        .extend((outcome == TrainOutcome::Merge).then(|| car.clone()));
    let Some(i) = lab.mrs.iter().position(|m| m.iid == car.iid) else {
        return;
    };
    if outcome == TrainOutcome::Push {
        super::github_api::person_pushes(&lab.origin, &lab.mrs[i].source);
    }
    if outcome != TrainOutcome::Merge {
        return;
    }
    let mr = lab.mrs[i].clone();
    let message = format!(
        "Merge branch '{}' into '{}'\n\n{}\n\nSee merge request {PROJECT}!{}",
        mr.source, mr.target, mr.title, mr.iid
    );
    if let Err(e) = land(lab, i, &car.sha, &message, true) {
        panic!("the fake train cannot merge !{}: {e}", car.iid);
    }
}
