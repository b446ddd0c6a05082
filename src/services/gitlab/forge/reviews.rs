//! The review of a merge request on GitLab: its discussions
//! (`merge_requests/:iid/discussions`) and approvals (`merge_requests/:iid/approvals`). An
//! unresolved thread asks for changes and holds the merge until it is resolved; an approval
//! counts while the merge request's head (`sha`) is the commit CI verified. What the runner's
//! own account (`GET /user`) wrote, and GitLab's system notes, are no reviewer's words; nor
//! are those of an author below Developer access in the project (`members/all/:user_id`, asked
//! once per run and author) unless `review.trustedAuthors` names them, nor a
//! `review.ignoreAuthors` author's ([`crate::authority::judge`]).

use super::{forge_error, refused, GitLabForge};
use crate::api_client::Endpoint;
use crate::authority::{judge, Standing, Verdict};
use crate::call_failure::CallFailureKind;
use crate::machine::ReviewDecision;
use crate::ports::forge::{Feedback, ForgeError, ReviewKind, ReviewState};
use crate::services::gitlab::models::{self, Approvals, Discussion, Note};
use serde::Deserialize;
use std::collections::BTreeMap;

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
        let iid = mr.iid.unwrap_or_default();
        let me = self.runner_username()?;
        let discussions: Vec<Discussion> = models::items(
            &self
                .api
                .pages(
                    &self
                        .at()
                        .fixed("merge_requests")
                        .segment(iid)
                        .fixed("discussions"),
                )
                .map_err(forge_error)?,
        );
        let approvals = self.json(
            "GET",
            &self
                .at()
                .fixed("merge_requests")
                .segment(iid)
                .fixed("approvals"),
            None,
        )?;
        let approvals = Approvals::deserialize(&approvals).unwrap_or_default();
        let levels = self.access_levels(&discussions, &approvals, &me)?;
        let verdict = |who: &str| {
            let level = levels.get(who).copied().flatten();
            judge(who, Standing::AccessLevel(level), &self.authority)
        };
        let state = parse_review_state(
            mr.sha.as_deref(),
            &discussions,
            &approvals,
            (&me, &verdict),
            commit,
            since,
        );
        for (who, why) in &state.left_out {
            crate::authority::say_left_out("review feedback", who, why);
        }
        Ok(state)
    }

    /// The access level in the project of every author of a note or an approval (by
    /// username), asked once per run and author; the runner's own is not asked.
    fn access_levels(
        &self,
        discussions: &[Discussion],
        approvals: &Approvals,
        me: &str,
    ) -> Result<BTreeMap<String, Option<u64>>, ForgeError> {
        let authors = discussions
            .iter()
            .flat_map(|d| &d.notes)
            .filter(|n| !n.system)
            .map(|n| &n.author)
            .chain(approvals.approved_by.iter().map(|a| &a.user));
        let mut levels = BTreeMap::new();
        for author in authors {
            let who = author.username.as_str();
            if who.is_empty() || who == me || levels.contains_key(who) {
                continue;
            }
            let level = match author.id {
                Some(id) => super::super::access::access_level(&self.api, &self.project, id)
                    .map_err(forge_error)?,
                None => None,
            };
            levels.insert(who.to_string(), level);
        }
        Ok(levels)
    }

    /// The username of the token's account. A token that may not read its user has none:
    /// nothing is left out; a rate limit or the network is an error, waited out.
    fn runner_username(&self) -> Result<String, ForgeError> {
        match self.api.json("GET", &Endpoint::new("user"), None) {
            Ok(user) => Ok(models::one::<models::User>(&user).username),
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

/// The review of the merge request whose head is `mr_sha` from GitLab's answers, leaving out what `me` wrote and
/// what an author `verdict` does not count wrote (named in `left_out` when for want of
/// authority).
///
/// The decision: an unresolved resolvable note (a thread) asks for changes; otherwise an
/// approval by someone else counts while the merge request's `sha` is `commit` (GitLab's
/// approvals name no commit: one given before the last push approved other code only if the
/// project keeps approvals across pushes, so the head is what is checked). The feedback: the
/// unresolved threads' notes (with their file and line) and the comments outside threads,
/// written at or after `since`, oldest first; resolved threads and system notes are not.
pub fn parse_review_state(
    mr_sha: Option<&str>,
    discussions: &[Discussion],
    approvals: &Approvals,
    (me, verdict): (&str, &dyn Fn(&str) -> Verdict),
    commit: Option<&str>,
    since: Option<&str>,
) -> ReviewState {
    let left_out = std::cell::RefCell::new(Vec::<(String, String)>::new());
    let counts = |who: &str| {
        if !me.is_empty() && who == me {
            return false;
        }
        match verdict(who) {
            Verdict::Counts => true,
            Verdict::Ignored => false,
            Verdict::LeftOut(why) => {
                let mut out = left_out.borrow_mut();
                if !out.iter().any(|(w, _)| w == who) {
                    out.push((who.to_string(), why));
                }
                false
            }
        }
    };
    let by_others = |n: &&Note| counts(&n.author.username);
    let notes: Vec<&Note> = discussions
        .iter()
        .flat_map(|d| &d.notes)
        .filter(|n| !n.system)
        .filter(by_others)
        .collect();
    let threads = Threads::of(&notes);
    let mut feedback = threads.feedback;
    feedback.retain(|f| !f.body.trim().is_empty());
    let approvers: Vec<String> = approvals
        .approved_by
        .iter()
        .map(|a| a.user.username.as_str())
        .filter(|who| !who.is_empty() && counts(who))
        .map(str::to_string)
        .collect();
    let approved_by_others = !approvers.is_empty();
    let head_verified = commit.is_some() && mr_sha == commit;
    let decision = if threads.unresolved {
        ReviewDecision::ChangesRequested
    } else if approved_by_others && head_verified {
        ReviewDecision::Approved
    } else {
        ReviewDecision::None
    };
    let mut state = ReviewState::of(feedback, since);
    state.decision = decision;
    state.requested_by = threads.requested_by;
    state.approved = approved_by_others && head_verified;
    state.approved_by = approvers;
    state.left_out = left_out.into_inner();
    let time = |f: &Feedback| chrono::DateTime::parse_from_rfc3339(&f.time).ok();
    state.feedback.sort_by_key(|f| time(f));
    state
}

/// What the notes that count say: their feedback, whether a thread is open, and who speaks in
/// the open threads.
struct Threads {
    feedback: Vec<Feedback>,
    unresolved: bool,
    /// Who speaks in the unresolved threads (a person's reply in a bot's thread holds too).
    requested_by: Vec<String>,
}

impl Threads {
    fn of(notes: &[&Note]) -> Threads {
        let mut threads = Threads {
            feedback: Vec::new(),
            unresolved: false,
            requested_by: Vec::new(),
        };
        for note in notes {
            let open_thread = note.resolvable && !note.resolved;
            if note.resolvable && !open_thread {
                continue;
            }
            threads.unresolved |= open_thread;
            let who = &note.author.username;
            if open_thread && !threads.requested_by.iter().any(|r| r == who) {
                threads.requested_by.push(who.to_string());
            }
            let position = note.position.as_ref();
            let path = position.and_then(|p| p.new_path.clone().or_else(|| p.old_path.clone()));
            let line = position
                .and_then(|p| p.new_line.or(p.old_line))
                .and_then(|l| u32::try_from(l).ok());
            threads.feedback.push(Feedback {
                id: format!("note-{}", note.id),
                author: who.to_string(),
                time: note.created_at.clone().unwrap_or_default(),
                body: note.body.clone(),
                kind: if open_thread {
                    ReviewKind::RequestChanges
                } else {
                    ReviewKind::Comment
                },
                path,
                line,
            });
        }
        threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The review from GitLab's answers as JSON, read through the models as `review_state` reads them.
    fn parse_review_state(
        mr: &Value,
        discussions: &[Value],
        approvals: &Value,
        who: (&str, &dyn Fn(&str) -> Verdict),
        commit: Option<&str>,
        since: Option<&str>,
    ) -> ReviewState {
        super::parse_review_state(
            mr["sha"].as_str(),
            &models::items::<Discussion>(discussions),
            &Approvals::deserialize(approvals).unwrap_or_default(),
            who,
            commit,
            since,
        )
    }

    fn note(id: u64, who: &str, resolvable: bool, resolved: bool, at: &str) -> Value {
        json!({"id": id, "author": {"username": who}, "body": format!("note {id}"),
            "created_at": at, "system": false, "resolvable": resolvable, "resolved": resolved,
            "position": if resolvable { json!({"new_path": "src/a.rs", "new_line": 4}) } else { Value::Null }})
    }

    fn everyone(_: &str) -> Verdict {
        Verdict::Counts
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
            parse_review_state(&mr, d, a, ("bot", &everyone), Some(commit), None).decision
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
            parse_review_state(&mr, threads, approvals, ("bot", &everyone), Some("c"), None)
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
            ("bot", &everyone),
            Some("c"),
            Some("2026-01-01T01:00:00Z"),
        );
        let ids: Vec<&str> = s.feedback.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["note-2", "note-1"]);
        assert_eq!(s.feedback[0].path.as_deref(), Some("src/a.rs"));
        assert_eq!(s.feedback[0].line, Some(4));
        assert_eq!(s.feedback[0].kind, ReviewKind::RequestChanges);
    }

    #[test]
    fn a_reporters_thread_and_approval_and_a_non_members_note_count_for_nothing() {
        let at = "2026-01-01T00:00:00Z";
        let mr = json!({"iid": 1, "sha": "c"});
        let levels = |who: &str| match who {
            "ann" => Some(30),
            "rita" => Some(20),
            _ => None,
        };
        let lists = crate::authority::Authority {
            trusted: vec!["friend".into()],
            ignored: vec!["lint-bot".into()],
        };
        let verdict = |who: &str| judge(who, Standing::AccessLevel(levels(who)), &lists);
        let discussions = [
            thread(vec![note(1, "rita", true, false, at)]),
            thread(vec![note(2, "stranger", false, false, at)]),
            thread(vec![note(3, "lint-bot", true, false, at)]),
        ];
        let approvals = json!({"approved_by": [{"user": {"username": "rita"}},
            {"user": {"username": "lint-bot"}}]});
        let s = parse_review_state(
            &mr,
            &discussions,
            &approvals,
            ("bot", &verdict),
            Some("c"),
            None,
        );
        assert_eq!(s.decision, ReviewDecision::None);
        assert!(s.feedback.is_empty(), "{:?}", s.feedback);
        assert!(!s.approved);
        let who: Vec<&str> = s.left_out.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(who, ["rita", "stranger"]);
        assert!(
            s.left_out[0].1.contains("access level 20 (Reporter)"),
            "{:?}",
            s.left_out
        );
        // A Developer's approval counts, and so does a trusted outsider's thread.
        let approvals = json!({"approved_by": [{"user": {"username": "ann"}}]});
        let s = parse_review_state(&mr, &[], &approvals, ("bot", &verdict), Some("c"), None);
        assert_eq!(s.decision, ReviewDecision::Approved);
        let friend = [thread(vec![note(4, "friend", true, false, at)])];
        let s = parse_review_state(&mr, &friend, &approvals, ("bot", &verdict), Some("c"), None);
        assert_eq!(s.decision, ReviewDecision::ChangesRequested);
    }
}
