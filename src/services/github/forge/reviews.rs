//! The reviews of an open PR on GitHub, through the REST lists every `gh` release answers
//! (`gh api --include`, so a rate limit on them is classified like any other answer): the
//! reviews (`pulls/N/reviews`), the line comments (`pulls/N/comments`) and the conversation
//! (`issues/N/comments`), with GitHub's own review decision (GraphQL `reviewDecision`).
//! What the runner's own account wrote is left out: it is never the reviewers' word. Nor is
//! what an author without write access wrote (`author_association` other than OWNER, MEMBER
//! or COLLABORATOR), unless `review.trustedAuthors` names them, nor what a
//! `review.ignoreAuthors` author wrote ([`crate::authority::judge`]).

use super::{api_get, command_text, open_pr_number, review_decision};
use crate::authority::{judge, Authority, Standing, Verdict};
use crate::call_failure::CallFailureKind;
use crate::forge::{Feedback, ForgeError, ReviewDecision, ReviewKind, ReviewState};
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;

/// GitHub's largest page; a PR with more reviews or comments is read page by page.
const PER_PAGE: usize = 100;
/// A bound on the pages of one list: 3 000 comments is past any conversation a round could
/// answer, and a list that never ends must not hold the look forever.
const MAX_PAGES: usize = 30;

