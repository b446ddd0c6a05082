//! Console output that never panics: a closed or broken stdout/stderr (the terminal went away,
//! the output was piped into `head`) must not stop an unattended run. The orchestration log
//! still gets every line; the console is best effort.
//!
//! stdout holds what a script would parse (dry-run plans, status, the halt diagnostic);
//! stderr narrates. `run` sets the narration's style once: plain lines on a terminal, lines
//! stamped with the time when stderr is a file or a pipe, or one JSON object per line
//! (`--log-format json`, fields in docs/interfaces.md), and `-q` keeps only warnings and
//! errors.

use std::sync::OnceLock;

/// `println!` that ignores a write error.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// One line of narration on stderr, in the run's style; ignores a write error.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        $crate::console::narrate(&format!($($arg)*));
    }};
}

/// `print!` that ignores a write error.
#[macro_export]
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
}

static STYLE: OnceLock<Style> = OnceLock::new();

/// Sets the style for the rest of the process; a second call is ignored.
pub fn set_style(style: Style) {
    let _ = STYLE.set(style);
}

/// The text of one narrated line in `style`, or `None` when the style leaves it out.
pub fn render(style: Style, line: &str, now: chrono::DateTime<chrono::Utc>) -> Option<String> {
    let level = Level::of(line);
    if style.quiet && level == Level::Info {
        return None;
    }
    Some(match style.format {
        LogFormat::Json => serde_json::json!({
            "ts": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "level": level.name(),
            "msg": line,
        })
        .to_string(),
        LogFormat::Text if style.stamp => format!("[{}] {line}", now.format("%Y-%m-%dT%H:%M:%SZ")),
        LogFormat::Text => line.to_string(),
    })
}

/// Writes one narrated line to stderr; a closed stderr is ignored.
pub fn narrate(line: &str) {
    use std::io::Write as _;
    let style = STYLE.get().copied().unwrap_or_default();
    if let Some(text) = render(style, line, chrono::Utc::now()) {
        let _ = writeln!(std::io::stderr(), "{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

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
