//! The repository every end-to-end project starts from (`origin.git` and its clone `project`,
//! one commit on main, as `sdlc-runner demo` makes it), made once and copied: made anew for
//! each project it cost eleven git processes, and the tests' CPU is mostly processes.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Writes `origin.git` and `project` under `root`: a copy of the template, the clone's
/// remote pointing at the copied origin.
pub fn fresh_repository(root: &Path) {
    let template = template();
    copy_tree(&template.join("origin.git"), &root.join("origin.git"));
    copy_tree(&template.join("project"), &root.join("project"));
    // The clone names its origin by absolute path (where the template was made): the copy's.
    let config = root.join("project/.git/config");
    let text = std::fs::read_to_string(&config).expect("read the copied clone's config");
    let new = root.join("origin.git");
    let mut named = 0;
    let text: String = text
        .lines()
        .map(|line| match line.trim_start().strip_prefix("url = ") {
            Some(_) => {
                named += 1;
                format!("\turl = {}\n", new.to_str().expect("utf-8 project path"))
            }
            None => format!("{line}\n"),
        })
        .collect();
    assert_eq!(named, 1, "the template's clone names one remote: {text}");
    std::fs::write(&config, text).expect("write the copied clone's config");
}

/// Made once per test binary under cargo's temporary directory for tests; a second binary
/// (or a run after this one) reuses it. Built aside and renamed into place, so a test never
/// copies a half-made template.
fn template() -> &'static Path {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let done = base.join("e2e-repository-v2");
        if !done.join("project/.git").is_dir() {
            std::fs::create_dir_all(base).expect("cargo's temporary directory for tests");
            let aside = tempfile::tempdir_in(base).expect("a directory to build the template in");
            let made = aside.path().canonicalize().expect("canonical");
            sdlc_runner::commands::demo::init_repository(&made).expect("git repository");
            for config in ["origin.git/config", "project/.git/config"] {
                no_auto_maintenance(&made.join(config));
            }
            // Another binary may have put its template in place first: either one does.
            let _ = std::fs::rename(&made, &done);
        }
        done.canonicalize().expect("the template is in place")
    })
}

/// The runner's own git calls never start git's automatic maintenance; the fake agent's and
/// the tests' own calls in the copies need not either. About one git process in ten of a
/// lifecycle was `git maintenance run --auto`, after a commit, a fetch, a merge or a push.
fn no_auto_maintenance(config: &Path) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(config)
        .expect("open the template's git config");
    file.write_all(
        b"[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n[receive]\n\tautogc = false\n",
    )
    .expect("write the template's git config");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a directory of the copy");
    for entry in std::fs::read_dir(from).expect("read a directory of the template") {
        let entry = entry.expect("a template entry");
        let kind = entry.file_type().expect("a template entry's type");
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a template file");
        }
    }
}
