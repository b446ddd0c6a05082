//! The config's JSON Schema, generated from the declarations in `definition.rs`, and the top
//! [`Shape`] of it that validation starts from (shape.rs reads the schema; it knows no key).

use super::definition::ConfigFile;
use super::*;
use schemars::schema::RootSchema;
use std::sync::OnceLock;

/// The JSON Schema of the config file, as a `serde_json::Value`.
pub fn schema() -> Value {
    let mut value = serde_json::to_value(root()).unwrap_or(Value::Null);
    allow_comment_keys(&mut value);
    value
}

/// `schema()` as pretty-printed JSON.
pub fn schema_json() -> String {
    serde_json::to_string_pretty(&schema()).unwrap_or_default()
}

/// The schema, generated once per process.
fn root() -> &'static RootSchema {
    static ROOT: OnceLock<RootSchema> = OnceLock::new();
    ROOT.get_or_init(|| {
        let settings = schemars::gen::SchemaSettings::draft07().with(|s| {
            s.option_add_null_type = false;
        });
        settings
            .into_generator()
            .into_root_schema_for::<ConfigFile>()
    })
}

/// Every closed object also admits `_` keys, which the runner treats as comments.
fn allow_comment_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("additionalProperties") == Some(&Value::Bool(false)) {
                map.insert(
                    "patternProperties".into(),
                    serde_json::json!({ "^_": { "description": "comment" } }),
                );
            }
            for child in map.values_mut() {
                allow_comment_keys(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(allow_comment_keys),
        _ => {}
    }
}

/// The top level of the file, as the validator reads it.
pub(super) fn top_shape() -> Shape {
    Shape::top_of(root())
}
