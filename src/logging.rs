//! The one logging system: everything the runner says goes out as a `tracing` event, and two
//! formatting layers write it.
//!
//! - **Narration** (`say!`, target `console::NARRATION`) and the **orchestration record**
//!   (`Driver::log`, target [`ORCHESTRATION`]) are info, warn or error events whose level comes
//!   from the line's first words (`console::Level::of`). The console layer always
//!   writes them in the run's style (`-q` drops the info ones); the orchestration layer
//!   appends the orchestration events to the log file the event names.
//! - **Diagnostics** (`debug!`/`trace!` at the ports: each child process, each event fed to the
//!   machine, each effect performed; `warn!` of the clean-up) are written to the console only
//!   when `RUST_LOG` or `run -v` asks for them, in the same style: a text line with the level
//!   and the module, or one JSON object with `target` and the event's fields.
//!
//! Every sink gets redacted text (`redact::redact`) with control characters escaped
//! (`sanitize`): one line per orchestration entry, a block of lines for narration.

use std::fmt;
use std::path::Path;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{filter_fn, EnvFilter, FilterExt};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

use crate::console::{self, narrate, LogFormat, Style, NARRATION};

/// Target of `Driver::log`: narration on the console and in the orchestration log.
pub const ORCHESTRATION: &str = "sdlc_runner::orchestration";
/// Target of the spans that say whose work an event is part of (a fleet worker's): always
/// seen by the console layer, whatever `RUST_LOG` says, so that a line's fields do not depend
/// on the filter.
const CONTEXT: &str = "sdlc_runner::context";

/// The diagnostics `-v` shows when `RUST_LOG` is not set: the runner's own down to debug,
/// other crates' warnings (hyper and tokio at debug would drown the runner's).
const VERBOSE: &str = "warn,sdlc_runner=debug";
/// `-vv`: also what each call printed.
const VERY_VERBOSE: &str = "warn,sdlc_runner=trace";
/// The diagnostics shown by default: warnings and errors.
const DEFAULT: &str = "warn";

/// Installs the subscriber for the rest of the process: the console layer (narration always,
/// diagnostics as `RUST_LOG` says, else as the count of `-v` says) and the orchestration-log
/// layer. A second call, or a subscriber someone else installed first, is left as it is.
pub fn init(verbose: u8) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let (diagnostics, refused) = diagnostics_filter(rust_log.as_deref(), verbose);
    let always = filter_fn(|m| is_narration(m.target()) || m.target() == CONTEXT);
    let console = ConsoleLayer.with_filter(always.or(diagnostics));
    let orchestration = OrchestrationLayer.with_filter(filter_fn(|m| m.target() == ORCHESTRATION));
    let _ = tracing_subscriber::registry()
        .with(console)
        .with(orchestration)
        .try_init();
    if let Some(warning) = refused {
        narrate(&warning);
    }
}

/// The filter of diagnostics: `RUST_LOG` when set, else by the count of `-v`. A `RUST_LOG` that
/// does not parse is not ignored silently: the warning to narrate comes with the fallback.
fn diagnostics_filter(rust_log: Option<&str>, verbose: u8) -> (EnvFilter, Option<String>) {
    let by_flag = || {
        EnvFilter::new(match verbose {
            0 => DEFAULT,
            1 => VERBOSE,
            _ => VERY_VERBOSE,
        })
    };
    match rust_log.filter(|v| !v.trim().is_empty()) {
        None => (by_flag(), None),
        Some(directives) => match EnvFilter::try_new(directives) {
            Ok(filter) => (filter, None),
            Err(e) => (
                by_flag(),
                Some(format!(
                    "warning: RUST_LOG={directives:?} is not a filter ({e}); diagnostics as \
                     without it (example: RUST_LOG=sdlc_runner=debug)"
                )),
            ),
        },
    }
}

fn is_narration(target: &str) -> bool {
    target == NARRATION || target == ORCHESTRATION
}

/// The span of fleet worker `worker`: the events inside it carry `worker` as a field.
pub fn worker_span(worker: u32) -> tracing::Span {
    tracing::info_span!(target: CONTEXT, "worker", worker)
}

/// Where an orchestration entry belongs: its log file and what it is about.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The orchestration log of the driver that wrote the entry.
    pub log: &'a Path,
    /// The fleet worker, when the driver is one (`[w<n>] ` before the line).
    pub worker: Option<u32>,
    /// The issue being worked, if any.
    pub issue: Option<u32>,
    /// The step the machine is in, if any.
    pub step: Option<&'static str>,
}

/// One orchestration entry as an event (what `Driver::log` does): the console and the
/// orchestration log of `origin` get it, with `worker`, `issue` and `step` as fields.
pub fn orchestrate(origin: Origin<'_>, line: &str) {
    let log = origin.log.display();
    macro_rules! at {
        ($level:ident) => {
            tracing::$level!(
                target: ORCHESTRATION,
                orchestration_log = %log,
                worker = origin.worker,
                issue = origin.issue,
                step = origin.step,
                "{line}"
            )
        };
    }
    match console::Level::of(line) {
        console::Level::Info => at!(info),
        console::Level::Warn => at!(warn),
        console::Level::Error => at!(error),
    }
}

