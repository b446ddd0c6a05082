//! The review of a merge request on GitLab: its discussions
//! (`merge_requests/:iid/discussions`) and approvals (`merge_requests/:iid/approvals`). An
//! unresolved thread asks for changes and holds the merge until it is resolved; an approval
//! counts while the merge request's head (`sha`) is the commit CI verified. What the runner's
//! own account (`GET /user`) wrote, and GitLab's system notes, are no reviewer's words.

use super::super::{Feedback, ForgeError, ReviewDecision, ReviewKind, ReviewState};
use super::{forge_error, refused, GitLabForge};
use crate::call_failure::CallFailureKind;
use serde_json::Value;

impl GitLabForge {
    /// The review of `branch`'s open merge request, its feedback written at or after `since`.
    pub fn review_state(
        &self,
        branch: &str,
        commit: Option<&str>,
        since: Option<&str>,
    ) -> Result<ReviewState, ForgeError> {
        let Some(mr) = self.open_mr(branch)? else {
            return Err(refused(
                format!("no open merge request for {branch}"),
                CallFailureKind::NotFound,
                "the runner opens it in createPR; check the project's merge requests",
            ));
        };
        let iid = mr["iid"].as_u64().unwrap_or_default();
        let me = self.runner_username()?;
        let discussions = self
            .api
            .pages(&self.at(&format!("merge_requests/{iid}/discussions")))
            .map_err(forge_error)?;
        let approvals = self.json("GET", &format!("merge_requests/{iid}/approvals"), None)?;
        Ok(parse_review_state(
            &mr,
            &discussions,
            &approvals,
            &me,
            commit,
            since,
        ))
    }

    /// The username of the token's account. A token that may not read its user has none:
    /// nothing is left out; a rate limit or the network is an error, waited out.
    fn runner_username(&self) -> Result<String, ForgeError> {
        match self.api.json("GET", "user", None) {
            Ok(user) => Ok(user["username"].as_str().unwrap_or_default().to_string()),
            Err(f)
                if matches!(
                    f.kind,
                    CallFailureKind::Permission | CallFailureKind::NotFound
                ) =>
            {
                Ok(String::new())
            }
            Err(f) => Err(forge_error(f)),
        }
    }
}

