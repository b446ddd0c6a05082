use super::*;
use proptest::prelude::*;

fn changed(path: &str, before: &str, after: &str) -> ChangedFile {
    ChangedFile {
        path: path.to_string(),
        before: Some(before.to_string()),
        after: Some(after.to_string()),
    }
}

fn weakened(files: &[ChangedFile]) -> Vec<Fact> {
    check(files, &Removals::default(), &CiScripts::default()).weakened
}

fn one(files: &[ChangedFile]) -> Fact {
    let facts = weakened(files);
    assert_eq!(facts.len(), 1, "{facts:#?}");
    facts.into_iter().next().expect("one fact")
}

const RUST: &str = r#"
fn parse(s: &str) -> usize { s.len() }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_empty_input() {
        assert_eq!(parse(""), 0);
        assert!(parse("").eq(&0));
    }

    #[test]
    fn parses_words() {
        assert_eq!(parse("ab"), 2);
    }
}
"#;

#[test]
fn rust_a_test_newly_ignored_is_named_with_its_line() {
    let after = RUST.replace(
        "    #[test]\n    fn parses_empty_input",
        "    #[test]\n    #[ignore]\n    fn parses_empty_input",
    );
    let f = one(&[changed("tests/parse.rs", RUST, &after)]);
    assert_eq!(f.kind, Kind::TestSkipped);
    assert_eq!(f.name, "tests::parses_empty_input");
    assert_eq!(f.line, 10);
    assert_eq!(
        f.to_string(),
        "you skipped `tests::parses_empty_input` (#[ignore]) in tests/parse.rs:10"
    );
}

#[test]
fn rust_a_removed_test_and_a_removed_assertion_are_facts() {
    let after = RUST.replace("        assert!(parse(\"\").eq(&0));\n", "");
    let f = one(&[changed("src/lib.rs", RUST, &after)]);
    assert_eq!(f.kind, Kind::AssertionsRemoved);
    assert!(f.what.contains("1 of the 2 assertions"), "{f}");
    let start = RUST
        .find("    #[test]\n    fn parses_words")
        .expect("the test");
    let end = RUST[start..].find("    }\n").expect("its end") + start + 6;
    let after = format!("{}{}", &RUST[..start], &RUST[end..]);
    let f = one(&[changed("src/lib.rs", RUST, &after)]);
    assert_eq!((f.kind, f.line, f.at_base), (Kind::TestRemoved, 15, true));
    // A test moved to another changed file was not removed.
    let moved = changed(
        "tests/words.rs",
        "",
        "#[test]\nfn parses_words() { assert_eq!(2, 2); }\n",
    );
    let facts = weakened(&[changed("src/lib.rs", RUST, &after), moved]);
    assert!(
        facts.iter().all(|f| f.kind != Kind::TestRemoved),
        "{facts:#?}"
    );
}

#[test]
fn rust_an_emptied_test_is_a_fact() {
    let after = RUST.replace("        assert_eq!(parse(\"ab\"), 2);\n", "");
    let f = one(&[changed("src/lib.rs", RUST, &after)]);
    assert_eq!((f.kind, f.line), (Kind::TestEmptied, 15));
}

const PYTHON: &str = r#"import pytest

def test_parses_empty_input():
    assert parse("") == 0

class TestWords:
    def test_words(self):
        self.assertEqual(parse("ab"), 2)
"#;

#[test]
fn python_skip_xfail_and_skip_calls_are_facts() {
    let after = PYTHON.replace(
        "def test_parses_empty_input",
        "@pytest.mark.skip(reason=\"flaky\")\ndef test_parses_empty_input",
    );
    let f = one(&[changed("tests/test_parse.py", PYTHON, &after)]);
    assert_eq!((f.kind, f.line), (Kind::TestSkipped, 4));
    assert_eq!(f.name, "test_parses_empty_input");
    let after = PYTHON.replace(
        "    def test_words",
        "    @pytest.mark.xfail\n    def test_words",
    );
    let f = one(&[changed("tests/test_parse.py", PYTHON, &after)]);
    assert_eq!(
        (f.kind, f.name.as_str()),
        (Kind::TestSkipped, "TestWords::test_words")
    );
    let after = PYTHON.replace(
        "    assert parse(\"\") == 0",
        "    pytest.skip(\"later\")\n    assert parse(\"\") == 0",
    );
    assert_eq!(
        one(&[changed("t/test_p.py", PYTHON, &after)]).kind,
        Kind::TestSkipped
    );
    let after = PYTHON.replace("    assert parse(\"\") == 0", "    pass");
    assert_eq!(
        one(&[changed("t/test_p.py", PYTHON, &after)]).kind,
        Kind::TestEmptied
    );
}

