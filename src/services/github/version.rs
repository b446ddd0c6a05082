//! Which `gh` the runner works with: the oldest release every call of the adapters is
//! answered by, and the version a `gh` says it is.

use std::path::Path;

/// The oldest `gh` the adapters' calls work with: every call they make is answered by gh
/// 2.23.0 (Debian 12's) and later. Newer releases only add what the runner does not need.
pub const GH_MINIMUM: (u32, u32, u32) = (2, 23, 0);

/// The version `gh --version` printed (`gh version 2.23.0 (2023-02-27 …)`).
pub fn parse_gh_version(text: &str) -> Option<(u32, u32, u32)> {
    let word = text.lines().next()?.split_whitespace().nth(2)?;
    let core = word.trim_start_matches('v');
    let core = core.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// `gh --version` of `gh`: its version when it is [`GH_MINIMUM`] or later, or what is wrong in
/// an operator's words (the version found and the one needed, or why none was read).
pub fn check_gh_version(gh: &Path, dir: &Path) -> Result<String, String> {
    let (a, b, c) = GH_MINIMUM;
    let mut cmd = super::gh::unattended(gh, dir);
    cmd.arg("--version");
    let out = match crate::process::output_within(cmd, std::time::Duration::from_secs(20)) {
        Ok(Some(out)) => out,
        Ok(None) => {
            return Err(format!(
                "`{} --version` gave no answer within 20 s",
                gh.display()
            ))
        }
        Err(e) => {
            return Err(format!(
                "`{} --version` cannot be started: {e}",
                gh.display()
            ))
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    match parse_gh_version(&text) {
        Some(v) if v >= GH_MINIMUM => Ok(format!("{}.{}.{}", v.0, v.1, v.2)),
        Some(v) => Err(format!(
            "gh {}.{}.{} is older than {a}.{b}.{c}, the oldest gh the runner works with",
            v.0, v.1, v.2
        )),
        None => Err(format!(
            "`{} --version` printed no version the runner can read (it needs gh {a}.{b}.{c} or later)",
            gh.display()
        )),
    }
}

/// What is wrong when `gh` answers with a version older than [`GH_MINIMUM`]; `None` when it
/// is recent enough or gave no version (a missing gh is `doctor`'s to report).
pub fn older_gh(gh: &Path, dir: &Path) -> Option<String> {
    check_gh_version(gh, dir)
        .err()
        .filter(|why| why.contains(" is older than "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gh_versions_are_read_as_gh_prints_them() {
        let debian =
            "gh version 2.23.0 (2023-02-27 Debian 2.23.0+dfsg1-1)\nhttps://github.com/cli/cli/releases/tag/v2.23.0\n";
        assert_eq!(parse_gh_version(debian), Some((2, 23, 0)));
        assert_eq!(
            parse_gh_version("gh version 2.63.2 (2024-12-05)"),
            Some((2, 63, 2))
        );
        assert_eq!(parse_gh_version("gh version 2.4.0-rc1"), Some((2, 4, 0)));
        assert_eq!(parse_gh_version("Logged in"), None);
        assert!((2, 22, 1) < GH_MINIMUM && (2, 23, 0) >= GH_MINIMUM && (3, 0, 0) > GH_MINIMUM);
    }
}
