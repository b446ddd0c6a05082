//! Console output that never panics: a closed or broken stdout/stderr (the terminal went away,
//! the output was piped into `head`) must not stop an unattended run. The orchestration log
//! still gets every line; the console is best effort.
//!
//! stdout holds what a script would parse (dry-run plans, status, the halt diagnostic): `out!`
//! writes it plainly. stderr narrates: `say!` is a `tracing` event that the console layer of
//! `crate::logging` renders here. `run` sets the narration's style once: plain lines on a
//! terminal, lines stamped with the time when stderr is a file or a pipe, or one JSON object
//! per line (`--log-format json`, fields in docs/interfaces.md), and `-q` keeps only warnings
//! and errors.

use std::sync::{Mutex, OnceLock};

/// `println!` that ignores a write error.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(std::io::stdout(), "{}", $crate::sanitize::block(&text));
    }};
}

/// One line of narration: a `tracing` event written on stderr in the run's style (a write
/// error is ignored).
macro_rules! say {
    ($($arg:tt)*) => {{
        $crate::console::narrate(&format!($($arg)*));
    }};
}

/// `print!` that ignores a write error.
macro_rules! out_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stdout = std::io::stdout();
        let _ = write!(stdout, $($arg)*);
        let _ = stdout.flush();
    }};
}

/// How narration is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Lines for people.
    #[default]
    Text,
    /// One JSON object per line: `ts`, `level`, `msg`.
    Json,
}

/// How much a narrated line matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Info,
    Warn,
    Error,
}

impl Level {
    pub const fn name(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }

    /// The runner's lines say what they are in their first word ("warning: …", "error: …",
    /// a halt's "FAILURE LOOP DETECTED" or "ENVIRONMENT FAILURE").
    pub fn of(line: &str) -> Level {
        let head = line.trim_start();
        let lower = head.get(..16).unwrap_or(head).to_ascii_lowercase();
        if lower.starts_with("error")
            || lower.starts_with("fatal")
            || lower.starts_with("internal error")
        {
            Level::Error
        } else if lower.starts_with("warning")
            || head.contains("FAILURE")
            || head.starts_with("BUDGET EXHAUSTED")
            || head.starts_with("HALTED")
        {
            Level::Warn
        } else {
            Level::Info
        }
    }
}

/// The narration's style, set once by `run`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    pub format: LogFormat,
    /// Only warnings and errors.
    pub quiet: bool,
    /// Prefix each text line with the time (stderr is not a terminal).
    pub stamp: bool,
    /// Show a status line redrawn in place while a step runs (stderr is a terminal, text,
    /// not quiet).
    pub live: bool,
}

static STYLE: OnceLock<Style> = OnceLock::new();

/// Sets the style for the rest of the process; a second call is ignored.
pub fn set_style(style: Style) {
    let _ = STYLE.set(style);
}

/// The style set by `run` (the default one before, and for every other command).
pub fn style() -> Style {
    STYLE.get().copied().unwrap_or_default()
}