/// An event's fields: the message, the routing fields, and the rest for the JSON form.
#[derive(Default)]
struct Fields {
    message: String,
    log: Option<String>,
    worker: Option<u64>,
    rest: Vec<(&'static str, serde_json::Value)>,
}

impl Fields {
    fn of(event: &Event<'_>) -> Fields {
        let mut fields = Fields::default();
        event.record(&mut fields);
        fields
    }

    fn put(&mut self, field: &Field, value: serde_json::Value) {
        match (field.name(), value) {
            ("message", serde_json::Value::String(s)) => self.message = s,
            ("orchestration_log", serde_json::Value::String(s)) => self.log = Some(s),
            ("worker", serde_json::Value::Number(n)) if n.as_u64().is_some() => {
                self.worker = n.as_u64();
                self.rest.push(("worker", serde_json::Value::Number(n)));
            }
            (name, value) => self.rest.push((name, value)),
        }
    }

    /// The entry as the runner writes it: one line, `[w<n>] ` first for a fleet worker's,
    /// secrets masked.
    fn orchestration_line(&self) -> String {
        let line = crate::sanitize::one_line(&self.message);
        crate::redact::redact(&match self.worker {
            Some(w) => format!("[w{w}] {line}"),
            None => line.into_owned(),
        })
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}").into());
    }
}

/// The fields of a span (a fleet worker's `worker`), kept for the diagnostics inside it.
struct SpanFields(Vec<(&'static str, serde_json::Value)>);

/// Writes narration and diagnostics to stderr in the run's style.
struct ConsoleLayer;

impl<S> Layer<S> for ConsoleLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(fields.rest));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let style = console::style();
        let meta = event.metadata();
        let mut fields = Fields::of(event);
        // A diagnostic says which worker (or other enclosing span) it comes from.
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(SpanFields(outer)) = span.extensions().get::<SpanFields>() {
                    for (name, value) in outer {
                        if !fields.rest.iter().any(|(n, _)| n == name) {
                            fields.rest.push((name, value.clone()));
                        }
                    }
                }
            }
        }
        let now = chrono::Utc::now();
        let text = if is_narration(meta.target()) {
            let line = if meta.target() == ORCHESTRATION {
                fields.orchestration_line()
            } else {
                crate::redact::redact(&crate::sanitize::block(&fields.message))
            };
            console::render_at(style, level_of(meta.level()), &line, &fields.rest, now)
        } else {
            Some(diagnostic(style, meta, &fields, now))
        };
        if let Some(text) = text {
            console::write_line(&text);
        }
    }
}

/// Appends orchestration events to the log file each names, stamped to the second.
struct OrchestrationLayer;

impl<S: Subscriber> Layer<S> for OrchestrationLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let fields = Fields::of(event);
        let Some(log) = &fields.log else { return };
        let stamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        // The console is the only place left to say that the log cannot be written, and it
        // would say so on every line: the run goes on without it, as it always has.
        let _ = crate::logs::append_line(
            Path::new(log),
            &format!("[{stamp}] {}", fields.orchestration_line()),
        );
    }
}

/// The narration level of a tracing level (narration is never debug or trace).
fn level_of(level: &Level) -> console::Level {
    if *level == Level::ERROR {
        console::Level::Error
    } else if *level == Level::WARN {
        console::Level::Warn
    } else {
        console::Level::Info
    }
}

/// A diagnostic as text (`DEBUG sdlc_runner::process: git status: exit 0 in 3 ms cwd=…`,
/// stamped off a terminal) or as one JSON object (`ts`, `level`, `target`, `msg` and the
/// event's fields).
fn diagnostic(
    style: Style,
    meta: &tracing::Metadata<'_>,
    fields: &Fields,
    now: chrono::DateTime<chrono::Utc>,
) -> String {
    let msg = crate::redact::redact(&crate::sanitize::one_line(&fields.message));
    match style.format {
        LogFormat::Json => {
            let mut object = serde_json::Map::new();
            object.insert("ts".into(), console::json_time(now).into());
            object.insert("level".into(), meta.level().as_str().to_lowercase().into());
            object.insert("target".into(), meta.target().into());
            object.insert("msg".into(), msg.into());
            for (name, value) in &fields.rest {
                object.insert((*name).into(), redacted(value));
            }
            serde_json::Value::Object(object).to_string()
        }
        LogFormat::Text => {
            let mut line = format!("{:>5} {}: {msg}", meta.level().as_str(), meta.target());
            for (name, value) in &fields.rest {
                let shown = match value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let shown = crate::redact::redact(&crate::sanitize::one_line(&shown));
                line.push_str(&format!(" {name}={shown}"));
            }
            if style.stamp {
                format!("[{}] {line}", console::text_time(now))
            } else {
                line
            }
        }
    }
}

fn redacted(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::String(s) => crate::redact::redact(s).into(),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
