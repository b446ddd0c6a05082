//! What the services share, below each of them: the selection rule every tracker keeps, the
//! claims written as comments or notes, the text of an escalation.

pub(crate) mod claim_notes;
pub(crate) mod selection;

use crate::ports::tracker::Issue;

impl Issue {
    /// A closed dependency counts as done unless the tracker shows that the pull requests
    /// closing it were not merged (closed by hand while its PR was abandoned).
    pub(crate) fn is_done(&self) -> bool {
        !self.state_open && self.closed_by_merged_pr != Some(false)
    }
}

/// The text of an escalation comment / field: redacted, bounded, and telling the reader how
/// to lift the quarantine.
pub(crate) fn escalation_text(diagnostic: &str, how_to_lift: &str, max_bytes: usize) -> String {
    let mut diagnostic = crate::redact::redact(diagnostic);
    if diagnostic.len() > max_bytes {
        let mut cut = diagnostic.len() - max_bytes;
        while !diagnostic.is_char_boundary(cut) {
            cut += 1;
        }
        diagnostic = format!("…{}", &diagnostic[cut..]);
    }
    // A fence longer than any backtick run inside keeps the diagnostic verbatim.
    let longest = diagnostic
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    format!(
        "sdlc-runner escalated this issue and will not select it again. {how_to_lift}\n\n{fence}text\n{diagnostic}\n{fence}\n"
    )
}
