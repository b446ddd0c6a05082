//! How much one assertion claims, read from its syntax tree: an exact claim (`assert_eq!`,
//! `assertEqual`, `toBe(3)`, `if got != want { t.Fatal }`), a bound (`x > 0`, `assertIn`,
//! `toContain`), or only that something is there or true (`assert!(ok)`, `assertTrue`,
//! `toBeDefined()`, `assertNotNull`). A form this table does not know counts as exact: only a
//! change to a known weaker form is a loosening. And the tolerance an approximate assertion
//! allows (`places=`, `delta=`, `toBeCloseTo(v, digits)`, `(a - b).abs() < eps`).

use super::lang::Lang;
use regex::Regex;
use std::sync::OnceLock;
use tree_sitter::Node;

/// An exact claim: a value compared for equality, an exact error, a snapshot.
pub(super) const EXACT: u8 = 2;
/// A bound: an order, an inequality, a membership, a pattern.
pub(super) const BOUND: u8 = 1;
/// Only that something is there, or true.
pub(super) const PRESENT: u8 = 0;

/// One assertion of a test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Assertion {
    /// 1-based line where it starts.
    pub line: usize,
    /// Its text, whitespace collapsed (the whole `expect(…).matcher(…)` chain, a Go check's
    /// condition).
    pub text: String,
    /// [`EXACT`], [`BOUND`] or [`PRESENT`].
    pub rank: u8,
}

/// The assertion at `node` (a node the language's reader counts as one) read from `src`.
pub(super) fn assertion(lang: Lang, node: Node, src: &[u8]) -> Assertion {
    let text = |n: Node| n.utf8_text(src).unwrap_or_default().to_string();
    // The node the claim starts at: the whole chain, a Go check's `if`.
    let (claim, rank, at) = match lang {
        Lang::Rust => {
            let (claim, rank) = rust(&text(node));
            (claim, rank, node)
        }
        Lang::Python => (text(node), python(node, src), node),
        Lang::Js | Lang::Ts | Lang::Tsx => js(node, src),
        Lang::Go => go(node, src),
        Lang::Java => java(node, src),
    };
    Assertion {
        line: at.start_position().row + 1,
        text: claim.split_whitespace().collect::<Vec<_>>().join(" "),
        rank,
    }
}

/// The strongest comparison an expression makes: `==` exact, an inequality or order a
/// bound; `None` when it compares nothing.
fn comparison(expr: &str) -> Option<u8> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"\s(===|!==|==|!=|<=|>=|<|>)\s|\.eq\(|\.equals\(")
            .expect("the comparison pattern compiles")
    });
    let mut best = None;
    for c in re.captures_iter(expr) {
        let rank = match c.get(1).map(|m| m.as_str()) {
            Some("==" | "===") | None => EXACT,
            Some(_) => BOUND,
        };
        best = best.max(Some(rank));
    }
    best
}

fn rust(text: &str) -> (String, u8) {
    let name = text.split('!').next().unwrap_or_default();
    let name = name.rsplit("::").next().unwrap_or_default().trim();
    let rank = if name.ends_with("_eq") || name.contains("snapshot") {
        EXACT
    } else if name.ends_with("_ne") {
        BOUND
    } else if matches!(name, "assert" | "debug_assert" | "prop_assert") {
        comparison(text).unwrap_or(PRESENT)
    } else {
        EXACT
    };
    (text.to_string(), rank)
}

fn python(node: Node, src: &[u8]) -> u8 {
    let text = node.utf8_text(src).unwrap_or_default();
    if node.kind() == "assert_statement" {
        return python_expression(text.trim_start_matches("assert"));
    }
    let name = field_text(node, "function", src);
    let name = name.rsplit('.').next().unwrap_or_default();
    match name {
        "assertTrue" | "assertFalse" | "assert_" | "failUnless" | "failIf" => {
            let args = field_text(node, "arguments", src);
            python_expression(args)
        }
        "assertIsNotNone" | "assert_called" | "assertIsNot" => PRESENT,
        "assertNotEqual"
        | "assertNotEquals"
        | "assertNotAlmostEqual"
        | "assertGreater"
        | "assertGreaterEqual"
        | "assertLess"
        | "assertLessEqual"
        | "assertIn"
        | "assertNotIn"
        | "assertRegex"
        | "assertRegexpMatches"
        | "assertIsInstance"
        | "assertNotIsInstance"
        | "assert_any_call"
        | "assertNotRegex" => BOUND,
        _ => EXACT,
    }
}

