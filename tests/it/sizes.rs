//! Sizes of the product code: no file over 600 lines, no function over 80, so that each piece
//! can be read in one sitting and a change shows where it lands. Tests are not product code
//! (`tests.rs`, `tests/` folders, `#[cfg(test)]` modules and the files they name).
//!
//! Two kinds of exception, each with its reason:
//! - **Allowed for good** ([`ALLOWED`]): the scripted stand-in agent, which is test equipment
//!   shipped in the binary, and tables with one entry per kind of something.
//! - **Not split yet** ([`TO_SPLIT`]): what was over the limits when they were set. The list
//!   only shrinks: an entry that is no longer over fails here too, so it is removed when its
//!   split lands, and nothing new can join it.
//!
//! Lengths are counted on rustfmt's layout: a function runs from its `fn` line to the closing
//! brace at the same indentation.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 80;

/// Product code that may exceed the limits for good: (path under the crate's `src/`, or a
/// prefix of it; function name or `*` for the whole file; why).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "src/fake_agent/",
        "*",
        "the scripted stand-in agent: test equipment, one arm per scripted outcome",
    ),
    (
        "crates/sdlc-machine/src/explore/alphabet.rs",
        "alphabet",
        "a table: one entry per kind of event the diagrams explore",
    ),
    (
        "src/http/metrics.rs",
        "new",
        "a table: one registration per metric, in the order of the exposition",
    ),
];

/// Over the limits when they were set, not split yet: (path, function or `*` for the file).
const TO_SPLIT: &[(&str, &str)] = &[];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Over {
    path: String,
    item: String,
    lines: usize,
}

#[test]
fn product_files_and_functions_stay_within_their_sizes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut over = Vec::new();
    for dir in ["src", "crates/sdlc-machine/src"] {
        for file in product_files(&root.join(dir)) {
            let rel = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            over.extend(oversized(&rel, &text));
        }
    }
    assert!(
        over.iter().any(|o| o.path.starts_with("src/fake_agent/")),
        "the scan found nothing over the limits in the scripted agent, which is known to be: \
         it reads the wrong place or miscounts"
    );
    let allowed = |o: &Over| {
        ALLOWED
            .iter()
            .any(|(p, f, _)| o.path.starts_with(p) && (*f == "*" || *f == o.item))
    };
    let listed = |o: &Over| TO_SPLIT.iter().any(|(p, f)| o.path == *p && *f == o.item);
    let new: Vec<String> = over
        .iter()
        .filter(|o| !allowed(o) && !listed(o))
        .map(|o| format!("{}: {} is {} lines", o.path, o.item, o.lines))
        .collect();
    assert!(
        new.is_empty(),
        "over the limits ({MAX_FILE_LINES} lines a file, {MAX_FN_LINES} a function): split \
         them (a function into the steps it takes, a file into modules by concern):\n{}",
        new.join("\n")
    );
    let found: BTreeSet<(String, String)> = over
        .iter()
        .map(|o| (o.path.clone(), o.item.clone()))
        .collect();
    let done: Vec<String> = TO_SPLIT
        .iter()
        .filter(|(p, f)| !found.contains(&(p.to_string(), f.to_string())))
        .map(|(p, f)| format!("{p}: {f}"))
        .collect();
    assert!(
        done.is_empty(),
        "within the limits now (or gone): remove from TO_SPLIT in tests/it/sizes.rs:\n{}",
        done.join("\n")
    );
}

/// `.rs` files under `dir` that are product code: test files and folders, and files named
/// by a `#[cfg(test)]` module declaration, left out.
fn product_files(dir: &Path) -> Vec<PathBuf> {
    let files: Vec<PathBuf> = crate::e2e::files_under(dir)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .collect();
    assert!(!files.is_empty(), "no Rust files under {}", dir.display());
    let mut test_only = BTreeSet::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.windows(2) {
            if pair[0].trim() != "#[cfg(test)]" {
                continue;
            }
            if let Some(name) = declared_module(pair[1]) {
                let base = module_dir(file);
                test_only.insert(base.join(format!("{name}.rs")));
                test_only.insert(base.join(name));
            }
        }
    }
    files
        .into_iter()
        .filter(|f| {
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name != "tests.rs"
                && !f.components().any(|c| c.as_os_str() == "tests")
                && !test_only.iter().any(|t| f.starts_with(t))
        })
        .collect()
}

