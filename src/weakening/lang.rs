//! The languages whose tests the check reads, known by a file's name, and their tree-sitter
//! grammars.

use tree_sitter::Language;

/// A language whose tests are read.
#[derive(Clone, Copy)]
pub(super) enum Lang {
    Rust,
    Python,
    Js,
    Ts,
    Tsx,
    Go,
    Java,
}

impl Lang {
    pub(super) fn of(path: &str) -> Option<Lang> {
        let ext = path.rsplit_once('.').map(|(_, e)| e)?;
        Some(match ext {
            "rs" => Lang::Rust,
            "py" => Lang::Python,
            "js" | "jsx" | "mjs" | "cjs" => Lang::Js,
            "ts" | "mts" | "cts" => Lang::Ts,
            "tsx" => Lang::Tsx,
            "go" if path.ends_with("_test.go") => Lang::Go,
            "java" => Lang::Java,
            _ => return None,
        })
    }

    pub(super) fn grammar(self) -> Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Js => tree_sitter_javascript::LANGUAGE.into(),
            Lang::Ts => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
        }
    }
}
