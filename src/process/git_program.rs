//! Which `git` the runner starts. `Command::new("git")` searches PATH at every spawn (one
//! failed `execve` per PATH entry before git's own), and a run starts git thousands of times;
//! the program is therefore looked up once per process and every git call starts that file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The git every git call of this process starts: the `git` found on PATH at the first call,
/// or plain `git` when none was found then, so that starting it fails with the system's own
/// error (and a git installed later is still found).
pub fn git_program() -> &'static Path {
    static GIT: OnceLock<PathBuf> = OnceLock::new();
    GIT.get_or_init(|| {
        let cwd = std::env::current_dir().unwrap_or_default();
        resolve(std::env::var_os("PATH"), &cwd)
    })
}

/// `git` on `path` (a PATH value; relative entries against `cwd`), or plain `git`.
pub fn resolve(path: Option<OsString>, cwd: &Path) -> PathBuf {
    which::which_in("git", path, cwd).unwrap_or_else(|_| PathBuf::from("git"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(dir: &Path, name: &str) -> PathBuf {
        let file = dir.join(name);
        std::fs::write(&file, "#!/bin/sh\nexit 0\n").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        file
    }

    #[test]
    fn the_first_git_on_path_is_taken_and_none_leaves_plain_git() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let empty = tmp.path().join("empty");
        let first = tmp.path().join("first");
        let second = tmp.path().join("second");
        for d in [&empty, &first, &second] {
            std::fs::create_dir(d).expect("dir");
        }
        let wanted = executable(&first, "git");
        executable(&second, "git");
        let path = std::env::join_paths([&empty, &first, &second]).expect("PATH");
        assert_eq!(resolve(Some(path), tmp.path()), wanted);
        let none = std::env::join_paths([&empty]).expect("PATH");
        assert_eq!(resolve(Some(none), tmp.path()), PathBuf::from("git"));
        assert_eq!(resolve(None, tmp.path()), PathBuf::from("git"));
    }
}
