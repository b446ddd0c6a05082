//! What the runner's own commits must never do: conclude someone's unfinished merge, rebase,
//! cherry-pick or revert (`add -A` plus `commit` would, with the conflict markers in it), or
//! carry conflict markers at all. An operation in progress is aborted after the tree as it
//! stood is kept on a rescue ref; markers are found by git's own check of added lines.

use super::{Repo, RepoError};
use std::path::Path;

/// Where rescued trees are kept: outside `refs/heads` (no branch to push or merge by mistake)
/// and outside anything `fetch --prune` or `gc` removes.
pub const RESCUE_REFS: &str = "refs/sdlc-runner/rescue/";

/// An operation git holds open in a work tree, by the file that marks it and how to end it.
const OPERATIONS: [(&str, &str, &[&str]); 5] = [
    ("MERGE_HEAD", "a merge", &["merge", "--abort"]),
    ("rebase-merge", "a rebase", &["rebase", "--abort"]),
    (
        "rebase-apply",
        "a rebase (or `git am`)",
        &["rebase", "--abort"],
    ),
    (
        "CHERRY_PICK_HEAD",
        "a cherry-pick",
        &["cherry-pick", "--abort"],
    ),
    ("REVERT_HEAD", "a revert", &["revert", "--abort"]),
];

impl Repo {
    /// The operation in progress in this work tree, if any: its name and how to abort it.
    fn operation_in_progress(&self) -> Option<(&'static str, Vec<&'static str>)> {
        let (git_dir, _) = self.git_dirs()?;
        OPERATIONS.iter().find_map(|(marker, op, abort)| {
            let path = git_dir.join(marker);
            if std::fs::symlink_metadata(&path).is_err() {
                return None;
            }
            // `git am` keeps its state in rebase-apply too, and aborts with its own command.
            let am = *marker == "rebase-apply" && path.join("applying").exists();
            let abort = if am {
                vec!["am", "--abort"]
            } else {
                abort.to_vec()
            };
            Some((*op, abort))
        })
    }

    /// Before a commit of the runner: an unfinished merge, rebase, cherry-pick or revert is
    /// aborted, never concluded, once the tree as it stands (conflict markers, untracked files
    /// and all) is kept on a rescue ref named after `label`. `Ok` when nothing was in
    /// progress; `Err(Rescued)` names the ref after an abort (the caller commits nothing then:
    /// the abort put the tree back as it was before the operation).
    pub fn abort_unfinished(&self, label: &str) -> Result<(), RepoError> {
        let Some((op, abort)) = self.operation_in_progress() else {
            return Ok(());
        };
        let unmerged = self
            .git_ok(&["diff", "--name-only", "--diff-filter=U", "-z"])
            .unwrap_or_default();
        let paths: Vec<String> = unmerged
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        let rescue = self.keep_tree(label, op)?;
        self.git_ok(&abort)?;
        Err(RepoError::Rescued {
            op,
            path: self.path.clone(),
            paths,
            rescue,
        })
    }

    /// The rescue refs kept for `label` (a branch), oldest first: what an escalation names as
    /// the work the runner aborted rather than commit.
    pub fn rescue_refs(&self, label: &str) -> Result<Vec<String>, RepoError> {
        let pattern = format!("{RESCUE_REFS}{}-*", ref_safe(label));
        let listed = self.git_ok(&["for-each-ref", "--format=%(refname)", &pattern])?;
        Ok(listed.lines().map(str::to_string).collect())
    }

