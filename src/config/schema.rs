//! The config's JSON Schema, generated from the declarations in `definition.rs`, and
//! [`Shape`]: the validator's view of it (which keys an object has, their ranges, defaults and
//! choices), so that validation reads every key's rules from the one declaration.

use super::definition::ConfigFile;
use super::*;
use schemars::schema::{RootSchema, Schema, SchemaObject};
use serde::de::DeserializeOwned;
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

/// One object of the file as the schema declares it. An object the schema does not know
/// (`Shape(None)`) has no keys, so everything in it is reported as unknown.
#[derive(Clone, Copy)]
pub(super) struct Shape(Option<&'static SchemaObject>);

impl Shape {
    /// The top level of the file.
    pub(super) fn top() -> Shape {
        Shape(Some(&root().schema))
    }

    /// The keys this object may hold, in declaration order.
    pub(super) fn keys(self) -> Vec<&'static str> {
        self.properties()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// The object at `key`.
    pub(super) fn child(self, key: &str) -> Shape {
        Shape(self.property(key).map(resolve))
    }

    /// The shape of every value of a map keyed by names (`agent.pricing`).
    pub(super) fn entries(self) -> Shape {
        let values = self
            .0
            .and_then(|o| o.object.as_ref()?.additional_properties.as_deref());
        Shape(match values {
            Some(Schema::Object(o)) => Some(resolve(o)),
            _ => None,
        })
    }

    /// The inclusive range declared for the number at `key`.
    pub(super) fn range(self, key: &str) -> (Option<f64>, Option<f64>) {
        let number = self.property(key).and_then(|p| p.number.as_deref());
        (
            number.and_then(|n| n.minimum),
            number.and_then(|n| n.maximum),
        )
    }

    /// The declared default of `key`, as the type the loader wants.
    pub(super) fn default<T: DeserializeOwned>(self, key: &str) -> Option<T> {
        let value = self.property(key)?.metadata.as_deref()?.default.clone()?;
        serde_json::from_value(value).ok()
    }

    /// The names `key` may take, if it is an enumeration.
    pub(super) fn choices(self, key: &str) -> Vec<&'static str> {
        self.property(key).map(names).unwrap_or_default()
    }

    fn properties(self) -> Option<&'static schemars::Map<String, Schema>> {
        Some(&self.0?.object.as_ref()?.properties)
    }

    fn property(self, key: &str) -> Option<&'static SchemaObject> {
        match self.properties()?.get(key)? {
            Schema::Object(o) => Some(o),
            Schema::Bool(_) => None,
        }
    }
}

/// The names an enumeration allows: its `enum`, or (when its variants are documented) the
/// `enum` of each of its `oneOf` alternatives.
fn names(o: &'static SchemaObject) -> Vec<&'static str> {
    let o = resolve(o);
    let own = o.enum_values.iter().flatten().filter_map(Value::as_str);
    let alternatives = o
        .subschemas
        .as_deref()
        .and_then(|s| s.one_of.as_deref())
        .into_iter()
        .flatten()
        .filter_map(|alternative| match alternative {
            Schema::Object(a) => Some(names(a)),
            Schema::Bool(_) => None,
        })
        .flatten();
    own.chain(alternatives).collect()
}

/// `o` with its `$ref` (or the single `allOf` schemars wraps a documented reference in)
/// followed to the definition.
fn resolve(o: &'static SchemaObject) -> &'static SchemaObject {
    if let Some(name) = o.reference.as_deref().and_then(|r| r.rsplit('/').next()) {
        return match root().definitions.get(name) {
            Some(Schema::Object(def)) => resolve(def),
            _ => o,
        };
    }
    match o.subschemas.as_deref().and_then(|s| s.all_of.as_deref()) {
        Some([Schema::Object(inner)]) => resolve(inner),
        _ => o,
    }
}
