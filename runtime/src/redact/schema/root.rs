//! The properties a schema declares at its root, wherever it declares
//! them: in `properties`, behind a root `$ref` (zod-to-json-schema writes a
//! named schema as `{"$ref": "#/definitions/Name", "definitions": {…}}`),
//! and in the branches of a root `allOf`, `anyOf` or `oneOf`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::json::pointer::resolve;

/// The most schemas read to gather a root's properties: a server's
/// references may loop, or fan out as far as it likes. Gathering is then
/// linear in the size of what is read.
const MOST_SCHEMAS: usize = 64;

/// Whether `schema` may declare properties beyond its root `properties`:
/// behind a root `$ref`, in a root `allOf`, `anyOf` or `oneOf`.
pub(crate) fn declares_beyond_properties(schema: &Map<String, Value>) -> bool {
    ["$ref", "allOf", "anyOf", "oneOf"]
        .iter()
        .any(|key| schema.contains_key(*key))
}

/// Whether `schema` says nothing of where secrets may be: its root holds
/// annotations and checks that mark nothing (a type, a title, the names
/// required, counts of properties, `x-` extensions…), and schemas for the
/// keys it does not name, or for their names, that say nothing either
/// (`additionalProperties: {}`, `true`, `false`). Any other keyword may
/// mark one — `properties`, a `$ref` or combinator, `patternProperties`, a
/// conditional, a `writeOnly`: such a schema is read, and a key it does not
/// declare is hidden.
#[cfg_attr(not(feature = "client"), allow(dead_code))]
pub(crate) fn says_nothing_of_secrets(schema: &Map<String, Value>) -> bool {
    const SILENT: [&str; 18] = [
        "type",
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "required",
        "deprecated",
        "readOnly",
        "nullable",
        "format",
        "minProperties",
        "maxProperties",
        "const",
    ];
    let silent = |value: &Value| match value {
        Value::Bool(_) => true,
        Value::Object(inner) => says_nothing_of_secrets(inner),
        _ => false,
    };
    schema.iter().all(|(key, value)| match key.as_str() {
        "additionalProperties" | "unevaluatedProperties" | "propertyNames" => silent(value),
        key => SILENT.contains(&key) || key.starts_with("x-"),
    })
}