const JS: &str = r#"describe("parse", () => {
  it("parses empty input", () => {
    expect(parse("")).toBe(0);
    expect(parse(" ")).toBe(1);
  });
  test("parses words", () => {
    assert.equal(parse("ab"), 2);
  });
});
"#;

#[test]
fn javascript_and_typescript_skips_and_assertions_are_facts() {
    for path in [
        "test/parse.test.js",
        "test/parse.test.ts",
        "test/parse.test.tsx",
    ] {
        let after = JS.replace("  it(\"parses empty", "  it.skip(\"parses empty");
        let f = one(&[changed(path, JS, &after)]);
        assert_eq!(f.kind, Kind::TestSkipped, "{path}");
        assert_eq!(f.name, "parse > parses empty input");
        assert_eq!(f.line, 2);
        let after = JS.replace("    expect(parse(\" \")).toBe(1);\n", "");
        assert_eq!(
            one(&[changed(path, JS, &after)]).kind,
            Kind::AssertionsRemoved
        );
        let after = JS.replace("  test(\"parses words\"", "  xtest(\"parses words\"");
        assert_eq!(one(&[changed(path, JS, &after)]).line, 6);
        let after = JS.replace("describe(\"parse\"", "describe.skip(\"parse\"");
        assert_eq!(weakened(&[changed(path, JS, &after)]).len(), 2, "{path}");
    }
}

const GO: &str = r#"package parse

import "testing"

func TestParsesEmptyInput(t *testing.T) {
	if Parse("") != 0 {
		t.Fatalf("want 0")
	}
}
"#;

#[test]
fn go_skips_and_removed_checks_are_facts() {
    let after = GO.replace(
        "func TestParsesEmptyInput(t *testing.T) {\n",
        "func TestParsesEmptyInput(t *testing.T) {\n\tt.Skip(\"later\")\n",
    );
    let f = one(&[changed("parse_test.go", GO, &after)]);
    assert_eq!((f.kind, f.line), (Kind::TestSkipped, 5));
    let after = GO.replace("\t\tt.Fatalf(\"want 0\")\n", "");
    assert_eq!(
        one(&[changed("parse_test.go", GO, &after)]).kind,
        Kind::TestEmptied
    );
    // A Go file that is not a test file holds no tests.
    assert!(weakened(&[changed("parse.go", GO, &after)]).is_empty());
}

const JAVA: &str = r#"class ParseTest {
    @Test
    void parsesEmptyInput() {
        assertEquals(0, Parse.parse(""));
    }
}
"#;

#[test]
fn java_disabled_tests_are_facts() {
    let after = JAVA.replace("    @Test\n", "    @Test\n    @Disabled(\"later\")\n");
    let f = one(&[changed("src/test/java/ParseTest.java", JAVA, &after)]);
    assert_eq!(f.kind, Kind::TestSkipped);
    assert_eq!(f.name, "ParseTest.parsesEmptyInput");
    let after = JAVA.replace("        assertEquals(0, Parse.parse(\"\"));\n", "");
    assert_eq!(
        one(&[changed("ParseTest.java", JAVA, &after)]).kind,
        Kind::TestEmptied
    );
}

const WORKFLOW: &str = "name: CI
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Tests
        run: cargo test
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: cargo clippy
";