/// `mod name;` (with any visibility) declares a module in its own file.
fn declared_module(line: &str) -> Option<&str> {
    let rest = line.trim().strip_suffix(';')?;
    let rest = rest.rsplit_once("mod ")?.1;
    rest.chars()
        .all(|c| c.is_alphanumeric() || c == '_')
        .then_some(rest)
}

/// Where the modules a file declares live: beside `mod.rs`, `lib.rs` and `main.rs`, in a
/// folder of the file's name otherwise.
fn module_dir(file: &Path) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new("."));
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") | None => parent.to_path_buf(),
        Some(stem) => parent.join(stem),
    }
}

/// The file itself (`*`) and each function over the limits, up to an inline `#[cfg(test)]`
/// module, which is the file's tests.
fn oversized(path: &str, text: &str) -> Vec<Over> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0] == "#[cfg(test)]" && inline_module(w[1]))
        .unwrap_or(lines.len());
    let lines = &lines[..end];
    let mut over = Vec::new();
    if lines.len() > MAX_FILE_LINES {
        over.push(Over {
            path: path.to_string(),
            item: "*".to_string(),
            lines: lines.len(),
        });
    }
    let mut i = 0;
    while i < lines.len() {
        let Some((indent, name)) = fn_start(lines[i]) else {
            i += 1;
            continue;
        };
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            break;
        };
        if lines[open].trim_end().ends_with(';') {
            i = open + 1;
            continue;
        }
        let close = format!("{indent}}}");
        let last = (open + 1..lines.len())
            .find(|&j| lines[j] == close)
            .unwrap_or(lines.len() - 1);
        let len = last - i + 1;
        if len > MAX_FN_LINES {
            over.push(Over {
                path: path.to_string(),
                item: name.to_string(),
                lines: len,
            });
        }
        i += 1;
    }
    over
}

/// `mod name {`: a module written in place. A declaration (`mod tests;`) names another file
/// and ends nothing: the product code after it is still counted.
fn inline_module(line: &str) -> bool {
    line.starts_with("mod ") && line.trim_end().ends_with('{')
}

/// The indentation and name of a line that starts a function.
fn fn_start(line: &str) -> Option<(&str, &str)> {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let mut words = body;
    loop {
        let word_end = words.find([' ', '(']).unwrap_or(words.len());
        let (word, rest) = words.split_at(word_end);
        if word == "fn" {
            let name_end = rest
                .trim_start()
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
            let name = &rest.trim_start()[..name_end];
            return (!name.is_empty()).then_some((indent, name));
        }
        let qualifier = matches!(word, "pub" | "async" | "const" | "unsafe" | "default")
            || word.starts_with("pub(")
            || word == "extern";
        if !qualifier {
            return None;
        }
        // `pub(crate)`, `pub(in path)`: skip the parenthesised part.
        let rest = if rest.starts_with('(') {
            &rest[rest.find(')')? + 1..]
        } else {
            rest
        };
        let rest = rest.trim_start();
        // `extern "C"`: skip the ABI string.
        words = match rest.strip_prefix('"') {
            Some(abi) => abi[abi.find('"')? + 1..].trim_start(),
            None => rest,
        };
    }
}

/// A `#[cfg(test)] mod tests;` declaration near the top names another file: the functions
/// after it are product code and are measured. An inline `#[cfg(test)] mod tests {` is the
/// file's tests, and what follows it is not. (The scan once stopped at the declaration, and
/// a 141-line function below one went unmeasured.)
#[test]
fn a_test_module_declared_in_another_file_hides_nothing_after_it() {
    let long_fn = |name: &str| {
        let body = "    let _ = 1;\n".repeat(MAX_FN_LINES);
        format!("fn {name}() {{\n{body}}}\n")
    };
    let declared = format!(
        "#[cfg(test)]\nmod tests;\n\n{}",
        long_fn("after_the_declaration")
    );
    let found: Vec<String> = oversized("a.rs", &declared)
        .into_iter()
        .map(|o| o.item)
        .collect();
    assert_eq!(found, vec!["after_the_declaration".to_string()]);
    let inline = format!("#[cfg(test)]\nmod tests {{\n{}}}\n", long_fn("a_test"));
    assert!(oversized("a.rs", &inline).is_empty());
}
