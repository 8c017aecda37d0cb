//! The published JSON Schema of `report.json` (docs/report.schema.json), generated from the
//! report types with schemars so that it cannot drift from what `gnnaudit audit` writes.
//!
//! The report's own layout (summary rows, attack summaries, datasets, run info) is described in
//! full. The records it embeds (the audit config, a cell's budget, attack records, claim checks
//! and cell timings; `config`, `record` and `claim` modules) are described as JSON objects
//! without their inner fields, and are versioned by `format`.
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

/// The schema as written to docs/report.schema.json (pretty JSON, trailing newline).
pub fn report_schema_json() -> String {
    let schema = schemars::schema_for!(super::Report);
    let mut s = serde_json::to_string_pretty(&schema).expect("schema serialises");
    s.push('\n');
    s
}

/// `Epsilon`: a number >= 0, or the string "inf" (JSON has no infinity).
pub(crate) struct EpsilonSchema;

impl JsonSchema for EpsilonSchema {
    fn schema_name() -> Cow<'static, str> {
        "Epsilon".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A privacy level: a number >= 0, or \"inf\" for no privacy.",
            "anyOf": [{"type": "number", "minimum": 0}, {"const": "inf"}]
        })
    }
}

/// An `f64` that serde_json writes as null when it is NaN (e.g. a mean over no finite values).
pub(crate) struct NumberOrNull;

impl JsonSchema for NumberOrNull {
    fn schema_name() -> Cow<'static, str> {
        "NumberOrNull".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"description": "A number; null where it is undefined (NaN).", "type": ["number", "null"]})
    }
}

/// A record whose fields another module defines (see the module doc).
pub(crate) struct Record;

impl JsonSchema for Record {
    fn schema_name() -> Cow<'static, str> {
        "Record".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"description": "A record defined outside the report module (fields not described here).", "type": "object"})
    }
}

/// Mirrors `PrivacyUnit`'s serde form (checked by the schema test against real reports).
#[derive(JsonSchema)]
#[schemars(rename = "PrivacyUnit", rename_all = "lowercase")]
#[allow(dead_code)]
pub(crate) enum PrivacyUnitSchema {
    None,
    Edge,
    Node,
    Local,
    Class,
    Subclass,
}

/// Mirrors `train::Accuracy` (fractions in [0, 1]; null where undefined).
#[derive(JsonSchema)]
#[schemars(rename = "Accuracy")]
#[allow(dead_code)]
pub(crate) struct AccuracySchema {
    train: NumberOrNull,
    val: NumberOrNull,
    test: NumberOrNull,
}
