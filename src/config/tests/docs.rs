//! The declarations and what is derived from them: the schema, the defaults the loader fills
//! in, the example config and docs/config.md.

use super::*;

#[test]
fn shipped_example_and_old_example_validate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = Config::load(&root.join("examples/sdlc-config.json"));
    let example = match example {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(example.max_turns(Step::Implement), 150);
    assert_eq!(example.budget.per_session_usd, Some(200.0));
    let old = match Config::load(&root.join("tests/fixtures/old-sdlc-config.example.json")) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let turns: Vec<u32> = Step::ALL.iter().map(|&s| old.max_turns(s)).collect();
    assert_eq!(turns, [10, 25, 60, 150, 60, 100, 15, 45, 60, 10]);
    let timeouts: Vec<u64> = Step::ALL
        .iter()
        .map(|&s| old.timeout(s).as_secs() / 60)
        .collect();
    assert_eq!(timeouts, [5, 5, 15, 30, 15, 20, 5, 5, 20, 5]);
    assert_eq!(old.effort(Step::Merge), None);
    assert_eq!(old.effort(Step::WriteSpecs), Some(Effort::Xhigh));
    assert_eq!(old.cleanup.process_patterns, ["--remote-debugging-port"]);
}

fn property_names(v: &Value) -> Vec<String> {
    let mut names: Vec<String> = v["properties"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

fn sorted(keys: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = keys.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// The schema is generated from the definitions; these are the parts of it that come from
/// lists kept elsewhere (the core's steps and severities, the agents' kinds).
#[test]
fn the_schema_takes_its_lists_from_the_core() {
    let s = schema();
    let defs = &s["definitions"];
    assert_eq!(property_names(&defs["StepsFile"]), sorted(&steps_keys()));
    assert_eq!(
        property_names(&defs["MaxConsecutiveFailures"]),
        sorted(&step_keys())
    );
    assert_eq!(
        defs["MaxConsecutiveFailures"]["properties"]["verify"]["maximum"],
        100.0
    );
    assert_eq!(
        property_names(&defs["StepFile"]),
        sorted(&[
            "model",
            "effort",
            "maxTurns",
            "timeoutMin",
            "idleTimeoutMin",
            "skill",
            "prompt",
            "enabled",
            "run",
            "agent"
        ])
    );
    assert_eq!(s["required"], serde_json::json!(["projectPath"]));
    assert_eq!(s["properties"]["maxRetriesPerStep"]["default"], 3);
    assert_eq!(
        s["properties"]["maxConsecutiveFailures"]["default"],
        serde_json::json!({"verify": 3})
    );
    assert_eq!(s["patternProperties"]["^_"]["description"], "comment");
    assert_eq!(
        defs["StepsFile"]["patternProperties"]["^_"]["description"],
        "comment"
    );
    assert_eq!(
        defs["Effort"]["enum"],
        serde_json::json!(["low", "medium", "high", "xhigh"])
    );
    assert_eq!(
        defs["NotifyFile"]["properties"]["minSeverity"]["enum"],
        serde_json::json!(["info", "warning", "alert"])
    );
    assert_eq!(
        defs["AgentFile"]["properties"]["kind"]["enum"],
        serde_json::json!(["claude", "codex", "gemini"])
    );
}

#[test]
fn the_validator_reads_keys_and_ranges_from_the_definitions() {
    let backoff = top_shape().child("backoff");
    assert_eq!(backoff.keys(), ["initialSeconds", "maxSeconds"]);
    assert_eq!(backoff.range("maxSeconds"), (Some(1.0), Some(604_800.0)));
    assert_eq!(top_shape().child("steps").keys(), steps_keys());
    let prices = top_shape().child("agent").child("pricing").entries();
    assert_eq!(
        prices.keys(),
        ["input", "cachedInput", "output", "cacheWrite"]
    );
    assert_eq!(top_shape().choices("approval"), ["auto", "manual"]);
    assert_eq!(top_shape().default::<u32>("workers"), Some(1));
    assert_eq!(top_shape().child("nothing").keys(), Vec::<&str>::new());
}

#[test]
fn suggestions_are_only_made_when_obvious() {
    let step_fields = top_shape().child("steps").child("verify").keys();
    assert_eq!(suggest("maxTurn", &step_fields), Some("maxTurns"));
    assert_eq!(suggest("timeout", &step_fields), Some("timeoutMin"));
    assert_eq!(suggest("xyz", &step_fields), None);
    assert_eq!(suggest("monitorci", &step_keys()), Some("monitorCI"));
}

/// The first `$ref` target inside a schema node (`Option<T>` fields wrap it in `anyOf`).
fn referenced<'s>(schema: &'s Value, node: &'s Value) -> Option<&'s Value> {
    let name = match node {
        Value::Object(m) => match m.get("$ref").and_then(Value::as_str) {
            Some(r) => r.rsplit('/').next(),
            None => return m.values().find_map(|v| referenced(schema, v)),
        },
        Value::Array(items) => return items.iter().find_map(|v| referenced(schema, v)),
        _ => None,
    }?;
    schema["definitions"].get(name)
}

/// Every `(path, default)` the schema declares: top-level keys, the keys of nested objects,
/// and each step's keys (checked on `verify`).
fn schema_defaults() -> Vec<(Vec<String>, Value)> {
    let schema = schema();
    let mut out = Vec::new();
    let Some(top) = schema["properties"].as_object() else {
        panic!("the schema has properties");
    };
    for (key, prop) in top {
        if let Some(d) = prop.get("default") {
            out.push((vec![key.clone()], d.clone()));
        }
        let Some(def) = referenced(&schema, prop) else {
            continue;
        };
        let nested: Vec<(Vec<String>, &Value)> = if key == "steps" {
            let Some(step) = def["properties"]
                .get("verify")
                .and_then(|v| referenced(&schema, v))
            else {
                panic!("steps.verify has a definition");
            };
            vec![(vec![key.clone(), "verify".into()], step)]
        } else {
            vec![(vec![key.clone()], def)]
        };
        for (prefix, def) in nested {
            for (sub, p) in def["properties"].as_object().into_iter().flatten() {
                if let Some(d) = p.get("default") {
                    let mut path = prefix.clone();
                    path.push(sub.clone());
                    out.push((path, d.clone()));
                }
            }
        }
    }
    out
}

/// The smallest valid config in which `path` can be set: an object that is optional but has
/// required keys of its own (`localCi` needs `command`) gets them.
fn base_for(path: &[String]) -> Value {
    match path.first().map(String::as_str) {
        Some("localCi") => serde_json::json!({
            "projectPath": "proj", "forge": "local", "localCi": {"command": ["true"]}
        }),
        _ => serde_json::json!({"projectPath": "proj"}),
    }
}

fn with_value(path: &[String], value: Value) -> Value {
    let mut root = base_for(path);
    let mut at = &mut root;
    for (i, key) in path.iter().enumerate() {
        if i + 1 == path.len() {
            at[key.as_str()] = value.clone();
        } else {
            if at.get(key.as_str()).is_none() {
                at[key.as_str()] = serde_json::json!({});
            }
            at = &mut at[key.as_str()];
        }
    }
    root
}

#[test]
fn the_schema_and_the_loader_agree_on_every_default() {
    let defaults = schema_defaults();
    assert!(
        defaults.len() >= 20,
        "the walk finds the defaults: {defaults:?}"
    );
    for (path, value) in defaults {
        // Writing a default out must change nothing the loader produces.
        let minimal = load(&base_for(&path).to_string());
        let text = with_value(&path, value.clone()).to_string();
        let explicit = match Config::from_str(&text, Path::new(FILE)) {
            Ok(c) => c,
            Err(e) => panic!(
                "{} = {value}: the schema's default is rejected:\n{e}",
                path.join(".")
            ),
        };
        assert_eq!(
            explicit,
            minimal,
            "{} = {value} (the schema's default) is not the loader's default",
            path.join(".")
        );
    }
}

/// The example config says its values are the defaults unless a comment says otherwise: a
/// value that differs from the schema's default must have its `_<key>` comment.
#[test]
fn the_example_config_states_every_value_that_is_not_the_default() {
    let text = include_str!("../../../examples/sdlc-config.json");
    let example: Value = serde_json::from_str(text).expect("the example is JSON");
    let mut silent = Vec::new();
    for (path, default) in schema_defaults() {
        let mut at = &example;
        let mut ancestors = Vec::new();
        for key in &path {
            ancestors.push(at);
            at = &at[key.as_str()];
        }
        if at.is_null() || same_value(at, &default) {
            continue;
        }
        let leaf = path.last().map(String::as_str).unwrap_or_default();
        let commented = ancestors
            .last()
            .is_some_and(|p| p.get(format!("_{leaf}")).is_some())
            || ancestors.iter().any(|a| {
                a.get("_comment")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.contains(leaf))
            });
        if !commented {
            silent.push(format!(
                "{} is {at}, not the default {default}",
                path.join(".")
            ));
        }
    }
    assert!(
        silent.is_empty(),
        "examples/sdlc-config.json, values no comment explains:\n{}",
        silent.join("\n")
    );
}

/// JSON equality as a reader sees it: `60` is `60.0`, and comment keys are not values.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(x), Value::Object(y)) => {
            let keys = |m: &Map<String, Value>| {
                m.iter()
                    .filter(|(k, _)| !k.starts_with('_'))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Vec<_>>()
            };
            let (x, y) = (keys(x), keys(y));
            x.len() == y.len()
                && x.iter()
                    .zip(&y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same_value(vx, vy))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        _ => a == b,
    }
}

