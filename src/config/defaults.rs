//! The defaults that code needs beyond filling in a missing key; every other default is
//! declared with its key in `definition.rs`.

use super::*;

/// The old runner's default model (`config.model || 'sonnet'`); kept so that an old config
/// without `model` runs the same model. Also the model of a Claude step under another kind.
pub const DEFAULT_MODEL: &str = "sonnet";
/// The old runner's default effort (`config.effort || 'medium'`); a step without its own
/// effort inherits it.
pub const DEFAULT_EFFORT: Effort = Effort::Medium;

/// The machine's limits when the config says nothing. The core owns them
/// (`Limits::default()`); the definitions read them here, so neither can disagree.
pub fn machine() -> Limits {
    Limits::default()
}
