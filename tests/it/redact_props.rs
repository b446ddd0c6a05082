//! Redaction as a property: whatever the agent prints around a secret, and however a
//! streamed sink cuts it into chunks, no secret of the corpus comes out.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sdlc_runner::redact::{redact, redact_with, LineRedactor};

#[test]
fn redaction_table() {
    let cases: &[(&str, &str)] = &[
        ("key sk-ant-api03-AbCdEf_123-xyz end", "key sk-ant-*** end"),
        ("sk-proj-abcdefghijklmnopqrstuvwx", "sk-***"),
        (
            "task-abcdefghijklmnopqrstuvwxyz stays",
            "task-abcdefghijklmnopqrstuvwxyz stays",
        ),
        ("sk-short", "sk-short"),
        ("gh ghp_0123456789abcdefABCDEF", "gh ghp_***"),
        ("gho_0123456789abcdef", "gho_***"),
        ("github_pat_11ABCDEFG0_abcdefghijklmnop", "github_pat_***"),
        ("slack xoxb-1234-5678-abcdefghij", "slack xoxb-***"),
        ("xoxp-1234567890-abc", "xoxp-***"),
        ("aws AKIAIOSFODNN7EXAMPLE.", "aws AKIA***."),
        ("AKIASHORT", "AKIASHORT"),
        (
            "Authorization: Bearer eyJhbGciOi.JIUzI1.NiIs",
            "Authorization: Bearer ***",
        ),
        ("authorization: bearer abc123", "authorization: bearer ***"),
        ("bearer", "bearer"),
        (
            "git clone https://bot:hunter2@github.com/o/r.git",
            "git clone https://bot:***@github.com/o/r.git",
        ),
        ("https://user@host/path", "https://user@host/path"),
        ("https://host/a:b@c", "https://host/a:b@c"),
        ("GITHUB_TOKEN=abc123 next", "GITHUB_TOKEN=*** next"),
        (
            "export DB_PASSWORD='p a s s' ok",
            "export DB_PASSWORD='***' ok",
        ),
        ("MY_SECRET=\"x\\\"y\" z", "MY_SECRET=\"***\" z"),
        ("openai_api_key=abc&other=1", "openai_api_key=***&other=1"),
        ("max_tokens=4096", "max_tokens=4096"),
        ("TOKEN=", "TOKEN="),
        (
            "{\"access_token\": \"abc.def\", \"n\": 1}",
            "{\"access_token\": \"***\", \"n\": 1}",
        ),
        (
            "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijkl",
            "ANTHROPIC_API_KEY=***",
        ),
        (
            "plain text with no secrets: ünïcødé",
            "plain text with no secrets: ünïcødé",
        ),
        ("", ""),
    ];
    for (input, want) in cases {
        assert_eq!(&redact(input), want, "input: {input:?}");
        assert_eq!(redact(want), *want, "not idempotent on {want:?}");
    }
}

/// One secret of each kind the runner must recognise, each as it would be printed. The
/// part that must never survive is the second element.
const CORPUS: &[(&str, &str)] = &[
    ("sk-ant-api03-Zx9_Qw-Er7Ty8Ui9Op0", "Zx9_Qw-Er7Ty8Ui9Op0"),
    ("sk-proj-Ab12Cd34Ef56Gh78Ij90Kl", "Ab12Cd34Ef56Gh78Ij90Kl"),
    ("ghp_R4nd0mT0k3nV4lu3Xy12", "R4nd0mT0k3nV4lu3Xy12"),
    ("gho_R4nd0mT0k3nV4lu3Xy12", "R4nd0mT0k3nV4lu3Xy12"),
    ("ghu_R4nd0mT0k3nV4lu3Xy12", "R4nd0mT0k3nV4lu3Xy12"),
    ("ghs_R4nd0mT0k3nV4lu3Xy12", "R4nd0mT0k3nV4lu3Xy12"),
    ("ghr_R4nd0mT0k3nV4lu3Xy12", "R4nd0mT0k3nV4lu3Xy12"),
    (
        "github_pat_11AAAAAAA0_Q1w2E3r4T5y6U7i8O9p0",
        "11AAAAAAA0_Q1w2E3r4T5y6U7i8O9p0",
    ),
    ("AKIAQ3EGXJ7V5EXAMPLE", "Q3EGXJ7V5EXAMPLE"),
    ("ASIAQ3EGXJ7V5EXAMPLE", "Q3EGXJ7V5EXAMPLE"),
    (
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE",
    ),
    (
        "AIzaSyD3m0K3yV4lu3Abcdefghijklmnopqrst",
        "SyD3m0K3yV4lu3Abcdefghijklmnopqrst",
    ),
    (
        "npm_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8",
        "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8",
    ),
    ("pypi-AgEIcHlwaS5vcmcCJDk4NzY1", "AgEIcHlwaS5vcmcCJDk4NzY1"),
    ("xoxb-123456789012-Abcdefghij", "123456789012-Abcdefghij"),
    (
        "https://hooks.slack.com/services/T0AAA/B0BBB/Zz9Yy8Xx7",
        "T0AAA/B0BBB/Zz9Yy8Xx7",
    ),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyMTIzIn0.S1gn4tur3V4lu3",
        "S1gn4tur3V4lu3",
    ),
    (
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBk3yB0dyL1n3\nOneM0reL1neOfKey\n-----END EC PRIVATE KEY-----",
        "MHcCAQEEIBk3yB0dyL1n3",
    ),
    (
        "-----BEGIN PRIVATE KEY-----\nTrUnC4t3dK3yB0dyNoEnd",
        "TrUnC4t3dK3yB0dyNoEnd",
    ),
    ("https://deploy:Hunt3r2Pa55@git.example.com/r.git", "Hunt3r2Pa55"),
    ("Authorization: Bearer 0p4qu3B34r3rT0k3n", "0p4qu3B34r3rT0k3n"),
    ("Authorization: Basic dXNlcjpTM2NyM3Q=", "dXNlcjpTM2NyM3Q="),
    ("Authorization: token Pl41nT0k3nV4lue", "Pl41nT0k3nV4lue"),
    ("SERVICE_TOKEN=Pl41nV4lu3N0Pr3f1x", "Pl41nV4lu3N0Pr3f1x"),
    ("stripe_key: Pl41nV4lu3K3yF0rm", "Pl41nV4lu3K3yF0rm"),
    ("\"client_secret\": \"Pl41nJs0nS3cr3t\"", "Pl41nJs0nS3cr3t"),
    ("DB_PASSWORD='c0rr3ct h0rs3'", "c0rr3ct h0rs3"),
];

