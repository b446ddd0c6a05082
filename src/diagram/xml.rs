//! Text made safe inside XML, for the SCXML export and the SVG page alike.

/// `s` with the characters XML gives meaning to (in text and in double-quoted attributes)
/// written as entities.
pub(super) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
