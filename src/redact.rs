//! The one place secrets are masked. Every text that leaves the process (console lines, the
//! orchestration log, notifications, tracker comments, `status`, the halt diagnostic) goes
//! through [`redact`]; chunked sinks use [`LineRedactor`] so a secret split between two
//! chunks is still seen whole.
//!
//! Raw attempt archives are the one exception: they keep the agent's output byte for byte
//! (a person debugging a failure needs it) and are protected by being owner-only instead.
//!
//! Recognisable prefixes are kept (`ghp_***`, `sk-ant-***`) so a reader can tell what leaked
//! and rotate it. Redaction is idempotent: redacting twice changes nothing more.

use regex::{Captures, Regex};
use std::sync::LazyLock;

const MASK: &str = "***";

/// Masks every secret this module recognises in `text`, plus the values of the runner's own
/// secret-named environment variables.
pub fn redact(text: &str) -> String {
    redact_with(text, &PROCESS_SECRETS)
}

/// [`redact`] with an explicit list of known secret values (instead of the process
/// environment), for callers and tests that must not depend on the environment.
pub fn redact_with(text: &str, known: &[String]) -> String {
    let mut out = text.to_string();
    for value in known {
        if out.contains(value.as_str()) {
            out = out.replace(value.as_str(), MASK);
        }
    }
    for rule in RULES.iter() {
        out = rule.apply(&out);
    }
    out
}

/// Redacts every string (and object key) inside a JSON value, so the document stays valid
/// JSON whatever a mask replaces.
pub fn redact_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => *s = redact(s),
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut v) in entries {
                redact_json(&mut v);
                map.insert(redact(&key), v);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// True for a variable or key name whose value is a credential: it contains TOKEN, SECRET,
/// PASSWORD, PASSWD, PASSPHRASE, API_KEY / APIKEY, PRIVATE_KEY or ACCESS_KEY, or ends in
/// `_KEY`. `MAX_TOKENS` and the like are counts, not credentials.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    if upper.ends_with("TOKENS") {
        return false;
    }
    upper.ends_with("_KEY")
        || [
            "TOKEN",
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "PASSPHRASE",
            "API_KEY",
            "APIKEY",
            "PRIVATE_KEY",
            "ACCESS_KEY",
        ]
        .iter()
        .any(|needle| upper.contains(needle))
}

/// The stricter test for a name seen without quotes or `=`: it ends like a credential
/// variable (`_TOKEN`, `_KEY`, `_SECRET`, `PASSWORD`, `PASSWD`).
pub fn is_secret_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    ["_TOKEN", "_KEY", "_SECRET", "PASSWORD", "PASSWD"]
        .iter()
        .any(|suffix| upper.ends_with(suffix))
}

/// Values shorter than this are too likely to occur by chance (`true`, `1234`) to be masked
/// wherever they appear.
const MIN_KNOWN_SECRET_LEN: usize = 8;

/// The values of secret-named variables in `vars`, longest first so that a value containing
/// another is masked whole.
pub fn secret_values<I: IntoIterator<Item = (String, String)>>(vars: I) -> Vec<String> {
    let mut values: Vec<String> = vars
        .into_iter()
        .filter(|(name, value)| {
            is_secret_name(name)
                && value.chars().count() >= MIN_KNOWN_SECRET_LEN
                && value.chars().any(|c| c != '*')
        })
        .map(|(_, value)| value)
        .collect();
    values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    values.dedup();
    values
}

/// Snapshot taken on first use: the runner never sets secrets in its own environment later.
static PROCESS_SECRETS: LazyLock<Vec<String>> = LazyLock::new(|| {
    secret_values(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
    )
});

/// What a rule does with one match: `None` keeps the matched text.
type Replace = fn(&Captures, Option<char>) -> Option<String>;

/// Which characters a token's body is made of.
type CharClass = fn(char) -> bool;

struct Rule {
    re: Regex,
    replace: Replacement,
}

/// How a rule replaces a match.
enum Replacement {
    /// Its own function.
    With(Replace),
    /// A token known by its prefix ([`PREFIXED_TOKENS`]): [`masked_prefix`] with the least
    /// length of its body and the characters the body is made of.
    MaskedPrefix {
        min: usize,
        allowed: fn(char) -> bool,
    },
}

impl Rule {
    fn new(pattern: &str, replace: Replace) -> Rule {
        Rule::with(pattern, Replacement::With(replace))
    }

    fn with(pattern: &str, replace: Replacement) -> Rule {
        // The patterns are constants checked by the tests; a typo must fail loudly in them.
        #[allow(clippy::expect_used)]
        let re = Regex::new(pattern).expect("redaction pattern compiles");
        Rule { re, replace }
    }

    fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for caps in self.re.captures_iter(text) {
            let Some(m) = caps.get(0) else { continue };
            let before = text[..m.start()].chars().next_back();
            let replaced = match self.replace {
                Replacement::With(replace) => replace(&caps, before),
                Replacement::MaskedPrefix { min, allowed } => {
                    masked_prefix(&caps, before, min, allowed)
                }
            };
            if let Some(replacement) = replaced {
                out.push_str(&text[last..m.start()]);
                out.push_str(&replacement);
                last = m.end();
            }
        }
        out.push_str(&text[last..]);
        out
    }
}

fn group<'t>(caps: &Captures<'t>, i: usize) -> &'t str {
    caps.get(i).map_or("", |m| m.as_str())
}

/// A token must start a word: `task-abc…` is not an `sk-` key.
fn starts_word(before: Option<char>) -> bool {
    !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `prefix` then a body of which the leading `min..` characters of `allowed` are masked.
fn masked_prefix(
    caps: &Captures,
    before: Option<char>,
    min: usize,
    allowed: CharClass,
) -> Option<String> {
    if !starts_word(before) {
        return None;
    }
    let prefix = group(caps, 1);
    let body = group(caps, 2);
    let run = body.chars().take_while(|c| allowed(*c)).count();
    (run >= min).then(|| format!("{prefix}{MASK}{}", &body[run..]))
}

fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}
fn alnum_underscore(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}
fn alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}
fn upper_digit(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit()
}

/// API tokens known by their prefix, in the order they are tried (`sk-ant-` before `sk-`):
/// (pattern: the prefix, then the body; the least length of the body; its characters).
const PREFIXED_TOKENS: [(&str, usize, CharClass); 7] = [
    (r"(sk-ant-)([A-Za-z0-9_-]+)", 8, key_char),
    (r"(sk-)([A-Za-z0-9_-]+)", 16, key_char),
    (
        r"(github_pat_|gh[pousr]_)([A-Za-z0-9_-]+)",
        10,
        alnum_underscore,
    ),
    (r"(xox[abprse]-)([A-Za-z0-9_-]+)", 10, key_char),
    (r"(AIza)([A-Za-z0-9_-]+)", 30, key_char),
    (r"(npm_)([A-Za-z0-9_-]+)", 20, alnum),
    (r"(pypi-)([A-Za-z0-9_-]+)", 16, key_char),
];

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let mut rules = vec![
        // A PEM private key, to its END line or, when the text was cut, to the end.
        Rule::new(
            r"(?s)-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
            |caps, _| {
                let kind = group(caps, 1);
                let whole = group(caps, 0);
                // Inside a JSON string the line breaks are escaped: keep them escaped.
                let nl = if whole.contains('\n') || !whole.contains("\\n") {
                    "\n"
                } else {
                    "\\n"
                };
                Some(format!(
                    "-----BEGIN {kind}PRIVATE KEY-----{nl}{MASK}{nl}-----END {kind}PRIVATE KEY-----"
                ))
            },
        ),
        // Authorization headers, whatever the scheme.
        Rule::new(
            r#"(?i)(authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?)((?:bearer|basic|token|bot|digest)[ \t]+)?([^\s"'\\,;]+)"#,
            |caps, _| {
                let value = group(caps, 3);
                (value != MASK && !value.starts_with(MASK))
                    .then(|| format!("{}{}{MASK}", group(caps, 1), group(caps, 2)))
            },
        ),
        Rule::new(
            r"(?i)(bearer[ \t]+)([A-Za-z0-9._~+/=-]+)",
            |caps, before| starts_word(before).then(|| format!("{}{MASK}", group(caps, 1))),
        ),
    ];
    rules.extend(PREFIXED_TOKENS.iter().map(|&(pattern, min, allowed)| {
        Rule::with(pattern, Replacement::MaskedPrefix { min, allowed })
    }));
    rules.extend([
        // AWS access key ids are exactly 20 characters: a longer run is some other word.
        Rule::new(r"(AKIA|ASIA)([A-Za-z0-9]+)", |caps, before| {
            let body = group(caps, 2);
            let run = body.chars().take_while(|c| upper_digit(*c)).count();
            (starts_word(before) && run == 16)
                .then(|| format!("{}{MASK}{}", group(caps, 1), &body[run..]))
        }),
        // JSON web tokens: header and payload both start with `{"` in base64url.
        Rule::new(
            r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
            |_, _| Some(format!("eyJ{MASK}")),
        ),
        Rule::new(
            r"(hooks\.slack\.com/services/)[A-Za-z0-9_/-]+",
            |caps, _| Some(format!("{}{MASK}", group(caps, 1))),
        ),
        // The password of `scheme://user:password@host`: the last `@` ends it.
        Rule::new(r#"(://[^\s/?#"'<>`:]*:)([^\s/?#"'<>`]*)@"#, |caps, _| {
            let password = group(caps, 2);
            (!password.is_empty() && password != MASK).then(|| format!("{}{MASK}@", group(caps, 1)))
        }),
        // AWS secret keys (40 characters of base64) after a name that says what they are.
        Rule::new(
            r#"(?i)(aws[A-Za-z0-9_-]{0,20}secret[A-Za-z0-9_-]{0,20}\\?["']?[ \t]*[:=][ \t]*\\?["']?)([A-Za-z0-9/+=]{40})"#,
            |caps, _| Some(format!("{}{MASK}", group(caps, 1))),
        ),
        // NAME=value, NAME: value, "NAME": "value" (also JSON-escaped inside a string).
        Rule::new(
            r#"(?is)([A-Za-z0-9_-]*(?:token|secret|passw(?:or)?d|passphrase|api[_-]?key|private[_-]key|access[_-]key|[_-]key)[A-Za-z0-9_-]*)(\\?["']?[ \t]*[:=][ \t]*)(?:(\\")((?:[^"\\]|\\[^"])*)(\\")?|(")((?:[^"\\]|\\.)*)(")?|(')((?:[^'\\]|\\.)*)(')?|([^\s&;,"'`)}\]<>\\]+))"#,
            |caps, _| {
                let name = group(caps, 1);
                let sep = group(caps, 2);
                // A bare `word: text` is as often prose ("secrets: none") as a key: there
                // only a name shaped like a variable counts.
                let bare_colon = !sep.contains('=') && !sep.starts_with(['"', '\'', '\\']);
                let secret = if bare_colon {
                    is_secret_variable(name)
                } else {
                    is_secret_name(name)
                };
                if !secret {
                    return None;
                }
                let (open, inner, close) = [3, 6, 9]
                    .into_iter()
                    .find(|i| caps.get(*i).is_some())
                    .map_or(("", group(caps, 12), ""), |i| {
                        (group(caps, i), group(caps, i + 1), group(caps, i + 2))
                    });
                (!inner.is_empty() && inner != MASK)
                    .then(|| format!("{name}{sep}{open}{MASK}{close}"))
            },
        ),
    ]);
    rules
});

