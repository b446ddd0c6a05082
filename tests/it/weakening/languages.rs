//! Green honestly in each language the check reads (Rust, Python, JavaScript, TypeScript, Go,
//! Java): one fixture repository holds a test file of each on origin's main, and one run works
//! two issues per language. The first weakens that language's tests at implement (a test
//! skipped, an assertion loosened or a tolerance widened): caught with the right file and
//! line, handed back once, then escalated. The second fixes the code and removes a test its
//! spec lists under `## Removes`: it merges, the PR naming the removal. With
//! `tests.weakening: "ask"` each language's weakening waits for a person's approval.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// One language's fixture: its test file on main, the edits that weaken it (each with the
/// fact it must yield and what finds its line in the edited file), and the test an issue may
/// remove (the text cut, the name its spec lists, the fact, what finds its base line).
struct Lang {
    path: &'static str,
    base: &'static str,
    weaken: [(&'static str, &'static str, &'static str, &'static str); 2],
    removal: (&'static str, &'static str, &'static str, &'static str),
}

const LANGS: [Lang; 6] = [
    Lang {
        path: "tests/parse.rs",
        base: "#[test]\nfn parses_empty_input() {\n    assert_eq!(\"\".len(), 0);\n}\n\n#[test]\nfn parses_words() {\n    assert_eq!(\"ab\".len(), 2);\n}\n\n#[test]\nfn old_api() {\n    assert_eq!(\"abc\".len(), 3);\n}\n",
        weaken: [
            ("#[test]\nfn parses_empty_input", "#[test]\n#[ignore]\nfn parses_empty_input", "you skipped `parses_empty_input` (#[ignore])", "fn parses_empty_input"),
            ("assert_eq!(\"ab\".len(), 2);", "assert!(\"ab\".len() > 0);", "you loosened an assertion of `parses_words`: `assert_eq!(\"ab\".len(), 2)` became `assert!(\"ab\".len() > 0)`", "assert!(\"ab\""),
        ],
        removal: ("\n#[test]\nfn old_api() {\n    assert_eq!(\"abc\".len(), 3);\n}\n", "old_api", "you removed the test `old_api`", "fn old_api"),
    },
    Lang {
        path: "tests/test_parse.py",
        base: "import pytest\nimport unittest\n\n\ndef test_parses_empty_input():\n    assert len(\"\") == 0\n\n\nclass TestWords(unittest.TestCase):\n    def test_words(self):\n        self.assertEqual(len(\"ab\"), 2)\n\n    def test_old_api(self):\n        self.assertEqual(len(\"abc\"), 3)\n",
        weaken: [
            ("def test_parses_empty_input", "@pytest.mark.skip\ndef test_parses_empty_input", "you skipped `test_parses_empty_input` (@pytest.mark.skip)", "def test_parses_empty_input"),
            ("self.assertEqual(len(\"ab\"), 2)", "self.assertTrue(len(\"ab\"))", "you loosened an assertion of `TestWords::test_words`: `self.assertEqual(len(\"ab\"), 2)` became `self.assertTrue(len(\"ab\"))`", "assertTrue"),
        ],
        removal: ("\n    def test_old_api(self):\n        self.assertEqual(len(\"abc\"), 3)\n", "test_old_api", "you removed the test `TestWords::test_old_api`", "def test_old_api"),
    },
    Lang {
        path: "test/app.test.js",
        base: "test(\"greets\", () => {\n  expect(greet(\"a\")).toBe(\"hello a\");\n});\n\ntest(\"greets nobody\", () => {\n  expect(greet(\"\")).toBe(\"hello\");\n});\n\ntest(\"old api\", () => {\n  expect(greet(\"b\")).toBe(\"hello b\");\n});\n",
        weaken: [
            ("test(\"greets\",", "test.skip(\"greets\",", "you skipped `greets` (test.skip)", "test.skip(\"greets\""),
            ("expect(greet(\"\")).toBe(\"hello\");", "expect(greet(\"\")).toBeDefined();", "you loosened an assertion of `greets nobody`: `expect(greet(\"\")).toBe(\"hello\")` became `expect(greet(\"\")).toBeDefined()`", "toBeDefined"),
        ],
        removal: ("\ntest(\"old api\", () => {\n  expect(greet(\"b\")).toBe(\"hello b\");\n});\n", "old api", "you removed the test `old api`", "test(\"old api\""),
    },
    Lang {
        path: "test/sum.test.ts",
        base: "describe(\"sum\", () => {\n  it(\"adds\", () => {\n    expect(sum(1, 2)).toEqual(3);\n  });\n  it(\"adds floats\", () => {\n    expect(sum(0.1, 0.2)).toBeCloseTo(0.3, 5);\n  });\n  it(\"drops the old api\", () => {\n    expect(sum(1, 1)).toBe(2);\n  });\n});\n",
        weaken: [
            ("  it(\"adds\",", "  xit(\"adds\",", "you skipped `sum > adds` (xit)", "xit(\"adds\""),
            ("toBeCloseTo(0.3, 5)", "toBeCloseTo(0.3, 1)", "you widened the tolerance of an assertion of `sum > adds floats` (`toBeCloseTo(0.3, 5)` became `toBeCloseTo(0.3, 1)`)", "toBeCloseTo"),
        ],
        removal: ("  it(\"drops the old api\", () => {\n    expect(sum(1, 1)).toBe(2);\n  });\n", "drops the old api", "you removed the test `sum > drops the old api`", "it(\"drops the old api\""),
    },
    Lang {
        path: "parse_test.go",
        base: "package parse\n\nimport \"testing\"\n\nfunc TestParsesEmptyInput(t *testing.T) {\n\tif Parse(\"\") != 0 {\n\t\tt.Fatal(\"want 0\")\n\t}\n}\n\nfunc TestParsesWords(t *testing.T) {\n\tif got := Parse(\"ab\"); got != 2 {\n\t\tt.Fatalf(\"got %d\", got)\n\t}\n}\n\nfunc TestOldAPI(t *testing.T) {\n\tif Parse(\"abc\") != 3 {\n\t\tt.Fatal(\"want 3\")\n\t}\n}\n",
        weaken: [
            ("func TestParsesEmptyInput(t *testing.T) {\n", "func TestParsesEmptyInput(t *testing.T) {\n\tt.Skip(\"later\")\n", "you skipped `TestParsesEmptyInput` (t.Skip)", "func TestParsesEmptyInput"),
            ("got != 2", "got <= 0", "you loosened an assertion of `TestParsesWords`: `if got != 2` became `if got <= 0`", "got <= 0"),
        ],
        removal: ("\nfunc TestOldAPI(t *testing.T) {\n\tif Parse(\"abc\") != 3 {\n\t\tt.Fatal(\"want 3\")\n\t}\n}\n", "TestOldAPI", "you removed the test `TestOldAPI`", "func TestOldAPI"),
    },
    Lang {
        path: "src/test/java/ParseTest.java",
        base: "class ParseTest {\n    @Test\n    void parsesEmptyInput() {\n        assertEquals(0, Parse.parse(\"\"));\n    }\n\n    @Test\n    void parsesWords() {\n        assertEquals(2, Parse.parse(\"ab\"));\n    }\n\n    @Test void oldApi() {\n        assertEquals(3, Parse.parse(\"abc\"));\n    }\n}\n",
        weaken: [
            ("    @Test\n    void parsesEmptyInput", "    @Test\n    @Disabled\n    void parsesEmptyInput", "you skipped `ParseTest.parsesEmptyInput` (@Disabled)", "    @Test"),
            ("assertEquals(2, Parse.parse(\"ab\"));", "assertTrue(Parse.parse(\"ab\") > 0);", "you loosened an assertion of `ParseTest.parsesWords`: `assertEquals(2, Parse.parse(\"ab\"))` became `assertTrue(Parse.parse(\"ab\") > 0)`", "assertTrue"),
        ],
        removal: ("\n    @Test void oldApi() {\n        assertEquals(3, Parse.parse(\"abc\"));\n    }\n", "oldApi", "you removed the test `ParseTest.oldApi`", "void oldApi"),
    },
];