/// The review of merge request `mr` from GitLab's answers, leaving out what `me` wrote.
///
/// The decision: an unresolved resolvable note (a thread) asks for changes; otherwise an
/// approval by someone else counts while the merge request's `sha` is `commit` (GitLab's
/// approvals name no commit: one given before the last push approved other code only if the
/// project keeps approvals across pushes, so the head is what is checked). The feedback: the
/// unresolved threads' notes (with their file and line) and the comments outside threads,
/// written at or after `since`, oldest first; resolved threads and system notes are not.
pub fn parse_review_state(
    mr: &Value,
    discussions: &[Value],
    approvals: &Value,
    me: &str,
    commit: Option<&str>,
    since: Option<&str>,
) -> ReviewState {
    let by_others = |n: &Value| {
        let who = n["author"]["username"].as_str().unwrap_or_default();
        me.is_empty() || who != me
    };
    let mut feedback = Vec::new();
    let mut unresolved = false;
    // Who speaks in the unresolved threads (a person's reply in a bot's thread holds too).
    let mut requested_by: Vec<String> = Vec::new();
    for note in discussions
        .iter()
        .flat_map(|d| d["notes"].as_array().into_iter().flatten())
        .filter(|n| n["system"] != Value::Bool(true) && by_others(n))
    {
        let open_thread =
            note["resolvable"] == Value::Bool(true) && note["resolved"] != Value::Bool(true);
        if note["resolvable"] == Value::Bool(true) && !open_thread {
            continue;
        }
        unresolved |= open_thread;
        let who = note["author"]["username"].as_str().unwrap_or_default();
        if open_thread && !requested_by.iter().any(|r| r == who) {
            requested_by.push(who.to_string());
        }
        let position = &note["position"];
        let path = position["new_path"]
            .as_str()
            .or_else(|| position["old_path"].as_str())
            .map(str::to_string);
        let line = position["new_line"]
            .as_u64()
            .or_else(|| position["old_line"].as_u64())
            .and_then(|l| u32::try_from(l).ok());
        feedback.push(Feedback {
            id: format!("note-{}", note["id"]),
            author: note["author"]["username"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            time: note["created_at"].as_str().unwrap_or_default().to_string(),
            body: note["body"].as_str().unwrap_or_default().to_string(),
            kind: if open_thread {
                ReviewKind::RequestChanges
            } else {
                ReviewKind::Comment
            },
            path,
            line,
        });
    }
    feedback.retain(|f| !f.body.trim().is_empty());
    let approved_by_others = approvals["approved_by"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|a| {
            let who = a["user"]["username"].as_str().unwrap_or_default();
            !who.is_empty() && (me.is_empty() || who != me)
        });
    let head_verified = commit.is_some() && mr["sha"].as_str() == commit;
    let decision = if unresolved {
        ReviewDecision::ChangesRequested
    } else if approved_by_others && head_verified {
        ReviewDecision::Approved
    } else {
        ReviewDecision::None
    };
    let mut state = ReviewState::of(feedback, since);
    state.decision = decision;
    state.requested_by = requested_by;
    state.approved = approved_by_others && head_verified;
    let time = |f: &Feedback| chrono::DateTime::parse_from_rfc3339(&f.time).ok();
    state.feedback.sort_by_key(|f| time(f));
    state
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn note(id: u64, who: &str, resolvable: bool, resolved: bool, at: &str) -> Value {
        json!({"id": id, "author": {"username": who}, "body": format!("note {id}"),
            "created_at": at, "system": false, "resolvable": resolvable, "resolved": resolved,
            "position": if resolvable { json!({"new_path": "src/a.rs", "new_line": 4}) } else { Value::Null }})
    }

    fn thread(notes: Vec<Value>) -> Value {
        json!({"id": "d", "notes": notes})
    }

    #[test]
    fn an_unresolved_thread_holds_the_merge_and_an_approval_counts_for_the_verified_head() {
        let mr = json!({"iid": 1, "sha": "new"});
        let approved = json!({"approved_by": [{"user": {"username": "ann"}}]});
        let none = json!({"approved_by": []});
        let at = "2026-01-01T00:00:00Z";
        let open = [thread(vec![note(1, "ann", true, false, at)])];
        let closed = [thread(vec![note(1, "ann", true, true, at)])];
        let decide = |d: &[Value], a: &Value, commit: &str| {
            parse_review_state(&mr, d, a, "bot", Some(commit), None).decision
        };
        assert_eq!(
            decide(&open, &approved, "new"),
            ReviewDecision::ChangesRequested
        );
        assert_eq!(decide(&closed, &approved, "new"), ReviewDecision::Approved);
        assert_eq!(decide(&closed, &approved, "old"), ReviewDecision::None);
        assert_eq!(decide(&closed, &none, "new"), ReviewDecision::None);
        let own = json!({"approved_by": [{"user": {"username": "bot"}}]});
        assert_eq!(decide(&closed, &own, "new"), ReviewDecision::None);
        let own_thread = [thread(vec![note(1, "bot", true, false, at)])];
        assert_eq!(decide(&own_thread, &none, "new"), ReviewDecision::None);
    }

    #[test]
    fn an_ignored_bots_thread_holds_no_merge_but_a_persons_reply_in_it_does() {
        let at = "2026-01-01T00:00:00Z";
        let mr = json!({"iid": 1, "sha": "c"});
        let approved = json!({"approved_by": [{"user": {"username": "ann"}}]});
        let ignored = ["lint-bot".to_string()];
        let state = |threads: &[Value], approvals: &Value| {
            parse_review_state(&mr, threads, approvals, "bot", Some("c"), None)
        };
        let bots = [thread(vec![note(1, "lint-bot", true, false, at)])];
        let s = state(&bots, &approved);
        assert_eq!(s.decision, ReviewDecision::ChangesRequested);
        assert_eq!(s.decision_without(&ignored), ReviewDecision::Approved);
        let s = state(&bots, &json!({}));
        assert_eq!(s.decision_without(&ignored), ReviewDecision::None);
        let replied = [thread(vec![
            note(1, "lint-bot", true, false, at),
            note(2, "ann", true, false, at),
        ])];
        let s = state(&replied, &approved);
        assert_eq!(
            s.decision_without(&ignored),
            ReviewDecision::ChangesRequested
        );
    }

    #[test]
    fn feedback_is_the_open_threads_and_comments_since_the_push_without_system_notes() {
        let mr = json!({"iid": 1, "sha": "c"});
        let mut system = note(9, "ann", false, false, "2026-01-01T05:00:00Z");
        system["system"] = json!(true);
        let discussions = [
            thread(vec![
                note(1, "ann", true, false, "2026-01-01T03:00:00Z"),
                note(2, "bob", true, false, "2026-01-01T02:00:00Z"),
            ]),
            thread(vec![note(3, "ann", true, true, "2026-01-01T04:00:00Z")]),
            thread(vec![note(4, "carol", false, false, "2026-01-01T00:00:00Z")]),
            thread(vec![system]),
        ];
        let s = parse_review_state(
            &mr,
            &discussions,
            &json!({}),
            "bot",
            Some("c"),
            Some("2026-01-01T01:00:00Z"),
        );
        let ids: Vec<&str> = s.feedback.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["note-2", "note-1"]);
        assert_eq!(s.feedback[0].path.as_deref(), Some("src/a.rs"));
        assert_eq!(s.feedback[0].line, Some(4));
        assert_eq!(s.feedback[0].kind, ReviewKind::RequestChanges);
    }
}