/// Redacts a text that arrives in chunks. Complete lines are redacted and released; an
/// unfinished line waits for the rest, so a secret split between chunks is masked whole. A
/// private key block spans lines and is held until its end. Memory stays bounded: a line (or
/// key block) longer than `max_pending` is released redacted as it stands.
pub struct LineRedactor {
    pending: String,
    max_pending: usize,
    known: Vec<String>,
}

impl LineRedactor {
    /// `known`: secret values to mask wherever they appear (see [`secret_values`]).
    pub fn new(max_pending: usize, known: Vec<String>) -> LineRedactor {
        LineRedactor {
            pending: String::new(),
            max_pending,
            known,
        }
    }

    /// Takes the next chunk; returns the redacted text that can be released now.
    pub fn push(&mut self, chunk: &str) -> String {
        self.pending.push_str(chunk);
        let cut = self.safe_cut();
        if cut == 0 {
            return String::new();
        }
        let ready: String = self.pending.drain(..cut).collect();
        redact_with(&ready, &self.known)
    }

    /// Releases whatever is left, redacted.
    pub fn finish(mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        redact_with(&rest, &self.known)
    }

    /// How much of `pending` can be redacted without waiting for more: up to the last line
    /// end, but never into an open private key block.
    fn safe_cut(&self) -> usize {
        let text = &self.pending;
        let Some(last_newline) = text.rfind('\n') else {
            return self.overflow_cut();
        };
        let mut cut = last_newline + 1;
        if let Some(begin) = open_key_block(&text[..cut]) {
            cut = begin;
        }
        if cut == 0 {
            self.overflow_cut()
        } else {
            cut
        }
    }

    fn overflow_cut(&self) -> usize {
        if self.pending.len() <= self.max_pending {
            return 0;
        }
        // Too long to wait for: release it all (redacted), on a character boundary.
        self.pending.len()
    }
}

