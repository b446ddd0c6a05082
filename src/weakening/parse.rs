//! Tests in source code, read with tree-sitter's grammars: each test's name, line, whether it
//! is skipped, how many assertions it makes and whether its body is empty. Rust (`#[test]`, `#[ignore]`), Python (`test_*`,
//! `pytest.mark.skip`/`xfail`, `unittest.skip`), JavaScript and TypeScript (`it`/`test`,
//! `.skip`, `xit`), Go (`TestX(t *testing.T)`, `t.Skip`) and Java (`@Test`, `@Disabled`,
//! `@Ignore`).

use super::lang::Lang;
use super::strength::{self, Assertion};
use tree_sitter::{Node, Parser};

/// One test as the source declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TestFn {
    /// The name, qualified by its module, class or `describe` block.
    pub name: String,
    /// 1-based line of the declaration.
    pub line: usize,
    /// What skips it (`#[ignore]`, `@pytest.mark.skip`, `.skip`), if anything does.
    pub skipped: Option<String>,
    /// The assertions in its body, in order.
    pub assertions: Vec<Assertion>,
    /// Whether its body holds no statement.
    pub empty: bool,
}

/// The tests of `text`, the file at `path`; `None` when no grammar reads it (or it does not
/// parse at all).
pub(super) fn tests_in(path: &str, text: &str) -> Option<Vec<TestFn>> {
    let lang = Lang::of(path)?;
    let mut parser = Parser::new();
    parser.set_language(&lang.grammar()).ok()?;
    let tree = parser.parse(text, None)?;
    let mut found = Vec::new();
    let mut reader = Reader {
        src: text.as_bytes(),
        lang,
        found: &mut found,
    };
    reader.walk(tree.root_node(), "", None, 0);
    Some(found)
}

/// Deeper than this a tree is generated code, not tests: not read further (and the stack
/// stays small).
const MAX_DEPTH: usize = 400;

struct Reader<'a> {
    src: &'a [u8],
    lang: Lang,
    found: &'a mut Vec<TestFn>,
}

