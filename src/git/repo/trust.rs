//! The repository's trusted state on the `Repo`: recorded at session start, pinned on every
//! git call, compared and restored after each agent step (`git::trust`).

use super::{Repo, RepoError};
use crate::call_failure::CallFailureKind;
use crate::git::trust::Trusted;
use crate::ports::git::CallEnd;
use std::path::Path;

impl Repo {
    /// Records what the repository lets git run and where it pushes, as the operator set it
    /// up, keeps the record in `record_file` and pins it on every later git call of this
    /// `Repo` (and its clones). The hooks are copied to `pinned_hooks`; both paths lie in the
    /// runner's private directory. `resume`: the session continues one that did not end (a
    /// crash, a kill during an agent's step): the kept record stands, and what differs from it
    /// is put back and returned, one line each. Once per `Repo`: a second call changes nothing.
    pub fn record_trust(
        &self,
        (pinned_hooks, record_file): (&Path, &Path),
        resume: bool,
    ) -> Result<Vec<String>, RepoError> {
        if self.trust.get().is_some() {
            return Ok(Vec::new());
        }
        let kept = match resume {
            true => crate::safe_fs::read_no_follow(record_file)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Trusted>(&bytes).ok())
                .filter(|t| t.is_of(&self.path)),
            false => None,
        };
        let (trusted, put_back) = match kept {
            Some(trusted) => {
                let pins = trusted.pins();
                let _ = self.trust.set((trusted, pins));
                let put_back = self.undo_tampering()?;
                (None, put_back)
            }
            None => {
                let (git_dir, common_dir) =
                    self.git_dirs().cloned().ok_or_else(|| RepoError::Parse {
                        command: format!("git rev-parse --git-dir (in {})", self.path.display()),
                        detail: "no git directory found".into(),
                    })?;
                let list = |file: &Path| self.list_config(file);
                let trusted =
                    Trusted::record(&self.path, (&git_dir, &common_dir), pinned_hooks, &list)
                        .map_err(|e| self.trust_error("record", pinned_hooks, &e))?;
                (Some(trusted), Vec::new())
            }
        };
        if let Some(trusted) = trusted {
            let text = serde_json::to_vec(&trusted)
                .map_err(|e| self.trust_error("record", record_file, &std::io::Error::other(e)))?;
            crate::safe_fs::write_atomic(record_file, &text)
                .map_err(|e| self.trust_error("record", record_file, &e))?;
            let pins = trusted.pins();
            let _ = self.trust.set((trusted, pins));
        }
        Ok(put_back)
    }

    /// What the last agent step changed of the recorded state (one line per change; empty when
    /// nothing, or when nothing was recorded), after putting the recorded state back. `Err`
    /// when the state cannot be read or put back: the runner must not run git on it.
    pub fn undo_tampering(&self) -> Result<Vec<String>, RepoError> {
        let Some((trusted, _)) = self.trust.get() else {
            return Ok(Vec::new());
        };
        let list = |file: &Path| self.list_config(file);
        let read = |e: std::io::Error| self.trust_error("read", &self.path, &e);
        let mut seen = self
            .trust_seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let changes = trusted.changes(&mut seen, &list).map_err(read)?;
        if changes.is_empty() {
            return Ok(changes);
        }
        trusted
            .restore()
            .map_err(|e| self.trust_error("restore", &self.path, &e))?;
        *seen = Default::default();
        let left = trusted.changes(&mut seen, &list).map_err(read)?;
        if !left.is_empty() {
            return Err(RepoError::Command {
                command: format!("restoring the git state of {}", self.path.display()),
                ended: CallEnd::Otherwise,
                stderr: format!("still changed after the restore: {}", left.join("; ")),
                hint: "put the repository's hooks and configuration back by hand (git config --local --list, .git/hooks), then run again",
                kind: CallFailureKind::Other,
            });
        }
        Ok(changes)
    }

    /// The `-c` options this repository's git calls carry (none before a record).
    pub(super) fn pins(&self) -> &[String] {
        self.trust.get().map(|(_, p)| p.as_slice()).unwrap_or(&[])
    }

    /// The entries of one configuration file, includes followed, as `file:<origin>\0` then
    /// `key\nvalue\0` records.
    fn list_config(&self, file: &Path) -> std::io::Result<Vec<u8>> {
        let path = file.to_string_lossy();
        let args = [
            "config",
            "--file",
            &path,
            "--includes",
            "--show-origin",
            "--list",
            "-z",
        ];
        let out = crate::git::command::output(&self.path, &args)?;
        if !out.status.success() {
            return Err(std::io::Error::other(format!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(out.stdout)
    }

    fn trust_error(&self, what: &str, path: &Path, e: &std::io::Error) -> RepoError {
        RepoError::Command {
            command: format!(
                "{what} the git hooks and configuration of {} ({})",
                self.path.display(),
                path.display()
            ),
            ended: CallEnd::Otherwise,
            stderr: e.to_string(),
            hint: "check the permissions of the repository's .git directory and the runner's state directory",
            kind: CallFailureKind::of_io(e),
        }
    }
}

#[cfg(test)]
mod tests;
