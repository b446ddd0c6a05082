//! A newcomer's `cargo test` needs only the Rust toolchain and git: every test that needs a
//! tool the distribution provides (python3 for the fake `gh`, the real `gh`, Chromium, bubblewrap,
//! podman) is
//! `#[ignore = "needs <tool>; …"]`, and `.ci/run` installs the tools and runs those tests as
//! a step of their own (`cargo test -- --ignored`), where a missing tool fails them.
//!
//! The check reads the test sources: a test reaches a tool when its body, or a helper it
//! calls (followed through the file's own functions), uses one of the markers below.

use std::collections::BTreeSet;
use std::path::Path;

/// What in a test's source reaches a tool, and the word its `#[ignore]` reason must name.
const MARKERS: &[(&str, &str)] = &[
    ("fake_gh.py", "python3"),
    ("FAKE_GH", "python3"),
    ("install_fake_gh(", "python3"),
    ("Command::new(\"gh\")", "gh"),
    // The fake GitHub API is there for the real gh to talk to.
    ("GitHubApi::start", "gh"),
    ("Command::new(chromium())", "Chromium"),
    // The sandbox's tests start the agent inside the distribution's bubblewrap.
    ("bwrap_installed()", "bubblewrap"),
    // podman's test builds its image and runs the agent in the distribution's podman.
    ("podman_installed()", "podman"),
];

/// One function of a test file: its name as called (`name(` or `Type::name(`), whether it is
/// a test, its attributes and its body.
struct Item {
    call: String,
    test: bool,
    attrs: String,
    body: String,
}

/// The functions of a rustfmt-formatted file: free ones at column 0 and methods of `impl`
/// blocks at column 4, each up to its closing brace at the same indentation.
fn items(src: &str) -> Vec<Item> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    let mut impl_of: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(rest) = line.strip_prefix("impl") {
            // `impl Type {` or `impl Trait for Type {`: the type is the last word.
            let head = rest.trim_end_matches('{').trim();
            let ty = head.rsplit(' ').next().unwrap_or(head);
            impl_of = Some(ty.split('<').next().unwrap_or(ty).to_string());
        } else if line == "}" {
            impl_of = None;
        }
        let (indent, qualify) = match &impl_of {
            Some(ty) => ("    ", Some(ty.clone())),
            None => ("", None),
        };
        let sig = line
            .strip_prefix(indent)
            .filter(|l| !l.starts_with(' '))
            .map(|l| {
                l.trim_start_matches("pub ")
                    .trim_start_matches("pub(crate) ")
            });
        if let Some(name) = sig.and_then(|l| l.strip_prefix("fn ")) {
            let name = name
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default();
            let mut a = i;
            while a > 0 && lines[a - 1].trim_start().starts_with("#[") {
                a -= 1;
            }
            let attrs = lines[a..i].join("\n");
            let close = format!("{indent}}}");
            let mut end = i;
            while end < lines.len() && lines[end] != close {
                end += 1;
            }
            out.push(Item {
                call: match qualify {
                    Some(ty) => format!("{ty}::{name}("),
                    None => format!("{name}("),
                },
                test: attrs.contains("#[test]"),
                attrs,
                body: lines[i..end.min(lines.len())].join("\n"),
            });
            i = end;
        }
        i += 1;
    }
    out
}

