//! Whether an exit-0 result still says the step did not succeed: serious permission denials
//! (a denied question or plan-mode tool, or a write into the runner's own temp directory, is
//! benign).

use super::{PermissionDenial, ResultEvent, SoftFailure};
use std::path::{Component, Path, PathBuf};

/// Tools whose denial is expected in unattended mode and says nothing about the step.
pub const BENIGN_DENIED_TOOLS: [&str; 3] = ["AskUserQuestion", "EnterPlanMode", "ExitPlanMode"];

/// Whether an exit-0 `result` still reports that the step did not succeed (docs/lifecycle.md).
/// Checked in this order: an `error_*` subtype, `is_error`, serious permission denials.
/// A denial is benign when its tool is interactive ([`BENIGN_DENIED_TOOLS`]) or its path lies
/// inside `temp_dir` (compared by path components, so `/tmpfoo` is not inside `/tmp`, and a
/// path with `..` never counts as inside).
pub fn soft_failure(result: &ResultEvent, temp_dir: &Path) -> Option<SoftFailure> {
    if result.subtype.starts_with("error") {
        return Some(SoftFailure::ErrorSubtype(result.subtype.clone()));
    }
    if result.is_error {
        return Some(SoftFailure::IsError);
    }
    let serious: Vec<String> = result
        .permission_denials
        .iter()
        .filter(|d| !is_benign_denial(d, temp_dir))
        .map(|d| d.tool_name.clone())
        .collect();
    if serious.is_empty() {
        None
    } else {
        Some(SoftFailure::PermissionDenied(serious))
    }
}

fn is_benign_denial(denial: &PermissionDenial, temp_dir: &Path) -> bool {
    if BENIGN_DENIED_TOOLS.contains(&denial.tool_name.as_str()) {
        return true;
    }
    denial
        .path
        .as_deref()
        .is_some_and(|path| path_is_under(Path::new(path), temp_dir))
}

/// `path` lies inside `dir`, judged lexically. macOS reaches its temp dir through both
/// `/var/...` and `/private/var/...`, so both spellings count.
pub(super) fn path_is_under(path: &Path, dir: &Path) -> bool {
    if !path.is_absolute()
        || dir.as_os_str().is_empty()
        || dir == Path::new("/")
        || path.components().any(|c| c == Component::ParentDir)
    {
        return false;
    }
    let dirs = [dir.to_path_buf(), private_alias(dir)];
    dirs.iter()
        .any(|d| path.starts_with(d) && path != d.as_path())
}

fn private_alias(dir: &Path) -> PathBuf {
    match dir.strip_prefix("/private") {
        Ok(rest) => Path::new("/").join(rest),
        Err(_) => Path::new("/private").join(dir.strip_prefix("/").unwrap_or(dir)),
    }
}