/// `schema`, its `properties` holding every property it declares at its
/// root: those behind its `$ref` and in its `allOf`/`anyOf`/`oneOf`
/// branches too, a name declared in several places with each of its
/// schemas (`anyOf`: a secret in any is a secret) — and its
/// `patternProperties` every pattern, gathered the same way (a pattern
/// behind a `$ref` applies to the properties beside it). As it is when it
/// declares them in `properties` alone.
pub(crate) fn gathered(schema: &Map<String, Value>) -> Map<String, Value> {
    if !declares_beyond_properties(schema) {
        return schema.clone();
    }
    let root = Value::Object(schema.clone());
    // By name, each schema once (the same one reached twice is one place).
    let mut found: BTreeMap<&String, Vec<&Value>> = BTreeMap::new();
    let mut patterns: BTreeMap<&String, Vec<&Value>> = BTreeMap::new();
    // What a schema left unread may say of the properties read: any of
    // them may be a secret (the empty pattern matches every name).
    let (every_name, secret) = (String::new(), json!({"writeOnly": true}));
    let mut unread = false;
    let mut pending = vec![&root];
    // Schemas read or queued: a server's references may loop, or fan out.
    let mut met = 1;
    while let Some(Value::Object(members)) = pending.pop() {
        for (key, found) in [
            ("properties", &mut found),
            ("patternProperties", &mut patterns),
        ] {
            if let Some(Value::Object(properties)) = members.get(key) {
                for (name, property) in properties {
                    let schemas = found.entry(name).or_default();
                    if !schemas.iter().any(|known| std::ptr::eq(*known, property)) {
                        schemas.push(property);
                    }
                }
            }
        }
        let reference = members.get("$ref").and_then(Value::as_str);
        let target = reference.and_then(|reference| resolve(&root, reference));
        let branches = ["allOf", "anyOf", "oneOf"]
            .into_iter()
            .filter_map(|key| members.get(key).and_then(Value::as_array))
            .flatten();
        for next in target.into_iter().chain(branches) {
            if met == MOST_SCHEMAS {
                unread = true;
                break;
            }
            met += 1;
            pending.push(next);
        }
    }
    if unread {
        patterns.entry(&every_name).or_default().push(&secret);
    }
    let joined = |found: BTreeMap<&String, Vec<&Value>>| -> Map<String, Value> {
        (found.into_iter())
            .map(|(name, schemas)| {
                let schema = match schemas.as_slice() {
                    [one] => (*one).clone(),
                    several => json!({ "anyOf": several }),
                };
                (name.clone(), schema)
            })
            .collect()
    };
    let mut flat = schema.clone();
    flat.insert("properties".to_owned(), Value::Object(joined(found)));
    if !patterns.is_empty() {
        flat.insert(
            "patternProperties".to_owned(),
            Value::Object(joined(patterns)),
        );
    }
    flat
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gathered_of(schema: Value) -> Value {
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        gathered(&schema)["properties"].clone()
    }

    #[test]
    fn only_a_schema_that_marks_nothing_says_nothing_of_secrets() {
        let says_nothing = |schema: Value| match schema {
            Value::Object(schema) => says_nothing_of_secrets(&schema),
            _ => unreachable!(),
        };
        for silent in [
            json!({"type": "object"}),
            json!({"type": "object", "title": "Echo", "additionalProperties": false}),
            json!({"type": "object", "additionalProperties": {}, "x-order": 3}),
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                   "unevaluatedProperties": false, "minProperties": 1,
                   "propertyNames": {"type": "string"}, "$defs": {"A": {}}}),
        ] {
            assert!(says_nothing(silent.clone()), "{silent}");
        }
        for marking in [
            json!({"type": "object", "properties": {}}),
            json!({"type": "object", "additionalProperties": {"writeOnly": true}}),
            json!({"patternProperties": {"^K": {"type": "string"}}}),
            json!({"additionalProperties": {"$ref": "#/$defs/Key"}}),
            json!({"if": {"required": ["k"]}, "then": {}}),
            json!({"type": "object", "writeOnly": true}),
            json!({"allOf": [{"type": "object"}]}),
        ] {
            assert!(!says_nothing(marking.clone()), "{marking}");
        }
    }

    #[test]
    fn properties_behind_references_and_branches_are_gathered_once_each() {
        let login = json!({"properties": {"user": {"type": "string"}}});
        let properties = gathered_of(json!({
            "$ref": "#/definitions/Login",
            "definitions": {"Login": login},
            "anyOf": [{"$ref": "#"}, {"properties": {"user": {"writeOnly": true}}}]
        }));
        assert_eq!(
            properties,
            json!({"user": {"anyOf": [{"writeOnly": true}, {"type": "string"}]}})
        );
    }

    /// A root that fans out is read 64 schemas at most: of ten
    /// thousand branches, each declaring a property, 63 are read with it.
    #[test]
    fn a_root_that_fans_out_is_read_within_bounds() {
        let branches: Vec<Value> = (0..10_000)
            .map(|n| json!({"properties": {format!("p{n}"): {}}, "anyOf": [{"$ref": "#"}]}))
            .collect();
        let properties = gathered_of(json!({
            "properties": {"password": {"writeOnly": true}},
            "anyOf": branches
        }));
        let Value::Object(properties) = properties else {
            unreachable!()
        };
        assert_eq!(properties.len(), MOST_SCHEMAS);
        assert_eq!(properties["password"], json!({"writeOnly": true}));
    }

    /// A schema read only in part may mark any property read as a secret
    /// in the part not read (a pattern in its seventieth branch): every
    /// one is masked.
    #[test]
    fn a_root_read_in_part_hides_every_property() {
        let mut branches: Vec<Value> = (0..69)
            .map(|n| json!({"properties": {format!("p{n}"): {"type": "string"}}}))
            .collect();
        branches.push(json!({"patternProperties": {"^p": {"writeOnly": true}}}));
        let schema = json!({"anyOf": branches});
        let secrets =
            crate::redact::schema::SecretPaths::from_schema(schema.as_object().unwrap(), &[]);
        let arguments = json!({"p0": "hunter2"});
        let masked = secrets.mask(arguments.as_object().unwrap());
        assert_eq!(
            Value::Object(masked.into_owned()),
            json!({"p0": "[redacted]"})
        );
        // Read whole, only what it marks.
        let small = json!({"anyOf": [
            {"properties": {"p0": {"type": "string"}, "q": {"type": "string"}}},
            {"patternProperties": {"^p": {"writeOnly": true}}}
        ]});
        let secrets =
            crate::redact::schema::SecretPaths::from_schema(small.as_object().unwrap(), &[]);
        let arguments = json!({"p0": "hunter2", "q": "shown"});
        let masked = secrets.mask(arguments.as_object().unwrap());
        assert_eq!(
            Value::Object(masked.into_owned()),
            json!({"p0": "[redacted]", "q": "shown"})
        );
    }
}
