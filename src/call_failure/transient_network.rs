//! Whether a failed git, gh or tracker call failed for a transient network reason, from the
//! text it printed: the table the adapters' classification (`call_failure`) reads for
//! `CallFailureKind::Network`. Nothing else decides by it. Deterministic; the patterns are the messages git (curl, ssh), gh and the
//! runner's own time-limit print for connection, DNS, TLS, HTTP 5xx and time-out failures.
//! Anything else (authentication, a missing repository, a 404, a bad argument) is not
//! transient and is handled as before.

/// Lower-case fragments that mark a transient network failure.
const TRANSIENT: &[&str] = &[
    "error connecting to",
    "connection refused",
    "connection reset",
    "connection timed out",
    "connection closed",
    "connection aborted",
    "network is unreachable",
    "no route to host",
    "could not resolve host",
    "could not resolve hostname",
    "temporary failure in name resolution",
    "name or service not known",
    "no such host",
    "tls handshake",
    "ssl_connect",
    "ssl_error",
    "gnutls_handshake",
    "unexpected disconnect",
    "the remote end hung up unexpectedly",
    "early eof",
    "rpc failed",
    "operation timed out",
    "i/o timeout",
    "timeout awaiting response headers",
    "502 bad gateway",
    "503 service unavailable",
    "504 gateway timeout",
    "500 internal server error",
    "http 500",
    "http 502",
    "http 503",
    "http 504",
    "returned error: 500",
    "returned error: 502",
    "returned error: 503",
    "returned error: 504",
    "server error",
    "no answer within",
];

/// Fragments that decide against: the network worked and the answer was "no".
const PERMANENT: &[&str] = &[
    "authentication failed",
    "bad credentials",
    "permission denied (publickey)",
    "http 401",
    "http 403",
    "http 404",
    "could not read username",
    "repository not found",
    "not a git repository",
];

/// Whether `output` (a command's error text) shows a transient network failure.
pub fn is_transient(output: &str) -> bool {
    let text = output.to_ascii_lowercase();
    if PERMANENT.iter().any(|p| text.contains(p)) {
        return false;
    }
    TRANSIENT.iter().any(|p| text.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_failures_of_git_and_gh_are_recognised() {
        for text in [
            "error connecting to api.github.com\ncheck your internet connection or https://githubstatus.com",
            "fatal: unable to access 'https://github.com/o/r.git/': Could not resolve host: github.com",
            "ssh: Could not resolve hostname github.com: Temporary failure in name resolution\nfatal: Could not read from remote repository.",
            "fatal: unable to access 'https://github.com/o/r.git/': Failed to connect to github.com port 443 after 2 ms: Connection refused",
            "error: RPC failed; curl 56 OpenSSL SSL_read: Connection reset by peer, errno 104\nfatal: the remote end hung up unexpectedly\nfatal: early EOF",
            "fatal: unable to access 'https://github.com/o/r.git/': gnutls_handshake() failed: The TLS connection was non-properly terminated.",
            "fatal: unable to access 'https://github.com/o/r.git/': The requested URL returned error: 502",
            "HTTP 503: Service Unavailable (https://api.github.com/graphql)",
            "HTTP 502: 502 Bad Gateway",
            "Post \"https://api.github.com/graphql\": dial tcp: lookup api.github.com: no such host",
            "Post \"https://api.github.com/graphql\": net/http: TLS handshake timeout",
            "git fetch (in /p): no answer within 300 s; stopped",
            "ssh: connect to host github.com port 22: Connection timed out",
            "ssh: connect to host github.com port 22: Network is unreachable",
        ] {
            assert!(is_transient(text), "{text}");
        }
    }

    #[test]
    fn failures_the_network_did_not_cause_are_not_transient() {
        for text in [
            "remote: Invalid username or password.\nfatal: Authentication failed for 'https://github.com/o/r.git/'",
            "HTTP 401: Bad credentials (https://api.github.com/graphql)",
            "HTTP 404: Not Found (https://api.github.com/repos/o/r/issues/9)",
            "git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.",
            "fatal: not a git repository (or any of the parent directories): .git",
            "ERROR: Repository not found.",
            "error: pathspec 'x' did not match any file(s) known to git",
            "GraphQL: Could not resolve to an issue or pull request with the number of 99999. (repository.issue)",
            "",
        ] {
            assert!(!is_transient(text), "{text}");
        }
    }
}