/// The text of one narrated line in `style` at `level`, or `None` when the style leaves it out
/// (`quiet` drops plain progress); `fields` (an orchestration entry's worker, issue and step)
/// are added to the JSON object after `msg`, the text line already says them.
pub fn render_at(
    style: Style,
    level: Level,
    line: &str,
    fields: &[(&'static str, serde_json::Value)],
    now: chrono::DateTime<chrono::Utc>,
) -> Option<String> {
    if style.quiet && level == Level::Info {
        return None;
    }
    Some(match style.format {
        LogFormat::Json => {
            let mut object = serde_json::Map::new();
            object.insert("ts".into(), json_time(now).into());
            object.insert("level".into(), level.name().into());
            object.insert("msg".into(), line.into());
            for (name, value) in fields {
                object.insert((*name).into(), value.clone());
            }
            serde_json::Value::Object(object).to_string()
        }
        LogFormat::Text if style.stamp => format!("[{}] {line}", text_time(now)),
        LogFormat::Text => line.to_string(),
    })
}

/// The `ts` of a JSON line: RFC 3339, UTC, milliseconds.
pub fn json_time(now: chrono::DateTime<chrono::Utc>) -> String {
    now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The stamp of a text line off a terminal.
pub fn text_time(now: chrono::DateTime<chrono::Utc>) -> impl std::fmt::Display {
    now.format("%Y-%m-%dT%H:%M:%SZ")
}

/// The status line on screen, if any: a narrated line is written above it.
static STATUS: Mutex<Option<String>> = Mutex::new(None);

/// Erase the terminal's current line and go back to its start.
const CLEAR_LINE: &str = "\r\x1b[2K";

fn status_slot() -> std::sync::MutexGuard<'static, Option<String>> {
    STATUS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Target of `say!`: narration on the console. The logging layers (`crate::logging`) read
/// it; narration is emitted here so that the console stands below the logging system.
pub const NARRATION: &str = "sdlc_runner::narration";

/// One line of narration (what `say!` does): a `tracing` event, of the level its first words
/// say, that the console layer writes in the run's style (see `crate::logging`).
pub fn narrate(line: &str) {
    match Level::of(line) {
        Level::Info => tracing::info!(target: NARRATION, "{line}"),
        Level::Warn => tracing::warn!(target: NARRATION, "{line}"),
        Level::Error => tracing::error!(target: NARRATION, "{line}"),
    }
}

/// Writes one formatted line to stderr; a closed stderr is ignored. A status line on screen
/// is erased first and drawn again below the new line.
pub fn write_line(text: &str) {
    use std::io::Write as _;
    let status = status_slot();
    let mut err = std::io::stderr().lock();
    let _ = match status.as_deref() {
        Some(bar) => write!(err, "{CLEAR_LINE}{text}\n{bar}"),
        None => writeln!(err, "{text}"),
    };
    let _ = err.flush();
}

static NO_LIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the run shows a live status line (set by `run` from the terminal and the flags).
pub fn live() -> bool {
    STYLE.get().is_some_and(|s| s.live) && !NO_LIVE.load(std::sync::atomic::Ordering::Relaxed)
}

/// No status line for the rest of the process: several workers would overwrite each other's.
pub fn disable_live() {
    NO_LIVE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Draws `line` as the status line, replacing the previous one in place.
pub fn show_status(line: &str) {
    use std::io::Write as _;
    let mut status = status_slot();
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{CLEAR_LINE}{line}");
    let _ = err.flush();
    *status = Some(line.to_string());
}

/// Erases the status line, if one is shown.
pub fn clear_status() {
    use std::io::Write as _;
    let mut status = status_slot();
    if status.take().is_some() {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{CLEAR_LINE}");
        let _ = err.flush();
    }
}

/// Columns of the terminal on stderr (80 when it cannot be asked), less one so that the cursor
/// never wraps to a new line.
pub fn width() -> usize {
    let cols = match rustix::termios::tcgetwinsize(std::io::stderr()) {
        Ok(size) if size.ws_col > 0 => usize::from(size.ws_col),
        _ => 80,
    };
    cols.saturating_sub(1).max(20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// A line rendered at the level its text implies, as `say` does.
    fn render(style: Style, line: &str, now: chrono::DateTime<chrono::Utc>) -> Option<String> {
        render_at(style, Level::of(line), line, &[], now)
    }

    fn at() -> chrono::DateTime<chrono::Utc> {
        chrono::Utc
            .with_ymd_and_hms(2026, 11, 24, 3, 4, 5)
            .single()
            .expect("a valid time")
    }

    #[test]
    fn lines_are_plain_stamped_or_json_and_quiet_keeps_warnings() {
        let plain = Style::default();
        assert_eq!(render(plain, "hello", at()).as_deref(), Some("hello"));
        let stamped = Style {
            stamp: true,
            ..plain
        };
        assert_eq!(
            render(stamped, "hello", at()).as_deref(),
            Some("[2026-11-24T03:04:05Z] hello")
        );
        let json = Style {
            format: LogFormat::Json,
            ..plain
        };
        let line = render(json, "warning: disk \"low\"\nsecond line", at()).expect("a line");
        let v: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
        assert_eq!(v["ts"], "2026-11-24T03:04:05.000Z");
        assert_eq!(v["level"], "warn");
        assert_eq!(v["msg"], "warning: disk \"low\"\nsecond line");
        assert!(!line.contains('\n'), "one object per line");
        let quiet = Style {
            quiet: true,
            ..plain
        };
        assert_eq!(
            render(quiet, "issue #1 step 6 verify attempt 1", at()),
            None
        );
        assert!(render(quiet, "error: tracker", at()).is_some());
        assert!(render(quiet, "FAILURE LOOP DETECTED: all issues escalated", at()).is_some());
    }

    #[test]
    fn levels_come_from_the_first_words() {
        assert_eq!(Level::of("error: x"), Level::Error);
        assert_eq!(Level::of("FATAL: cannot write the journal"), Level::Error);
        assert_eq!(Level::of("warning: cannot archive"), Level::Warn);
        assert_eq!(Level::of("ENVIRONMENT FAILURE: AUTH"), Level::Warn);
        assert_eq!(Level::of("issue #1 step 6 verify attempt 2"), Level::Info);
        assert_eq!(Level::of("é"), Level::Info, "no panic inside a character");
    }
}
