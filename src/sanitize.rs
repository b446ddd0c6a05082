//! Text from outside the runner (issue titles and bodies, agent output, CI output, tool error
//! messages) made safe for the runner's own outputs: the console, the orchestration log,
//! notifications and the tracker. A control character is shown as an escape (`\n`, `\r`,
//! `\x1b`, `\u{9b}`) instead of acting: a title with a newline cannot forge a log line of
//! its own, and an escape sequence cannot reach the terminal raw.

use std::borrow::Cow;

/// `text` as one line: every control character escaped, newlines and tabs included.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// The longest title, in characters, the runner repeats in its own lines, commit messages and
/// PR titles (GitHub refuses a PR title over 256): a pasted log as a title is cut, not copied.
pub const TITLE_CHARS: usize = 200;

/// `text` cut to [`TITLE_CHARS`] characters (`…` where it was cut); the runner's lines
/// escape what it holds.
pub fn title(text: &str) -> String {
    match text.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// `text`'s first line, trimmed and cut like [`title`]: a commit subject or a PR title.
pub fn subject(text: &str) -> String {
    title(text.lines().next().unwrap_or_default().trim())
}

/// `text` as a block of lines: newlines and tabs kept, every other control character
/// (carriage return, ESC, the rest of C0, DEL, C1) escaped.
pub fn block(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let acts = |c: char| c.is_control() && !(keep_lines && (c == '\n' || c == '\t'));
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !acts(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_cannot_forge_a_line_or_reach_the_terminal_raw() {
        let title = "Fix it\n[2026-01-01T00:00:00Z] FORGED issue #9: merged\r\x1b[2K\u{9b}31m";
        let line = one_line(title);
        assert_eq!(
            line,
            "Fix it\\n[2026-01-01T00:00:00Z] FORGED issue #9: merged\\r\\x1b[2K\\u{9b}31m"
        );
        assert!(!line.chars().any(char::is_control));
        let kept = block("a\n\tb\r\x1b[0m\x7f");
        assert_eq!(kept, "a\n\tb\\r\\x1b[0m\\x7f");
    }

    #[test]
    fn a_long_title_is_cut_to_its_first_line_and_a_readable_length() {
        let long = format!("{}\nsecond line", "é".repeat(300));
        let cut = subject(&long);
        assert_eq!(cut.chars().count(), TITLE_CHARS + 1);
        assert!(cut.ends_with('…') && !cut.contains("second"));
        assert_eq!(subject("  Fix it  \nmore"), "Fix it");
        assert_eq!(title("Fix it\nmore"), "Fix it\nmore");
        assert_eq!(title(&long).chars().count(), TITLE_CHARS + 1);
    }

    #[test]
    fn plain_text_is_not_copied() {
        assert!(matches!(
            one_line("issue #1: merged — ok"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(block("two\nlines"), Cow::Borrowed(_)));
    }
}
