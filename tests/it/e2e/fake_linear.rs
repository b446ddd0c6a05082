//! A fake Linear GraphQL API: a loopback HTTP server answering the operations the runner's
//! Linear tracker sends (by `operationName`, with their variables), shaped as Linear's API
//! documentation shows them. Test code only. An unknown operation is answered with a GraphQL
//! error and logged as `UNKNOWN …`.

#![allow(dead_code)]

use super::fake_gitlab::{ok, read_request, write_answer, Answer};
use serde_json::{json, Value};
use std::io::BufReader;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// The team the fake serves.
pub const TEAM: &str = "ENG";
/// The API key it accepts in `Authorization`.
pub const KEY: &str = "lin_api_fake0123456789";

#[derive(Debug, Clone)]
pub struct Issue {
    pub number: u32,
    pub title: String,
    pub description: String,
    /// unstarted, started, completed, canceled.
    pub state: String,
    pub labels: Vec<String>,
    pub comments: Vec<String>,
    /// When each comment was written (`createdAt`), beside `comments`.
    pub comment_times: Vec<String>,
    /// Issues that block this one (`inverseRelations` of type `blocks`), by number.
    pub blocked_by: Vec<u32>,
}

#[derive(Debug, Default)]
pub struct Team {
    pub issues: Vec<Issue>,
    pub labels: Vec<String>,
    /// The team's workflow lacks a completed state.
    pub no_completed_state: bool,
    /// Every operation: its name.
    pub requests: Vec<String>,
}

pub struct FakeLinear {
    pub port: u16,
    pub state: Arc<Mutex<Team>>,
}

impl FakeLinear {
    pub fn start(issues: &[(u32, &str, &str)]) -> FakeLinear {
        let team = Team {
            issues: issues
                .iter()
                .map(|(n, t, d)| Issue {
                    number: *n,
                    title: t.to_string(),
                    description: d.to_string(),
                    state: "unstarted".into(),
                    labels: vec!["automatable".into()],
                    comments: Vec::new(),
                    comment_times: Vec::new(),
                    blocked_by: Vec::new(),
                })
                .collect(),
            labels: vec!["automatable".into()],
            no_completed_state: false,
            requests: Vec::new(),
        };
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(team));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || {
                    let Ok(mut writer) = stream.try_clone() else {
                        return;
                    };
                    let mut reader = BufReader::new(stream);
                    let Some(req) = read_request(&mut reader) else {
                        return;
                    };
                    let answer = {
                        let mut team = state.lock().expect("team");
                        answer(&mut team, req.authorization.as_deref(), &req.body)
                    };
                    let _ = write_answer(&mut writer, &answer);
                });
            }
        });
        FakeLinear { port, state }
    }

    /// `linear.url` for the config.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/graphql", self.port)
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut Team) -> T) -> T {
        f(&mut self.state.lock().expect("team"))
    }

    pub fn issue(&self, n: u32) -> Issue {
        self.with(|t| t.issues.iter().find(|i| i.number == n).cloned())
            .expect("issue")
    }
}

fn node(i: &Issue) -> Value {
    json!({"id": format!("lin-{}", i.number), "identifier": format!("{TEAM}-{}", i.number),
        "number": f64::from(i.number), "title": i.title, "description": i.description,
        "state": {"type": i.state},
        "labels": {"nodes": i.labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>()},
        "inverseRelations": {"nodes": i.blocked_by.iter().map(|n| json!({"type": "blocks",
            "issue": {"number": f64::from(*n), "team": {"key": TEAM}}})).collect::<Vec<_>>()}})
}

fn error(code: &str, message: &str) -> Answer {
    Answer {
        status: 200,
        headers: vec![],
        body: json!({"data": null, "errors": [{"message": message, "extensions": {"code": code}}]})
            .to_string()
            .into_bytes(),
    }
}

/// The team's labels called `name`, as label nodes.
fn labels_named(team: &Team, name: &str) -> Vec<Value> {
    team.labels
        .iter()
        .filter(|l| *l == name)
        .map(|l| json!({"id": format!("label-{l}")}))
        .collect()
}

fn by_id<'a>(team: &'a mut Team, id: &Value) -> Option<&'a mut Issue> {
    team.issues
        .iter_mut()
        .find(|i| Some(format!("lin-{}", i.number).as_str()) == id.as_str())
}

