//! GitHub's answer as `gh api --include` prints it (the status line, the headers, a blank
//! line, the body), and what a failed answer's status and headers mean. Rate limits are told
//! from the headers GitHub sends with them, never from the message's prose: a primary limit
//! (403 or 429 with `X-RateLimit-Remaining: 0`) lasts until `X-RateLimit-Reset`, a secondary
//! one (`Retry-After`, or 429 or a 403 whose body names it without it) for `Retry-After`
//! seconds or one minute. GitLab's
//! 429 without `Retry-After` lasts until its `RateLimit-Reset`.

use super::CallFailureKind;

/// How long GitHub asks a client to wait after a secondary limit that names no time.
pub const SECONDARY_LIMIT_SECS: u64 = 60;

/// One answer of GitHub's HTTP API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAnswer {
    /// The HTTP status (200, 404, …).
    pub status: u16,
    /// The headers, names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body (JSON for GitHub's API).
    pub body: Vec<u8>,
}

impl HttpAnswer {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Reads `gh api --include`'s output. `None` when it does not start with an HTTP status
    /// line (gh printed nothing: it could not reach the API at all).
    pub fn parse(out: &[u8]) -> Option<HttpAnswer> {
        let (head, body) = split_head(out)?;
        let head = String::from_utf8_lossy(head);
        let mut lines = head.lines();
        let status_line = lines.next()?;
        let mut words = status_line.split_whitespace();
        if !words.next()?.starts_with("HTTP/") {
            return None;
        }
        let status: u16 = words.next()?.parse().ok()?;
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Some(HttpAnswer {
            status,
            headers,
            body: body.to_vec(),
        })
    }

    /// Whether GitHub answered with a success status.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Whether a GraphQL answer holds data to read: a success status and no error in its
    /// body. GitHub's GraphQL answers a rate limit or a failed query with 200 and an `errors`
    /// list, which [`HttpAnswer::failure_kind`] reads (a limit, or a failed call).
    pub fn graphql_ok(&self) -> bool {
        self.ok() && self.graphql_error_types().is_empty()
    }

