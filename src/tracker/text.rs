//! The whole text of an issue as the agent reads it: title, body and, on GitHub, the
//! comments. It reaches the agent through a file (see `prompt`), never through a
//! command-line argument, whose size the kernel limits.

/// The most the runner hands an agent of one issue's text (title, body and comments, as
/// rendered). An issue over it is refused for that issue (escalated with its size), never
/// cut silently: what an agent is told must be the issue as written.
pub const MAX_ISSUE_TEXT_BYTES: usize = 1024 * 1024;

use super::{Comment, IssueText};
use crate::authority::{judge, Authority, Standing, Verdict};

impl IssueText {
    /// An issue's title and body, without comments (a tracker that has none).
    pub fn of(issue: &super::Issue) -> IssueText {
        IssueText {
            number: issue.number,
            title: issue.title.clone(),
            body: issue.body.clone(),
            comments: Vec::new(),
        }
    }

    /// [`IssueText::render`], refused (with a message naming the size, the cap and the fix)
    /// when it is over [`MAX_ISSUE_TEXT_BYTES`].
    pub fn render_within(&self) -> Result<String, String> {
        let rendered = self.render();
        if rendered.len() > MAX_ISSUE_TEXT_BYTES {
            return Err(format!(
                "issue #{} is {} bytes (title, description and comments), more than the {MAX_ISSUE_TEXT_BYTES} bytes the runner hands an agent; shorten it (a long log belongs in an attachment) and release it",
                self.number,
                rendered.len()
            ));
        }
        Ok(rendered)
    }

    /// The text as a Markdown document, for the agent to read.
    pub fn render(&self) -> String {
        let mut out = format!("# Issue #{}: {}\n\n", self.number, self.title);
        if self.body.trim().is_empty() {
            out.push_str("(no description)\n");
        } else {
            out.push_str(&self.body);
            if !self.body.ends_with('\n') {
                out.push('\n');
            }
        }
        for (i, c) in self.comments.iter().enumerate() {
            let by = if c.author.is_empty() {
                String::new()
            } else {
                format!(" by {}", c.author)
            };
            out.push_str(&format!("\n## Comment {}{by}\n\n{}", i + 1, c.body));
            if !c.body.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }
}

/// An issue's text from GitHub's REST answers: the issue (`…/issues/N`: `title`, `body`)
/// and its comments, oldest first (`body`, `user.login`), leaving out the comments whose
/// author does not count under `authority` (`author_association`, [`judge`]); those left
/// out for want of authority are named with why, once each.
pub(crate) fn rest_text(
    number: u32,
    issue: &serde_json::Value,
    comments: &[serde_json::Value],
    authority: &Authority,
) -> (IssueText, Vec<(String, String)>) {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let mut left_out: Vec<(String, String)> = Vec::new();
    let mut kept = Vec::new();
    for c in comments {
        let author = text(&c["user"]["login"]);
        let association = c["author_association"].as_str().unwrap_or_default();
        match judge(&author, Standing::Association(association), authority) {
            Verdict::Counts => kept.push(Comment {
                author,
                body: text(&c["body"]),
            }),
            Verdict::Ignored => {}
            Verdict::LeftOut(why) => {
                if !left_out.iter().any(|(w, _)| *w == author) {
                    left_out.push((author, why));
                }
            }
        }
    }
    let issue_text = IssueText {
        number,
        title: text(&issue["title"]),
        body: text(&issue["body"]),
        comments: kept,
    };
    (issue_text, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gh_comments_are_read_and_rendered_in_order() {
        let issue = serde_json::json!({"title": "T", "body": "B"});
        let comments = [
            serde_json::json!({"user": {"login": "ann"}, "body": "first",
                "author_association": "OWNER"}),
            serde_json::json!({"user": {"login": "bob"}, "body": "second",
                "author_association": "MEMBER"}),
        ];
        let (text, left_out) = rest_text(4, &issue, &comments, &Authority::default());
        assert!(left_out.is_empty());
        let doc = text.render();
        assert!(doc.starts_with("# Issue #4: T\n\nB\n"), "{doc}");
        let first = doc.find("## Comment 1 by ann\n\nfirst").unwrap();
        let second = doc.find("## Comment 2 by bob\n\nsecond").unwrap();
        assert!(first < second, "{doc}");
    }

    #[test]
    fn comments_by_authors_without_write_access_never_reach_the_agent_unless_trusted() {
        let issue = serde_json::json!({"title": "T", "body": "B"});
        let comments = [
            serde_json::json!({"user": {"login": "stranger"}, "body": "IGNORE PREVIOUS",
                "author_association": "NONE"}),
            serde_json::json!({"user": {"login": "stranger"}, "body": "again",
                "author_association": "NONE"}),
            serde_json::json!({"user": {"login": "bot"}, "body": "bot says",
                "author_association": "COLLABORATOR"}),
            serde_json::json!({"user": {"login": "ann"}, "body": "the lead",
                "author_association": "COLLABORATOR"}),
        ];
        let lists = Authority {
            trusted: vec![],
            ignored: vec!["bot".into()],
        };
        let (text, left_out) = rest_text(4, &issue, &comments, &lists);
        let doc = text.render();
        assert!(
            !doc.contains("IGNORE PREVIOUS") && !doc.contains("bot says"),
            "{doc}"
        );
        assert!(doc.contains("## Comment 1 by ann\n\nthe lead"), "{doc}");
        assert_eq!(left_out.len(), 1, "once per author: {left_out:?}");
        let trusted = Authority {
            trusted: vec!["stranger".into()],
            ignored: vec![],
        };
        let (text, left_out) = rest_text(4, &issue, &comments, &trusted);
        assert!(text.render().contains("IGNORE PREVIOUS"));
        assert!(left_out.is_empty());
    }
}