fn answer(team: &mut Team, auth: Option<&str>, body: &Value) -> Answer {
    let op = body["operationName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let vars = &body["variables"];
    team.requests.push(op.clone());
    if auth != Some(KEY) {
        // With status 200, as a GraphQL server may answer: the errors alone say it failed.
        return error(
            "AUTHENTICATION_ERROR",
            "Authentication required, not authenticated",
        );
    }
    let data = match op.as_str() {
        "ClaimNotes" => {
            let Some(i) = by_id(team, &vars["id"]) else {
                return error("ENTITY_NOT_FOUND", "Entity not found");
            };
            // Newest first, as Linear may page them: the runner orders them itself.
            let nodes: Vec<Value> = i
                .comments
                .iter()
                .zip(&i.comment_times)
                .rev()
                .map(|(c, at)| json!({"body": c, "createdAt": at}))
                .collect();
            json!({"issue": {"comments": {"nodes": nodes,
                "pageInfo": {"hasNextPage": false, "endCursor": null}}}})
        }
        "Candidates" | "ClaimedIssues" => {
            let label = vars["label"].as_str().unwrap_or_default();
            let nodes: Vec<Value> = team
                .issues
                .iter()
                .filter(|i| i.labels.iter().any(|l| l == label))
                .filter(|i| i.state == "unstarted" || i.state == "started")
                .map(node)
                .collect();
            json!({"issues": {"nodes": nodes, "pageInfo": {"hasNextPage": false, "endCursor": null}}})
        }
        "IssueByNumber" => {
            let n = vars["number"].as_f64().unwrap_or(-1.0);
            let nodes: Vec<Value> = team
                .issues
                .iter()
                .filter(|i| f64::from(i.number) == n)
                .map(node)
                .collect();
            json!({"issues": {"nodes": nodes}})
        }
        "IssueComments" => {
            let Some(i) = by_id(team, &vars["id"]) else {
                return error("ENTITY_NOT_FOUND", "Entity not found");
            };
            let nodes: Vec<Value> = i
                .comments
                .iter()
                .map(|c| json!({"body": c, "user": {"name": "someone"}}))
                .collect();
            json!({"issue": {"comments": {"nodes": nodes}}})
        }
        "CommentCreate" => {
            let Some(i) = by_id(team, &vars["issueId"]) else {
                return error("ENTITY_NOT_FOUND", "Entity not found");
            };
            i.comments
                .push(vars["body"].as_str().unwrap_or_default().to_string());
            i.comment_times
                .push(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
            json!({"commentCreate": {"success": true}})
        }
        "LabelByName" => {
            let labels = labels_named(team, vars["name"].as_str().unwrap_or_default());
            json!({"teams": {"nodes": [{"id": "team-1", "labels": {"nodes": labels}}]}})
        }
        "LabelCreate" => {
            let name = vars["name"].as_str().unwrap_or_default().to_string();
            team.labels.push(name.clone());
            json!({"issueLabelCreate": {"issueLabel": {"id": format!("label-{name}")}}})
        }
        "AddLabel" | "RemoveLabel" => {
            let label = vars["labelId"]
                .as_str()
                .unwrap_or_default()
                .trim_start_matches("label-")
                .to_string();
            let Some(i) = by_id(team, &vars["id"]) else {
                return error("ENTITY_NOT_FOUND", "Entity not found");
            };
            i.labels.retain(|l| *l != label);
            if op == "AddLabel" {
                i.labels.push(label);
            }
            json!({"issueAddLabel": {"success": true}})
        }
        "DoctorTeam" => {
            let teams: Vec<Value> = if vars["team"] == TEAM {
                let labels = labels_named(team, vars["label"].as_str().unwrap_or_default());
                let states: Vec<Value> = if team.no_completed_state {
                    vec![]
                } else {
                    vec![json!({"id": "state-done"})]
                };
                vec![json!({"name": "Engineering", "labels": {"nodes": labels},
                    "states": {"nodes": states}})]
            } else {
                vec![]
            };
            json!({"viewer": {"name": "Runner Bot"}, "teams": {"nodes": teams}})
        }
        "CompletedState" => {
            json!({"workflowStates": {"nodes": [{"id": "state-done", "position": 3.0}]}})
        }
        "CloseIssue" => {
            let Some(i) = by_id(team, &vars["id"]) else {
                return error("ENTITY_NOT_FOUND", "Entity not found");
            };
            if vars["stateId"] == "state-done" {
                i.state = "completed".into();
            }
            json!({"issueUpdate": {"success": true}})
        }
        _ => {
            team.requests.push(format!("UNKNOWN {op}"));
            return error("INVALID_INPUT", "unknown operation");
        }
    };
    ok(json!({ "data": data }))
}