/// docs/config.md is generated from the declarations; a stale copy fails here. With
/// `SDLC_BLESS=1` the test rewrites it instead.
#[test]
fn the_reference_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/config.md");
    let want = reference_markdown();
    if std::env::var_os("SDLC_BLESS").is_some() {
        if let Err(e) = std::fs::write(&path, &want) {
            panic!("cannot write {}: {e}", path.display());
        }
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/config.md is stale: run `SDLC_BLESS=1 cargo test --lib config::tests::docs` and commit it"
    );
}

#[test]
fn the_reference_lists_every_key_with_its_default_and_range() {
    let doc = reference_markdown();
    for row in [
        "| `maxRetriesPerStep` | integer | `3` | 1 – 100 |",
        "| `steps.<step>.maxTurns` | integer | `20` | 1 – 10000 |",
        "| `maxConsecutiveFailures.<step>` | integer | — | 0 – 100 |",
        "| `agent.pricing.<model>.cachedInput` | number | — | 0 – 1000000 |",
        "| `notify.minSeverity` | `info` \\| `warning` \\| `alert` | `\"warning\"` |",
        "| `claims.leaseMinutes` | number | `60` | 0 – 10080 |",
        "| `projectPath` | string | — |  | **Required.**",
    ] {
        assert!(doc.contains(row), "no row starting {row:?} in:\n{doc}");
    }
}

