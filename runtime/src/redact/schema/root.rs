//! The properties a schema declares at its root, wherever it declares
//! them: in `properties`, behind a root `$ref` (zod-to-json-schema writes a
//! named schema as `{"$ref": "#/definitions/Name", "definitions": {…}}`),
//! and in the branches of a root `allOf`, `anyOf` or `oneOf`.

use serde_json::{Map, Value, json};

use crate::json::pointer::resolve;

/// The most schemas read to gather a root's properties: a server's
/// references may loop, or fan out as far as it likes.
const MOST_SCHEMAS: usize = 64;

/// `schema`, its `properties` holding every property it declares at its
/// root: those behind its `$ref` and in its `allOf`/`anyOf`/`oneOf`
/// branches too, a name declared in several places with each of its
/// schemas (`anyOf`: a secret in any is a secret). As it is when it
/// declares them in `properties` alone.
pub(crate) fn gathered(schema: &Map<String, Value>) -> Map<String, Value> {
    let combined = ["$ref", "allOf", "anyOf", "oneOf"];
    if !combined.iter().any(|key| schema.contains_key(*key)) {
        return schema.clone();
    }
    let root = Value::Object(schema.clone());
    let mut found: Vec<(&String, Vec<&Value>)> = Vec::new();
    let mut pending = vec![&root];
    let mut read = 0;
    while let Some(Value::Object(members)) = pending.pop() {
        read += 1;
        if read > MOST_SCHEMAS {
            break;
        }
        if let Some(Value::Object(properties)) = members.get("properties") {
            for (name, property) in properties {
                match found.iter_mut().find(|(known, _)| *known == name) {
                    Some((_, schemas)) if !schemas.contains(&property) => schemas.push(property),
                    Some(_) => {}
                    None => found.push((name, vec![property])),
                }
            }
        }
        let reference = members.get("$ref").and_then(Value::as_str);
        if let Some(target) = reference.and_then(|reference| resolve(&root, reference)) {
            pending.push(target);
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = members.get(key) {
                pending.extend(branches.iter().rev());
            }
        }
    }
    let properties = found.into_iter().map(|(name, schemas)| {
        let schema = match schemas.as_slice() {
            [one] => (*one).clone(),
            several => json!({ "anyOf": several }),
        };
        (name.clone(), schema)
    });
    let mut flat = schema.clone();
    flat.insert("properties".to_owned(), Value::Object(properties.collect()));
    flat
}
