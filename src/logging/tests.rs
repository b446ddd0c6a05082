use super::*;
use chrono::TimeZone;

fn at() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc
        .with_ymd_and_hms(2026, 11, 24, 3, 4, 5)
        .single()
        .expect("a valid time")
}

/// A subscriber with only the orchestration layer, for the duration of `f`.
fn with_orchestration_layer(f: impl FnOnce()) {
    let subscriber = tracing_subscriber::registry()
        .with(OrchestrationLayer.with_filter(filter_fn(|m| m.target() == ORCHESTRATION)));
    tracing::subscriber::with_default(subscriber, f);
}

#[test]
fn an_orchestration_entry_is_one_stamped_redacted_line_in_its_own_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mine = dir.path().join("w1.log");
    let other = dir.path().join("w2.log");
    with_orchestration_layer(|| {
        orchestrate(
            Origin {
                log: &mine,
                worker: Some(1),
                issue: Some(7),
                step: Some("verify"),
            },
            "warning: title Fix\n[2026-01-01T00:00:00Z] FORGED with token ghp_abcdefghijk",
        );
        // Narration is not an orchestration entry.
        narrate("said on the console only");
    });
    let text = std::fs::read_to_string(&mine).expect("the log");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let line = lines[0];
    assert!(
        line.starts_with("[20") && line.contains("Z] [w1] warning: title Fix\\n[2026"),
        "{line}"
    );
    assert!(
        line.contains("ghp_***") && !line.contains("abcdefghijk"),
        "{line}"
    );
    assert!(!other.exists(), "another driver's log is untouched");
}

#[test]
fn fields_carry_the_message_the_route_and_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("o.log");
    let capture = Capture::default();
    let seen = capture.0.clone();
    let subscriber = tracing_subscriber::registry().with(capture);
    tracing::subscriber::with_default(subscriber, || {
        orchestrate(
            Origin {
                log: &log,
                worker: None,
                issue: Some(3),
                step: None,
            },
            "issue #3 step 6 verify attempt 1",
        );
    });
    let fields = seen.lock().expect("captured").pop().expect("one event");
    assert_eq!(fields.message, "issue #3 step 6 verify attempt 1");
    assert_eq!(fields.log.as_deref(), log.to_str());
    assert_eq!(fields.worker, None);
    assert_eq!(fields.rest, vec![("issue", serde_json::json!(3))]);
    assert_eq!(
        fields.orchestration_line(),
        "issue #3 step 6 verify attempt 1"
    );
}

/// Keeps the fields of every event it sees.
#[derive(Default, Clone)]
struct Capture(std::sync::Arc<std::sync::Mutex<Vec<Fields>>>);

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(Fields::of(event));
        }
    }
}

fn fields(message: &str, rest: Vec<(&'static str, serde_json::Value)>) -> Fields {
    Fields {
        message: message.to_string(),
        rest,
        ..Fields::default()
    }
}

#[test]
fn a_diagnostic_names_its_level_target_and_fields_as_text_or_json() {
    let meta = tracing::Level::DEBUG;
    let f = fields(
        "git exited 0",
        vec![("args", "status\n--porcelain".into()), ("ms", 3.into())],
    );
    let callsite_meta = debug_metadata();
    assert_eq!(*callsite_meta.level(), meta);
    let plain = Style::default();
    assert_eq!(
        diagnostic(plain, callsite_meta, &f, at()),
        format!(
            "DEBUG {}: git exited 0 args=status\\n--porcelain ms=3",
            callsite_meta.target()
        )
    );
    let stamped = Style {
        stamp: true,
        ..plain
    };
    assert!(
        diagnostic(stamped, callsite_meta, &f, at()).starts_with("[2026-11-24T03:04:05Z] DEBUG ")
    );
    let json = Style {
        format: LogFormat::Json,
        ..plain
    };
    let line = diagnostic(json, callsite_meta, &f, at());
    let v: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
    assert_eq!(v["ts"], "2026-11-24T03:04:05.000Z");
    assert_eq!(v["level"], "debug");
    assert_eq!(v["target"], callsite_meta.target());
    assert_eq!(v["msg"], "git exited 0");
    assert_eq!(v["args"], "status\n--porcelain");
    assert_eq!(v["ms"], 3);
}

#[test]
fn a_secret_in_a_diagnostic_is_masked_in_both_forms() {
    let f = fields(
        "gh api with token ghp_abcdefghijk",
        vec![("args", "-H authorization: token ghp_abcdefghijk".into())],
    );
    for format in [LogFormat::Text, LogFormat::Json] {
        let style = Style {
            format,
            ..Style::default()
        };
        let line = diagnostic(style, debug_metadata(), &f, at());
        assert!(!line.contains("abcdefghijk"), "{line}");
    }
}

/// The metadata of a debug event of this module, taken from a real callsite.
fn debug_metadata() -> &'static tracing::Metadata<'static> {
    type Slot = std::sync::Arc<std::sync::Mutex<Option<&'static tracing::Metadata<'static>>>>;
    struct Grab(Slot);
    impl<S: Subscriber> Layer<S> for Grab {
        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            if let Ok(mut slot) = self.0.lock() {
                *slot = Some(event.metadata());
            }
        }
    }
    let slot = Slot::default();
    let subscriber = tracing_subscriber::registry().with(Grab(slot.clone()));
    tracing::subscriber::with_default(subscriber, || tracing::debug!("probe"));
    let slot = slot.lock().expect("grabbed");
    slot.expect("a debug event was seen")
}

#[test]
fn narration_levels_come_from_the_first_words_and_never_go_below_info() {
    assert_eq!(level_of(&Level::ERROR), console::Level::Error);
    assert_eq!(level_of(&Level::WARN), console::Level::Warn);
    assert_eq!(level_of(&Level::INFO), console::Level::Info);
    assert_eq!(level_of(&Level::DEBUG), console::Level::Info);
}

/// The directives of a filter, in any order.
fn directives(filter: &EnvFilter) -> std::collections::BTreeSet<String> {
    filter.to_string().split(',').map(str::to_string).collect()
}

fn same(filter: &EnvFilter, spelled: &str) -> bool {
    directives(filter) == spelled.split(',').map(str::to_string).collect()
}

#[test]
fn rust_log_decides_and_a_bad_one_is_said_not_ignored() {
    let (filter, refused) = diagnostics_filter(Some("sdlc_runner::tracker=debug"), 0);
    assert!(same(&filter, "sdlc_runner::tracker=debug"), "{filter}");
    assert_eq!(refused, None);
    let (filter, refused) = diagnostics_filter(None, 1);
    assert!(same(&filter, VERBOSE), "{filter}");
    assert_eq!(refused, None);
    let (filter, refused) = diagnostics_filter(Some("  "), 2);
    assert!(same(&filter, VERY_VERBOSE), "{filter}");
    assert_eq!(refused, None);
    let (filter, refused) = diagnostics_filter(Some("sdlc_runner=loud"), 0);
    assert!(same(&filter, DEFAULT), "{filter}");
    let warning = refused.expect("a warning");
    assert!(
        warning.starts_with("warning: RUST_LOG=\"sdlc_runner=loud\" is not a filter"),
        "{warning}"
    );
    assert_eq!(console::Level::of(&warning), console::Level::Warn);
}
