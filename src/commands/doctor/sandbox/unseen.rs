//! What an agent that failed to start inside the sandbox could not see: the absolute paths its
//! error names that exist here (so the sandbox hid them), as `readOnly` entries.

use std::path::{Path, PathBuf};

/// What to do when the agent did not start inside: the entries to add for the paths its
/// error names, else where to look.
pub(super) fn fix(said: &str, home: Option<&Path>, shown: &[PathBuf]) -> String {
    let unseen = paths(said, home, shown);
    if unseen.is_empty() {
        return "until the agent starts inside, its first step fails: give it what it needs \
                (agent.sandbox.readOnly, writable, env)"
            .to_string();
    }
    let entries: Vec<String> = unseen.iter().map(|p| format!("\"{p}\"")).collect();
    format!(
        "the agent could not see {}: add {} to agent.sandbox.readOnly",
        unseen.join(", "),
        entries.join(", ")
    )
}

/// The paths `said` names that exist on the host and lie outside what the sandbox `shown`,
/// as entries for `agent.sandbox.readOnly` (`~/…` under `home`), each once, at most five.
pub(super) fn paths(said: &str, home: Option<&Path>, shown: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in
        said.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ',' | '(' | ')'))
    {
        let word = word.trim_end_matches([':', '.', ';']);
        if !word.starts_with('/') || word.len() < 2 {
            continue;
        }
        let path = PathBuf::from(word);
        let seen = shown.iter().any(|d| path.starts_with(d));
        if !path.exists() || seen || crate::agent::sandbox::shown_always(&path) {
            continue;
        }
        let entry = match home.and_then(|h| path.strip_prefix(h).ok()) {
            Some(rest) if rest.as_os_str().is_empty() => "~".to_string(),
            Some(rest) => format!("~/{}", rest.display()),
            None => path.display().to_string(),
        };
        if !out.contains(&entry) && out.len() < 5 {
            out.push(entry);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_existing_paths_an_error_names_become_entries_in_the_home_as_tilde() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        let lib = home.join(".nvm/versions/node/v22/lib");
        std::fs::create_dir_all(&lib).expect("lib");
        let said = format!(
            "Error: Cannot find module '{}/cli.js': ENOENT, also '/nonexistent/x' and /usr/bin/env: 'node'",
            lib.display()
        );
        assert_eq!(
            paths(&said, Some(&home), &[]),
            Vec::<String>::new(),
            "cli.js does not exist"
        );
        std::fs::write(lib.join("cli.js"), "").expect("file");
        assert_eq!(
            paths(&said, Some(&home), &[]),
            ["~/.nvm/versions/node/v22/lib/cli.js"]
        );
        // What the sandbox showed is not what it hid.
        assert_eq!(paths(&said, Some(&home), &[lib]), Vec::<String>::new());
    }
}