impl Reader<'_> {
    fn text(&self, node: Node) -> &str {
        node.utf8_text(self.src).unwrap_or_default()
    }

    fn named_children<'t>(&self, node: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor).collect()
    }

    /// Every node under `node`, `prefix` the enclosing module/class/describe names and
    /// `skipped` what skips the enclosing block.
    fn walk(&mut self, node: Node, prefix: &str, skipped: Option<&str>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(()) = self.test_at(node, prefix, skipped) {
            return;
        }
        let (prefix, skipped) = match self.scope_at(node, prefix, skipped) {
            Some((p, s)) => (p, s),
            None => (prefix.to_string(), skipped.map(str::to_string)),
        };
        for child in self.named_children(node) {
            self.walk(child, &prefix, skipped.as_deref(), depth + 1);
        }
    }

    /// A module, class or `describe` block opening at `node`: the prefix and skip inside it.
    fn scope_at(
        &self,
        node: Node,
        prefix: &str,
        skipped: Option<&str>,
    ) -> Option<(String, Option<String>)> {
        let join = |name: &str, sep: &str| qualified(prefix, name, sep);
        let inherited = skipped.map(str::to_string);
        match (self.lang, node.kind()) {
            (Lang::Rust, "mod_item") => {
                let name = self.text(node.child_by_field_name("name")?);
                Some((join(name, "::"), inherited))
            }
            (Lang::Python, "class_definition") => {
                let name = self.text(node.child_by_field_name("name")?);
                let skip = self.python_decorators(node).or(inherited);
                Some((join(name, "::"), skip))
            }
            (Lang::Java, "class_declaration") => {
                let name = self.text(node.child_by_field_name("name")?);
                let skip = self.java_annotations(node).1.or(inherited);
                Some((join(name, "."), skip))
            }
            (Lang::Js | Lang::Ts | Lang::Tsx, "call_expression") => {
                let (callee, name) = self.js_call(node)?;
                let (base, modifier) = callee.split_once('.').unwrap_or((callee.as_str(), ""));
                if !matches!(base, "describe" | "xdescribe" | "fdescribe" | "suite") {
                    return None;
                }
                let skip = (base == "xdescribe" || modifier == "skip")
                    .then(|| callee.clone())
                    .or(inherited);
                Some((join(&name, " > "), skip))
            }
            _ => None,
        }
    }

    /// A test declared at `node`, recorded.
    fn test_at(&mut self, node: Node, prefix: &str, skipped: Option<&str>) -> Option<()> {
        let test = match (self.lang, node.kind()) {
            (Lang::Rust, "function_item") => self.rust_test(node, prefix, skipped),
            (Lang::Python, "function_definition") => self.python_test(node, prefix, skipped),
            (Lang::Js | Lang::Ts | Lang::Tsx, "call_expression") => {
                self.js_test(node, prefix, skipped)
            }
            (Lang::Go, "function_declaration") => self.go_test(node),
            (Lang::Java, "method_declaration") => self.java_test(node, prefix, skipped),
            _ => None,
        }?;
        self.found.push(test);
        Some(())
    }

    /// `#[test]` (or `rstest`, `test_case`) functions; `#[ignore]` skips.
    fn rust_test(&self, node: Node, prefix: &str, skipped: Option<&str>) -> Option<TestFn> {
        let join = |name: &str, sep: &str| qualified(prefix, name, sep);
        let attrs = self.rust_attributes(node);
        let is_test = attrs.iter().any(|a| {
            let path = a.split(['(', ' ', '=']).next().unwrap_or_default();
            path == "test" || path.ends_with("::test") || path == "rstest" || path == "test_case"
        });
        if !is_test {
            return None;
        }
        let skip = attrs
            .iter()
            .find(|a| a.starts_with("ignore"))
            .map(|a| format!("#[{a}]"));
        let name = self.text(node.child_by_field_name("name")?);
        let body = node.child_by_field_name("body")?;
        Some(TestFn {
            name: join(name, "::"),
            line: node.start_position().row + 1,
            skipped: skip.or(skipped.map(str::to_string)),
            assertions: self.assertions(body, &|r, n| r.rust_assertion(n)),
            empty: self.named_children(body).iter().all(|c| is_comment(*c)),
        })
    }

    /// `test*` functions; a skip or xfail decorator, or a skip call in the body, skips.
    fn python_test(&self, node: Node, prefix: &str, skipped: Option<&str>) -> Option<TestFn> {
        let join = |name: &str, sep: &str| qualified(prefix, name, sep);
        let name = self.text(node.child_by_field_name("name")?);
        if !name.starts_with("test") {
            return None;
        }
        let body = node.child_by_field_name("body")?;
        let skip = self
            .python_decorators(node)
            .or_else(|| self.python_skip_call(body))
            .or(skipped.map(str::to_string));
        let statements: Vec<Node> = self
            .named_children(body)
            .into_iter()
            .filter(|c| !is_comment(*c) && !self.python_filler(*c))
            .collect();
        Some(TestFn {
            name: join(name, "::"),
            line: node.start_position().row + 1,
            skipped: skip,
            assertions: self.assertions(body, &|r, n| r.python_assertion(n)),
            empty: statements.is_empty(),
        })
    }

    /// `it(…)`/`test(…)` calls; `.skip`, `.todo` and `x…` skip.
    fn js_test(&self, node: Node, prefix: &str, skipped: Option<&str>) -> Option<TestFn> {
        let join = |name: &str, sep: &str| qualified(prefix, name, sep);
        let (callee, name) = self.js_call(node)?;
        let (base, modifier) = callee.split_once('.').unwrap_or((callee.as_str(), ""));
        if !matches!(base, "it" | "test" | "xit" | "xtest" | "fit") {
            return None;
        }
        let skip = (base.starts_with('x') || matches!(modifier, "skip" | "todo"))
            .then(|| callee.clone())
            .or(skipped.map(str::to_string));
        let body = self
            .named_children(node.child_by_field_name("arguments")?)
            .into_iter()
            .find(|a| {
                matches!(
                    a.kind(),
                    "arrow_function" | "function_expression" | "function"
                )
            })
            .and_then(|f| f.child_by_field_name("body"));
        let (assertions, empty) = match body {
            Some(b) if b.kind() == "statement_block" => (
                self.assertions(b, &|r, n| r.js_assertion(n)),
                self.named_children(b).iter().all(|c| is_comment(*c)),
            ),
            Some(b) => (self.assertions(b, &|r, n| r.js_assertion(n)), false),
            None => (Vec::new(), true),
        };
        Some(TestFn {
            name: join(&name, " > "),
            line: node.start_position().row + 1,
            skipped: skip,
            assertions,
            empty,
        })
    }

    /// `TestX(t *testing.T)`; `t.Skip…` in the body skips.
    fn go_test(&self, node: Node) -> Option<TestFn> {
        let name = self.text(node.child_by_field_name("name")?);
        let params = self.text(node.child_by_field_name("parameters")?);
        if !name.starts_with("Test") || !params.contains("testing.T") {
            return None;
        }
        let body = node.child_by_field_name("body")?;
        let skip = self.first(body, &|r, n| r.go_skip(n));
        Some(TestFn {
            name: name.to_string(),
            line: node.start_position().row + 1,
            skipped: skip,
            assertions: self.assertions(body, &|r, n| r.go_assertion(n)),
            empty: self.named_children(body).iter().all(|c| is_comment(*c)),
        })
    }

    /// `@Test` methods; `@Disabled`/`@Ignore` skip.
    fn java_test(&self, node: Node, prefix: &str, skipped: Option<&str>) -> Option<TestFn> {
        let join = |name: &str, sep: &str| qualified(prefix, name, sep);
        let (is_test, skip) = self.java_annotations(node);
        if !is_test {
            return None;
        }
        let name = self.text(node.child_by_field_name("name")?);
        let body = node.child_by_field_name("body")?;
        Some(TestFn {
            name: join(name, "."),
            line: node.start_position().row + 1,
            skipped: skip.or(skipped.map(str::to_string)),
            assertions: self.assertions(body, &|r, n| r.java_assertion(n)),
            empty: self.named_children(body).iter().all(|c| is_comment(*c)),
        })
    }

    /// The assertions under `node` (itself included): the nodes for which `is` holds.
    fn assertions(&self, node: Node, is: &dyn Fn(&Self, Node) -> bool) -> Vec<Assertion> {
        let mut found = Vec::new();
        self.collect(node, is, &mut found);
        found
    }

    fn collect(&self, node: Node, is: &dyn Fn(&Self, Node) -> bool, found: &mut Vec<Assertion>) {
        if is(self, node) {
            found.push(strength::assertion(self.lang, node, self.src));
        }
        for child in self.named_children(node) {
            self.collect(child, is, found);
        }
    }

    /// The first node under `node` for which `is` says something.
    fn first(&self, node: Node, is: &dyn Fn(&Self, Node) -> Option<String>) -> Option<String> {
        if let Some(found) = is(self, node) {
            return Some(found);
        }
        self.named_children(node)
            .into_iter()
            .find_map(|c| self.first(c, is))
    }

    // Rust

    /// The attributes right above a function, their inner text (`test`, `ignore = "…"`).
    fn rust_attributes(&self, node: Node) -> Vec<String> {
        let mut attrs = Vec::new();
        let mut at = node.prev_named_sibling();
        while let Some(n) = at {
            match n.kind() {
                "attribute_item" => {
                    let text = self.text(n);
                    let inner = text
                        .trim_start_matches("#[")
                        .trim_end_matches(']')
                        .trim()
                        .to_string();
                    attrs.push(inner);
                }
                "line_comment" | "block_comment" => {}
                _ => break,
            }
            at = n.prev_named_sibling();
        }
        attrs
    }

    fn rust_assertion(&self, node: Node) -> bool {
        node.kind() == "macro_invocation"
            && node.child_by_field_name("macro").is_some_and(|m| {
                let name = self.text(m).rsplit("::").next().unwrap_or_default();
                name.starts_with("assert")
                    || name.starts_with("debug_assert")
                    || name.starts_with("prop_assert")
                    || name.starts_with("assert_snapshot")
            })
    }

    // Python

    /// What a decorator of the definition at `node` skips it with, if one does.
    fn python_decorators(&self, node: Node) -> Option<String> {
        let parent = node
            .parent()
            .filter(|p| p.kind() == "decorated_definition")?;
        self.named_children(parent)
            .into_iter()
            .filter(|c| c.kind() == "decorator")
            .map(|d| self.text(d).to_string())
            .find(|d| {
                let name = d.split('(').next().unwrap_or_default();
                name.contains("skip") || name.contains("xfail")
            })
    }

    /// `pytest.skip(…)` or `self.skipTest(…)` among the body's statements.
    fn python_skip_call(&self, body: Node) -> Option<String> {
        self.named_children(body).into_iter().find_map(|s| {
            let call = self
                .named_children(s)
                .into_iter()
                .find(|c| c.kind() == "call")?;
            let f = self.text(call.child_by_field_name("function")?);
            matches!(f, "pytest.skip" | "self.skipTest" | "pytest.xfail").then(|| f.to_string())
        })
    }

    /// A statement that does nothing: `pass`, `...`, a docstring.
    fn python_filler(&self, node: Node) -> bool {
        match node.kind() {
            "pass_statement" => true,
            "expression_statement" => self
                .named_children(node)
                .iter()
                .all(|c| matches!(c.kind(), "string" | "ellipsis")),
            _ => false,
        }
    }

    fn python_assertion(&self, node: Node) -> bool {
        match node.kind() {
            "assert_statement" => true,
            "call" => node.child_by_field_name("function").is_some_and(|f| {
                let name = self.text(f);
                let last = name.rsplit('.').next().unwrap_or_default();
                last.starts_with("assert") || name == "pytest.raises" || last == "fail"
            }),
            _ => false,
        }
    }

    // JavaScript, TypeScript

    /// A call `callee("name", …)`: the callee's text (`it`, `it.skip`, `describe`) and the
    /// name, when the first argument is a string.
    fn js_call(&self, node: Node) -> Option<(String, String)> {
        let callee = node.child_by_field_name("function")?;
        if !matches!(callee.kind(), "identifier" | "member_expression") {
            return None;
        }
        let callee = self.text(callee).to_string();
        let first = self
            .named_children(node.child_by_field_name("arguments")?)
            .into_iter()
            .next()?;
        if !matches!(first.kind(), "string" | "template_string") {
            return None;
        }
        let name = self.text(first).trim_matches(['"', '\'', '`']).to_string();
        Some((callee, name))
    }

    fn js_assertion(&self, node: Node) -> bool {
        if node.kind() != "call_expression" {
            return false;
        }
        let Some(f) = node.child_by_field_name("function") else {
            return false;
        };
        match f.kind() {
            "identifier" => matches!(self.text(f), "expect" | "assert"),
            "member_expression" => f
                .child_by_field_name("object")
                .is_some_and(|o| o.kind() == "identifier" && self.text(o) == "assert"),
            _ => false,
        }
    }

    // Go

    fn go_call_selector<'s>(&'s self, node: Node) -> Option<(&'s str, &'s str)> {
        if node.kind() != "call_expression" {
            return None;
        }
        let f = node.child_by_field_name("function")?;
        if f.kind() != "selector_expression" {
            return None;
        }
        let operand = self.text(f.child_by_field_name("operand")?);
        let field = self.text(f.child_by_field_name("field")?);
        Some((operand, field))
    }

    fn go_skip(&self, node: Node) -> Option<String> {
        let (operand, field) = self.go_call_selector(node)?;
        matches!(field, "Skip" | "Skipf" | "SkipNow").then(|| format!("{operand}.{field}"))
    }

    fn go_assertion(&self, node: Node) -> bool {
        self.go_call_selector(node).is_some_and(|(operand, field)| {
            matches!(operand, "assert" | "require")
                || matches!(
                    field,
                    "Error" | "Errorf" | "Fatal" | "Fatalf" | "Fail" | "FailNow"
                )
        })
    }

    // Java

    /// Whether the declaration at `node` is annotated as a test, and what disables it.
    fn java_annotations(&self, node: Node) -> (bool, Option<String>) {
        let Some(modifiers) = self
            .named_children(node)
            .into_iter()
            .find(|c| c.kind() == "modifiers")
        else {
            return (false, None);
        };
        let mut test = false;
        let mut skip = None;
        for a in self.named_children(modifiers) {
            if !matches!(a.kind(), "marker_annotation" | "annotation") {
                continue;
            }
            let name = a
                .child_by_field_name("name")
                .map(|n| self.text(n))
                .unwrap_or_default();
            let name = name.rsplit('.').next().unwrap_or_default();
            match name {
                "Test" | "ParameterizedTest" | "RepeatedTest" | "TestFactory" => test = true,
                "Disabled" | "Ignore" | "DisabledIf" | "DisabledOnOs" => {
                    skip = Some(self.text(a).to_string())
                }
                _ => {}
            }
        }
        (test, skip)
    }

    fn java_assertion(&self, node: Node) -> bool {
        node.kind() == "method_invocation"
            && node.child_by_field_name("name").is_some_and(|n| {
                let name = self.text(n);
                name.starts_with("assert") || name == "fail" || name == "verify"
            })
    }
}

fn is_comment(node: Node) -> bool {
    node.kind().contains("comment")
}

/// `name` inside the block `prefix` names, joined by `sep`.
fn qualified(prefix: &str, name: &str, sep: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}{sep}{name}")
    }
}
