//! The map stays true: every path, type, function and test ARCHITECTURE.md names exists in
//! the code today, and every invariant it states names what holds it. Moving or renaming a
//! module, a type or a test without correcting the map fails here, naming the stale word.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The code a name may live in: the runner, the core, the tests, benches and examples.
struct Code {
    files: Vec<PathBuf>,
    /// Every Rust source with its comment lines dropped: a name only a comment holds is stale.
    rust: String,
}

impl Code {
    fn read() -> Code {
        let mut files = Vec::new();
        for dir in ["src", "crates", "tests/it", "benches", "examples"] {
            files.extend(
                crate::e2e::files_under(&root().join(dir))
                    .into_iter()
                    .filter_map(|f| f.strip_prefix(root()).ok().map(Path::to_path_buf)),
            );
        }
        let mut rust = String::new();
        // This file names missing things on purpose, to see them caught.
        let this = Path::new("tests/it/map.rs");
        let sources = files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "rs") && f.as_path() != this);
        for f in sources {
            let text = std::fs::read_to_string(root().join(f)).expect("a readable source file");
            for line in text.lines() {
                if !line.trim_start().starts_with("//") {
                    rust.push_str(line);
                    rust.push('\n');
                }
            }
        }
        Code { files, rust }
    }

    fn has_word(&self, word: &str) -> bool {
        let bytes = self.rust.as_bytes();
        let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        self.rust.match_indices(word).any(|(at, _)| {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(at + word.len()).copied();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
    }

    fn has_fn(&self, name: &str) -> bool {
        self.has_word(&format!("fn {name}"))
    }

    /// A path as the map writes it: from the root, from `src/` or the core's `src/`, or a file
    /// name inside the folder the bullet is about.
    fn has_path(&self, path: &str, folder: Option<&str>) -> bool {
        let path = path.trim_end_matches('/');
        let candidates = [
            PathBuf::from(path),
            Path::new("src").join(path),
            Path::new("src").join(folder.unwrap_or_default()).join(path),
            Path::new("crates/sdlc-machine/src").join(path),
        ];
        if candidates.iter().any(|c| root().join(c).exists()) {
            return true;
        }
        let in_folder = |f: &PathBuf| match folder {
            Some(dir) => f.starts_with(Path::new("src").join(dir)) || f.starts_with(dir),
            None => true,
        };
        !path.contains('/') && self.files.iter().any(|f| f.ends_with(path) && in_folder(f))
    }
}

/// The words in backticks, each with the folder of the bullet it is in (`- \`driver/\` — …`).
fn named(map: &str, home: Option<&str>) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let home = home.map(str::to_string);
    let mut folder: Option<String> = home.clone();
    for paragraph_line in map.lines() {
        let line = paragraph_line.trim_start();
        if let Some(bullet) = line.strip_prefix("- `") {
            folder = bullet
                .split('`')
                .next()
                .filter(|w| w.ends_with('/'))
                .map(|w| w.trim_end_matches('/').to_string());
        } else if line.is_empty() || line.starts_with('#') {
            folder = home.clone();
        }
        for (i, word) in paragraph_line.split('`').enumerate() {
            if i % 2 == 1 && !word.is_empty() {
                out.push((word.to_string(), folder.clone()));
            }
        }
    }
    out
}

