//! The test-weakening check (`TESTS_WEAKENED`) on a large repository: 5,000 Rust test files
//! on main, a branch whose diff is 2,000 lines over 20 test files (tests and assertions
//! added, one test skipped so that a fact is found). Timed: what a push pays for the check,
//! the git port's read of the changed files at both ends (`Repo::changed_files`: two git
//! calls) and the tree-sitter comparison (`weakening::check`), separately and together.
//!
//! `cargo bench --bench weakening`

mod common;

use common::median;
use sdlc_runner::git::repo::Repo;
use sdlc_runner::weakening::{self, CiScripts, Removals};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const TEST_FILES: usize = 5_000;
const CHANGED: usize = 20;
/// Lines added per changed file: 20 × 100 = a 2,000-line diff.
const ADDED: usize = 100;
const RUNS: usize = 7;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn test_file(i: usize) -> String {
    (0..3)
        .map(|t| {
            format!(
                "#[test]\nfn case_{i}_{t}() {{\n    let x = {t};\n    assert_eq!(x, {t});\n}}\n\n"
            )
        })
        .collect()
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(dir.join("tests")).expect("tests dir");
    for i in 0..TEST_FILES {
        std::fs::write(dir.join(format!("tests/t{i:04}.rs")), test_file(i)).expect("write");
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "5,000 test files"]);
    git(dir, &["checkout", "-q", "-b", "feature"]);
    for i in 0..CHANGED {
        let path = dir.join(format!("tests/t{i:04}.rs"));
        let mut text = test_file(i);
        if i == 0 {
            text = text.replacen("#[test]\nfn case_0_0", "#[test]\n#[ignore]\nfn case_0_0", 1);
        }
        for a in 0..ADDED / 5 {
            text.push_str(&format!(
                "#[test]\nfn added_{i}_{a}() {{\n    assert!(true);\n}}\n\n"
            ));
        }
        std::fs::write(&path, text).expect("write");
    }
    git(dir, &["commit", "-q", "-am", "a 2,000-line change"]);
    let repo = Repo::open(dir).expect("the repository");
    let (mut read, mut compared, mut total) = (Vec::new(), Vec::new(), Vec::new());
    let mut facts = 0;
    let mut lines = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        let files = repo.changed_files("feature").expect("changed files");
        let after_read = Instant::now();
        let found = weakening::check(&files, &Removals::default(), &CiScripts::default());
        let end = Instant::now();
        facts = found.weakened.len();
        lines = files
            .iter()
            .map(|f| f.after.as_deref().unwrap_or_default().lines().count())
            .sum();
        read.push((after_read - start).as_secs_f64() * 1000.0);
        compared.push((end - after_read).as_secs_f64() * 1000.0);
        total.push((end - start).as_secs_f64() * 1000.0);
    }
    assert_eq!(facts, 1, "the one skipped test is found");
    println!(
        "weakening check, {TEST_FILES} test files, {CHANGED} changed ({lines} lines at the head, a {}-line diff), median of {RUNS}:",
        CHANGED * ADDED
    );
    println!("  git read (2 calls)   {:8.1} ms", median(read));
    println!("  tree-sitter compare  {:8.1} ms", median(compared));
    println!("  total                {:8.1} ms", median(total));
}