/// An asserted Python expression: `==`, `is None` exact; `!=`, orders and `in` bounds;
/// anything else (a truth value, `is not None`) only present.
fn python_expression(expr: &str) -> u8 {
    if expr.contains(" is not None") {
        return PRESENT;
    }
    if expr.contains(" is None") || expr.contains(" is True") || expr.contains(" is False") {
        return EXACT;
    }
    match comparison(expr) {
        Some(rank) => rank,
        None if expr.contains(" in ") || expr.contains("isinstance(") => BOUND,
        None => PRESENT,
    }
}

/// The chain an assertion call opens (`expect(x).not.toBe(3)`, `assertThat(x).isEqualTo(3)`):
/// the names called or read on it in order, and its outermost node.
fn chain<'t>(node: Node<'t>, src: &[u8], member: &str, field: &str) -> (Vec<String>, Node<'t>) {
    let mut names = Vec::new();
    let mut at = node;
    while let Some(parent) = at.parent() {
        let on_it = parent.child_by_field_name("object").map(|o| o.id()) == Some(at.id());
        if parent.kind() == member && on_it {
            let name = field_text(parent, field, src);
            names.push(name.to_string());
            at = parent;
        } else if parent.kind() == "call_expression"
            && parent.child_by_field_name("function").map(|f| f.id()) == Some(at.id())
        {
            at = parent;
        } else {
            break;
        }
    }
    (names, at)
}

fn js<'t>(node: Node<'t>, src: &[u8]) -> (String, u8, Node<'t>) {
    let text = |n: Node| n.utf8_text(src).unwrap_or_default().to_string();
    let callee = field_text(node, "function", src).to_string();
    let args = field_text(node, "arguments", src).to_string();
    if callee != "expect" {
        // `assert(x)`, `assert.ok(x)`, `assert.equal(a, b)`.
        let method = callee.strip_prefix("assert.").unwrap_or("ok");
        let rank = match method {
            "ok" | "isOk" | "isTrue" | "isFalse" | "exists" | "isDefined" | "isNotNull" => {
                comparison(&args).unwrap_or(PRESENT)
            }
            "notEqual" | "notStrictEqual" | "notDeepEqual" | "notDeepStrictEqual" | "match"
            | "include" | "isAbove" | "isBelow" | "isAtLeast" | "isAtMost" | "instanceOf" => BOUND,
            _ => EXACT,
        };
        return (text(node), rank, node);
    }
    let (names, outer) = chain(node, src, "member_expression", "property");
    let negated = names.iter().any(|n| n == "not");
    let matcher = names.last().map(String::as_str).unwrap_or_default();
    let called_with_args = outer.kind() == "call_expression"
        && outer
            .child_by_field_name("arguments")
            .is_some_and(|a| a.named_child_count() > 0);
    let rank = match matcher {
        "toBeDefined" | "toBeTruthy" | "toBeFalsy" | "exist" | "ok" => PRESENT,
        "toBeNull" | "toBeUndefined" | "null" | "undefined" if negated => PRESENT,
        _ if negated => BOUND,
        "toBeGreaterThan"
        | "toBeGreaterThanOrEqual"
        | "toBeLessThan"
        | "toBeLessThanOrEqual"
        | "toContain"
        | "toMatch"
        | "toHaveBeenCalled"
        | "toBeInstanceOf"
        | "above"
        | "below"
        | "least"
        | "most"
        | "within"
        | "include"
        | "contain"
        | "match"
        | "instanceOf"
        | "toContainEqual" => BOUND,
        "toThrow" | "toThrowError" | "toHaveProperty" if !called_with_args => BOUND,
        _ => EXACT,
    };
    (text(outer), rank, outer)
}

fn go<'t>(node: Node<'t>, src: &[u8]) -> (String, u8, Node<'t>) {
    let text = |n: Node| n.utf8_text(src).unwrap_or_default().to_string();
    let function = node.child_by_field_name("function");
    let operand = function
        .and_then(|f| f.child_by_field_name("operand"))
        .map(text)
        .unwrap_or_default();
    let field = function
        .and_then(|f| f.child_by_field_name("field"))
        .map(text)
        .unwrap_or_default();
    if matches!(operand.as_str(), "assert" | "require") {
        let rank = match field.as_str() {
            "True" | "False" | "NotNil" | "NotEmpty" | "NotZero" | "Error" | "Condition"
            | "Eventually" => PRESENT,
            "NotEqual" | "NotEqualValues" | "Greater" | "GreaterOrEqual" | "Less"
            | "LessOrEqual" | "Contains" | "NotContains" | "Subset" | "Regexp" | "IsType"
            | "Positive" | "Negative" | "ErrorContains" => BOUND,
            _ => EXACT,
        };
        return (text(node), rank, node);
    }
    // `t.Fatal` and its kin fail under the condition of the `if` they are in.
    let mut at = node.parent();
    while let Some(n) = at {
        match n.kind() {
            "if_statement" => {
                let Some(condition) = n.child_by_field_name("condition") else {
                    break;
                };
                let cond = text(condition);
                let rank = if cond.contains("== nil") || cond.trim_start().starts_with('!') {
                    PRESENT
                } else if cond.contains(" != ") || cond.contains("Abs(") {
                    // Fails unless equal (within a tolerance): an exact claim.
                    EXACT
                } else {
                    BOUND
                };
                return (format!("if {cond}"), rank, n);
            }
            "function_declaration" | "func_literal" | "method_declaration" => break,
            _ => at = n.parent(),
        }
    }
    (text(node), EXACT, node)
}

