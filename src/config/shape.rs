//! [`Shape`]: the validator's view of the config's JSON Schema (which keys an object has,
//! their ranges, defaults and choices), so that validation reads every key's rules from the one
//! declaration. It reads any schema and knows no key: `schema.rs` hands it the config's.

use schemars::schema::{RootSchema, Schema, SchemaObject};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// One object of the file as the schema declares it. An object the schema does not know
/// (`Shape(None)`) has no keys, so everything in it is reported as unknown.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    root: &'static RootSchema,
    object: Option<&'static SchemaObject>,
}

impl Shape {
    /// The top level of the file whose schema is `root`.
    pub(super) fn top_of(root: &'static RootSchema) -> Shape {
        Shape {
            root,
            object: Some(&root.schema),
        }
    }

    fn at(self, object: Option<&'static SchemaObject>) -> Shape {
        Shape {
            root: self.root,
            object,
        }
    }

    /// The keys this object may hold, in declaration order.
    pub(super) fn keys(self) -> Vec<&'static str> {
        self.properties()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// The object at `key`.
    pub(super) fn child(self, key: &str) -> Shape {
        self.at(self.property(key).map(|o| resolve(self.root, o)))
    }

    /// The shape of every value of a map keyed by names (`agent.pricing`).
    pub(super) fn entries(self) -> Shape {
        let values = self
            .object
            .and_then(|o| o.object.as_ref()?.additional_properties.as_deref());
        self.at(match values {
            Some(Schema::Object(o)) => Some(resolve(self.root, o)),
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
        self.property(key)
            .map(|o| names(self.root, o))
            .unwrap_or_default()
    }

    fn properties(self) -> Option<&'static schemars::Map<String, Schema>> {
        Some(&self.object?.object.as_ref()?.properties)
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
fn names(root: &'static RootSchema, o: &'static SchemaObject) -> Vec<&'static str> {
    let o = resolve(root, o);
    let own = o.enum_values.iter().flatten().filter_map(Value::as_str);
    let alternatives = o
        .subschemas
        .as_deref()
        .and_then(|s| s.one_of.as_deref())
        .into_iter()
        .flatten()
        .filter_map(|alternative| match alternative {
            Schema::Object(a) => Some(names(root, a)),
            Schema::Bool(_) => None,
        })
        .flatten();
    own.chain(alternatives).collect()
}

/// `o` with its `$ref` (or the single `allOf` schemars wraps a documented reference in)
/// followed to the definition.
fn resolve(root: &'static RootSchema, o: &'static SchemaObject) -> &'static SchemaObject {
    if let Some(name) = o.reference.as_deref().and_then(|r| r.rsplit('/').next()) {
        return match root.definitions.get(name) {
            Some(Schema::Object(def)) => resolve(root, def),
            _ => o,
        };
    }
    match o.subschemas.as_deref().and_then(|s| s.all_of.as_deref()) {
        Some([Schema::Object(inner)]) => resolve(root, inner),
        _ => o,
    }
}
