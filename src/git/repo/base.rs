//! Which branch is main: origin's default branch as origin states it, unless the config names
//! one (`baseBranch`). A clone's own refs are no evidence: a CI checkout or `git init; git
//! remote add; git fetch` leaves no `origin/HEAD`, and a stale `main` beside origin's
//! `master` would otherwise be taken for main and every issue merged into it.

use super::{Repo, RepoError};
use crate::call_failure::CallFailureKind;

/// Where the base branch the run merges into was learnt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseSource {
    /// `baseBranch` in the config file.
    Config,
    /// Origin said so (`git ls-remote --symref origin HEAD`).
    Origin,
    /// `refs/remotes/origin/HEAD` as last fetched (origin named no default branch).
    OriginHeadRef,
    /// The clone has no origin: its own `main`, else `master`.
    Local,
    /// Origin names no default branch (its HEAD points at a branch it does not have, as a
    /// new bare repository's does) and the clone never fetched one: the clone's own `main`,
    /// else `master`.
    OriginNamesNone,
}

impl Repo {
    /// Settles main for a run or `doctor`: `configured` when the config names one, else
    /// origin's default branch asked from origin itself, else what the clone knows. An origin
    /// that cannot be asked is an error naming it, its URL and the fix: a run must not start
    /// on a guess, nor blame an issue for a remote that is gone.
    pub fn settle_base(&mut self, configured: Option<&str>) -> Result<BaseSource, RepoError> {
        if let Some(branch) = configured {
            self.main = branch.to_string();
            return Ok(BaseSource::Config);
        }
        if !self.has_origin()? {
            return Ok(BaseSource::Local);
        }
        let args = ["ls-remote", "--symref", "origin", "HEAD"];
        let out = self.run_git(&args)?;
        if !out.status.success() {
            let all = String::from_utf8_lossy(&out.stderr).trim().to_string();
            let kind = match CallFailureKind::of_git(&all) {
                k if k.is_transient() || k.is_environment() => k,
                _ => CallFailureKind::Unreachable,
            };
            // git's first line says it; the rest is advice the error gives in its own words.
            let said = all.lines().next().unwrap_or("no output").to_string();
            return Err(RepoError::Remote {
                remote: "origin".to_string(),
                url: self.origin_url(),
                said,
                kind,
            });
        }
        if let Some(branch) = symref_target(&String::from_utf8_lossy(&out.stdout)) {
            self.main = branch;
            return Ok(BaseSource::Origin);
        }
        let out = self.git(&["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"])?;
        if let Some(branch) = super::stdout(&out).strip_prefix("refs/remotes/origin/") {
            if out.status.success() {
                self.main = branch.to_string();
                return Ok(BaseSource::OriginHeadRef);
            }
        }
        Ok(BaseSource::OriginNamesNone)
    }

    /// Origin's URL as configured (for messages); empty when it cannot be read.
    pub fn origin_url(&self) -> String {
        self.git(&["remote", "get-url", "origin"])
            .map(|o| super::stdout(&o))
            .unwrap_or_default()
    }

    /// Whether main is checked out in a worktree other than this one (the primary clone of a
    /// linked worktree, or a linked one of this clone): then this work tree must never check
    /// it out (git refuses) nor move it (the other tree's index would fall out of step). Read
    /// from the HEAD files of the clone's worktrees, which is all `git worktree list` reads:
    /// asked around every cycle, it costs no git process.
    pub fn main_checked_out_elsewhere(&self) -> Result<bool, RepoError> {
        let Some((git_dir, common_dir)) = self.git_dirs() else {
            return Ok(false);
        };
        let own = git_dir.canonicalize().unwrap_or_else(|_| git_dir.clone());
        let common = common_dir
            .canonicalize()
            .unwrap_or_else(|_| common_dir.clone());
        let mut heads = vec![common.clone()];
        if let Ok(entries) = std::fs::read_dir(common.join("worktrees")) {
            heads.extend(entries.flatten().map(|e| e.path()));
        }
        let wanted = format!("ref: refs/heads/{}", self.main);
        Ok(heads.into_iter().any(|dir| {
            let dir = dir.canonicalize().unwrap_or(dir);
            dir != own
                && std::fs::read_to_string(dir.join("HEAD")).is_ok_and(|head| head.trim() == wanted)
        }))
    }
}

/// How the run's first line and `doctor` say which branch is main and why.
pub fn describe_base(main: &str, source: &BaseSource, config: &std::path::Path) -> String {
    match source {
        BaseSource::Config => format!("base branch {main} (baseBranch in {})", config.display()),
        BaseSource::Origin => format!(
            "base branch {main} (origin's default branch, from `git ls-remote --symref origin HEAD`)"
        ),
        BaseSource::OriginHeadRef => format!(
            "base branch {main} (origin's default branch as last fetched, refs/remotes/origin/HEAD; origin named none)"
        ),
        BaseSource::Local => format!(
            "base branch {main} (no origin remote: the clone's own {main}; set baseBranch to choose)"
        ),
        BaseSource::OriginNamesNone => format!(
            "base branch {main} (origin names no default branch: its HEAD points at a branch it does not have; the clone's own {main}; set baseBranch to choose)"
        ),
    }
}

/// The branch `ref: refs/heads/<b>\tHEAD` names in `ls-remote --symref` output.
fn symref_target(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (target, name) = line.strip_prefix("ref: ")?.split_once('\t')?;
        (name.trim() == "HEAD")
            .then(|| target.strip_prefix("refs/heads/"))
            .flatten()
            .map(str::to_string)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_head_is_read_from_the_symref_line() {
        let text = "ref: refs/heads/master\tHEAD\n1a2b3c\tHEAD\n";
        assert_eq!(symref_target(text).as_deref(), Some("master"));
        assert_eq!(symref_target("1a2b3c\tHEAD\n"), None);
        assert_eq!(symref_target(""), None);
    }
}
