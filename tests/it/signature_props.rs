//! Signature properties (docs/classification.md):
//!
//! | property | mutation it catches |
//! |---|---|
//! | `volatile_data_never_changes_the_signature` | a normalization rule missing or too narrow (timestamps, PIDs, UUIDs, temp/home paths, hex addresses, durations, session ids) |
//! | `classify_signature_ignores_volatile_data` | the signature taken over raw instead of normalized evidence |
//! | `different_tests_have_different_signatures` | normalization so greedy it erases test names |
//! | `different_error_codes_have_different_signatures` | error codes (`E0308`, `TS2322`) eaten as hex or numbers |

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sdlc_runner::agent::classify::{classify, normalize, signature, Observation};
use sdlc_runner::agent::stream::StreamReader;
use sdlc_runner::failure::FailureClass;
use std::path::{Path, PathBuf};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/signature_props.txt"
        )))),
        ..ProptestConfig::default()
    }
}

const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The kinds of volatile data; two values of one kind must normalize alike.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Iso,
    Rfc2822,
    Ctime,
    Clock,
    Pid,
    Uuid,
    TmpPath,
    HomePath,
    HexAddr,
    Duration,
    Session,
}

const KINDS: [Kind; 11] = [
    Kind::Iso,
    Kind::Rfc2822,
    Kind::Ctime,
    Kind::Clock,
    Kind::Pid,
    Kind::Uuid,
    Kind::TmpPath,
    Kind::HomePath,
    Kind::HexAddr,
    Kind::Duration,
    Kind::Session,
];

fn hex(n: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(prop::sample::select(b"0123456789abcdef".to_vec()), n)
        .prop_map(|v| String::from_utf8(v).unwrap())
}

fn uuid() -> impl Strategy<Value = String> {
    (hex(8), hex(4), hex(4), hex(4), hex(12), any::<bool>()).prop_map(|(a, b, c, d, e, upper)| {
        let s = format!("{a}-{b}-{c}-{d}-{e}");
        if upper {
            s.to_uppercase()
        } else {
            s
        }
    })
}

fn clock() -> impl Strategy<Value = String> {
    (0u32..24, 0u32..60, 0u32..60, prop::option::of(0u32..1000)).prop_map(
        |(h, m, s, ms)| match ms {
            Some(ms) => format!("{h:02}:{m:02}:{s:02}.{ms:03}"),
            None => format!("{h}:{m:02}:{s:02}"),
        },
    )
}

