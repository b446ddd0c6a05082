//! What the agent's program needs to start inside bubblewrap: its own installation (the
//! directory of the real file, so a CLI installed by a package manager finds its modules)
//! and, for a script, the interpreter its first line names, resolved on the agent's `PATH` as
//! `env` would, with that interpreter's installation (a version manager's version directory:
//! nvm, fnm, volta, asdf, mise, pyenv; `~/.local`, `~/.cargo`), followed through a script
//! interpreter (a shim) to its own. Each is bound read-only; none is ever the home directory.

use super::{in_system, SYSTEM};
use std::path::{Path, PathBuf};

/// How many interpreters deep a script is followed (a CLI, its interpreter's shim, the shim's).
const MAX_DEPTH: usize = 3;

/// What the program's start needs bound, read-only, and the link to recreate.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Needs {
    /// Directories (or single files) bound read-only where they are on the host.
    pub read_only: Vec<PathBuf>,
    /// The program is a link outside the bound places: recreated inside (target, link).
    pub link: Option<(PathBuf, PathBuf)>,
}

/// What `program` needs, `path` being the agent's `PATH`. Nothing for a program in the work
/// tree or relative to it (a CI script of the tree), which the tree's bind shows.
pub fn needs(program: &Path, home: Option<&Path>, work_tree: &Path, path: Option<&str>) -> Needs {
    let mut out = Needs::default();
    if !program.is_absolute() || program.starts_with(work_tree) {
        return out;
    }
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    if let Some(dir) = real
        .parent()
        .filter(|d| !in_system(d) && *d != Path::new("/"))
    {
        out.read_only.push(match home {
            Some(h) if h.starts_with(dir) => real.clone(),
            _ => dir.to_path_buf(),
        });
    }
    let mut script = real.clone();
    for _ in 0..MAX_DEPTH {
        let Some(interpreter) = interpreter_of(&script, path) else {
            break;
        };
        let canonical = std::fs::canonicalize(&interpreter).unwrap_or(interpreter.clone());
        for place in [&interpreter, &canonical] {
            if let Some(root) = installation(place, home) {
                if !out.read_only.contains(&root) {
                    out.read_only.push(root);
                }
            }
        }
        script = canonical;
    }
    let covered = out.read_only.iter().any(|d| program.starts_with(d));
    if real != program && !in_system(program) && !covered {
        out.link = Some((real, program.to_path_buf()));
    }
    out
}

/// The interpreter the first line of `script` names (`#!/usr/bin/env node` resolved on
/// `path`; `#!/opt/x/bin/python3` as written), when that line names one.
pub fn interpreter_of(script: &Path, path: Option<&str>) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let text = std::str::from_utf8(head.get(..n)?).ok().or_else(|| {
        let end = head.iter().position(|b| *b == b'\n')?;
        std::str::from_utf8(&head[..end]).ok()
    })?;
    let line = text.strip_prefix("#!")?.lines().next()?;
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name().and_then(|n| n.to_str()) != Some("env") {
        return Some(first);
    }
    // `env [-S] [-i] [NAME=VALUE]… program`: the first word that is neither.
    let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let cwd = std::env::current_dir().ok()?;
    which::which_in(name, path, cwd).ok()
}

/// The installation an interpreter belongs to: the directory above its `bin` (or a version
/// manager's `shims`), else its own directory; the file alone when that would be the home
/// directory or hold it; nothing in the system's directories, which are always shown.
pub fn installation(interpreter: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if !interpreter.is_absolute() || in_system(interpreter) {
        return None;
    }
    let dir = interpreter.parent()?;
    let named = dir.file_name().and_then(|n| n.to_str());
    let above = matches!(named, Some("bin" | "shims"))
        .then(|| dir.parent())
        .flatten();
    let holds_home = |d: &Path| d == Path::new("/") || home.is_some_and(|h| h.starts_with(d));
    let fits = |d: &&Path| !holds_home(d) && !SYSTEM.iter().any(|s| Path::new(s) == *d);
    above
        .filter(fits)
        .or(Some(dir).filter(fits))
        .map(Path::to_path_buf)
        .or_else(|| Some(interpreter.to_path_buf()))
}

#[cfg(test)]
mod tests;