    /// The `type` of each error of a GraphQL body (`RATE_LIMITED`, `NOT_FOUND`, …; an error
    /// without one counts as `""`); empty for a body that holds none. Only a body that
    /// names `"errors"` is parsed, so REST's large lists cost nothing here.
    fn graphql_error_types(&self) -> Vec<String> {
        if !self.body.windows(8).any(|w| w == b"\"errors\"") {
            return Vec::new();
        }
        let Ok(body) = serde_json::from_slice::<serde_json::Value>(&self.body) else {
            return Vec::new();
        };
        body.get("errors")
            .and_then(serde_json::Value::as_array)
            .map(|errors| {
                errors
                    .iter()
                    .map(|e| e["type"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the body is GitHub's secondary-limit refusal: a 403 that may come without
    /// `Retry-After`, told from a plain refusal by the documentation its body points to
    /// (`documentation_url`, `…secondary-rate-limits`) or, without one, its `message`.
    fn names_secondary_limit(&self) -> bool {
        let Ok(body) = serde_json::from_slice::<serde_json::Value>(&self.body) else {
            return false;
        };
        let field = |name: &str| body[name].as_str().unwrap_or_default().to_ascii_lowercase();
        field("documentation_url").contains("secondary-rate-limits")
            || field("message").contains("secondary rate limit")
    }

    /// What a failed answer means, from its status and headers. `now_epoch_secs`: the time
    /// the answer arrived, against which a primary limit's reset is measured.
    pub fn failure_kind(&self, now_epoch_secs: u64) -> CallFailureKind {
        let number = |name: &str| self.header(name).and_then(|v| v.trim().parse::<u64>().ok());
        if (200..300).contains(&self.status) {
            // GraphQL's refusals come with a success status; only a limit is worth a wait.
            if !self
                .graphql_error_types()
                .iter()
                .any(|t| t == "RATE_LIMITED")
            {
                return CallFailureKind::Other;
            }
            let wait_secs = match number("x-ratelimit-remaining") {
                Some(0) => number("x-ratelimit-reset")
                    .unwrap_or(now_epoch_secs)
                    .saturating_sub(now_epoch_secs)
                    .max(1),
                _ => SECONDARY_LIMIT_SECS,
            };
            return CallFailureKind::RateLimited { wait_secs };
        }
        let limited_status = matches!(self.status, 403 | 429);
        if limited_status && number("x-ratelimit-remaining") == Some(0) {
            let reset = number("x-ratelimit-reset").unwrap_or(now_epoch_secs);
            // A reset already past (clocks differ) still needs a moment before the next call.
            let wait_secs = reset.saturating_sub(now_epoch_secs).max(1);
            return CallFailureKind::RateLimited { wait_secs };
        }
        if let Some(after) = number("retry-after").filter(|_| limited_status) {
            return CallFailureKind::RateLimited {
                wait_secs: after.max(1),
            };
        }
        // GitLab's 429 names the reset (epoch seconds) when it names no `Retry-After`.
        if let Some(reset) = number("ratelimit-reset").filter(|_| self.status == 429) {
            return CallFailureKind::RateLimited {
                wait_secs: reset.saturating_sub(now_epoch_secs).max(1),
            };
        }
        if self.status == 403 && self.names_secondary_limit() {
            return CallFailureKind::RateLimited {
                wait_secs: SECONDARY_LIMIT_SECS,
            };
        }
        match self.status {
            429 => CallFailureKind::RateLimited {
                wait_secs: SECONDARY_LIMIT_SECS,
            },
            401 => CallFailureKind::Auth,
            403 => CallFailureKind::Permission,
            404 | 410 => CallFailureKind::NotFound,
            409 => CallFailureKind::Conflict,
            500..=599 => CallFailureKind::Network,
            _ => CallFailureKind::Other,
        }
    }
}

/// The arguments of `gh api --include [-X method] <endpoint> [--input -]`: the call whose
/// printed answer [`HttpAnswer::parse`] reads (status and headers included); `with_body`
/// sends the request's JSON on gh's standard input, never as an argument.
pub fn gh_api_args(method: &str, endpoint: &str, with_body: bool) -> Vec<String> {
    let mut args: Vec<String> = vec!["api".into(), "--include".into()];
    if method != "GET" {
        args.extend(["-X".into(), method.into()]);
    }
    args.push(endpoint.into());
    if with_body {
        args.extend(["--input".into(), "-".into()]);
    }
    args
}

/// The arguments of `gh api --include graphql` for `query` about item `number` of the
/// repository gh runs in (its `$owner`, `$repo` and `$number`): the call whose printed answer
/// [`HttpAnswer::parse`] reads, a GraphQL limit included.
pub fn gh_graphql_args(query: &str, number: u32) -> Vec<String> {
    [
        "api",
        "--include",
        "graphql",
        "-F",
        "owner={owner}",
        "-F",
        "repo={repo}",
        "-F",
    ]
    .into_iter()
    .map(String::from)
    .chain([
        format!("number={number}"),
        "-f".into(),
        format!("query={query}"),
    ])
    .collect()
}

/// Every byte but the unreserved ones (RFC 3986: letters, digits, `-._~`) is escaped, so the
/// text is one path segment or one query value whatever it holds.
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` as one path segment or query value of a REST address: a branch or label name may
/// hold `/`, spaces or `&`.
pub fn path_segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, UNRESERVED).to_string()
}

/// The head and the body, split at the first empty line (CRLF or LF).
fn split_head(out: &[u8]) -> Option<(&[u8], &[u8])> {
    for (sep, len) in [(&b"\r\n\r\n"[..], 4), (&b"\n\n"[..], 2)] {
        if let Some(at) = out.windows(len).position(|w| w == sep) {
            return Some((&out[..at], &out[at + len..]));
        }
    }
    // A head with no body at all (a 204) ends at the output's end.
    out.starts_with(b"HTTP/").then_some((out, &[][..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use CallFailureKind as K;

    fn answer(text: &str) -> HttpAnswer {
        HttpAnswer::parse(text.as_bytes()).expect("an HTTP answer")
    }

    #[test]
    fn the_head_and_the_body_are_read_as_gh_prints_them() {
        let a = answer("HTTP/2.0 200 OK\r\nContent-Type: application/json\r\nX-Ratelimit-Remaining: 4999\r\n\r\n{\"a\":1}");
        assert_eq!(a.status, 200);
        assert_eq!(a.header("X-RateLimit-Remaining"), Some("4999"));
        assert_eq!(a.body, b"{\"a\":1}");
        assert!(a.ok());
        // gh 2.23 ends the status line with a bare LF.
        let a = answer("HTTP/1.1 404 Not Found\nContent-Length: 2\r\n\r\n{}");
        assert_eq!((a.status, a.body.as_slice()), (404, &b"{}"[..]));
        assert!(HttpAnswer::parse(b"").is_none());
        assert!(HttpAnswer::parse(b"[]").is_none());
    }

    #[test]
    fn a_graphql_limit_answered_with_200_is_a_limit_to_wait_out_not_an_answer() {
        let now = 1_000_000;
        let limited = answer("HTTP/2.0 200 OK\r\nX-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 1000045\r\n\r\n{\"data\":null,\"errors\":[{\"type\":\"RATE_LIMITED\",\"message\":\"API rate limit exceeded for user ID 1.\"}]}");
        assert!(!limited.graphql_ok());
        assert_eq!(limited.failure_kind(now), K::RateLimited { wait_secs: 45 });
        let no_reset = answer(
            "HTTP/2.0 200 OK\r\n\r\n{\"errors\":[{\"type\":\"RATE_LIMITED\",\"message\":\"x\"}]}",
        );
        assert_eq!(
            no_reset.failure_kind(now),
            K::RateLimited {
                wait_secs: SECONDARY_LIMIT_SECS
            }
        );
        let bad_query = answer("HTTP/2.0 200 OK\r\n\r\n{\"data\":null,\"errors\":[{\"type\":\"NOT_FOUND\",\"message\":\"Could not resolve\"}]}");
        assert!(!bad_query.graphql_ok());
        assert_eq!(bad_query.failure_kind(now), K::Other);
        // A REST body that only mentions the word, and GraphQL data, are answers.
        assert!(
            answer("HTTP/2.0 200 OK\r\n\r\n{\"title\":\"fix \\\"errors\\\" list\"}").graphql_ok()
        );
        assert!(answer("HTTP/2.0 200 OK\r\n\r\n{\"data\":{\"a\":1}}").graphql_ok());
        // Plain `ok` is the status alone: other clients read GraphQL errors their own way.
        assert!(limited.ok());
    }

    #[test]
    fn limits_are_told_by_status_and_headers_not_by_prose() {
        let now = 1_000_000;
        let primary = answer("HTTP/2.0 403 Forbidden\r\nX-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 1000120\r\n\r\n{\"message\":\"API rate limit exceeded\"}");
        assert_eq!(primary.failure_kind(now), K::RateLimited { wait_secs: 120 });
        let primary_429 =
            answer("HTTP/2.0 429 Too Many Requests\r\nx-ratelimit-remaining: 0\r\nx-ratelimit-reset: 999000\r\n\r\n{}");
        assert_eq!(
            primary_429.failure_kind(now),
            K::RateLimited { wait_secs: 1 }
        );
        let secondary = answer("HTTP/2.0 403 Forbidden\r\nRetry-After: 30\r\nX-RateLimit-Remaining: 12\r\n\r\n{\"message\":\"You have exceeded a secondary rate limit\"}");
        assert_eq!(
            secondary.failure_kind(now),
            K::RateLimited { wait_secs: 30 }
        );
        let bare_429 = answer("HTTP/2.0 429 Too Many Requests\r\n\r\n{}");
        assert_eq!(
            bare_429.failure_kind(now),
            K::RateLimited {
                wait_secs: SECONDARY_LIMIT_SECS
            }
        );
        // GitHub's secondary limit without `Retry-After`: a 403 whose body names it; a minute.
        let secondary_403 = answer("HTTP/2.0 403 Forbidden\r\nX-RateLimit-Remaining: 4000\r\n\r\n{\"message\":\"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.\",\"documentation_url\":\"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits\"}");
        assert_eq!(
            secondary_403.failure_kind(now),
            K::RateLimited {
                wait_secs: SECONDARY_LIMIT_SECS
            }
        );
        // The same words without the headers are a refusal, not a limit.
        let prose = answer("HTTP/2.0 403 Forbidden\r\nX-RateLimit-Remaining: 4000\r\n\r\n{\"message\":\"API rate limit exceeded\"}");
        assert_eq!(prose.failure_kind(now), K::Permission);
        assert_eq!(
            answer("HTTP/2.0 404 Not Found\r\n\r\n{}").failure_kind(now),
            K::NotFound
        );
        assert_eq!(
            answer("HTTP/2.0 502 Bad Gateway\r\n\r\n").failure_kind(now),
            K::Network
        );
        assert_eq!(
            answer("HTTP/2.0 401 Unauthorized\r\n\r\n{}").failure_kind(now),
            K::Auth
        );
    }
}