/// Every key the definitions declare appears in examples/sdlc-config.json: as a key, as a
/// `_key` comment beside where it would be, or named in a `_comment` of its object or an
/// ancestor (an object shown only as a `_key` comment names its keys in that comment).
#[test]
fn the_example_config_shows_every_key() {
    let text = include_str!("../../../examples/sdlc-config.json");
    let example: Value = serde_json::from_str(text).expect("the example is JSON");
    let mut missing = Vec::new();
    example_keys(top_shape(), Some(&example), "", &[], &mut missing);
    assert!(
        missing.is_empty(),
        "examples/sdlc-config.json does not show these keys (add them, or a `_<key>` comment):\n{}",
        missing.join("\n")
    );
}

fn example_keys(
    shape: Shape,
    object: Option<&Value>,
    prefix: &str,
    comments: &[String],
    missing: &mut Vec<String>,
) {
    let mut comments = comments.to_vec();
    if let Some(c) = object
        .and_then(|o| o.get("_comment"))
        .and_then(Value::as_str)
    {
        comments.push(c.to_string());
    }
    let is_steps = shape.keys() == steps_keys();
    for key in shape.keys() {
        let path = format!("{prefix}{key}");
        let value = object.and_then(|o| o.get(key));
        let comment = object
            .and_then(|o| o.get(format!("_{key}")))
            .and_then(Value::as_str);
        let named = comments.iter().any(|c| names(c, key));
        if value.is_none() && comment.is_none() && !named {
            missing.push(path.clone());
        }
        // The step limits are one per step; the steps themselves are shown under `steps`.
        if key == "maxConsecutiveFailures" {
            continue;
        }
        let mut inner = comments.clone();
        inner.extend(comment.map(str::to_string));
        if is_steps {
            // A step's keys count as shown when any step shows them.
            continue;
        }
        example_keys(
            shape.child(key),
            value,
            &format!("{path}."),
            &inner,
            missing,
        );
    }
    if is_steps {
        let step = shape.child("verify");
        let steps: Vec<&Value> = step_keys()
            .iter()
            .filter_map(|k| object.and_then(|o| o.get(*k)))
            .collect();
        for key in step.keys() {
            let shown = steps.iter().any(|s| s.get(key).is_some())
                || comments.iter().any(|c| names(c, key));
            if !shown {
                missing.push(format!("{prefix}<step>.{key}"));
            }
        }
    }
}

/// Whether `comment` names `key` as a word.
fn names(comment: &str, key: &str) -> bool {
    comment.match_indices(key).any(|(i, _)| {
        let before = comment[..i].chars().next_back();
        let after = comment[i + key.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}
