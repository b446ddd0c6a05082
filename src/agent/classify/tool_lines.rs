//! Recognizers for the lines that build, lint and test tools print when they fail (rustc,
//! cargo, clippy, tsc, eslint, flake8, go, C compilers, jest, pytest, go test): each says
//! whether one line is evidence of its class.

pub(super) fn is_typecheck_line(line: &str) -> bool {
    // tsc: "src/a.ts(3,7): error TS2322: ..." or "src/a.ts:3:7 - error TS2322: ...".
    if let Some(at) = line.find("error TS") {
        let rest = &line[at + "error TS".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(':') {
            return true;
        }
    }
    // mypy: "a.py:3: error: Incompatible types in assignment  [assignment]".
    line.contains(".py:") && line.contains(": error: ") && line.trim_end().ends_with(']')
}

pub(super) fn is_rust_error_code(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("error[E") && t.as_bytes().get(7).is_some_and(u8::is_ascii_digit)
}

pub(super) fn is_hard_build_line(line: &str) -> bool {
    let t = line.trim_start();
    is_rust_error_code(line)
        || t.contains("[build failed]")
        || t.starts_with("SyntaxError:")
        || t.contains("SyntaxError: ")
        || t.contains("IndentationError:")
        || t.contains("Cannot find module")
        || t.contains("MODULE_NOT_FOUND")
        || t.contains("ModuleNotFoundError:")
        || t.contains("ImportError:")
        || t.contains("Module not found: Error")
        || t.contains("error: cannot find symbol")
        || t.contains("fatal error:")
        || go_compile_line(t)
        || c_compile_error(t)
}

/// `./x.go:10:2: undefined: foo` (go build / vet output under `# pkg`).
pub(super) fn go_compile_line(t: &str) -> bool {
    let Some(at) = t.find(".go:") else {
        return false;
    };
    if t.contains("_test.go:") && !t.contains("undefined:") {
        return false;
    }
    let mut parts = t[at + 4..].splitn(3, ':');
    line_and_column(&mut parts) && parts.next().is_some_and(|m| m.starts_with(' '))
}

/// The `LINE:COL` after a file name in a compiler's or linter's row, both decimal numbers.
fn line_and_column<'a>(parts: &mut impl Iterator<Item = &'a str>) -> bool {
    let number =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    number(parts.next()) && number(parts.next())
}

/// gcc/clang/javac: `file.c:3:5: error: ...`, `Foo.java:3: error: ...`.
pub(super) fn c_compile_error(t: &str) -> bool {
    let Some(at) = t.find(": error: ") else {
        return false;
    };
    let head = &t[..at];
    [
        ".c:", ".h:", ".cc:", ".cpp:", ".hpp:", ".java:", ".m:", ".swift:", ".kt:",
    ]
    .iter()
    .any(|ext| head.contains(ext))
}

pub(super) fn is_soft_build_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("error: could not compile")
        || t.starts_with("error: linking with")
        || t.starts_with("error: aborting due to")
        || t.contains("Build failed")
        || t.contains("BUILD FAILED")
        || t.contains("Compilation failed")
}

/// A lint finding: a clippy `error: <lint message>` (no error code), an eslint row
/// `  3:7  error  message  rule`, or a ruff/flake8 row `a.py:1:1: F401 ...`.
pub(super) fn is_lint_line(line: &str, clippy_run: bool) -> bool {
    let t = line.trim_start();
    if clippy_run
        && t.starts_with("error: ")
        && !is_soft_build_line(t)
        && !t.starts_with("error: build failed")
    {
        return true;
    }
    eslint_row(t) || flake8_row(t)
}

pub(super) fn eslint_row(t: &str) -> bool {
    let mut words = t.split_whitespace();
    let position = words.next().unwrap_or("");
    let severity = words.next().unwrap_or("");
    let mut halves = position.splitn(2, ':');
    let numeric =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    numeric(halves.next()) && numeric(halves.next()) && severity == "error"
}

pub(super) fn flake8_row(t: &str) -> bool {
    let Some(at) = t.find(".py:") else {
        return false;
    };
    let mut parts = t[at + 4..].splitn(3, ':');
    let position_ok = line_and_column(&mut parts);
    let code = parts.next().unwrap_or("").trim_start();
    let letters = code.bytes().take_while(u8::is_ascii_uppercase).count();
    let digits = code[letters..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    position_ok && (1..=3).contains(&letters) && (2..=4).contains(&digits)
}

pub(super) fn is_test_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("test result: FAILED")
        || (t.starts_with("test ") && t.ends_with("... FAILED"))
        || (t.starts_with("---- ") && t.ends_with(" stdout ----"))
        || t.contains("panicked at")
        || t.starts_with("assertion `")
        || t.starts_with("assertion failed")
        || t.starts_with("--- FAIL:")
        || t.starts_with("FAIL\t")
        || (t.starts_with("FAILED ") && t.contains("::"))
        || (t.starts_with('●') && !t.contains("Test suite failed to run"))
        || t.starts_with('✕')
        || t.starts_with("× ")
        || (t.starts_with("Tests:") && t.contains("failed"))
        || t.contains("AssertionError")
        || t.starts_with("E   ")
        || (t.starts_with('=') && t.contains(" failed") && t.ends_with('='))
        || (t.ends_with(" failing") && t.split_whitespace().count() == 2)
}