#[test]
fn github_actions_jobs_removed_or_made_non_failing_are_facts() {
    let path = ".github/workflows/ci.yml";
    let after = WORKFLOW.replace("        run: cargo test", "        run: cargo test || true");
    let f = one(&[changed(path, WORKFLOW, &after)]);
    assert_eq!((f.kind, f.line), (Kind::CiNonFailing, 9));
    let after = WORKFLOW.replace(
        "  test:\n    runs-on: ubuntu-latest\n",
        "  test:\n    runs-on: ubuntu-latest\n    continue-on-error: true\n",
    );
    let f = one(&[changed(path, WORKFLOW, &after)]);
    assert_eq!(
        (f.kind, f.line, f.name.as_str()),
        (Kind::CiNonFailing, 6, "test")
    );
    let cut = WORKFLOW.find("  lint:").expect("lint");
    let f = one(&[changed(path, WORKFLOW, &WORKFLOW[..cut])]);
    assert_eq!((f.kind, f.line, f.at_base), (Kind::CiRemoved, 10, true));
    let after = WORKFLOW.replace("      - name: Tests\n        run: cargo test\n", "");
    let f = one(&[changed(path, WORKFLOW, &after)]);
    assert_eq!((f.kind, f.name.as_str()), (Kind::CiRemoved, "Tests"));
}

#[test]
fn gitlab_ci_allow_failure_and_removed_jobs_are_facts() {
    let before = "stages: [test]\ntest:\n  stage: test\n  script:\n    - pytest\n";
    let after =
        "stages: [test]\ntest:\n  stage: test\n  allow_failure: true\n  script:\n    - pytest\n";
    let f = one(&[changed(".gitlab-ci.yml", before, after)]);
    assert_eq!((f.kind, f.line), (Kind::CiNonFailing, 4));
    let after = "stages: [test]\ntest:\n  stage: test\n  script:\n    - pytest || true\n";
    assert_eq!(one(&[changed(".gitlab-ci.yml", before, after)]).line, 5);
    let f = one(&[changed(".gitlab-ci.yml", before, "stages: [test]\n")]);
    assert_eq!(f.kind, Kind::CiRemoved);
}

#[test]
fn the_local_ci_script_is_read_when_named() {
    let before = "#!/bin/sh\nset -e\ncargo build\ncargo test\n";
    let after = "#!/bin/sh\nset -e\ncargo build\n";
    let scripts = CiScripts(vec!["ci.sh".to_string()]);
    let found = check(
        &[changed("ci.sh", before, after)],
        &Removals::default(),
        &scripts,
    );
    assert_eq!(found.weakened.len(), 1, "{found:#?}");
    assert_eq!(
        found.weakened[0].to_string(),
        "you removed `cargo test` from the CI script in ci.sh:4 (the base's line)"
    );
    let after = "#!/bin/sh\nset -e\ncargo build\ncargo test || true\n";
    let found = check(
        &[changed("ci.sh", before, after)],
        &Removals::default(),
        &scripts,
    );
    assert_eq!(found.weakened[0].kind, Kind::CiNonFailing);
    // Not named as the CI's script: not read.
    assert!(weakened(&[changed("ci.sh", before, after)]).is_empty());
}

#[test]
fn coverage_thresholds_lowered_or_removed_are_facts() {
    let f = one(&[changed(
        "setup.cfg",
        "[coverage:report]\nfail_under = 90\n",
        "[coverage:report]\nfail_under = 60\n",
    )]);
    assert_eq!((f.kind, f.line), (Kind::ThresholdLowered, 2));
    let f = one(&[changed(
        ".github/workflows/py.yml",
        "jobs:\n  t:\n    steps:\n      - run: pytest --cov-fail-under=85\n",
        "jobs:\n  t:\n    steps:\n      - run: pytest --cov-fail-under 50\n",
    )]);
    assert_eq!(f.kind, Kind::ThresholdLowered);
    assert!(weakened(&[changed(
        "setup.cfg",
        "fail_under = 60\n",
        "fail_under = 90\n"
    )])
    .is_empty());
}

#[test]
fn a_snapshot_replaced_wholesale_is_a_fact_an_updated_one_is_not() {
    let before = "line one\nline two\nline three\nline four\n";
    let updated = "line one\nline 2\nline three\nline four\n";
    assert!(weakened(&[changed("tests/snapshots/parse__out.snap", before, updated)]).is_empty());
    let f = one(&[changed(
        "tests/snapshots/parse__out.snap",
        before,
        "a\nb\nc\nd\n",
    )]);
    assert_eq!(f.kind, Kind::SnapshotRewritten);
}