    /// A commit of the work tree as it stands, made through a scratch index (the real one
    /// may hold unmerged entries, which no tree can be written from) and kept on
    /// `refs/sdlc-runner/rescue/<label>-<time>`; no branch, index or file is touched.
    fn keep_tree(&self, label: &str, op: &str) -> Result<String, RepoError> {
        let scratch = tempfile::Builder::new()
            .prefix("sdlc-rescue-index")
            .tempdir()
            .map_err(|source| RepoError::Spawn {
                program: "git (a scratch index for the rescue ref)".to_string(),
                source,
            })?;
        let index = scratch.path().join("index");
        self.git_with_index(&index, &["add", "-A", "--", "."])?;
        let tree = self.git_with_index(&index, &["write-tree"])?;
        let mut args = vec!["commit-tree".to_string(), tree.clone()];
        for parent in ["HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"] {
            if let Ok(Some(commit)) = self.ref_commit(parent) {
                if !args.contains(&commit) {
                    args.extend(["-p".to_string(), commit]);
                }
            }
        }
        let message = format!(
            "sdlc-runner rescue: the tree as {op} left it, unfinished, before the runner aborted it"
        );
        args.extend(["-m".to_string(), message]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let commit = self.git_ok(&args)?;
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let name = format!("{RESCUE_REFS}{}-{stamp}", ref_safe(label));
        self.git_ok(&[
            "update-ref",
            "-m",
            "sdlc-runner: rescue",
            &name,
            &commit,
            "",
        ])?;
        Ok(name)
    }

    fn git_with_index(&self, index: &Path, args: &[&str]) -> Result<String, RepoError> {
        let out = crate::git::command::run(
            &self.path,
            &crate::git::trust::Trusted::pinned(self.pins(), args),
            &[("GIT_INDEX_FILE", index.as_os_str())],
            crate::git::command::GIT_TIMEOUT,
        );
        let out = self.answered(args, out, "check the disk the repository is on")?;
        if !out.status.success() {
            return Err(self.failed(args, &out));
        }
        Ok(super::stdout(&out))
    }

    /// Files whose added lines hold a conflict marker: `range` is what `git diff --check`
    /// compares (`--cached`, or two commits), `side` the revision whose copy of a file is read
    /// (`""` for the index, else a commit). Git's own check finds the lines; only a `<<<<<<<`
    /// or `>>>>>>>` line counts (a lone `=======` is also a Markdown underline).
    pub(super) fn files_with_markers(
        &self,
        range: &[&str],
        side: &str,
    ) -> Result<Vec<String>, RepoError> {
        let found = self.marker_lines_in(range, side, None)?;
        Ok(found.into_iter().map(|(path, _)| path).collect())
    }

    /// `(path, line numbers)` of the conflict marker lines `range` adds, as git's own check
    /// finds them (the `conflict-marker-size` attribute of each file honoured): with
    /// `attributes_of`, the attributes are the ones that tree holds (`attr.tree`, git 2.42;
    /// an older git reads the work tree's), so a merge is judged by the project it builds.
    pub(super) fn marker_lines_in(
        &self,
        range: &[&str],
        side: &str,
        attributes_of: Option<&str>,
    ) -> Result<Vec<(String, Vec<usize>)>, RepoError> {
        let attr_tree = attributes_of.map(|tree| format!("attr.tree={tree}"));
        let mut args = Vec::new();
        if let Some(setting) = attr_tree.as_deref() {
            args.extend(["-c", setting]);
        }
        args.extend(["diff", "--check", "--no-color", "--no-ext-diff"]);
        args.extend_from_slice(range);
        let out = self.git(&args)?;
        // Exit 2 is "problems found"; anything else but 0 is a failure of the command.
        if !matches!(out.status.code(), Some(0) | Some(2)) {
            return Err(self.failed(&args, &out));
        }
        let mut found = Vec::new();
        for (path, lines) in marker_lines(&String::from_utf8_lossy(&out.stdout)) {
            let blob = self.git(&["show", &format!("{side}:{path}")])?;
            let text = String::from_utf8_lossy(&blob.stdout);
            let all: Vec<&str> = text.lines().collect();
            let angle: Vec<usize> = lines
                .into_iter()
                .filter(|n| {
                    n.checked_sub(1)
                        .and_then(|i| all.get(i))
                        .is_some_and(|l| l.starts_with("<<<<<<<") || l.starts_with(">>>>>>>"))
                })
                .collect();
            if !angle.is_empty() {
                found.push((path, angle));
            }
        }
        Ok(found)
    }
}

/// `a.txt:2, a.txt:6, b.md:1`: where the markers are.
pub(super) fn located(marked: &[(String, Vec<usize>)]) -> String {
    let at: Vec<String> = marked
        .iter()
        .flat_map(|(path, lines)| lines.iter().map(move |n| format!("{path}:{n}")))
        .collect();
    at.join(", ")
}

/// `(path, line numbers)` of every `<path>:<line>: leftover conflict marker` that
/// `git diff --check` printed, paths in order of appearance.
fn marker_lines(text: &str) -> Vec<(String, Vec<usize>)> {
    let mut found: Vec<(String, Vec<usize>)> = Vec::new();
    for line in text.lines() {
        let Some(head) = line.strip_suffix(": leftover conflict marker") else {
            continue;
        };
        let Some((path, number)) = head.rsplit_once(':') else {
            continue;
        };
        let Ok(number) = number.parse::<usize>() else {
            continue;
        };
        match found.iter_mut().find(|(p, _)| p == path) {
            Some((_, lines)) => lines.push(number),
            None => found.push((path.to_string(), vec![number])),
        }
    }
    found
}

/// `label` with only characters a ref name may hold.
fn ref_safe(label: &str) -> String {
    let safe: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if safe.is_empty() {
        "work".to_string()
    } else {
        safe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_names_each_file_and_its_marker_lines() {
        let text = "a.txt:2: leftover conflict marker\nREADME.md:3: leftover conflict marker\na.txt:6: leftover conflict marker\nb c.txt:7: trailing whitespace.\n+z \nb c.txt:1: leftover conflict marker\n";
        assert_eq!(
            marker_lines(text),
            vec![
                ("a.txt".to_string(), vec![2, 6]),
                ("README.md".to_string(), vec![3]),
                ("b c.txt".to_string(), vec![1]),
            ]
        );
        assert!(marker_lines("").is_empty());
    }

    #[test]
    fn a_label_becomes_a_ref_name() {
        assert_eq!(ref_safe("1-issue-1"), "1-issue-1");
        assert_eq!(ref_safe("a b/c..d"), "a-b-c--d");
        assert_eq!(ref_safe(""), "work");
    }
}
