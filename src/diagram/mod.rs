//! State diagrams derived from the executable machine (never drawn by hand): a breadth-first
//! exploration feeds every kind of event to every reachable machine value, records which
//! named state each one leads to, and labels the edge with the event and the guard that the
//! effects reveal (retry, bounce, escalate: cause, halt: reason). Edges shared by every leaf
//! of a superstate are drawn once from the superstate.

pub use sdlc_machine::explore::{explore, Edge, Graph, Kind, EXITED};

mod coordinator;
mod page;
mod render;
#[cfg(test)]
mod tests;
mod views;
mod xml;

pub use render::{render_all, Rendered};

/// Exploring takes a few seconds: once for every test of the crate.
#[cfg(test)]
pub(crate) fn explored() -> &'static Graph {
    static GRAPH: std::sync::OnceLock<Graph> = std::sync::OnceLock::new();
    GRAPH.get_or_init(explore)
}