#[test]
fn removals_the_spec_lists_pass() {
    let spec = "# Requirements\n\n## Removes\n\n- `parses_words` (the old API)\n- the CI job `lint`\n\n## Other\n- `parses_empty_input`\n";
    let removals = Removals::from_spec(spec);
    let start = RUST
        .find("    #[test]\n    fn parses_words")
        .expect("the test");
    let end = RUST[start..].find("    }\n").expect("its end") + start + 6;
    let after = format!("{}{}", &RUST[..start], &RUST[end..]);
    let found = check(
        &[changed("src/lib.rs", RUST, &after)],
        &removals,
        &CiScripts::default(),
    );
    assert!(found.weakened.is_empty(), "{found:#?}");
    assert_eq!(found.allowed.len(), 1);
    // A skip is no removal: listing the test does not allow it.
    let skipped = RUST.replace(
        "    #[test]\n    fn parses_words",
        "    #[test]\n    #[ignore]\n    fn parses_words",
    );
    let found = check(
        &[changed("src/lib.rs", RUST, &skipped)],
        &removals,
        &CiScripts::default(),
    );
    assert_eq!(found.weakened.len(), 1);
    // Names outside the section are not removals.
    assert!(!Removals::from_spec(spec).allows(&Fact {
        path: "x.rs".into(),
        line: 1,
        at_base: true,
        kind: Kind::TestRemoved,
        name: "parses_empty_input".into(),
        what: String::new(),
    }));
    assert!(!Removals::from_spec("Removes: `a`, `b`\n").is_empty());
}