/// Where a private key block that has not ended yet begins in `text`, if any.
fn open_key_block(text: &str) -> Option<usize> {
    static BEGIN: LazyLock<Regex> = LazyLock::new(|| {
        #[allow(clippy::expect_used)]
        Regex::new(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----").expect("pattern compiles")
    });
    static END: LazyLock<Regex> = LazyLock::new(|| {
        #[allow(clippy::expect_used)]
        Regex::new(r"-----END [A-Z0-9 ]*PRIVATE KEY-----").expect("pattern compiles")
    });
    let begin = BEGIN.find_iter(text).last()?;
    let ended = END.find_at(text, begin.end()).is_some();
    (!ended).then(|| {
        // Hold back from the start of the line, so the header is redacted with its body.
        text[..begin.start()].rfind('\n').map_or(0, |i| i + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> String {
        redact_with(text, &[])
    }

    #[test]
    fn redact_masks_every_kind_of_credential() {
        let cases: &[(&str, &str)] = &[
            ("key sk-ant-api03-AbCdEf_123-xyz end", "key sk-ant-*** end"),
            ("sk-proj-abcdefghijklmnopqrstuvwx", "sk-***"),
            ("ghs_0123456789abcdefABCDEF", "ghs_***"),
            ("ghr_0123456789abcdefABCDEF", "ghr_***"),
            ("ghu_0123456789abcdefABCDEF", "ghu_***"),
            ("session ASIAIOSFODNN7EXAMPLE", "session ASIA***"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = ***",
            ),
            (
                "\"SecretAccessKey\": \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"",
                "\"SecretAccessKey\": \"***\"",
            ),
            (
                "google AIzaSyA1234567890abcdefghijklmnopqrstuv ok",
                "google AIza*** ok",
            ),
            ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_***"),
            ("pypi-AgEIcHlwaS5vcmcCJGFiY2RlZg", "pypi-***"),
            ("xoxs-1234567890-abcdef", "xoxs-***"),
            (
                "post https://hooks.slack.com/services/T000/B000/XXXXYYYY now",
                "post https://hooks.slack.com/services/*** now",
            ),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl done",
                "jwt eyJ*** done",
            ),
            (
                "Authorization: Basic dXNlcjpwYXNz",
                "Authorization: Basic ***",
            ),
            (
                "authorization: token ghp_abcdefghijk",
                "authorization: token ***",
            ),
            (
                "\"Authorization\": \"Bearer abc.def\"",
                "\"Authorization\": \"Bearer ***\"",
            ),
            ("GITHUB_TOKEN: ghp_abc next", "GITHUB_TOKEN: *** next"),
            ("STRIPE_KEY=rk_live_abc", "STRIPE_KEY=***"),
            ("X-Api-Key: abcdef", "X-Api-Key: ***"),
            (
                "{\\\"api_key\\\": \\\"abc def\\\"}",
                "{\\\"api_key\\\": \\\"***\\\"}",
            ),
            ("max_tokens: 4096", "max_tokens: 4096"),
        ];
        for (input, want) in cases {
            assert_eq!(&r(input), want, "input: {input:?}");
            assert_eq!(r(want), *want, "not idempotent on {want:?}");
        }
    }

    #[test]
    fn redact_masks_private_key_blocks_even_when_cut() {
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\nabcd\n-----END RSA PRIVATE KEY-----";
        let out = r(&format!("before\n{key}\nafter"));
        assert_eq!(
            out,
            "before\n-----BEGIN RSA PRIVATE KEY-----\n***\n-----END RSA PRIVATE KEY-----\nafter"
        );
        let cut = r("x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\nAAAA");
        assert!(!cut.contains("b3BlbnNz"), "{cut}");
        assert!(!cut.contains("AAAA"), "{cut}");
        assert_eq!(r(&cut), cut);
    }

    #[test]
    fn redact_masks_known_environment_values_anywhere() {
        let known = secret_values([
            ("DEPLOY_TOKEN".to_string(), "plain-words-value".to_string()),
            ("SHORT_TOKEN".to_string(), "1234".to_string()),
            ("HOME".to_string(), "/home/someone".to_string()),
        ]);
        assert_eq!(known, vec!["plain-words-value".to_string()]);
        assert_eq!(
            redact_with("got plain-words-value from /home/someone, 1234", &known),
            "got *** from /home/someone, 1234"
        );
    }

    #[test]
    fn redact_line_stream_sees_secrets_split_between_chunks() {
        let mut s = LineRedactor::new(1 << 16, vec![]);
        let mut out = s.push("token ghp_abcd");
        out.push_str(&s.push("efghijkl rest\nnext -----BEGIN PRIVATE KEY-----\nMIIsecret"));
        out.push_str(&s.push("body\n-----END PRIVATE KEY-----\ntail"));
        out.push_str(&s.finish());
        assert_eq!(
            out,
            "token ghp_*** rest\nnext -----BEGIN PRIVATE KEY-----\n***\n-----END PRIVATE KEY-----\ntail"
        );
    }
}
