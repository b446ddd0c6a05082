//! Lists that belong to the core (steps, severities) or to the agents (kinds), not to the
//! file: their schemas are built from the lists themselves, so a step, severity or agent kind
//! added there is a key or value the config accepts.

use super::StepFile;
use crate::config::{AgentKind, Severity};
use crate::step::Step;
use schemars::gen::SchemaGenerator;
use schemars::schema::{InstanceType, Schema, SchemaObject};

/// `steps`: one optional [`StepFile`] per step key of the core's step list, and one for the
/// review round (`addressReview`).
pub(super) fn steps_schema(gen: &mut SchemaGenerator) -> Schema {
    let step = gen.subschema_for::<StepFile>();
    let keys = Step::ALL
        .iter()
        .map(|s| s.key())
        .chain([crate::config::ADDRESS_REVIEW]);
    let steps = closed_object(keys.map(|key| (key, step.clone())));
    definition(gen, "StepsFile", steps)
}

/// `maxConsecutiveFailures`: an optional limit per step key (0 disables), each in 0..=100.
pub(super) fn consecutive_failures_schema(gen: &mut SchemaGenerator) -> Schema {
    let mut limit = gen.subschema_for::<u32>().into_object();
    limit.number().minimum = Some(0.0);
    limit.number().maximum = Some(100.0);
    let limit = Schema::Object(limit);
    let limits = closed_object(Step::ALL.iter().map(|s| (s.key(), limit.clone())));
    definition(gen, "MaxConsecutiveFailures", limits)
}

/// `schema` as a named definition, referenced where it is used (as derived types are).
fn definition(gen: &mut SchemaGenerator, name: &str, schema: Schema) -> Schema {
    gen.definitions_mut().insert(name.to_string(), schema);
    Schema::new_ref(format!("{}{name}", gen.settings().definitions_path))
}

fn closed_object<'k>(properties: impl Iterator<Item = (&'k str, Schema)>) -> Schema {
    let mut o = SchemaObject {
        instance_type: Some(InstanceType::Object.into()),
        ..Default::default()
    };
    let object = o.object();
    for (key, schema) in properties {
        object.properties.insert(key.to_string(), schema);
    }
    object.additional_properties = Some(Box::new(Schema::Bool(false)));
    Schema::Object(o)
}

pub(super) fn agent_kind_schema(_: &mut SchemaGenerator) -> Schema {
    names(AgentKind::ALL.iter().map(|k| k.as_str()))
}

pub(super) fn severity_schema(_: &mut SchemaGenerator) -> Schema {
    names(Severity::ALL.iter().map(|s| s.as_str()))
}

fn names<'n>(names: impl Iterator<Item = &'n str>) -> Schema {
    Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        enum_values: Some(names.map(|n| n.into()).collect()),
        ..Default::default()
    })
}
