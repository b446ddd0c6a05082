//! `git status --porcelain=v2 --branch -z` read: the changes of the work tree and, in the same
//! call, the branch checked out, which the checks around a step ask right after "is the tree
//! clean" (startIssue's preconditions, the auto-commit).

/// What one `git status` said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Status {
    /// The checked-out branch (one without a commit yet included); `None` when HEAD is
    /// detached or git printed no branch header.
    pub branch: Option<String>,
    /// Whether git printed the branch header at all (`--branch`).
    pub branch_known: bool,
    /// `(XY code, path)` of every change, the code as porcelain v1 writes it (`??` untracked,
    /// a space for an unchanged side).
    pub entries: Vec<(String, String)>,
}

/// Parses the NUL-separated records: `# branch.head <name>|(detached)` headers, `1 XY … path`
/// (changed), `2 XY … path` followed by its source path (renamed or copied), `u XY … path`
/// (unmerged), `? path` (untracked). Paths are taken whole, spaces and all.
pub(super) fn parse(text: &str) -> Status {
    let mut status = Status::default();
    let mut records = text.split('\0');
    while let Some(record) = records.next() {
        if let Some(head) = record.strip_prefix("# branch.head ") {
            status.branch_known = true;
            status.branch = (head != "(detached)").then(|| head.to_string());
            continue;
        }
        // The fields before the path: kind, XY, then 6 (changed), 7 (renamed) or 8 (unmerged).
        let (before_path, renamed) = match record.as_bytes().first() {
            Some(b'1') => (8, false),
            Some(b'2') => (9, true),
            Some(b'u') => (10, false),
            Some(b'?') => {
                if let Some(path) = record.strip_prefix("? ") {
                    status.entries.push(("??".to_string(), path.to_string()));
                }
                continue;
            }
            _ => continue,
        };
        if renamed {
            records.next(); // the rename's source path
        }
        let mut fields = record.splitn(before_path + 1, ' ');
        let code = fields.nth(1).unwrap_or("");
        let Some(path) = fields.nth(before_path - 2) else {
            continue;
        };
        let code: String = code
            .chars()
            .map(|c| if c == '.' { ' ' } else { c })
            .collect();
        status.entries.push((code, path.to_string()));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_record_gives_its_code_and_whole_path() {
        let text = [
            "# branch.oid 0123",
            "# branch.head 7-login",
            "# branch.upstream origin/7-login",
            "1 .M N... 100644 100644 100644 aaaa aaaa src/a file.rs",
            "1 A. N... 000000 100644 100644 0000 bbbb new.rs",
            "2 R. N... 100644 100644 100644 cccc cccc R100 to name.rs",
            "from name.rs",
            "u UU N... 100644 100644 100644 100644 dddd eeee ffff both.rs",
            "? notes/new.txt",
            "",
        ]
        .join("\0");
        let s = parse(&text);
        assert_eq!(s.branch.as_deref(), Some("7-login"));
        assert!(s.branch_known);
        let entries: Vec<(&str, &str)> = s
            .entries
            .iter()
            .map(|(c, p)| (c.as_str(), p.as_str()))
            .collect();
        assert_eq!(
            entries,
            vec![
                (" M", "src/a file.rs"),
                ("A ", "new.rs"),
                ("R ", "to name.rs"),
                ("UU", "both.rs"),
                ("??", "notes/new.txt"),
            ]
        );
    }

    #[test]
    fn a_detached_head_has_no_branch() {
        let s = parse("# branch.oid 0123\0# branch.head (detached)\0");
        assert_eq!(s.branch, None);
        assert!(s.branch_known);
        assert!(s.entries.is_empty());
        assert!(!parse("").branch_known);
    }
}
