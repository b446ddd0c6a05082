//! The whole text of an issue as the agent reads it: title, body and, on GitHub, the
//! comments. It reaches the agent through a file (see `driver::invoke`), never through a
//! command-line argument, whose size the kernel limits.

/// The most the runner hands an agent of one issue's text (title, body and comments, as
/// rendered). An issue over it is refused for that issue (escalated with its size), never
/// cut silently: what an agent is told must be the issue as written.
pub const MAX_ISSUE_TEXT_BYTES: usize = 1024 * 1024;

use super::{Comment, IssueText};

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
/// and its comments, oldest first (`body`, `user.login`).
pub(super) fn rest_text(
    number: u32,
    issue: &serde_json::Value,
    comments: &[serde_json::Value],
) -> IssueText {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    IssueText {
        number,
        title: text(&issue["title"]),
        body: text(&issue["body"]),
        comments: comments
            .iter()
            .map(|c| Comment {
                author: text(&c["user"]["login"]),
                body: text(&c["body"]),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gh_comments_are_read_and_rendered_in_order() {
        let issue = serde_json::json!({"title": "T", "body": "B"});
        let comments = [
            serde_json::json!({"user": {"login": "ann"}, "body": "first"}),
            serde_json::json!({"body": "second"}),
        ];
        let text = rest_text(4, &issue, &comments);
        let doc = text.render();
        assert!(doc.starts_with("# Issue #4: T\n\nB\n"), "{doc}");
        let first = doc.find("## Comment 1 by ann\n\nfirst").unwrap();
        let second = doc.find("## Comment 2\n\nsecond").unwrap();
        assert!(first < second, "{doc}");
    }
}
