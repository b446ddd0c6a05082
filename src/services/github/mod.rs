//! GitHub, reached through its CLI `gh`: [`gh`] runs it, for the tracker's calls and the
//! forge's alike.

pub mod gh;