fn java<'t>(node: Node<'t>, src: &[u8]) -> (String, u8, Node<'t>) {
    let text = |n: Node| n.utf8_text(src).unwrap_or_default().to_string();
    let name = field_text(node, "name", src).to_string();
    let args = field_text(node, "arguments", src).to_string();
    let rank = match name.as_str() {
        "assertTrue" | "assertFalse" => comparison(&args).unwrap_or(PRESENT),
        "assertNotNull" => PRESENT,
        "assertNotEquals" | "assertNotSame" => BOUND,
        "assertThat" => {
            let (names, outer) = chain(node, src, "method_invocation", "name");
            let last = names.last().map(String::as_str).unwrap_or_default();
            let rank = match last {
                "isNotNull" | "isNotEmpty" | "isTrue" | "isFalse" | "isNotBlank" => PRESENT,
                "isGreaterThan"
                | "isLessThan"
                | "isGreaterThanOrEqualTo"
                | "isLessThanOrEqualTo"
                | "isPositive"
                | "isNegative"
                | "contains"
                | "isNotEqualTo"
                | "startsWith"
                | "endsWith"
                | "matches"
                | "isInstanceOf" => BOUND,
                "" if args.contains("notNullValue()") => PRESENT,
                "" if ["greaterThan(", "lessThan(", "containsString(", "not("]
                    .iter()
                    .any(|m| args.contains(m)) =>
                {
                    BOUND
                }
                _ => EXACT,
            };
            return (text(outer), rank, outer);
        }
        _ => EXACT,
    };
    (text(node), rank, node)
}

/// How loose an approximate assertion is: the value, and whether a larger one is looser
/// (a tolerance) or tighter (digits of precision).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Tolerance {
    pub value: f64,
    pub larger_is_looser: bool,
}

/// The tolerance `text` (an assertion's) allows, if it states one.
pub(super) fn tolerance(text: &str) -> Option<(Tolerance, String)> {
    static RE: OnceLock<[(Regex, bool); 2]> = OnceLock::new();
    let [digits, delta] = RE.get_or_init(|| {
        let re = |p: &str| Regex::new(p).expect("the tolerance pattern compiles");
        [
            (re(r"(places\s*=\s*|toBeCloseTo\([^,]+,\s*)(\d+)"), false),
            (
                re(concat!(
                    // `delta=`, `rel_tol=`, `epsilon = ` (Python, approx, Rust's float macros)
                    r"((?:delta|epsilon|eps|rel|abs|rel_tol|abs_tol|max_relative|ulps)\s*=\s*",
                    // `(a - b).abs() < `, `abs(a - b) <= `, `math.Abs(got-want) > `
                    r"|(?:\.abs\(\)|[Aa]bs\([^()]*\))\s*[<>]=?\s*",
                    // testify's last argument, JUnit's `assertEquals(expected, actual, delta)`
                    r#"|(?:InDelta|InEpsilon)\(.*,\s*|assertEquals\([^,"]+,[^,]+,\s*)"#,
                    r"([0-9][0-9_.eE+-]*)",
                )),
                true,
            ),
        ]
    });
    [digits, delta]
        .into_iter()
        .find_map(|(re, larger_is_looser)| {
            let c = re.captures(text)?;
            let value = c[2].replace('_', "").parse::<f64>().ok()?;
            let tolerance = Tolerance {
                value,
                larger_is_looser: *larger_is_looser,
            };
            // What the match opened and did not close, closed: `toBeCloseTo(0.3, 5)`.
            let said = c[0].trim().to_string();
            let open = said
                .matches('(')
                .count()
                .saturating_sub(said.matches(')').count());
            Some((tolerance, said + &")".repeat(open)))
        })
}

/// The text of `node`'s child in `field`, empty when it has none.
fn field_text<'s>(node: Node, field: &str, src: &'s [u8]) -> &'s str {
    node.child_by_field_name(field)
        .and_then(|n| n.utf8_text(src).ok())
        .unwrap_or_default()
}
