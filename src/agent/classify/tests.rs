use super::tool_lines::*;
use super::*;

#[test]
fn fnv1a_matches_the_published_vectors() {
    use std::hash::Hasher;
    // FNV-1a 64 of "" and of "a", as published with the algorithm.
    assert_eq!(fnv::FnvHasher::default().finish(), 0xcbf2_9ce4_8422_2325);
    let mut hash = fnv::FnvHasher::default();
    hash.write(b"a");
    assert_eq!(hash.finish(), 0xaf63_dc4c_8601_ec8c);
    // The signature of a fixed input never changes across releases: journals store them.
    assert_eq!(
        signature(FailureClass::TestAssertion, "x").to_string(),
        "59e21b9ff83257f0"
    );
    assert_eq!(
        signature(FailureClass::TestAssertion, "x").to_string(),
        format!("{:016x}", signature(FailureClass::TestAssertion, "x").0)
    );
    assert_ne!(
        signature(FailureClass::TestAssertion, "x"),
        signature(FailureClass::Lint, "x")
    );
}

#[test]
fn post_check_is_its_own_class() {
    let a = classify_post_check("startIssue", "no feature branch checked out");
    assert_eq!(a.class, FailureClass::PostCheck);
    assert!(a.summary.starts_with("POST_CHECK: startIssue"));
    let b = classify_post_check("writeSpecs", "no feature branch checked out");
    assert_ne!(a.signature, b.signature);
}

#[test]
fn patterns() {
    assert!(is_typecheck_line("src/a.ts(3,7): error TS2322: Type"));
    assert!(is_typecheck_line("src/a.ts:3:7 - error TS2322: Type"));
    assert!(eslint_row("3:7  error  'x' is unused  no-unused-vars"));
    assert!(!eslint_row("3:7  warning  'x' is unused  no-unused-vars"));
    assert!(flake8_row("a.py:1:1: F401 'os' imported but unused"));
    assert!(go_compile_line("./x.go:10:2: undefined: foo"));
    assert!(c_compile_error("main.c:3:5: error: expected ';'"));
    assert!(is_rust_error_code("error[E0308]: mismatched types"));
}

/// The runner's own git failing for the environment is classified from the kind its adapter
/// decided from git's real words: a halt naming the cause and the fix, never the issue's.
#[test]
fn the_runners_own_git_failing_for_the_environment_is_not_the_issues() {
    use crate::call_failure::CallFailureKind as K;
    let cases = [
        (
            "`git push --quiet origin refs/heads/7-x:refs/heads/7-x (in /tmp/a/project)` failed (exit 128): fatal: '/tmp/a/moved-away.git' does not appear to be a git repository\nfatal: Could not read from remote repository.",
            FailureClass::ToolingEnv,
            "remote cannot be reached",
        ),
        (
            "`git push` failed (exit 128): remote: Invalid username or password.\nfatal: Authentication failed for 'https://github.com/o/r.git/'",
            FailureClass::Auth,
            "credentials",
        ),
        (
            "`git checkout --quiet main (in /tmp/a/linked)` failed (exit 128): fatal: 'main' is already used by worktree at '/tmp/a/project'",
            FailureClass::ToolingEnv,
            "another worktree",
        ),
        (
            "`git commit` failed (exit 128): fatal: Unable to create '/tmp/a/project/.git/index.lock': File exists.\n\nAnother git process seems to be running in this repository",
            FailureClass::ToolingEnv,
            "lock",
        ),
        (
            "`git fetch` failed (exit 128): error: unable to write file .git/objects/pack/tmp_pack_x: No space left on device\nfatal: index-pack failed",
            FailureClass::ToolingEnv,
            "disk is full",
        ),
    ];
    for (text, class, cause) in cases {
        let kind = K::of_git(text);
        let c = classify_builtin("commitPush", text, kind, false);
        assert_eq!(c.class, class, "{text}");
        assert_eq!(
            c.class.disposition(),
            crate::failure::Disposition::HaltEnvironment,
            "{text}"
        );
        assert!(c.summary.contains(cause), "{}", c.summary);
        assert!(c.summary.contains("fix:"), "{}", c.summary);
        // The same failure on another issue's branch, in another directory: one signature.
        let other = text.replace("7-x", "9-y").replace("/tmp/a/", "/tmp/b/");
        assert_eq!(
            classify_builtin("commitPush", &other, K::of_git(&other), false).signature,
            c.signature,
            "{text}"
        );
    }
    // What the issue's own commits cause stays the issue's.
    let conflict = "merge conflict in: shared.txt";
    let c = classify_builtin("merge", conflict, K::of_git(conflict), false);
    assert_eq!(c.class, FailureClass::MergeConflict);
    let hook = "remote: no pushes on Fridays\n ! [remote rejected] main -> main (pre-receive hook declined)\nerror: failed to push some refs to '/tmp/origin.git'";
    let c = classify_builtin("commitPush", hook, K::of_git(hook), false);
    assert_eq!(c.class.scope(), crate::failure::Scope::Issue, "{c:?}");
}

#[test]
fn a_base_branch_rule_refusing_the_merge_halts_with_one_signature_for_every_issue() {
    use crate::call_failure::CallFailureKind as K;
    let refused = |pr: u32, branch: &str| {
        format!(
            "`gh pr merge {branch} --merge --match-head-commit 0123456789abcdef0123456789abcdef01234567` failed (exit 1): X Pull request #{pr} is not mergeable: the base branch policy prohibits the merge; have a person satisfy the rule"
        )
    };
    let first = classify_builtin("merge", &refused(3, "3-a"), K::Policy, false);
    assert_eq!(first.class, FailureClass::ToolingEnv, "{first:?}");
    assert_eq!(
        first.class.disposition(),
        crate::failure::Disposition::HaltEnvironment
    );
    assert!(
        first
            .summary
            .contains("base branch policy prohibits the merge"),
        "{first:?}"
    );
    assert!(first.summary.contains("not the issue's"), "{first:?}");
    assert!(!first.summary.contains("#3"), "{first:?}");
    let second = classify_builtin("merge", &refused(4, "4-b"), K::Policy, false);
    assert_eq!(second.signature, first.signature);
    // A real conflict stays the issue's to repair, and its PR number is no part of it either.
    let conflict =
        |pr: u32| format!("X Pull request #{pr} is not mergeable: merge conflict in: a.txt");
    let c3 = classify_builtin("merge", &conflict(3), K::Other, false);
    assert_eq!(c3.class, FailureClass::MergeConflict);
    assert_eq!(
        classify_builtin("merge", &conflict(4), K::Other, false).signature,
        c3.signature
    );
}

/// The words of a failed command, without its command line, whether its message says how it
/// ended (an exit code) or not (an API's refusal, the runner's own check).
#[test]
fn a_failures_words_are_read_with_or_without_how_it_ended() {
    assert_eq!(
        super::words_of("`git push origin x` failed (exit 128): fatal: no"),
        "fatal: no"
    );
    assert_eq!(
        super::words_of("`GitLab API` failed: 401 Unauthorized (token): check it"),
        "401 Unauthorized (token): check it"
    );
    assert_eq!(super::words_of("no command here"), "no command here");
}