fn value(kind: Kind, form: usize) -> BoxedStrategy<String> {
    match kind {
        Kind::Iso => (1970u32..2100, 1u32..13, 1u32..29, clock(), 0usize..4)
            .prop_map(|(y, mo, d, t, zone)| {
                let t = t.split('.').next().unwrap().to_string();
                let t = if t.len() == 7 { format!("0{t}") } else { t };
                match zone {
                    0 => format!("{y}-{mo:02}-{d:02}T{t}.123Z"),
                    1 => format!("{y}-{mo:02}-{d:02} {t}"),
                    2 => format!("{y}-{mo:02}-{d:02}T{t}+02:00"),
                    _ => format!("{y}-{mo:02}-{d:02}"),
                }
            })
            .boxed(),
        Kind::Rfc2822 => (
            prop::sample::select(WEEKDAYS.to_vec()),
            1u32..29,
            prop::sample::select(MONTHS.to_vec()),
            1970u32..2100,
            clock(),
            prop::sample::select(vec!["+0000", "-0700", "GMT", "UTC"]),
        )
            .prop_map(|(wd, d, mo, y, t, z)| format!("{wd}, {d} {mo} {y} {t} {z}"))
            .boxed(),
        Kind::Ctime => (
            prop::sample::select(WEEKDAYS.to_vec()),
            prop::sample::select(MONTHS.to_vec()),
            1u32..29,
            clock(),
            1970u32..2100,
        )
            .prop_map(|(wd, mo, d, t, y)| format!("{wd} {mo} {d} {t} UTC {y}"))
            .boxed(),
        Kind::Clock => clock().boxed(),
        Kind::Pid => (
            Just(["pid ", "pid=", "process ", "PID: ", "(pid "][form % 5]),
            0u32..4_000_000,
        )
            .prop_map(|(k, n)| {
                if k == "(pid " {
                    format!("{k}{n})")
                } else {
                    format!("{k}{n}")
                }
            })
            .boxed(),
        Kind::Uuid => uuid().boxed(),
        Kind::TmpPath => (
            "[A-Za-z0-9]{1,12}",
            prop::sample::select(vec![
                "/tmp/.tmp",
                "/tmp/",
                "/var/tmp/",
                "/private/tmp/",
                "/var/folders/x9/q8w7e6r5t4/T/.tmp",
            ]),
            Just(form % 2 == 0),
        )
            .prop_map(|(seg, prefix, file)| {
                if file {
                    format!("{prefix}{seg}/src/lib.rs")
                } else {
                    format!("{prefix}{seg}")
                }
            })
            .boxed(),
        Kind::HomePath => ("[a-z][a-z0-9._-]{0,10}", any::<bool>())
            .prop_map(|(user, mac)| {
                if mac {
                    format!("/Users/{user}/project/src/main.rs")
                } else {
                    format!("/home/{user}/project/src/main.rs")
                }
            })
            .boxed(),
        Kind::HexAddr => (1usize..17)
            .prop_flat_map(hex)
            .prop_map(|h| format!("0x{h}"))
            .boxed(),
        Kind::Duration => (0u32..10_000, 0u32..100, Just(form % 6))
            .prop_map(|(n, frac, form)| match form {
                0 => format!("in {n}.{frac:02}s"),
                1 => format!("{n}ms"),
                2 => format!("finished in {n}.{frac:02}s"),
                3 => format!("({n} ms)"),
                4 => format!("{}m{}s", n % 60, frac % 60),
                _ => format!("{n}.{frac:03} s"),
            })
            .boxed(),
        Kind::Session => (uuid(), "[a-z]{2,6}[0-9]{2,4}[a-z0-9]{4,10}", any::<bool>())
            .prop_map(|(u, other, use_uuid)| {
                format!("session_id: {}", if use_uuid { u } else { other })
            })
            .boxed(),
    }
}

/// Where one volatile value goes: which line (modulo the line count), before or after it.
#[derive(Debug, Clone)]
struct Slot {
    line: usize,
    /// Only timestamps go before a line (as loggers put them); other data goes after it.
    before: bool,
    kind: Kind,
    /// The literal shape around the value (`pid 1` or `pid=1`), fixed per slot: only the
    /// volatile part differs between the two fillings.
    form: usize,
}

fn slots() -> impl Strategy<Value = Vec<Slot>> {
    proptest::collection::vec(
        (
            any::<usize>(),
            any::<bool>(),
            prop::sample::select(KINDS.to_vec()),
            0usize..64,
        )
            .prop_map(|(line, before, kind, form)| Slot {
                line,
                before: before
                    && matches!(kind, Kind::Iso | Kind::Rfc2822 | Kind::Ctime | Kind::Clock),
                kind,
                form,
            }),
        1..8,
    )
}

/// Two independent value lists of the same kinds for the given slots.
fn slots_with_two_fillings() -> impl Strategy<Value = (Vec<Slot>, Vec<String>, Vec<String>)> {
    slots().prop_flat_map(|slots| {
        let a: Vec<BoxedStrategy<String>> = slots.iter().map(|s| value(s.kind, s.form)).collect();
        let b: Vec<BoxedStrategy<String>> = slots.iter().map(|s| value(s.kind, s.form)).collect();
        (Just(slots), a, b)
    })
}

fn insert(text: &str, slots: &[Slot], values: &[String]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for (slot, v) in slots.iter().zip(values) {
        let i = slot.line % lines.len();
        lines[i] = if slot.before {
            format!("[{v}] {}", lines[i])
        } else {
            format!("{} at {v}", lines[i])
        };
    }
    lines.join("\n")
}