/// The login of the account `gh`'s token belongs to, in GitHub's answer to `GET /user`
/// (empty when the answer names none).
pub fn login_of(user: &[u8]) -> String {
    serde_json::from_slice::<Value>(user)
        .ok()
        .and_then(|v| v["login"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The runner's own login (`GET /user`). A token that may not read its user (an app's) has
/// none: its comments cannot be told from a reviewer's, so nothing is left out; a rate limit
/// or the network is an error, waited out like any call.
fn runner_login(gh: &PathBuf, repo_dir: &PathBuf) -> Result<String, ForgeError> {
    match api_get(gh, repo_dir, "user") {
        Ok(answer) => Ok(login_of(&answer.body)),
        Err(ForgeError::Command {
            kind: CallFailureKind::Permission | CallFailureKind::NotFound,
            ..
        }) => Ok(String::new()),
        Err(e) => Err(e),
    }
}

/// Every entry of the REST list `endpoint`, page by page.
fn pages(gh: &PathBuf, repo_dir: &PathBuf, endpoint: &str) -> Result<Vec<Value>, ForgeError> {
    let mut all = Vec::new();
    for page in 1..=MAX_PAGES {
        let paged = format!("{endpoint}?per_page={PER_PAGE}&page={page}");
        let answer = api_get(gh, repo_dir, &paged)?;
        let list: Vec<Value> =
            serde_json::from_slice(&answer.body).map_err(|e| ForgeError::Parse {
                command: command_text(gh, &["api", &paged]),
                detail: format!("{e}; expected a JSON list"),
            })?;
        let last = list.len() < PER_PAGE;
        all.extend(list);
        if last {
            break;
        }
    }
    Ok(all)
}

/// What `doctor` found asking GitHub for reviews.
pub enum ReviewsReadable {
    /// GitHub answered; what answered.
    Yes(String),
    /// GitHub refused (its status and words): the review gate would be refused too.
    Refused(String),
    /// No answer from GitHub (gh could not reach it, or printed no answer): nothing known.
    Unknown(String),
}

/// Whether the account of `gh`'s token can read what the review gate reads: the newest PR's
/// reviews (`pulls/N/reviews`), or the PR list while there is none.
pub fn check_reviews_readable(gh: &PathBuf, repo_dir: &PathBuf) -> ReviewsReadable {
    let ask = |endpoint: &str| match super::api_call(gh, repo_dir, "GET", endpoint, None) {
        Ok((answer, _, _)) if answer.ok() => Ok(answer.body),
        Ok((answer, args, out)) => Err(ReviewsReadable::Refused(format!(
            "GET {endpoint}: {}",
            super::refused(gh, &args, &answer, &out)
        ))),
        Err(e) => Err(ReviewsReadable::Unknown(format!("GET {endpoint}: {e}"))),
    };
    let list = "repos/{owner}/{repo}/pulls?state=all&per_page=1";
    let pulls = match ask(list) {
        Ok(body) => body,
        Err(why) => return why,
    };
    let newest: Option<u64> = serde_json::from_slice::<Vec<Value>>(&pulls)
        .ok()
        .and_then(|l| l.first().and_then(|p| p["number"].as_u64()));
    let Some(number) = newest else {
        return ReviewsReadable::Yes("no pull request yet; GitHub's list of them answers".into());
    };
    let reviews = format!("repos/{{owner}}/{{repo}}/pulls/{number}/reviews?per_page=1");
    match ask(&reviews) {
        Ok(_) => ReviewsReadable::Yes(format!("the reviews of PR #{number} answer")),
        Err(why) => why,
    }
}

/// What GitHub holds of PR `number`'s review, as [`parse_review_state`] reads it.
pub(crate) fn review_state(
    gh: &PathBuf,
    repo_dir: &PathBuf,
    authority: &Authority,
    branch: &str,
    commit: Option<&str>,
    since: Option<&str>,
) -> Result<ReviewState, ForgeError> {
    let number = open_pr_number(gh, repo_dir, branch)?;
    let me = runner_login(gh, repo_dir)?;
    let pull = format!("repos/{{owner}}/{{repo}}/pulls/{number}");
    let reviews = pages(gh, repo_dir, &format!("{pull}/reviews"))?;
    // GitHub's decision rests on reviews: with none there is none to ask for (GraphQL
    // answers are never conditional, so each one spends the token's budget).
    let decision = if reviews.is_empty() {
        None
    } else {
        review_decision(gh, repo_dir, number, false)?.0
    };
    // The pull request counts its line comments and its conversation: an empty list is not
    // read (the merge reads the pull request next, then a 304).
    let counts: Value =
        serde_json::from_slice(&api_get(gh, repo_dir, &pull)?.body).unwrap_or_default();
    let none = |field: &str| counts[field].as_u64() == Some(0);
    let lines = if none("review_comments") {
        Vec::new()
    } else {
        pages(gh, repo_dir, &format!("{pull}/comments"))?
    };
    let talk = if none("comments") {
        Vec::new()
    } else {
        pages(
            gh,
            repo_dir,
            &format!("repos/{{owner}}/{{repo}}/issues/{number}/comments"),
        )?
    };
    let lists = Lists {
        reviews: &reviews,
        line_comments: &lines,
        comments: &talk,
    };
    let state = parse_review_state(&lists, decision.as_deref(), &me, authority, commit, since)
        .map_err(|detail| ForgeError::Parse {
            command: command_text(gh, &["api", &format!("{pull}/reviews")]),
            detail,
        })?;
    for (who, why) in &state.left_out {
        crate::authority::say_left_out("review feedback", who, why);
    }
    Ok(state)
}

/// GitHub's three lists of one PR, as its REST API answers them (oldest first).
pub struct Lists<'a> {
    /// `pulls/N/reviews`: `id`, `user.login`, `state`, `body`, `submitted_at`, `commit_id`.
    pub reviews: &'a [Value],
    /// `pulls/N/comments`: `id`, `user.login`, `body`, `created_at`, `path`, `line`.
    pub line_comments: &'a [Value],
    /// `issues/N/comments`: `id`, `user.login`, `body`, `created_at`.
    pub comments: &'a [Value],
}

#[derive(Deserialize)]
struct User {
    #[serde(default)]
    login: String,
}

#[derive(Deserialize)]
struct RestReview {
    id: u64,
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    state: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    submitted_at: Option<String>,
    #[serde(default)]
    commit_id: Option<String>,
    #[serde(default)]
    author_association: Option<String>,
}

#[derive(Deserialize)]
struct RestComment {
    id: u64,
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    created_at: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    original_line: Option<u32>,
    #[serde(default)]
    author_association: Option<String>,
}

fn login(user: &Option<User>) -> String {
    user.as_ref().map(|u| u.login.clone()).unwrap_or_default()
}

/// Whether the words of `user` (with GitHub's `association` of them) count: not the runner's
/// own (`me`), and by someone [`judge`] counts; one left out for want of authority is noted in
/// `left_out` once.
fn counts(
    (me, authority): (&str, &Authority),
    user: &Option<User>,
    association: &Option<String>,
    left_out: &mut Vec<(String, String)>,
) -> bool {
    let who = login(user);
    if !me.is_empty() && who == me {
        return false;
    }
    let standing = Standing::Association(association.as_deref().unwrap_or_default());
    match judge(&who, standing, authority) {
        Verdict::Counts => true,
        Verdict::Ignored => false,
        Verdict::LeftOut(why) => {
            if !left_out.iter().any(|(w, _)| *w == who) {
                left_out.push((who, why));
            }
            false
        }
    }
}

fn entries<T: for<'de> Deserialize<'de>>(list: &[Value], what: &str) -> Result<Vec<T>, String> {
    list.iter()
        .map(|v| serde_json::from_value(v.clone()).map_err(|e| format!("{what}: {e}")))
        .collect()
}

/// The review of a PR from GitHub's lists, leaving out what `me` (the runner's login) wrote
/// and what [`judge`] does not count under `authority` (named in `left_out`).
///
/// The decision: a reviewer's latest request for changes stands (until they approve, or it is
/// dismissed) and holds the merge, as does GitHub's `CHANGES_REQUESTED`; otherwise GitHub's
/// `APPROVED` (its rules: required reviewers, stale approvals dismissed), or a reviewer's
/// latest approval of `commit` — the commit CI verified; an approval of an older commit
/// approved other code. GitHub's `APPROVED` counts only while a reviewer who counts here
/// approved (GitHub also counts a bot of `review.ignoreAuthors`). A comment decides nothing.
///
/// The feedback: reviews with words, line comments (with their file and line) and the
/// conversation's comments written at or after `since`, oldest first. Errors describe the
/// problem without quoting the bytes.
pub fn parse_review_state(
    lists: &Lists<'_>,
    github_decision: Option<&str>,
    me: &str,
    authority: &Authority,
    commit: Option<&str>,
    since: Option<&str>,
) -> Result<ReviewState, String> {
    let mut reviews: Vec<RestReview> = entries(lists.reviews, "a review")?;
    let mut line_comments: Vec<RestComment> = entries(lists.line_comments, "a review comment")?;
    let mut comments: Vec<RestComment> = entries(lists.comments, "a comment")?;
    let mut left_out = Vec::new();
    let rules = (me, authority);
    reviews.retain(|r| counts(rules, &r.user, &r.author_association, &mut left_out));
    line_comments.retain(|c| counts(rules, &c.user, &c.author_association, &mut left_out));
    comments.retain(|c| counts(rules, &c.user, &c.author_association, &mut left_out));
    let latest = latest_verdicts(&reviews);
    let github = github_decision.unwrap_or_default().to_ascii_uppercase();
    let changes = latest.values().any(|(s, _)| s == "CHANGES_REQUESTED");
    let approved_here = latest
        .values()
        .any(|(s, c)| s == "APPROVED" && commit.is_some() && c.as_deref() == commit);
    let github_approved = github == "APPROVED" && latest.values().any(|(s, _)| s == "APPROVED");
    let decision = if changes || github == "CHANGES_REQUESTED" {
        ReviewDecision::ChangesRequested
    } else if approved_here || github_approved {
        ReviewDecision::Approved
    } else {
        ReviewDecision::None
    };

    let feedback = feedback_of(&reviews, &line_comments, &comments);
    let mut state = ReviewState::of(feedback, since);
    state.decision = decision;
    state.requested_by = latest
        .iter()
        .filter(|(_, (s, _))| s == "CHANGES_REQUESTED")
        .map(|(who, _)| who.clone())
        .collect();
    // GitHub's own CHANGES_REQUESTED with no request in the reviews names nobody: it holds.
    if github == "CHANGES_REQUESTED" && !changes {
        state.requested_by.clear();
    }
    state.approved = approved_here || github_approved;
    state.approved_by = latest
        .iter()
        .filter(|(_, (s, _))| s == "APPROVED")
        .map(|(who, _)| who.clone())
        .collect();
    state.left_out = left_out;
    let time = |f: &Feedback| chrono::DateTime::parse_from_rfc3339(&f.time).ok();
    state.feedback.sort_by_key(|f| time(f));
    Ok(state)
}

/// Each reviewer's latest verdict (`APPROVED`, `CHANGES_REQUESTED`, `DISMISSED`) by login,
/// with the commit it was given on.
type Verdicts = std::collections::BTreeMap<String, (String, Option<String>)>;

/// The latest verdict of each reviewer among `reviews` (in GitHub's order, oldest first); a
/// comment is no verdict.
fn latest_verdicts(reviews: &[RestReview]) -> Verdicts {
    let mut latest = Verdicts::new();
    for r in reviews {
        let state = r.state.to_ascii_uppercase();
        if matches!(
            state.as_str(),
            "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED"
        ) {
            latest.insert(login(&r.user), (state, r.commit_id.clone()));
        }
    }
    latest
}

/// The feedback of the reviews with words, the line comments (with their file and line) and
/// the conversation's comments; a dismissed or pending review is none.
fn feedback_of(
    reviews: &[RestReview],
    line_comments: &[RestComment],
    comments: &[RestComment],
) -> Vec<Feedback> {
    let mut feedback = Vec::new();
    for r in reviews {
        let kind = match r.state.to_ascii_uppercase().as_str() {
            "APPROVED" => ReviewKind::Approve,
            "CHANGES_REQUESTED" => ReviewKind::RequestChanges,
            "COMMENTED" => ReviewKind::Comment,
            // A dismissed request was withdrawn; a pending review is not submitted yet.
            _ => continue,
        };
        feedback.push(Feedback {
            id: format!("review-{}", r.id),
            author: login(&r.user),
            time: r.submitted_at.clone().unwrap_or_default(),
            body: r.body.clone().unwrap_or_default(),
            kind,
            path: None,
            line: None,
        });
    }
    for (prefix, list) in [("line-comment", line_comments), ("comment", comments)] {
        for c in list {
            feedback.push(Feedback {
                id: format!("{prefix}-{}", c.id),
                author: login(&c.user),
                time: c.created_at.clone(),
                body: c.body.clone().unwrap_or_default(),
                kind: ReviewKind::Comment,
                path: c.path.clone(),
                line: c.line.or(c.original_line),
            });
        }
    }
    // A review of line comments alone has no words of its own: its comments carry them.
    feedback.retain(|f| !f.body.trim().is_empty());
    feedback
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review(id: u64, who: &str, state: &str, commit: &str, at: &str) -> Value {
        json!({"id": id, "user": {"login": who}, "state": state, "body": format!("{state} by {who}"),
            "author_association": "COLLABORATOR",
            "submitted_at": at, "commit_id": commit})
    }

    fn state(reviews: &[Value], github: Option<&str>, commit: &str) -> ReviewState {
        let lists = Lists {
            reviews,
            line_comments: &[],
            comments: &[],
        };
        parse_review_state(
            &lists,
            github,
            "runner",
            &Authority::default(),
            Some(commit),
            None,
        )
        .expect("json")
    }

    #[test]
    fn an_approval_counts_for_the_verified_commit_or_by_githubs_decision() {
        let at = "2026-01-01T00:00:00Z";
        let approved_old = [review(1, "ann", "APPROVED", "old", at)];
        assert_eq!(
            state(&approved_old, None, "new").decision,
            ReviewDecision::None
        );
        assert_eq!(
            state(&approved_old, Some("REVIEW_REQUIRED"), "new").decision,
            ReviewDecision::None
        );
        assert_eq!(
            state(&approved_old, None, "old").decision,
            ReviewDecision::Approved
        );
        assert_eq!(
            state(&approved_old, Some("APPROVED"), "new").decision,
            ReviewDecision::Approved
        );
        // The runner's own approval is no reviewer's.
        let own = [review(1, "runner", "APPROVED", "new", at)];
        assert_eq!(state(&own, None, "new").decision, ReviewDecision::None);
    }

    #[test]
    fn a_request_for_changes_stands_until_its_reviewer_approves_or_it_is_dismissed() {
        let at = "2026-01-01T00:00:00Z";
        let asked = review(1, "ann", "CHANGES_REQUESTED", "c", at);
        let other = review(2, "bob", "APPROVED", "c", at);
        let comment = review(3, "ann", "COMMENTED", "c", at);
        let s = state(
            &[asked.clone(), other.clone(), comment],
            Some("APPROVED"),
            "c",
        );
        assert_eq!(s.decision, ReviewDecision::ChangesRequested);
        let approves = review(4, "ann", "APPROVED", "c", at);
        let s = state(&[asked.clone(), approves], None, "c");
        assert_eq!(s.decision, ReviewDecision::Approved);
        let dismissed = review(5, "ann", "DISMISSED", "c", at);
        let s = state(&[asked, dismissed], None, "c");
        assert_eq!(s.decision, ReviewDecision::None);
        assert_eq!(
            state(&[], Some("CHANGES_REQUESTED"), "c").decision,
            ReviewDecision::ChangesRequested
        );
    }

    #[test]
    fn feedback_since_the_push_comes_oldest_first_with_file_and_line_without_the_runners_own() {
        let reviews = [
            review(1, "ann", "CHANGES_REQUESTED", "c", "2026-01-01T02:00:00Z"),
            review(2, "ann", "COMMENTED", "c", "2026-01-01T00:00:00Z"),
            json!({"id": 3, "user": {"login": "ann"}, "state": "COMMENTED", "body": "",
                "submitted_at": "2026-01-01T03:00:00Z", "commit_id": "c",
                "author_association": "OWNER"}),
        ];
        let lines = [
            json!({"id": 7, "user": {"login": "bob"}, "body": "doc this",
            "created_at": "2026-01-01T03:00:00Z", "path": "src/lib.rs", "line": null,
            "original_line": 12, "author_association": "MEMBER"}),
        ];
        let talk = [
            json!({"id": 9, "user": {"login": "runner"}, "body": "mine",
                "created_at": "2026-01-01T04:00:00Z", "author_association": "OWNER"}),
            json!({"id": 10, "user": {"login": "carol"}, "body": "also this",
                "created_at": "2026-01-01T01:30:00Z", "author_association": "COLLABORATOR"}),
        ];
        let lists = Lists {
            reviews: &reviews,
            line_comments: &lines,
            comments: &talk,
        };
        let s = parse_review_state(
            &lists,
            None,
            "runner",
            &Authority::default(),
            Some("c"),
            Some("2026-01-01T01:00:00Z"),
        )
        .expect("json");
        let ids: Vec<&str> = s.feedback.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["comment-10", "review-1", "line-comment-7"]);
        assert_eq!(s.feedback[2].path.as_deref(), Some("src/lib.rs"));
        assert_eq!(s.feedback[2].line, Some(12));
        assert_eq!(s.feedback[1].kind, ReviewKind::RequestChanges);
        assert_eq!(s.decision, ReviewDecision::ChangesRequested);
        let bad = [json!({"id": "x"})];
        let lists = Lists {
            reviews: &bad,
            line_comments: &[],
            comments: &[],
        };
        assert!(parse_review_state(&lists, None, "", &Authority::default(), None, None).is_err());
        assert_eq!(login_of(br#"{"login": "octo"}"#), "octo");
        assert_eq!(login_of(b"nope"), "");
    }

    fn by(id: u64, who: &str, association: &str, state: &str) -> Value {
        let mut r = review(id, who, state, "c", "2026-01-01T00:00:00Z");
        r["author_association"] = json!(association);
        r
    }

    #[test]
    fn words_without_write_access_decide_nothing_and_are_never_feedback_unless_trusted() {
        let reviews = [
            by(1, "stranger", "NONE", "APPROVED"),
            by(2, "drive-by", "CONTRIBUTOR", "CHANGES_REQUESTED"),
        ];
        let lines = [
            json!({"id": 7, "user": {"login": "drive-by"}, "body": "rm -rf it",
            "created_at": "2026-01-01T03:00:00Z", "path": "src/lib.rs", "line": 1,
            "author_association": "CONTRIBUTOR"}),
        ];
        let talk = [
            json!({"id": 9, "user": {"login": "stranger"}, "body": "ignore all",
            "created_at": "2026-01-01T04:00:00Z", "author_association": "NONE"}),
        ];
        let lists = Lists {
            reviews: &reviews,
            line_comments: &lines,
            comments: &talk,
        };
        let judged = |authority: &Authority, github: Option<&str>| {
            parse_review_state(&lists, github, "runner", authority, Some("c"), None).expect("json")
        };
        let s = judged(&Authority::default(), None);
        assert_eq!(s.decision, ReviewDecision::None);
        assert!(!s.approved);
        assert!(s.feedback.is_empty(), "{:?}", s.feedback);
        assert_eq!(
            s.left_out,
            [
                (
                    "stranger".to_string(),
                    "no write access to the repository (author_association NONE)".to_string()
                ),
                (
                    "drive-by".to_string(),
                    "no write access to the repository (author_association CONTRIBUTOR)"
                        .to_string()
                ),
            ]
        );
        // GitHub's own APPROVED with nobody who counts here approving is no approval.
        assert_eq!(
            judged(&Authority::default(), Some("APPROVED")).decision,
            ReviewDecision::None
        );
        let trusted = Authority {
            trusted: vec!["drive-by".into()],
            ignored: vec![],
        };
        let s = judged(&trusted, None);
        assert_eq!(s.decision, ReviewDecision::ChangesRequested);
        assert_eq!(s.feedback.len(), 2);
        assert_eq!(s.left_out.len(), 1);
    }

    #[test]
    fn an_ignored_authors_approval_counts_for_nothing_even_in_githubs_decision() {
        let reviews = [by(1, "merge-bot", "MEMBER", "APPROVED")];
        let lists = Lists {
            reviews: &reviews,
            line_comments: &[],
            comments: &[],
        };
        let ignored = Authority {
            trusted: vec![],
            ignored: vec!["merge-bot".into()],
        };
        for github in [None, Some("APPROVED")] {
            let s = parse_review_state(&lists, github, "runner", &ignored, Some("c"), None)
                .expect("json");
            assert_eq!(s.decision, ReviewDecision::None, "{github:?}");
            assert!(!s.approved);
            assert!(s.left_out.is_empty(), "an ignored author is no news");
        }
    }
}