/// Each language's exact assertion replaced by a weaker one, and a tolerance widened: one
/// `AssertionLoosened` fact each, on the new assertion's line, quoting both.
#[test]
fn loosened_assertions_are_facts_in_every_language() {
    let cases: [(&str, &str, &str, &str); 14] = [
        ("tests/a.rs", "#[test]\nfn t() {\n    let x = 3;\n    assert_eq!(x, 3);\n}\n", "assert_eq!(x, 3);", "assert!(x > 0);"),
        ("tests/a.rs", "#[test]\nfn t() {\n    let x = 3;\n    assert!(x == 3);\n}\n", "assert!(x == 3);", "assert!(x != 0);"),
        ("tests/a.rs", "#[test]\nfn t() {\n    let x = 3.0_f64;\n    assert!((x - 3.0).abs() < 1e-9);\n}\n", "< 1e-9", "< 0.5"),
        ("tests/test_a.py", "import unittest\n\nclass T(unittest.TestCase):\n    def test_t(self):\n        self.assertEqual(f(), 3)\n", "self.assertEqual(f(), 3)", "self.assertTrue(f())"),
        ("tests/test_a.py", "def test_t():\n    x = f()\n    assert x == 3\n", "assert x == 3", "assert x is not None"),
        ("tests/test_a.py", "def test_t(self):\n    x = f()\n    self.assertAlmostEqual(x, 3.14, places=6)\n", "places=6", "places=1"),
        ("test/a.test.js", "test(\"t\", () => {\n  const x = f();\n  expect(x).toBe(3);\n});\n", "expect(x).toBe(3);", "expect(x).toBeDefined();"),
        ("test/a.test.ts", "test(\"t\", () => {\n  const x = f();\n  expect(x).toEqual([1]);\n});\n", "expect(x).toEqual([1]);", "expect(x).not.toBeNull();"),
        ("test/a.test.js", "test(\"t\", () => {\n  const x = f();\n  expect(x).toBeCloseTo(3.14, 5);\n});\n", "toBeCloseTo(3.14, 5)", "toBeCloseTo(3.14, 1)"),
        ("a_test.go", "package a\n\nimport \"testing\"\n\nfunc TestT(t *testing.T) {\n\tx := f()\n\tif x != 3 {\n\t\tt.Fatal(x)\n\t}\n}\n", "if x != 3 {", "if x <= 0 {"),
        ("a_test.go", "package a\n\nimport \"testing\"\n\nfunc TestT(t *testing.T) {\n\tx := f()\n\tassert.Equal(t, 3, x)\n}\n", "assert.Equal(t, 3, x)", "assert.NotNil(t, x)"),
        ("a_test.go", "package a\n\nimport \"testing\"\n\nfunc TestT(t *testing.T) {\n\tx := f()\n\tassert.InDelta(t, 3.14, x, 0.001)\n}\n", "0.001)", "0.5)"),
        ("src/test/java/ATest.java", "class ATest {\n  @Test\n  void t() {\n    int x = f();\n    assertEquals(3, x);\n  }\n}\n", "assertEquals(3, x);", "assertTrue(x > 0);"),
        ("src/test/java/ATest.java", "class ATest {\n  @Test\n  void t() {\n    int x = f();\n    assertThat(x).isEqualTo(3);\n  }\n}\n", "isEqualTo(3)", "isNotNull()"),
    ];
    for (path, before, from, to) in cases {
        let after = before.replace(from, to);
        let f = one(&[changed(path, before, &after)]);
        assert_eq!(
            f.kind,
            Kind::AssertionLoosened,
            "{path}: {from} → {to}: {f}"
        );
        let line = before
            .lines()
            .position(|l| l.contains(from))
            .expect("the assertion's line")
            + 1;
        assert_eq!(f.line, line, "{path}: {from} → {to}: {f}");
        assert!(
            f.what.contains("you loosened") || f.what.contains("you widened"),
            "{f}"
        );
    }
    // The message quotes both claims.
    let (path, before, from, to) = cases[0];
    let f = one(&[changed(path, before, &before.replace(from, to))]);
    assert_eq!(
        f.to_string(),
        "you loosened an assertion of `t`: `assert_eq!(x, 3)` became `assert!(x > 0)` in tests/a.rs:4"
    );
    // A tighter tolerance, a changed expected value, a stronger claim: no fact.
    let unchanged = [
        (cases[2], "< 1e-9", "< 1e-12"),
        (cases[5], "places=6", "places=7"),
        (cases[8], "toBeCloseTo(3.14, 5)", "toBeCloseTo(3.15, 5)"),
        (cases[0], "assert_eq!(x, 3)", "assert_eq!(x, 4)"),
        (
            cases[3],
            "self.assertEqual(f(), 3)",
            "self.assertEqual(f(), 4)",
        ),
    ];
    for ((path, before, _, _), from, to) in unchanged {
        let after = before.replace(from, to);
        let facts = weakened(&[changed(path, before, &after)]);
        assert!(facts.is_empty(), "{path}: {from} → {to}: {facts:#?}");
    }
    // A weak assertion made exact is no loosening, nor a weak one added beside an exact one.
    let (path, before, _, _) = cases[6];
    let weak = before.replace("toBe(3)", "toBeTruthy()");
    assert!(weakened(&[changed(path, &weak, before)]).is_empty());
    let more = before.replace(
        "  expect(x).toBe(3);\n",
        "  expect(x).toBe(3);\n  expect(x).toBeDefined();\n",
    );
    assert!(weakened(&[changed(path, before, &more)]).is_empty());
}

/// An assertion in each language, by strength: only present, a bound, exact.
const FORMS: [[&str; 3]; 5] = [
    ["assert!(ok);", "assert!(x > 0);", "assert_eq!(x, 1);"],
    ["assert ok", "assert x > 0", "assert x == 1"],
    [
        "expect(x).toBeDefined();",
        "expect(x).toBeGreaterThan(0);",
        "expect(x).toBe(1);",
    ],
    [
        "if !ok {\n\t\tt.Fatal(\"x\")\n\t}",
        "if x <= 0 {\n\t\tt.Fatal(\"x\")\n\t}",
        "if x != 1 {\n\t\tt.Fatal(\"x\")\n\t}",
    ],
    [
        "assertNotNull(x);",
        "assertTrue(x > 0);",
        "assertEquals(1, x);",
    ],
];

/// Tests in one language's form: name, the strength of each assertion (an index into
/// [`FORMS`]), and whether it is skipped.
type Tests = [(String, Vec<usize>, bool)];