/// The tools each test of `src` reaches and whether its `#[ignore]` names them: the tests
/// that reach a tool without being ignored for it.
fn unignored_tool_tests(file: &str, src: &str) -> Vec<String> {
    let items = items(src);
    // (marker, tool), grown by the helpers that reach a tool until nothing changes.
    let mut markers: Vec<(String, &str)> = MARKERS
        .iter()
        .map(|&(m, tool)| (m.to_string(), tool))
        .collect();
    loop {
        let before = markers.len();
        for item in items.iter().filter(|it| !it.test) {
            let tools: BTreeSet<&str> = markers
                .iter()
                .filter(|(m, _)| item.body.contains(m.as_str()))
                .map(|&(_, tool)| tool)
                .collect();
            for tool in tools {
                if !markers.iter().any(|(m, t)| *m == item.call && *t == tool) {
                    markers.push((item.call.clone(), tool));
                }
            }
        }
        if markers.len() == before {
            break;
        }
    }
    let mut bad = Vec::new();
    for test in items.iter().filter(|it| it.test) {
        let tools: BTreeSet<&str> = markers
            .iter()
            .filter(|(m, _)| test.body.contains(m.as_str()))
            .map(|&(_, tool)| tool)
            .collect();
        for tool in tools {
            let reason = format!("#[ignore = \"needs {tool}");
            if !test.attrs.contains(&reason) {
                bad.push(format!(
                    "{file}: {} needs {tool} but is not {reason}; .ci/run installs it: cargo test -- --ignored\"]",
                    test.call.trim_end_matches('(')
                ));
            }
        }
    }
    bad
}

#[test]
fn every_test_that_needs_a_distribution_tool_is_ignored_and_names_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut bad = Vec::new();
    let mut found = 0;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/it/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for path in files {
        if path.ends_with("tool_tests.rs") {
            // Its markers and its sample are about tools; it needs none.
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("test source");
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .to_string();
        found += items(&src)
            .iter()
            .filter(|it| it.test && it.attrs.contains("#[ignore = \"needs "))
            .count();
        bad.extend(unignored_tool_tests(&name, &src));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The reading still finds the tool tests (a formatting change would make it find none).
    assert!(found >= 25, "only {found} tool tests found");
}

#[test]
fn the_reading_follows_helpers_and_methods_to_the_tool() {
    let src = r#"
const FAKE_GH: &str = "";

struct P;

impl P {
    fn new() -> P {
        std::fs::write("gh", FAKE_GH).unwrap();
        P
    }
}

fn project() -> P {
    P::new()
}

#[test]
fn plain() {
    let x = 1;
}

#[test]
fn through_a_helper() {
    let _ = project();
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn ignored() {
    let _ = project();
}

#[test]
#[ignore = "long"]
fn ignored_for_another_reason() {
    let _ = P::new();
}
"#;
    let bad = unignored_tool_tests("x.rs", src);
    assert_eq!(bad.len(), 2, "{bad:#?}");
    assert!(
        bad[0].contains("through_a_helper needs python3"),
        "{bad:#?}"
    );
    assert!(bad[1].contains("ignored_for_another_reason"), "{bad:#?}");
}

/// `.ci/run` runs the ignored tests as their own step, after installing the tools.
#[test]
fn ci_installs_the_tools_and_runs_the_ignored_tests() {
    let ci = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run"))
        .expect(".ci/run");
    let run = ci
        .find("cargo test --locked --test it -- --ignored")
        .expect("a step running `cargo test --locked --test it -- --ignored`");
    for tool in ["chromium", "gh", "python3", "bubblewrap", "podman"] {
        let install = ci
            .find(&format!("apt-get install -y {tool}"))
            .unwrap_or_else(|| panic!(".ci/run does not install {tool}"));
        assert!(
            install < run,
            "{tool} is installed after the ignored tests run"
        );
    }
}

/// That step runs the `it` binary alone: an ignored test anywhere else would never run.
#[test]
fn every_ignored_test_is_in_the_it_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut outside = Vec::new();
    for dir in [
        "src",
        "crates/sdlc-machine/src",
        "crates/sdlc-machine/tests",
    ] {
        for file in crate::e2e::files_under(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            if text.lines().any(|l| l.trim_start().starts_with("#[ignore")) {
                outside.push(file.display().to_string());
            }
        }
    }
    assert!(
        outside.is_empty(),
        "ignored tests outside tests/it: {outside:?}"
    );
    let here = std::fs::read_to_string(root.join("tests/it/real_gh.rs")).expect("real_gh.rs");
    assert!(
        here.lines().any(|l| l.trim_start().starts_with("#[ignore")),
        "the scan does not see an ignored test where there is one"
    );
}