/// 1-based line of the first line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` is in no line of\n{text}"))
        + 1
}

impl Lang {
    fn weakened(&self) -> String {
        self.weaken
            .iter()
            .fold(self.base.to_string(), |t, (from, to, _, _)| {
                assert!(t.contains(from), "{from}");
                t.replacen(from, to, 1)
            })
    }

    /// The facts the weakening yields, file and line.
    fn facts(&self) -> Vec<String> {
        let after = self.weakened();
        self.weaken
            .iter()
            .map(|(_, _, what, at)| format!("{what} in {}:{}", self.path, line_of(&after, at)))
            .collect()
    }

    fn removed(&self) -> String {
        assert!(self.base.contains(self.removal.0), "{}", self.removal.0);
        self.base.replacen(self.removal.0, "", 1)
    }

    fn removal_fact(&self) -> String {
        let (_, _, what, at) = self.removal;
        format!(
            "{what} in {}:{} (the base's line)",
            self.path,
            line_of(self.base, at)
        )
    }
}

/// A project with every language's test file on origin's main and `issues`; the scripted
/// agent, at implement, copies `changes/<issue>/` over the clone and appends
/// `changes/<issue>.removes` to the issue's requirements.
fn project(issues: &[(u32, &str, &str)], extra: Value) -> Project {
    let p = Project::new(
        issues,
        json!({"steps": {"implement": ["tool"], "commitPush": ["no-branch"]}}),
        json!({}),
    );
    let mut cfg = json!({ "steps": e2e::builtin_steps(), "maxConsecutiveEscalations": 20 });
    if let (Some(c), Some(more)) = (cfg.as_object_mut(), extra.as_object()) {
        for (k, v) in more {
            c.insert(k.clone(), v.clone());
        }
    }
    p.set_config(cfg);
    for lang in &LANGS {
        write(&p.project, lang.path, lang.base);
    }
    e2e::git(&p.project, &["add", "-A"]);
    e2e::git(
        &p.project,
        &["commit", "-q", "-m", "every language's tests"],
    );
    e2e::git(&p.project, &["push", "-q", "origin", "HEAD"]);
    let changes = p.root.join("changes");
    let tool = p.root.join("agent-tool");
    let body = format!(
        "#!/bin/sh\nset -e\nc='{}'\nif [ \"$SDLC_STEP\" = implement ]; then\n  if [ -d \"$c/$SDLC_ISSUE\" ]; then cp -R \"$c/$SDLC_ISSUE/.\" .; fi\n  if [ -f \"$c/$SDLC_ISSUE.removes\" ]; then\n    for f in specs/\"$SDLC_ISSUE\"-*/requirements.md; do cat \"$c/$SDLC_ISSUE.removes\" >> \"$f\"; done\n  fi\nfi\n",
        changes.display()
    );
    std::fs::write(&tool, body).expect("tool");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p
}

