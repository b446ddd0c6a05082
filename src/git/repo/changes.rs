//! What a branch changed against its base, file by file with the text at both ends, for the
//! test-weakening check (`crate::weakening`): two git calls whatever the number of files
//! (the list of paths, then one diff with the whole files as context).

use super::{Repo, RepoError};
use crate::weakening::ChangedFile;

/// Context lines asked for: more than any file has, so each file's diff holds it whole.
const WHOLE: &str = "--unified=100000000";

impl Repo {
    /// The files `branch` changed since it left the base branch (the merge base with
    /// origin's base branch, else the local one), each with its text at the base and at the
    /// branch's head; a file absent at one end, or not text, has `None` there.
    pub fn changed_files(&self, branch: &str) -> Result<Vec<ChangedFile>, RepoError> {
        let head = format!("refs/heads/{branch}");
        let main = match self.origin_main()? {
            Some(_) => format!("refs/remotes/origin/{}", self.main),
            None => format!("refs/heads/{}", self.main),
        };
        let base = self.git_ok(&["merge-base", &main, &head])?;
        let base = base.trim();
        let listed = self.git_checked(&[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            base,
            &head,
        ])?;
        let paths: Vec<String> = listed
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let diff = self.git_checked(&[
            "diff",
            WHOLE,
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            base,
            &head,
        ])?;
        Ok(split_whole_diff(
            &String::from_utf8_lossy(&diff.stdout),
            paths,
        ))
    }
}

/// The per-file texts of a diff made with whole files as context; `paths` are the files in
/// the diff's order (git lists both sorted alike).
fn split_whole_diff(diff: &str, paths: Vec<String>) -> Vec<ChangedFile> {
    let mut files: Vec<ChangedFile> = Vec::with_capacity(paths.len());
    let mut paths = paths.into_iter();
    // Per file: its texts, whether each end exists, whether a hunk started.
    let mut current: Option<(ChangedFile, bool)> = None;
    let finish = |files: &mut Vec<ChangedFile>, current: Option<(ChangedFile, bool)>| {
        if let Some((file, _)) = current {
            files.push(file);
        }
    };
    for line in diff.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            finish(&mut files, current.take());
            let Some(path) = paths.next() else { break };
            current = Some((
                ChangedFile {
                    path,
                    before: Some(String::new()),
                    after: Some(String::new()),
                },
                false,
            ));
            continue;
        }
        let Some((file, in_hunk)) = current.as_mut() else {
            continue;
        };
        if !*in_hunk {
            if line.starts_with("--- /dev/null") {
                file.before = None;
            } else if line.starts_with("+++ /dev/null") {
                file.after = None;
            } else if line.starts_with("Binary files ") {
                file.before = None;
                file.after = None;
            } else if line.starts_with("@@") {
                *in_hunk = true;
            }
            continue;
        }
        let (mark, text) = line.split_at(1.min(line.len()));
        let (to_before, to_after) = match mark {
            " " => (true, true),
            "-" => (true, false),
            "+" => (false, true),
            _ => (false, false),
        };
        if to_before {
            if let Some(b) = file.before.as_mut() {
                b.push_str(text);
            }
        }
        if to_after {
            if let Some(a) = file.after.as_mut() {
                a.push_str(text);
            }
        }
    }
    finish(&mut files, current);
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_file_diff_gives_both_ends_of_each_file() {
        let diff = "diff --git a/a.rs b/a.rs\nindex 1..2 100644\n--- a/a.rs\n+++ b/a.rs\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n\
diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x = 1\n\
diff --git a/gone.go b/gone.go\ndeleted file mode 100644\n--- a/gone.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package gone\n\
diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n";
        let files = split_whole_diff(
            diff,
            vec![
                "a.rs".into(),
                "new.py".into(),
                "gone.go".into(),
                "img.png".into(),
            ],
        );
        assert_eq!(files.len(), 4);
        assert_eq!(files[0].before.as_deref(), Some("one\ntwo\nthree\n"));
        assert_eq!(files[0].after.as_deref(), Some("one\n2\nthree\n"));
        assert_eq!(
            (files[1].before.as_deref(), files[1].after.as_deref()),
            (None, Some("x = 1\n"))
        );
        assert_eq!(
            (files[2].before.as_deref(), files[2].after.as_deref()),
            (Some("package gone\n"), None)
        );
        assert_eq!(
            (files[3].before.as_deref(), files[3].after.as_deref()),
            (None, None)
        );
    }
}
