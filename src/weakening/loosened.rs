//! An assertion replaced by a weaker one, test by test (`strength.rs` ranks each claim): an
//! exact claim become a bound or a mere presence (`assert_eq!(x, 3)` → `assert!(x > 0)`,
//! `assertEqual` → `assertTrue`, `toBe(3)` → `toBeDefined()`), or a tolerance widened
//! (`places=7` → `places=1`, `delta=0.001` → `delta=0.5`). Assertions only added never
//! loosen anything: a test loosens when it keeps fewer claims of a strength than it had,
//! beyond the assertions it lost outright (those are `AssertionsRemoved`).

use super::parse::TestFn;
use super::strength::{tolerance, Assertion, BOUND, EXACT};
use super::{Fact, Kind};
use regex::Regex;
use std::sync::OnceLock;

/// The longest assertion text a fact quotes.
const QUOTED_CHARS: usize = 80;

/// `old` (the base's test) against `new` (the same test at the head), in `path`.
pub(super) fn compare(path: &str, old: &TestFn, new: &TestFn, facts: &mut Vec<Fact>) {
    weaker_claims(path, old, new, facts);
    wider_tolerances(path, old, new, facts);
}

fn weaker_claims(path: &str, old: &TestFn, new: &TestFn, facts: &mut Vec<Fact>) {
    let removed = old.assertions.len().saturating_sub(new.assertions.len());
    for floor in [EXACT, BOUND] {
        let at_least = |a: &[Assertion]| a.iter().filter(|x| x.rank >= floor).count();
        let lost = at_least(&old.assertions).saturating_sub(at_least(&new.assertions));
        if lost <= removed {
            continue;
        }
        let gone = old
            .assertions
            .iter()
            .find(|o| o.rank >= floor && !holds(&new.assertions, &o.text));
        let came = new
            .assertions
            .iter()
            .find(|n| n.rank < floor && !holds(&old.assertions, &n.text));
        let what = match (gone, came) {
            (Some(g), Some(c)) => format!(
                "you loosened an assertion of `{}`: `{}` became `{}`",
                new.name,
                quoted(&g.text),
                quoted(&c.text)
            ),
            _ => format!(
                "you loosened {} of the assertions of `{}` (fewer exact claims, weaker ones instead)",
                lost - removed,
                new.name
            ),
        };
        let line = came.map_or(new.line, |c| c.line);
        facts.push(Fact::new(
            path,
            line,
            false,
            Kind::AssertionLoosened,
            &new.name,
            what,
        ));
        return;
    }
}

/// Each new assertion that is an old one with another tolerance, a looser one.
fn wider_tolerances(path: &str, old: &TestFn, new: &TestFn, facts: &mut Vec<Fact>) {
    for n in &new.assertions {
        if holds(&old.assertions, &n.text) {
            continue;
        }
        let Some((now, now_text)) = tolerance(&n.text) else {
            continue;
        };
        let shape = numbers_out(&n.text);
        let was = old
            .assertions
            .iter()
            .filter(|o| !holds(&new.assertions, &o.text) && numbers_out(&o.text) == shape)
            .find_map(|o| tolerance(&o.text));
        let Some((was, was_text)) = was else {
            continue;
        };
        let looser = if now.larger_is_looser {
            now.value > was.value
        } else {
            now.value < was.value
        };
        if looser {
            facts.push(Fact::new(
                path,
                n.line,
                false,
                Kind::AssertionLoosened,
                &new.name,
                format!(
                    "you widened the tolerance of an assertion of `{}` (`{}` became `{}`)",
                    new.name,
                    was_text.trim(),
                    now_text.trim()
                ),
            ));
        }
    }
}

fn holds(assertions: &[Assertion], text: &str) -> bool {
    assertions.iter().any(|a| a.text == text)
}

/// The text with every number replaced by `#`: the shape two versions of an assertion share.
fn numbers_out(text: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"\d[\d_]*(\.\d+)?([eE][+-]?\d+)?").expect("the number pattern compiles")
    });
    re.replace_all(text, "#").into_owned()
}

fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