fn write(root: &Path, path: &str, text: &str) {
    let file = root.join(path);
    std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
    std::fs::write(&file, text).expect("write");
}

/// The body of the PR the runner opened for `issue`'s branch (`<issue>-…`), if any.
fn pr_body(p: &Project, issue: u32) -> Option<String> {
    let dir = p.project.join(".git/sdlc-runner/pulls");
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let record: Value = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
        let branch = record["branch"].as_str()?;
        branch
            .starts_with(&format!("{issue}-"))
            .then(|| record["body"].as_str().unwrap_or_default().to_string())
    })
}

fn tool(p: &Project) -> String {
    p.root.join("agent-tool").display().to_string()
}

#[test]
fn in_every_language_a_weakening_is_handed_back_then_escalated_and_a_listed_removal_merges() {
    // Issue 2i+1 weakens language i's tests; issue 2i+2 fixes the code (the fake agent's
    // implement writes src/issue_N.txt) and removes the test its spec lists.
    let issues: Vec<(u32, String)> = (1..=2 * LANGS.len() as u32)
        .map(|n| (n, format!("Issue {n}")))
        .collect();
    let listed: Vec<(u32, &str, &str)> = issues
        .iter()
        .map(|(n, t)| (*n, t.as_str(), "Make it pass."))
        .collect();
    let p = project(&listed, json!({}));
    for (i, lang) in LANGS.iter().enumerate() {
        let weak = 2 * i as u32 + 1;
        write(
            &p.root.join(format!("changes/{weak}")),
            lang.path,
            &lang.weakened(),
        );
        let fix = weak + 1;
        write(
            &p.root.join(format!("changes/{fix}")),
            lang.path,
            &lang.removed(),
        );
        let removes = format!("\n## Removes\n\n- `{}` (the old API)\n", lang.removal.1);
        write(&p.root.join("changes"), &format!("{fix}.removes"), &removes);
    }
    let out = p.run_env(&[], &[("SDLC_FAKE_AGENT_TOOL", &tool(&p))]);
    let all = text(&out);
    let merged = e2e::merged_issues(&p.origin);
    for (i, lang) in LANGS.iter().enumerate() {
        let weak = 2 * i as u32 + 1;
        let fix = weak + 1;
        // (b) Caught, handed back once with every fact, then escalated quoting them.
        assert_eq!(p.issue(weak)["escalated"], true, "{}: {all}", lang.path);
        let prompt = p
            .prompt(weak, "commitPush", 2)
            .unwrap_or_else(|| panic!("{}: no repair prompt: {all}", lang.path));
        let said = p.issue(weak)["escalation"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for fact in lang.facts() {
            assert!(prompt.contains(&fact), "{fact}\n{prompt}");
            assert!(said.contains(&fact), "{fact}\n{said}");
        }
        let repairs = p
            .invocations()
            .iter()
            .filter(|inv| inv.starts_with(&format!("{weak} commitPush ")))
            .count();
        assert_eq!(repairs, 1, "{}: handed back once", lang.path);
        assert!(!merged.contains(&weak), "{}: {merged:?}", lang.path);
        // (a), (c) The fix with the listed removal merges; the PR names the removal.
        assert!(merged.contains(&fix), "{}: {merged:?}\n{all}", lang.path);
        let pr = pr_body(&p, fix).unwrap_or_default();
        assert!(
            pr.contains(&lang.removal_fact()),
            "{}\n{pr}",
            lang.removal_fact()
        );
    }
    assert_ne!(code(&out), 0, "six issues escalated: {all}");
}

#[test]
fn in_every_language_with_ask_a_weakening_waits_for_a_persons_approval() {
    let listed: Vec<(u32, String)> = (1..=LANGS.len() as u32)
        .map(|n| (n, format!("Issue {n}")))
        .collect();
    let listed: Vec<(u32, &str, &str)> = listed
        .iter()
        .map(|(n, t)| (*n, t.as_str(), "Make it pass."))
        .collect();
    let p = project(
        &listed,
        json!({"tests": {"weakening": "ask"}, "decisionTimeoutMinutes": 1}),
    );
    for (i, lang) in LANGS.iter().enumerate() {
        let n = i as u32 + 1;
        write(
            &p.root.join(format!("changes/{n}")),
            lang.path,
            &lang.weakened(),
        );
    }
    let runner = {
        let mut cmd = p.command(&["run", "--config", p.config.to_str().expect("utf8")]);
        cmd.env("SDLC_FAKE_AGENT_TOOL", tool(&p))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.spawn().expect("spawn runner")
    };
    let decision = p.project.join(".git/sdlc-runner/decision.json");
    for (i, lang) in LANGS.iter().enumerate() {
        let n = i as u32 + 1;
        let deadline = Instant::now() + Duration::from_secs(60);
        let request = loop {
            let asked = std::fs::read(&decision)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .filter(|r| r["issue"] == n && r["answer"].is_null());
            if let Some(request) = asked {
                break request;
            }
            assert!(
                Instant::now() < deadline,
                "{}: no decision asked",
                lang.path
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let failure = request["lastFailure"].as_str().unwrap_or_default();
        assert!(failure.contains("TESTS_WEAKENED"), "{request}");
        let reason = request["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("weakens the tests"), "{request}");
        // Nothing of this issue reached origin while it waits.
        assert!(!e2e::merged_issues(&p.origin).contains(&n), "{}", lang.path);
        let answer = p.decide("retry");
        assert_eq!(code(&answer), 0, "{}", text(&answer));
    }
    let out = e2e::wait_output(runner, Duration::from_secs(120));
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let merged = e2e::merged_issues(&p.origin);
    for (i, lang) in LANGS.iter().enumerate() {
        let n = i as u32 + 1;
        assert!(merged.contains(&n), "{}: {merged:?}", lang.path);
        let pr = pr_body(&p, n).expect("the PR record");
        assert!(pr.contains("approved by a person"), "{pr}");
        for fact in lang.facts() {
            assert!(pr.contains(&fact), "{fact}\n{pr}");
        }
    }
}
