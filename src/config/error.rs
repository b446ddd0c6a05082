//! What is wrong with a config file: each problem names the file and the key path.

use super::*;

// ---------------------------------------------------------------------------------------------
// Errors

/// One problem in the file, at a key path such as `steps.verify.effort` (empty = the whole file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// The key path, `steps.verify.effort` style; empty for the whole file.
    pub path: String,
    /// What is wrong and what to write instead.
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
/// Why a config file could not be loaded; every message starts with the file name.
pub enum ConfigError {
    #[error("{}: cannot read the config file: {source} ({})", path.display(), read_hint(source))]
    /// The file could not be read.
    Read {
        /// The path given.
        path: PathBuf,
        #[source]
        /// The operating system's error.
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: not valid UTF-8: byte 0x{byte:02x} at offset {offset} (save the file as UTF-8)")]
    /// The file is not UTF-8.
    Encoding {
        /// The file's name as shown in messages.
        file: String,
        /// 1-based line of the bad byte.
        line: usize,
        /// 1-based column of the bad byte.
        column: usize,
        /// Byte offset of the bad byte.
        offset: usize,
        /// The bad byte.
        byte: u8,
    },
    #[error("{file}:{line}:{column}: invalid JSON: {message}")]
    /// The file is not JSON.
    Syntax {
        /// The file's name as shown in messages.
        file: String,
        /// 1-based line where parsing failed.
        line: usize,
        /// 1-based column where parsing failed.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The file is JSON but keys or values are wrong: every problem found, not just the first.
    #[error("{}", render_errors(file, errors))]
    Invalid {
        /// The file's name as shown in messages.
        file: String,
        /// Each problem at its key path.
        errors: Vec<KeyError>,
    },
}

impl ConfigError {
    /// One line per problem, each starting with the file name.
    pub fn lines(&self) -> Vec<String> {
        match self {
            ConfigError::Invalid { file, errors } => {
                errors.iter().map(|e| render_error(file, e)).collect()
            }
            other => vec![other.to_string()],
        }
    }
}

fn render_error(file: &str, e: &KeyError) -> String {
    if e.path.is_empty() {
        format!("{file}: {}", e.message)
    } else {
        format!("{file}: {}: {}", e.path, e.message)
    }
}

fn render_errors(file: &str, errors: &[KeyError]) -> String {
    let lines: Vec<String> = errors.iter().map(|e| render_error(file, e)).collect();
    lines.join("\n")
}

/// What to do about a config file that cannot be read: a missing one is most often a project
/// never set up, which `init` does.
fn read_hint(source: &std::io::Error) -> &'static str {
    if source.kind() == std::io::ErrorKind::NotFound {
        "run `sdlc-runner init` in the project's directory to write one, or name another with --config"
    } else {
        "check the path given to --config and its permissions"
    }
}