/// What a word in backticks claims, if it claims anything the code can be asked about.
enum Claim<'a> {
    Path(&'a str),
    Item(&'a str),
    Method(&'a str, &'a str),
    Function(&'a str),
}

fn claim(word: &str) -> Option<Claim<'_>> {
    let lead = word.split([' ', '(', '{']).next().unwrap_or(word);
    let ident = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if word.starts_with("cargo ") || word.starts_with('.') || word.starts_with('&') {
        return None;
    }
    if lead.contains('/') || lead.ends_with(".rs") || lead.ends_with(".md") {
        return Some(Claim::Path(lead));
    }
    if let Some((ty, method)) = lead.split_once("::") {
        if ident(ty) && ident(method) && ty.starts_with(|c: char| c.is_ascii_uppercase()) {
            return Some(Claim::Method(ty, method));
        }
        return None;
    }
    if !ident(lead) {
        return None;
    }
    if lead.starts_with(|c: char| c.is_ascii_uppercase()) {
        return Some(Claim::Item(lead));
    }
    // A function or test: snake case with at least two words.
    (lead.contains('_') && lead.chars().all(|c| !c.is_ascii_uppercase()))
        .then_some(Claim::Function(lead))
}

/// The pages of the map: the one-page map and the pages beside the code, each with the folder
/// its bare file names are in.
const MAPS: [(&str, Option<&str>); 4] = [
    ("ARCHITECTURE.md", None),
    ("src/README.md", None),
    ("src/driver/README.md", Some("driver")),
    ("src/ports/README.md", Some("ports")),
];

fn stale_words(map_name: &str, home: Option<&str>, code: &Code) -> Vec<String> {
    let map = std::fs::read_to_string(root().join(map_name)).expect(map_name);
    let mut stale = BTreeSet::new();
    for (word, folder) in named(&map, home) {
        let holds = match claim(&word) {
            None => true,
            Some(Claim::Path(p)) => code.has_path(p, folder.as_deref()),
            Some(Claim::Item(name)) => code.has_word(name),
            // A method, an associated function or an enum's variant.
            Some(Claim::Method(ty, member)) => {
                code.has_word(ty) && (code.has_fn(member) || code.has_word(member))
            }
            Some(Claim::Function(name)) => code.has_fn(name) || code.has_word(name),
        };
        if !holds {
            stale.insert(format!("{map_name}: `{word}`"));
        }
    }
    stale.into_iter().collect()
}

#[test]
fn every_path_type_and_test_the_map_names_exists() {
    let code = Code::read();
    let stale: Vec<String> = MAPS
        .iter()
        .flat_map(|&(page, home)| stale_words(page, home, &code))
        .collect();
    assert!(
        stale.is_empty(),
        "the map names what the code no longer has (correct the map or the code):\n{}",
        stale.join("\n")
    );
}

/// Each invariant (a paragraph opening in bold under "Architecture invariants") names the test
/// or the check that holds it, and that test exists.
#[test]
fn every_invariant_of_the_map_names_what_holds_it() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let section = map
        .split("## Architecture invariants")
        .nth(1)
        .expect("ARCHITECTURE.md has a section \"Architecture invariants\"");
    let section = section.split("\n## ").next().unwrap_or(section);
    let code = Code::read();
    let mut unheld = Vec::new();
    let mut count = 0;
    for paragraph in section
        .split("\n\n")
        .filter(|p| p.trim_start().starts_with("**"))
    {
        count += 1;
        let holders = named(paragraph, None)
            .into_iter()
            .filter(|(w, _)| {
                let test_file =
                    (w.starts_with("tests/") || w.contains("/tests/") || w.ends_with("tests.rs"))
                        && code.has_path(w, None);
                let test_fn = matches!(claim(w), Some(Claim::Function(f)) if code.has_fn(f));
                let check = w.starts_with("cargo ");
                test_file || test_fn || check
            })
            .count();
        if holders == 0 {
            unheld.push(paragraph.lines().next().unwrap_or_default().to_string());
        }
    }
    assert!(
        count >= 10,
        "only {count} invariants found: the reading lost the format"
    );
    assert!(
        unheld.is_empty(),
        "invariants that name no test or check holding them:\n{}",
        unheld.join("\n")
    );
}

#[test]
fn a_stale_word_is_caught() {
    let code = Code::read();
    assert!(!code.has_path("driver/no_such_module.rs", None));
    assert!(code.has_path("answer.rs", Some("driver")));
    assert!(!code.has_path("answer.rs", Some("tracker")));
    assert!(code.has_word("Core"));
    assert!(!code.has_word("NoSuchTypeAnywhere"));
    assert!(!code.has_fn("no_such_test_anywhere_at_all"));
    assert!(matches!(
        claim("Core::handle"),
        Some(Claim::Method("Core", "handle"))
    ));
    assert!(matches!(
        claim("RunStep { step, issue }"),
        Some(Claim::Item("RunStep"))
    ));
    assert!(claim("cargo run -- diagram --check").is_none());
}
