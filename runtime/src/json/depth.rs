//! Depth: JSON values nested deeper than a caller's parser takes, or deeper
//! than a recursive walk can go without overflowing the stack, are found and
//! taken apart without recursion.

use serde_json::Value;

/// The deepest JSON this crate accepts or sends, in nested arrays and
/// objects: arguments, results, partial results, attempted queries.
///
/// Below `serde_json`'s own parser limit (127 levels), with room for the
/// layers a reply adds around a value (the result object, the envelope, the
/// JSON-RPC message), so that whatever is sent can be read back by a
/// `serde_json` client.
pub const MAX_DEPTH: usize = 100;

/// Whether `value` nests more than `limit` arrays and objects. The recursion
/// stops at the limit, so it is safe whatever the value.
pub(crate) fn deeper_than(value: &Value, limit: usize) -> bool {
    let deeper = |child: &Value| limit == 0 || deeper_than(child, limit - 1);
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(deeper),
        Value::Object(members) => limit == 0 || members.values().any(deeper),
        _ => false,
    }
}

/// Drops `value` level by level: dropping a deeply nested value recursively
/// would overflow the stack.
pub(crate) fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(members) => stack.extend(members.into_iter().map(|(_, value)| value)),
            _ => {}
        }
    }
}

/// The text that stands in for a value nested too deep.
pub(crate) fn too_deep_marker() -> Value {
    Value::String(format!(
        "[nested more than {MAX_DEPTH} levels deep: dropped]"
    ))
}

/// `value` itself if it nests at most [`MAX_DEPTH`] levels, otherwise a
/// marker saying it was dropped (the value taken apart without recursion).
pub(crate) fn bounded(value: Value) -> Value {
    if deeper_than(&value, MAX_DEPTH) {
        dismantle(value);
        too_deep_marker()
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> Value {
        let mut value = json!(1);
        for _ in 0..depth {
            value = Value::Array(vec![value]);
        }
        value
    }

    #[test]
    fn depth_is_counted_in_containers() {
        assert!(!deeper_than(&json!(1), 0));
        assert!(deeper_than(&json!([]), 0));
        assert!(!deeper_than(&json!([[1]]), 2));
        assert!(deeper_than(&json!([[1]]), 1));
        assert!(!deeper_than(&nested(MAX_DEPTH), MAX_DEPTH));
        assert!(deeper_than(&nested(MAX_DEPTH + 1), MAX_DEPTH));
    }

    #[test]
    fn values_far_too_deep_are_replaced_without_overflowing() {
        let value = bounded(nested(200_000));
        assert_eq!(value, too_deep_marker());
        assert_eq!(bounded(json!({"a": [1]})), json!({"a": [1]}));
    }
}
