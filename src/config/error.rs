//! What is wrong with a config file: each problem names the file and the key path.

use super::*;

// ---------------------------------------------------------------------------------------------
// Errors

/// One problem in the file, at a key path such as `steps.verify.effort` (empty = the whole file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    pub path: String,
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read the config file: {source} (check the path given to --config)", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: not valid UTF-8: byte 0x{byte:02x} at offset {offset} (save the file as UTF-8)")]
    Encoding {
        file: String,
        line: usize,
        column: usize,
        offset: usize,
        byte: u8,
    },
    #[error("{file}:{line}:{column}: invalid JSON: {message}")]
    Syntax {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}", render_errors(file, errors))]
    Invalid { file: String, errors: Vec<KeyError> },
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
