//! What the services share, below each of them: the claims written as comments or notes
//! (`claim_notes.rs`). The selection rule and the escalation text every tracker keeps are the
//! tracker port's shared logic, in `src/tracker/`.

pub(crate) mod claim_notes;
