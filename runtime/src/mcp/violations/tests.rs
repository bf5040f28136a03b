//! The walk of an input schema against arguments that did not decode.

use super::*;
use serde_json::json;

fn schema() -> Map<String, Value> {
    json!({
        "type": "object",
        "properties": {
            "filters": {"$ref": "#/$defs/Filters"},
            "limit": {"type": ["integer", "null"], "format": "uint8", "minimum": 0, "maximum": 255},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["filters"],
        "additionalProperties": false,
        "$defs": {
            "Filters": {"type": "object", "properties": {
                "status": {"enum": ["open", "closed"]},
                "since": {"type": "string"},
                "min_total": {"type": "number"},
                "owner": {"anyOf": [{"$ref": "#/$defs/Owner"}, {"type": "null"}]}
            }, "required": ["status"]},
            "Owner": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
        }
    })
    .as_object()
    .unwrap()
    .clone()
}

/// The fields named, sorted: the order of an object's members is the map's.
fn named(arguments: Value) -> Vec<String> {
    let mut members: Vec<String> = violations(&schema(), arguments.as_object().unwrap(), 64)
        .into_iter()
        .map(|v| v.field)
        .collect();
    members.sort();
    members
}

#[test]
fn every_bad_field_of_a_struct_is_named() {
    assert_eq!(
        named(json!({"filters": {"status": "pending", "since": 7, "min_total": "lots"}})),
        ["filters.min_total", "filters.since", "filters.status"]
    );
}

#[test]
fn nested_options_lists_missing_and_unknown_fields() {
    assert_eq!(
        named(json!({
            "filters": {"status": "open", "owner": {"id": "x"}},
            "limit": 300,
            "tags": ["a", 2, "c", false],
            "bogus": 1
        })),
        ["bogus", "filters.owner.id", "limit", "tags[1]", "tags[3]"]
    );
    assert_eq!(named(json!({})), ["filters"]);
    assert!(named(json!({"filters": {"status": "closed"}, "limit": null})).is_empty());
}

#[test]
fn descriptions_never_quote_the_value() {
    let found = violations(
        &schema(),
        json!({"filters": {"status": "hunter2", "since": "ok", "min_total": "hunter2"}})
            .as_object()
            .unwrap(),
        64,
    );
    assert_eq!(found.len(), 2);
    for violation in found {
        assert!(!violation.description.contains("hunter2"), "{violation:?}");
    }
}

#[test]
fn the_cap_holds() {
    let tags: Vec<Value> = (0..500).map(Value::from).collect();
    let found = violations(
        &schema(),
        json!({"filters": {"status": "open"}, "tags": tags})
            .as_object()
            .unwrap(),
        10,
    );
    assert_eq!(found.len(), 10);
}

/// A recursive `Option<Box<Node>>`, as schemars writes it: an `anyOf` of
/// the node and `null` at every level.
fn linked() -> Map<String, Value> {
    json!({
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/Node"}},
        "required": ["head"],
        "$defs": {"Node": {"type": "object", "properties": {
            "v": {"type": "integer"},
            "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
        }, "required": ["v"]}}
    })
    .as_object()
    .unwrap()
    .clone()
}

/// `levels` nodes, the last one's `v` a string.
fn nested(levels: usize, last: Value) -> Map<String, Value> {
    let mut node = json!({"v": last});
    for _ in 1..levels {
        node = json!({"v": 0, "next": node});
    }
    json!({"head": node}).as_object().unwrap().clone()
}

/// The violations, and the steps the walk took.
fn walked(schema: &Map<String, Value>, arguments: &Map<String, Value>) -> (Vec<String>, usize) {
    let steps = Cell::new(0);
    let found = walk(schema, arguments, 8, &steps);
    let fields = found.into_iter().map(|v| v.field).collect();
    (fields, steps.get())
}

/// A caller's arguments nested deep through an optional recursive type
/// are walked once a level: probing each level's branch before walking it
/// doubled the walk at every level (2^60 steps here, one request holding a
/// core for good).
#[test]
fn a_recursive_option_is_walked_once_a_level() {
    let (found, steps) = walked(&linked(), &nested(60, json!("x")));
    let deepest = format!("head{}.v", ".next".repeat(59));
    assert_eq!(found, [deepest]);
    assert!(steps < 1_000, "{steps} steps for 60 levels");
}

/// Where every level has several branches of the value's kind (an
/// untagged enum of structs), no walk takes more than its budget of steps,
/// and what it found before stopping is kept.
#[test]
fn no_walk_takes_more_than_its_budget() {
    let schema = json!({
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/Either"}},
        "$defs": {"Either": {"anyOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}, "next": {"$ref": "#/$defs/Either"}}},
            {"type": "object", "properties": {"b": {"type": "integer"}, "next": {"$ref": "#/$defs/Either"}}}
        ]}}
    });
    // Neither branch takes the last node: every probe of each level fails
    // only at the bottom, and each level probes both branches.
    let mut node = json!({"a": "x", "b": "y"});
    for _ in 1..22 {
        node = json!({"next": node});
    }
    let arguments = json!({"head": node, "head2": 1});
    let (_, steps) = walked(schema.as_object().unwrap(), arguments.as_object().unwrap());
    assert_eq!(
        steps, MAX_STEPS,
        "stopped at its budget (2^22 steps without)"
    );
    let (found, _) = walked(&linked(), &nested(3, json!("x")));
    assert_eq!(found, ["head.next.next.v"], "a shallow walk is whole");
}

/// Each member and item a walk turns to is a step, known to the schema or
/// not: a node of many keys is no cheaper to walk again than many nodes.
#[test]
fn members_and_items_are_steps() {
    let schema = json!({
        "type": "object",
        "properties": {"head": {"type": "object", "properties": {}}, "list": {"type": "array"}}
    });
    let wide: Map<String, Value> = (0..150_000)
        .map(|n| (format!("k{n}"), Value::Null))
        .collect();
    let arguments = json!({"head": wide});
    let (_, steps) = walked(schema.as_object().unwrap(), arguments.as_object().unwrap());
    assert_eq!(steps, MAX_STEPS, "150,000 members walked for free");
    let long = vec![Value::Null; 150_000];
    let arguments = json!({"list": long});
    let (_, steps) = walked(schema.as_object().unwrap(), arguments.as_object().unwrap());
    assert_eq!(steps, MAX_STEPS, "150,000 items walked for free");
}

/// The walk only misses a violation, never invents one: `1.0` is the `1`
/// an enum or a const names, and a member a pattern may describe is not
/// judged unknown.
#[test]
fn numbers_equal_by_value_and_patterns_are_not_judged() {
    let schema = json!({
        "type": "object",
        "properties": {
            "level": {"enum": [1, 2, 3]},
            "scale": {"const": [1, {"x": 2}]},
            "labels": {
                "type": "object",
                "patternProperties": {"^x-": {"type": "string"}},
                "additionalProperties": false
            }
        }
    });
    let arguments = json!({
        "level": 1.0,
        "scale": [1.0, {"x": 2.0}],
        "labels": {"x-team": "core"},
        "extra": true
    });
    let (found, _) = walked(schema.as_object().unwrap(), arguments.as_object().unwrap());
    assert!(found.is_empty(), "{found:?}");
    let arguments = json!({"level": 4, "scale": [2]});
    let (mut found, _) = walked(schema.as_object().unwrap(), arguments.as_object().unwrap());
    found.sort();
    assert_eq!(found, ["level", "scale"]);
}
