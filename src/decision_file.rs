//! The decision file of manual approval (`<runner dir>/decision.json`): the runner writes a
//! request when a step has used up its automatic attempts, `sdlc-runner decide` writes the
//! answer into it, and the waiting runner reads the answer back. This module is the one place
//! that knows its format.

use crate::machine::DecisionOption;
use crate::safe_fs;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// What the file holds. Unknown fields are kept by `decide` (it rewrites only `answer`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub session: String,
    pub issue: u32,
    pub step: String,
    pub reason: String,
    pub last_failure: Option<String>,
    pub options: Vec<String>,
    pub how_to_answer: String,
    pub answer: Option<String>,
}

impl Request {
    /// The question of `session` on `issue` at `step`, asked for `reason` (the narration's
    /// `decision_reason`).
    pub fn new(
        session: &str,
        (issue, step): (u32, &str),
        reason: String,
        last_failure: Option<String>,
        config: &Path,
    ) -> Request {
        Request {
            session: session.to_string(),
            issue,
            step: step.to_string(),
            reason,
            last_failure,
            options: DecisionOption::ALL
                .iter()
                .map(|o| o.name().to_string())
                .collect(),
            how_to_answer: format!(
                "sdlc-runner decide <retry|skip|halt> --config {}",
                config.display()
            ),
            answer: None,
        }
    }
}

/// Writes the request (atomically, never through a symlink). A runner restarted while it
/// waited asks the same question again (same session, issue and step): an answer already in
/// the file for that question is kept, so a decision made while no runner was alive is not
/// lost. An answer the runner has read is removed with the file; were that removal refused,
/// this write in the same directory would be refused too, so a read answer is never reused.
pub fn write_request(path: &Path, request: &Request) -> io::Result<()> {
    let mut request = request.clone();
    if request.answer.is_none() {
        request.answer = answer_to(path, &request);
    }
    let text = serde_json::to_string_pretty(&request).map_err(io::Error::other)?;
    safe_fs::write_atomic(path, text.as_bytes())
}

/// The valid answer in the file when it answers the same question as `request`.
fn answer_to(path: &Path, request: &Request) -> Option<String> {
    let bytes = safe_fs::read_no_follow(path).ok()?;
    let asked: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let same = asked.get("session")?.as_str()? == request.session
        && asked.get("issue")?.as_u64()? == u64::from(request.issue)
        && asked.get("step")?.as_str()? == request.step;
    let option = DecisionOption::parse(asked.get("answer")?.as_str()?)?;
    same.then(|| option.name().to_string())
}

/// The answer in the file, if there is a valid one.
pub fn read_answer(path: &Path) -> Option<DecisionOption> {
    let bytes = safe_fs::read_no_follow(path).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    DecisionOption::parse(value.get("answer")?.as_str()?)
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("no decision is pending ({} does not exist)", .0.display())]
    NotPending(PathBuf),
    #[error("{}: {why}; the runner rewrites it at the next decision point", path.display())]
    Invalid { path: PathBuf, why: String },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Writes `option` as the answer to the pending request, keeping everything else in it.
pub fn answer(path: &Path, option: DecisionOption) -> Result<(), AnswerError> {
    let bytes = match safe_fs::read_no_follow(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(AnswerError::NotPending(path.to_path_buf()))
        }
        Err(source) => {
            return Err(AnswerError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let mut request: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| AnswerError::Invalid {
            path: path.to_path_buf(),
            why: format!("not valid JSON ({e})"),
        })?;
    let Some(obj) = request.as_object_mut() else {
        return Err(AnswerError::Invalid {
            path: path.to_path_buf(),
            why: "not a JSON object".into(),
        });
    };
    obj.insert(
        "answer".into(),
        serde_json::Value::String(option.name().into()),
    );
    let text = serde_json::to_string_pretty(&request).map_err(|e| AnswerError::Io {
        path: path.to_path_buf(),
        source: io::Error::other(e),
    })?;
    safe_fs::write_atomic(path, text.as_bytes()).map_err(|source| AnswerError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_answered_and_the_answer_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("decision.json");
        assert!(matches!(
            answer(&path, DecisionOption::Retry),
            Err(AnswerError::NotPending(_))
        ));
        let request = Request::new(
            "s",
            (3, "verify"),
            "why".into(),
            Some("TEST_ASSERTION".into()),
            Path::new("c.json"),
        );
        write_request(&path, &request).unwrap();
        assert_eq!(read_answer(&path), None);
        answer(&path, DecisionOption::Skip).unwrap();
        assert_eq!(read_answer(&path), Some(DecisionOption::Skip));
        let back: Request = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back.issue, 3);
        assert_eq!(back.answer.as_deref(), Some("skip"));

        // Asked again (a restarted runner): the answer stays; another question's does not.
        write_request(&path, &request).unwrap();
        assert_eq!(read_answer(&path), Some(DecisionOption::Skip));
        for other in [
            Request::new("s2", (3, "verify"), "why".into(), None, Path::new("c.json")),
            Request::new("s", (4, "verify"), "why".into(), None, Path::new("c.json")),
            Request::new(
                "s",
                (3, "implement"),
                "why".into(),
                None,
                Path::new("c.json"),
            ),
        ] {
            answer(&path, DecisionOption::Skip).unwrap();
            write_request(&path, &other).unwrap();
            assert_eq!(read_answer(&path), None, "{other:?}");
        }
        std::fs::remove_file(&path).unwrap();
        write_request(&path, &request).unwrap();
        assert_eq!(read_answer(&path), None, "a removed answer is gone");

        std::fs::write(&path, b"{ nope").unwrap();
        let err = answer(&path, DecisionOption::Halt).unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
    }
}
