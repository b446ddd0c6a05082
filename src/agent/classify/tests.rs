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