fn render(lang: usize, tests: &Tests) -> (String, String) {
    let mut out = String::new();
    let asserts = |forms: &[usize], indent: &str| -> String {
        forms
            .iter()
            .map(|f| format!("{indent}{}\n", FORMS[lang][*f]))
            .collect()
    };
    match lang {
        0 => {
            for (name, n, skip) in tests {
                out += &format!(
                    "#[test]\n{}fn {name}() {{\n    let (x, ok) = (1, true);\n",
                    if *skip { "#[ignore]\n" } else { "" }
                );
                out += &asserts(n, "    ");
                out += "    let _x = 1;\n}\n\n";
            }
            ("tests/gen.rs".into(), out)
        }
        1 => {
            out += "import pytest\n\n";
            for (name, n, skip) in tests {
                if *skip {
                    out += "@pytest.mark.skip\n";
                }
                out += &format!("def test_{name}():\n    x, ok = 1, True\n");
                out += &asserts(n, "    ");
                out += "\n";
            }
            ("tests/test_gen.py".into(), out)
        }
        2 => {
            for (name, n, skip) in tests {
                out += &format!(
                    "it{}(\"{name}\", () => {{\n  const x = 1;\n",
                    if *skip { ".skip" } else { "" }
                );
                out += &asserts(n, "  ");
                out += "});\n";
            }
            ("test/gen.test.ts".into(), out)
        }
        3 => {
            out += "package gen\n\nimport \"testing\"\n\n";
            for (name, n, skip) in tests {
                out += &format!("func Test{name}(t *testing.T) {{\n\tx, ok := 1, true\n");
                if *skip {
                    out += "\tt.Skip(\"later\")\n";
                }
                out += &asserts(n, "\t");
                out += "}\n\n";
            }
            ("gen_test.go".into(), out)
        }
        _ => {
            out += "class GenTest {\n";
            for (name, n, skip) in tests {
                out += &format!(
                    "  @Test\n{}  void {name}() {{\n    int x = 1;\n",
                    if *skip { "  @Disabled\n" } else { "" }
                );
                out += &asserts(n, "    ");
                out += "  }\n";
            }
            out += "}\n";
            ("src/test/java/GenTest.java".into(), out)
        }
    }
}

fn forms() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0usize..3, 0..3)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The check never reports a weakening on a diff that only adds tests or assertions, of
    /// any strength.
    #[test]
    fn adding_tests_or_assertions_is_never_a_weakening(
        lang in 0usize..5,
        base in proptest::collection::vec((forms(), any::<bool>()), 0..5),
        more in proptest::collection::vec(forms(), 0..5),
        added in proptest::collection::vec((forms(), any::<bool>()), 0..4),
    ) {
        let before: Vec<(String, Vec<usize>, bool)> = base
            .iter()
            .enumerate()
            .map(|(i, (n, s))| (format!("case{i}"), n.clone(), *s))
            .collect();
        let mut after: Vec<(String, Vec<usize>, bool)> = before
            .iter()
            .enumerate()
            .map(|(i, (name, n, s))| {
                let mut n = n.clone();
                n.extend(more.get(i).cloned().unwrap_or_default());
                (name.clone(), n, *s)
            })
            .collect();
        after.extend(
            added
                .iter()
                .enumerate()
                .map(|(i, (n, s))| (format!("added{i}"), n.clone(), *s)),
        );
        let (path, old) = render(lang, &before);
        let (_, new) = render(lang, &after);
        let facts = weakened(&[changed(&path, &old, &new)]);
        prop_assert!(facts.is_empty(), "{:#?}\n{}\n---\n{}", facts, old, new);
    }

    /// An assertion replaced by a weaker one is always a fact, in every language, on its line.
    #[test]
    fn a_weaker_assertion_in_place_of_a_stronger_one_is_always_a_fact(
        lang in 0usize..5,
        forms in proptest::collection::vec(0usize..3, 1..4),
        at in 0usize..3,
        weaker_by in 1usize..3,
    ) {
        let at = at % forms.len();
        prop_assume!(forms[at] >= weaker_by);
        let before = vec![("case".to_string(), forms.clone(), false)];
        let mut loose = forms.clone();
        loose[at] -= weaker_by;
        let after = vec![("case".to_string(), loose, false)];
        let (path, old) = render(lang, &before);
        let (_, new) = render(lang, &after);
        let facts = weakened(&[changed(&path, &old, &new)]);
        prop_assert_eq!(facts.len(), 1, "{:#?}\n{}\n---\n{}", facts, old, new);
        prop_assert_eq!(facts[0].kind, Kind::AssertionLoosened);
    }
}