const FAILURES: [&str; 8] = [
    "cargo-test-failure.txt",
    "cargo-build-e0308.txt",
    "clippy-d-warnings.txt",
    "tsc-ts2322.txt",
    "eslint.txt",
    "jest.txt",
    "pytest.txt",
    "go-test.txt",
];

fn failure_text(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tool-output")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn classify_text(output: &str) -> (FailureClass, String) {
    let mut reader = StreamReader::new();
    reader.feed(output.as_bytes());
    let summary = reader.finish();
    let classified = classify(&Observation {
        exit_code: Some(1),
        timed_out: false,
        idle_timed_out: false,
        killed: false,
        summary: &summary,
        stderr_tail: "",
        output_tail: output,
        now_epoch_secs: 0,
        temp_dir: Path::new("/tmp"),
    })
    .expect("a failed attempt is classified");
    (classified.class, classified.signature.to_string())
}

fn cargo_failure(test: &str) -> String {
    format!(
        "running 2 tests\n\
         test tests::{test} ... FAILED\n\
         test tests::other ... ok\n\n\
         failures:\n\n\
         ---- tests::{test} stdout ----\n\
         thread 'tests::{test}' panicked at src/lib.rs:42:9:\n\
         assertion `left == right` failed\n\n\
         failures:\n    tests::{test}\n\n\
         test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn volatile_data_never_changes_the_signature(
        which in 0..FAILURES.len(),
        (slots, a, b) in slots_with_two_fillings(),
    ) {
        let text = failure_text(FAILURES[which]);
        let with_a = insert(&text, &slots, &a);
        let with_b = insert(&text, &slots, &b);
        let (na, nb) = (normalize(&with_a), normalize(&with_b));
        prop_assert_eq!(&na, &nb);
        prop_assert_eq!(
            signature(FailureClass::TestAssertion, &na),
            signature(FailureClass::TestAssertion, &nb)
        );
    }

    #[test]
    fn classify_signature_ignores_volatile_data(
        which in 0..FAILURES.len(),
        (slots, a, b) in slots_with_two_fillings(),
    ) {
        let text = failure_text(FAILURES[which]);
        let (class_a, sig_a) = classify_text(&insert(&text, &slots, &a));
        let (class_b, sig_b) = classify_text(&insert(&text, &slots, &b));
        prop_assert_eq!(class_a, class_b);
        prop_assert_eq!(sig_a, sig_b);
    }

    #[test]
    fn different_tests_have_different_signatures(
        first in "[a-z][a-z_]{2,24}",
        second in "[a-z][a-z_]{2,24}",
        (slots, a, b) in slots_with_two_fillings(),
    ) {
        prop_assume!(first != second && first != "other" && second != "other");
        let (class_a, sig_a) = classify_text(&insert(&cargo_failure(&first), &slots, &a));
        let (class_b, sig_b) = classify_text(&insert(&cargo_failure(&second), &slots, &b));
        prop_assert_eq!(class_a, FailureClass::TestAssertion);
        prop_assert_eq!(class_b, FailureClass::TestAssertion);
        prop_assert_ne!(sig_a, sig_b);
    }

    #[test]
    fn different_error_codes_have_different_signatures(
        first in 1u32..10_000,
        second in 1u32..10_000,
        (slots, a, b) in slots_with_two_fillings(),
    ) {
        prop_assume!(first != second);
        let rust = failure_text("cargo-build-e0308.txt");
        let ts = failure_text("tsc-ts2322.txt");
        for (template, from, prefix) in [(&rust, "E0308", "E"), (&ts, "TS2322", "TS")] {
            let one = template.replace(from, &format!("{prefix}{first:04}"));
            let two = template.replace(from, &format!("{prefix}{second:04}"));
            let (class_a, sig_a) = classify_text(&insert(&one, &slots, &a));
            let (class_b, sig_b) = classify_text(&insert(&two, &slots, &b));
            prop_assert_eq!(class_a, class_b);
            prop_assert_ne!(sig_a, sig_b);
        }
    }
}
