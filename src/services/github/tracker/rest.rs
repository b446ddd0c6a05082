//! The GitHub tracker's writes and the reads around them through GitHub's REST API
//! (`gh api --include`), so that every failed answer is classified from its HTTP status and
//! headers: a rate limit (primary or secondary) is `CallFailureKind::RateLimited`, which the
//! machine waits out, never a refusal to halt on. Every gh from 2.23 makes these calls.

use super::{GitHub, TrackerError};
use crate::call_failure::{path_segment, HttpAnswer};
use serde::Deserialize;
use serde_json::{json, Value};

/// What GitHub lists per page at most.
const PAGE: usize = 100;

#[derive(Debug, Deserialize)]
struct RestIssue {
    #[serde(default)]
    state: String,
}

impl GitHub {
    /// `gh api --include [-X method] <endpoint> [--input -]`, with `body` as the request's
    /// JSON: GitHub's answer whatever its status (the caller may accept a 404 or a 422), or an
    /// error when gh got no answer at all (classified from what gh printed).
    pub(super) fn answer(
        &self,
        method: &str,
        endpoint: &str,
        body: Option<&Value>,
    ) -> Result<(HttpAnswer, Vec<String>, String), TrackerError> {
        let a = self
            .gh()
            .api(method, endpoint, body)
            .map_err(super::tracker_error)?;
        Ok((a.answer, a.args, a.stderr))
    }

    /// The error for a failed answer: its kind from the status and headers, its words from
    /// GitHub's message and gh's.
    pub(super) fn refused(
        &self,
        args: &[String],
        answer: &HttpAnswer,
        stderr: &str,
    ) -> TrackerError {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let said = format!("HTTP {}; {}", answer.status, stderr.trim());
        self.failed(&argv, Some(1), &said, answer.failure_kind(now))
    }

    /// One REST call that must succeed: the answer's body.
    pub(super) fn rest(
        &self,
        method: &str,
        endpoint: &str,
        body: Option<&Value>,
    ) -> Result<Vec<u8>, TrackerError> {
        let (answer, args, stderr) = self.answer(method, endpoint, body)?;
        if answer.ok() {
            Ok(answer.body)
        } else {
            Err(self.refused(&args, &answer, &stderr))
        }
    }

    /// Comments `text` on the issue, unless its newest comment already says it: a write the
    /// machine asks for again (after a rate limit or a network failure refused the call that
    /// followed the comment) says nothing twice.
    pub(super) fn comment(&self, number: u32, text: &str) -> Result<(), TrackerError> {
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{number}/comments");
        let newest = self.pages(&endpoint)?.pop();
        if newest.is_some_and(|c| c["body"].as_str().map(str::trim) == Some(text.trim())) {
            return Ok(());
        }
        self.rest("POST", &endpoint, Some(&json!({ "body": text })))
            .map(drop)
    }

    /// Closes the issue (as completed, as GitHub's close from a merged PR does).
    pub(super) fn close_issue(&self, number: u32) -> Result<(), TrackerError> {
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{number}");
        let body = json!({"state": "closed", "state_reason": "completed"});
        self.rest("PATCH", &endpoint, Some(&body)).map(drop)
    }

    /// Whether the issue is open, read from GitHub's REST answer.
    pub(super) fn is_open(&self, number: u32) -> Result<bool, TrackerError> {
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{number}");
        let body = self.rest("GET", &endpoint, None)?;
        let issue: RestIssue =
            serde_json::from_slice(&body).map_err(|source| TrackerError::Json {
                command: self.display(&["api", &endpoint]),
                source,
            })?;
        Ok(issue.state.eq_ignore_ascii_case("open"))
    }

    /// Adds `label` to the issue, creating it with its colour and description first when
    /// the repository lacks it (GitHub would create it bare on the issue's request).
    pub(super) fn add_label(
        &self,
        number: u32,
        label: &str,
        color: &str,
        description: &str,
    ) -> Result<(), TrackerError> {
        let known = format!("repos/{{owner}}/{{repo}}/labels/{}", path_segment(label));
        let (answer, args, stderr) = self.answer("GET", &known, None)?;
        if answer.status == 404 {
            let create = json!({"name": label, "color": color, "description": description});
            let (made, args, stderr) =
                self.answer("POST", "repos/{owner}/{repo}/labels", Some(&create))?;
            // 422: another runner created it meanwhile.
            if !made.ok() && made.status != 422 {
                return Err(self.refused(&args, &made, &stderr));
            }
        } else if !answer.ok() {
            return Err(self.refused(&args, &answer, &stderr));
        }
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{number}/labels");
        self.rest("POST", &endpoint, Some(&json!({ "labels": [label] })))
            .map(drop)
    }

    /// Removes `label` from the issue; a label the issue does not carry is no failure.
    pub(super) fn remove_label(&self, number: u32, label: &str) -> Result<(), TrackerError> {
        let endpoint = format!(
            "repos/{{owner}}/{{repo}}/issues/{number}/labels/{}",
            path_segment(label)
        );
        let (answer, args, stderr) = self.answer("DELETE", &endpoint, None)?;
        if answer.ok() || answer.status == 404 {
            Ok(())
        } else {
            Err(self.refused(&args, &answer, &stderr))
        }
    }

    /// Every page of a REST list (`endpoint` without `per_page` and `page`), as JSON values;
    /// a page shorter than GitHub's page size is the last.
    pub(super) fn pages(&self, endpoint: &str) -> Result<Vec<Value>, TrackerError> {
        let mut all = Vec::new();
        let join = if endpoint.contains('?') { '&' } else { '?' };
        for page in 1.. {
            let paged = format!("{endpoint}{join}per_page={PAGE}&page={page}");
            let body = self.rest("GET", &paged, None)?;
            let list: Vec<Value> =
                serde_json::from_slice(&body).map_err(|source| TrackerError::Json {
                    command: self.display(&["api", &paged]),
                    source,
                })?;
            let last = list.len() < PAGE;
            all.extend(list);
            if last {
                break;
            }
        }
        Ok(all)
    }
}
