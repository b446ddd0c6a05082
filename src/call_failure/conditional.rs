//! Conditional reads of GitHub's REST API: a GET the runner made before is asked again with
//! `If-None-Match: <the ETag of its last answer>`, and GitHub's `304 Not Modified` stands for
//! that answer. A 304 does not count against the token's primary rate limit, so an issue read
//! before every step, a CI look that finds nothing new or a review look on an unchanged pull
//! request spend nothing. The answers are kept for the process's life (the tracker's and the
//! forge's calls share them), a bounded number of them, keyed by the repository gh runs in and
//! the endpoint; a 304 without a kept answer (the process restarted) cannot happen, because
//! the question was not conditional then.

use super::HttpAnswer;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

/// The most answers kept; past it, the oldest goes. An issue's cycle reads fewer than 20
/// endpoints, and a fleet's workers share the same few.
const MOST: usize = 512;

struct Kept {
    etag: String,
    body: Vec<u8>,
    /// When it was stored, in stores made: the smallest is the oldest.
    stored: u64,
}

#[derive(Default)]
struct Cache {
    answers: HashMap<String, Kept>,
    stores: u64,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

fn with_cache<T>(f: impl FnOnce(&mut Cache) -> T) -> T {
    let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(Cache::default))
}

/// Counts a GitHub answer in the runner's stats: a request made, a `304` among them, the
/// rate-limit budget it names. A GraphQL call, never conditional, is counted here alone.
pub fn count(answer: &HttpAnswer) {
    crate::stats::github_request(
        answer.status == 304,
        answer
            .header("x-ratelimit-remaining")
            .and_then(|r| r.parse().ok()),
    );
}

/// One call's part in the conditional reads: for a GET, the ETag it asks with (if an answer
/// is kept) and where its answer is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conditional {
    key: Option<String>,
    etag: Option<String>,
}

impl Conditional {
    /// The call `method endpoint` made by gh in `repo_dir`: only a GET is conditional.
    pub fn for_call(method: &str, repo_dir: &Path, endpoint: &str) -> Conditional {
        if method != "GET" {
            return Conditional {
                key: None,
                etag: None,
            };
        }
        let key = format!("{}\n{endpoint}", repo_dir.display());
        let etag = with_cache(|c| c.answers.get(&key).map(|k| k.etag.clone()));
        Conditional {
            key: Some(key),
            etag,
        }
    }

    /// The arguments that make gh's request conditional: `-H If-None-Match:<etag>`.
    pub fn args(&self) -> Vec<String> {
        match &self.etag {
            Some(etag) => vec!["-H".into(), format!("If-None-Match: {etag}")],
            None => Vec::new(),
        }
    }

    /// Settles the answer: a 304 becomes the kept answer's body with status 200 (the 304's
    /// headers stay: its rate-limit figures are today's); a success with an ETag is kept.
    /// Counts the request in the runner's stats either way.
    pub fn settle(&self, answer: &mut HttpAnswer) {
        let not_modified = answer.status == 304;
        count(answer);
        let Some(key) = &self.key else {
            return;
        };
        if not_modified {
            if let Some(body) = with_cache(|c| c.answers.get(key).map(|k| k.body.clone())) {
                answer.status = 200;
                answer.body = body;
            }
            return;
        }
        let etag = answer.header("etag").map(str::to_string);
        with_cache(|c| match etag {
            Some(etag) if answer.ok() => {
                if c.answers.len() >= MOST && !c.answers.contains_key(key) {
                    let oldest = c
                        .answers
                        .iter()
                        .min_by_key(|(_, k)| k.stored)
                        .map(|(k, _)| k.clone());
                    if let Some(oldest) = oldest {
                        c.answers.remove(&oldest);
                    }
                }
                c.stores += 1;
                let stored = c.stores;
                c.answers.insert(
                    key.clone(),
                    Kept {
                        etag,
                        body: answer.body.clone(),
                        stored,
                    },
                );
            }
            // An answer without an ETag, or a failure, leaves nothing to ask with.
            _ => {
                c.answers.remove(key);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, etag: Option<&str>, body: &str) -> HttpAnswer {
        HttpAnswer {
            status,
            headers: etag
                .map(|e| vec![("etag".to_string(), e.to_string())])
                .unwrap_or_default(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_get_asks_again_with_the_etag_and_a_304_stands_for_the_kept_answer() {
        let repo = Path::new("/conditional/test/one");
        let first = Conditional::for_call("GET", repo, "repos/o/r/issues/1");
        assert!(
            first.args().is_empty(),
            "nothing kept yet: {:?}",
            first.args()
        );
        first.settle(&mut answer(200, Some("W/\"a1\""), "{\"n\":1}"));

        let second = Conditional::for_call("GET", repo, "repos/o/r/issues/1");
        assert_eq!(second.args(), ["-H", "If-None-Match: W/\"a1\""]);
        let mut unchanged = answer(304, None, "");
        second.settle(&mut unchanged);
        assert_eq!(unchanged.status, 200);
        assert_eq!(unchanged.body, b"{\"n\":1}");
    }

    #[test]
    fn writes_are_never_conditional_and_a_failure_forgets_the_kept_answer() {
        let repo = Path::new("/conditional/test/two");
        assert!(Conditional::for_call("POST", repo, "repos/o/r/pulls")
            .args()
            .is_empty());
        let get = Conditional::for_call("GET", repo, "repos/o/r/pulls/1");
        get.settle(&mut answer(200, Some("\"b\""), "{}"));
        let again = Conditional::for_call("GET", repo, "repos/o/r/pulls/1");
        again.settle(&mut answer(404, None, "{\"message\":\"Not Found\"}"));
        assert!(Conditional::for_call("GET", repo, "repos/o/r/pulls/1")
            .args()
            .is_empty());
    }

    #[test]
    fn each_repository_keeps_its_own_answers() {
        let get = Conditional::for_call("GET", Path::new("/conditional/a"), "repos/o/r/issues/2");
        get.settle(&mut answer(200, Some("\"c\""), "{}"));
        assert!(
            Conditional::for_call("GET", Path::new("/conditional/b"), "repos/o/r/issues/2")
                .args()
                .is_empty()
        );
    }
}
