//! The agent port's adapters: one module per agent CLI (docs/agents.md). Each knows how to
//! invoke its CLI headless and unattended, how to read its output stream incrementally with
//! flat memory, and how to classify what it reported. The driver and the machine only see
//! the common shape: an invocation, a [`crate::stream::StreamSummary`] and a
//! [`crate::classify::Classified`].

mod kind;
mod pricing;

pub use kind::AgentKind;
pub use pricing::{cost_micros, shipped as shipped_pricing, ModelTokens, Price, Pricing, SHIPPED_AS_OF};
