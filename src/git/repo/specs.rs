//! An issue's spec directory and its four files.

use super::Repo;
use std::fs;
use std::path::{Path, PathBuf};

pub use crate::ports::git::{leading_issue, SPEC_FILES};

impl Repo {
    /// This issue's spec directory, never another issue's (docs/design-notes.md): the
    /// recorded feature name if it does not name a different issue, else `specs/<issue>-*`
    /// (the checked-out branch's slug first), else a directory whose requirements.md declares
    /// `**Issues**: #<issue>`.
    pub fn spec_dir(&self, issue: u32, feature: Option<&str>) -> Option<PathBuf> {
        let specs = self.path.join("specs");
        if let Some(f) = feature.filter(|f| !f.is_empty() && !f.contains('/') && *f != "..") {
            let other_issue = leading_issue(f).is_some_and(|n| n != issue);
            let dir = specs.join(f);
            if !other_issue && dir.is_dir() {
                return Some(dir);
            }
        }
        let mut dirs: Vec<String> = fs::read_dir(&specs)
            .ok()?
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        dirs.sort();
        if let Ok(Some(branch)) = self.current_branch() {
            if leading_issue(&branch) == Some(issue) && dirs.contains(&branch) {
                return Some(specs.join(branch));
            }
        }
        if let Some(d) = dirs.iter().find(|d| leading_issue(d) == Some(issue)) {
            return Some(specs.join(d));
        }
        dirs.iter()
            .filter(|d| leading_issue(d).is_none())
            .map(|d| specs.join(d))
            .find(|d| declares_issue(&d.join("requirements.md"), issue))
    }

    /// `Err` lists what is missing: `feature directory`, or the spec files that are absent or
    /// empty.
    pub fn spec_files_ok(&self, issue: u32, feature: Option<&str>) -> Result<(), Vec<String>> {
        let Some(dir) = self.spec_dir(issue, feature) else {
            return Err(vec!["feature directory".to_string()]);
        };
        let missing: Vec<String> = SPEC_FILES
            .iter()
            .filter(|f| fs::metadata(dir.join(f)).map_or(true, |m| !m.is_file() || m.len() == 0))
            .map(|f| f.to_string())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing)
        }
    }
}

fn declares_issue(requirements: &Path, issue: u32) -> bool {
    let Ok(text) = fs::read_to_string(requirements) else {
        return false;
    };
    let tag = format!("#{issue}");
    text.lines().filter(|l| l.contains("**Issue")).any(|l| {
        l.match_indices(&tag).any(|(i, _)| {
            !l[i + tag.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::leading_issue;

    #[test]
    fn a_branch_names_its_issue_by_number_or_by_a_team_key_and_number() {
        assert_eq!(leading_issue("12-add-x"), Some(12));
        assert_eq!(leading_issue("ENG-12-add-x"), Some(12));
        assert_eq!(leading_issue("ENG2-12-add-x"), Some(12));
        for none in [
            "ENG-12-",
            "eng-12-add-x",
            "feature-x",
            "ENG-x-12",
            "12-",
            "-12-x",
        ] {
            assert_eq!(leading_issue(none), None, "{none}");
        }
    }
}
