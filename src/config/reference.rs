//! docs/config.md, the reference of every key, generated from the schema so that it cannot
//! drift from the declarations: a unit test fails when the checked-in file differs.

use super::*;

/// The Markdown of docs/config.md.
pub fn reference_markdown() -> String {
    let schema = schema();
    let mut rows = Vec::new();
    object_rows(&schema, &schema, "", &mut rows);
    let mut out = String::from(
        "# Config reference\n\n\
         Generated from the key declarations in `src/config/definition.rs` (`cargo test --lib \
         config` fails when this file is stale; `SDLC_BLESS=1 cargo test --lib config::tests::docs` \
         rewrites it). `sdlc-runner config schema` prints the same as a JSON Schema, and \
         `examples/sdlc-config.json` shows every key in use. Keys starting with `_` are \
         comments in every object. `<step>` is one of the step keys (`startCycle`, …, \
         `merge`) or `addressReview`, the agent of a review round (docs/reviews.md: its \
         settings are those of a step, but it is never builtin nor disabled); `<model>` a \
         model name.\n\n\
         | key | type | default | range | meaning |\n|---|---|---|---|---|\n",
    );
    for row in rows {
        out.push_str(&row);
        out.push('\n');
    }
    out
}

/// One row per key of `node` (an object schema), then the rows of its nested objects.
fn object_rows(schema: &Value, node: &Value, prefix: &str, rows: &mut Vec<String>) {
    let Some(properties) = node.get("properties").and_then(Value::as_object) else {
        return;
    };
    let mut steps: Vec<&str> = Step::ALL.iter().map(|s| s.key()).collect();
    steps.sort_unstable();
    // `steps` also holds the review round's entry; the per-step limits do not.
    let mut with_round = steps.clone();
    with_round.push(ADDRESS_REVIEW);
    with_round.sort_unstable();
    let keys = || properties.keys().map(String::as_str);
    let keyed_by_step = keys().eq(steps.iter().copied()) || keys().eq(with_round.iter().copied());
    if keyed_by_step {
        // The same declaration for every step: listed once, as `<step>`.
        if let Some((_, first)) = properties.iter().next() {
            key_rows(schema, &format!("{prefix}<step>"), first, rows);
        }
        return;
    }
    for (key, property) in properties {
        key_rows(schema, &format!("{prefix}{key}"), property, rows);
    }
}

fn key_rows(schema: &Value, path: &str, property: &Value, rows: &mut Vec<String>) {
    let target = resolved(schema, property);
    let nested = target.get("properties").is_some();
    let map_of = target
        .get("additionalProperties")
        .filter(|v| v.is_object())
        .map(|v| resolved(schema, v));
    if !nested || property.get("description").is_some() || property.get("default").is_some() {
        rows.push(row(schema, path, property, target));
    }
    if nested {
        object_rows(schema, target, &format!("{path}."), rows);
    } else if let Some(entry) = map_of.filter(|e| e.get("properties").is_some()) {
        object_rows(schema, entry, &format!("{path}.<model>."), rows);
    }
}

fn row(schema: &Value, path: &str, property: &Value, target: &Value) -> String {
    let kind = type_name(target);
    let default = property
        .get("default")
        .map(|d| match d.as_f64() {
            Some(n) => format!("`{}`", number(n)),
            None => format!("`{d}`"),
        })
        .unwrap_or_else(|| "—".into());
    let range = match (
        property.get("minimum").and_then(Value::as_f64),
        property.get("maximum").and_then(Value::as_f64),
    ) {
        (Some(min), Some(max)) => format!("{} – {}", number(min), number(max)),
        (Some(min), None) => format!("≥ {}", number(min)),
        (None, Some(max)) => format!("≤ {}", number(max)),
        (None, None) => String::new(),
    };
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(path)));
    let mut meaning = property
        .get("description")
        .or_else(|| target.get("description"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .replace('\n', " ")
        .replace('|', "\\|");
    if required {
        meaning = format!("**Required.** {meaning}");
    }
    format!("| `{path}` | {kind} | {default} | {range} | {meaning} |")
}

fn type_name(target: &Value) -> String {
    let names = enum_names(target);
    if !names.is_empty() {
        return names.join(" \\| ");
    }
    match target.get("type").and_then(Value::as_str) {
        Some("array") => "array of strings".into(),
        Some(t) => t.into(),
        None => "object".into(),
    }
}

fn enum_names(target: &Value) -> Vec<String> {
    let own = target
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let alternatives = target
        .get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|a| {
            a.get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        });
    own.chain(alternatives)
        .filter_map(Value::as_str)
        .map(|n| format!("`{n}`"))
        .collect()
}

/// `node` with a `$ref` (or schemars' single-`allOf` wrapper of one) followed.
fn resolved<'s>(schema: &'s Value, node: &'s Value) -> &'s Value {
    if let Some(name) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
    {
        return schema["definitions"]
            .get(name)
            .map_or(node, |d| resolved(schema, d));
    }
    match node
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([inner]) => resolved(schema, inner),
        _ => node,
    }
}