/// Something an agent plausibly prints between secrets: words, paths, numbers, JSON
/// punctuation, unicode, line breaks.
fn noise() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z]{1,8}",
            "[A-Z][a-z]{0,6}",
            "[0-9]{1,5}",
            "/[a-z]{1,6}/[a-z]{1,6}\\.rs",
            Just("é€ü".to_string()),
            Just("{\"k\": 1}".to_string()),
        ],
        0..12,
    )
    .prop_flat_map(|words| {
        let n = words.len();
        (
            Just(words),
            prop::collection::vec(
                prop::sample::select(vec![" ", "\n", ", ", ": ", "\t", "; "]),
                n,
            ),
        )
    })
    .prop_map(|(words, seps)| {
        words
            .iter()
            .zip(seps)
            .map(|(w, s)| format!("{w}{s}"))
            .collect()
    })
}

/// Where a secret can sit: after a separator a tokenizer would also see.
fn separator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![" ", "\n", "(", "\"", "'", "=", ": ", "`", "[", "\t"])
}

fn document() -> impl Strategy<Value = (String, Vec<&'static str>)> {
    prop::collection::vec(
        (
            noise(),
            separator(),
            prop::sample::select(CORPUS.to_vec()),
            separator(),
        ),
        1..5,
    )
    .prop_map(|parts| {
        let mut text = String::new();
        let mut secrets = Vec::new();
        for (before, open, (printed, secret), close) in parts {
            text.push_str(&before);
            text.push_str(open);
            text.push_str(printed);
            text.push_str(close);
            // A trailing newline keeps a key block from running into the next secret.
            text.push('\n');
            secrets.push(secret);
        }
        (text, secrets)
    })
}

/// Splits `text` into chunks at the given (character-boundary-adjusted) positions.
fn chunks(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut positions: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut p = c % (text.len() + 1);
            while !text.is_char_boundary(p) {
                p -= 1;
            }
            p
        })
        .collect();
    positions.sort_unstable();
    let mut out = Vec::new();
    let mut last = 0;
    for p in positions {
        out.push(text[last..p].to_string());
        last = p;
    }
    out.push(text[last..].to_string());
    out
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1000,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/redact_props.txt"
        )))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn redaction_never_panics_and_is_idempotent(s in "\\PC{0,80}") {
        let once = redact(&s);
        prop_assert_eq!(redact(&once), once);
    }

    #[test]
    fn no_secret_of_the_corpus_survives_anywhere_in_agent_output((text, secrets) in document()) {
        let out = redact_with(&text, &[]);
        for secret in &secrets {
            prop_assert!(!out.contains(secret), "{secret:?} survived in {out:?}");
        }
        prop_assert_eq!(redact_with(&out, &[]), out);
    }

    #[test]
    fn no_secret_survives_a_streamed_sink_whatever_the_chunks(
        (text, secrets) in document(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        known in "[a-z]{4}-[a-z]{4}-[0-9]{4}",
    ) {
        let text = format!("{text}env value {known} here\n");
        let mut sink = LineRedactor::new(1 << 16, vec![known.clone()]);
        let mut out = String::new();
        for chunk in chunks(&text, &cuts) {
            out.push_str(&sink.push(&chunk));
        }
        out.push_str(&sink.finish());
        for secret in secrets.iter().copied().chain(std::iter::once(known.as_str())) {
            prop_assert!(!out.contains(secret), "{secret:?} survived in {out:?}");
        }
    }

    #[test]
    fn embedded_keys_never_survive(prefix in "[a-z ]{0,10}", key in "[A-Za-z0-9]{20,30}", suffix in "[ .,]{0,3}") {
        let text = format!("{prefix} sk-ant-{key}{suffix}");
        prop_assert!(!redact(&text).contains(&key));
        let text = format!("{prefix} ghp_{key}{suffix}");
        prop_assert!(!redact(&text).contains(&key));
    }
}
