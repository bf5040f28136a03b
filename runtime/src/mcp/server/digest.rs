//! The digest an approval is bound to: one call — its service, tool,
//! arguments in canonical form and caller — whatever the order of its keys.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::caller::Caller;

/// The digest an approval is bound to: the service (its tool set's name),
/// the tool, its arguments in canonical form (keys sorted at every level),
/// and the caller's subject. The unnamed service's digests are those of
/// the releases before services: no tool name holds a NUL, and canonical
/// arguments start with `{`, which no tool name does, so no named
/// service's digest is an unnamed one's.
pub(crate) fn digest(
    service: &str,
    tool: &str,
    arguments: &Map<String, Value>,
    caller: Option<&Caller>,
) -> String {
    let mut hash = Sha256::new();
    if !service.is_empty() {
        hash.update(service.as_bytes());
        hash.update([0]);
    }
    hash.update(tool.as_bytes());
    hash.update([0]);
    let mut canonical = Vec::new();
    // An argument sent as `null` is one not sent: a parameter decodes
    // them alike. Inside a value, a `null` member says something of its
    // own (a merge patch's "remove"), and is kept.
    write_fields(arguments, |value| !value.is_null(), &mut canonical);
    hash.update(&canonical);
    hash.update([0]);
    match caller.map(Caller::subject) {
        // No caller: nothing, as in every release before.
        None => {}
        // A caller a host named "" is not the absence of one: a byte no
        // UTF-8 text holds.
        Some("") => hash.update([0xff]),
        Some(subject) => hash.update(subject.as_bytes()),
    }
    hex::encode(hash.finalize())
}

/// `value` as JSON with the keys of every object sorted.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(fields) => write_object(fields, out),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        // A whole number is one number however it was written: `620`,
        // `620.0` and `6.2e2` decode alike into a tool's float.
        Value::Number(number)
            if number.is_f64()
                && number
                    .as_f64()
                    .is_some_and(|n| n.fract() == 0.0 && n.abs() <= 2f64.powi(53)) =>
        {
            let whole = number.as_f64().unwrap_or_default() as i64;
            out.extend_from_slice(whole.to_string().as_bytes());
        }
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

/// `fields` as a JSON object with its keys sorted, at every level.
fn write_object(fields: &Map<String, Value>, out: &mut Vec<u8>) {
    write_fields(fields, |_| true, out);
}

/// [`write_object`] of the `fields` whose value is `kept`.
fn write_fields(fields: &Map<String, Value>, kept: impl Fn(&Value) -> bool, out: &mut Vec<u8>) {
    let mut keys: Vec<&String> = (fields.iter())
        .filter(|(_, value)| kept(value))
        .map(|(key, _)| key)
        .collect();
    keys.sort();
    out.push(b'{');
    for (index, key) in keys.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(Value::String(key.clone()).to_string().as_bytes());
        out.push(b':');
        write_canonical(&fields[key.as_str()], out);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_digest_binds_tool_arguments_and_caller_whatever_the_key_order() {
        let alice = Caller::new("alice", ["refunds:write"]);
        let bob = Caller::new("bob", ["refunds:write"]);
        let one = object(json!({"order_id": "A-1", "amount": 620, "meta": {"b": 1, "a": 2}}));
        let same = object(json!({"meta": {"a": 2, "b": 1}, "amount": 620, "order_id": "A-1"}));
        let other = object(json!({"order_id": "A-1", "amount": 621, "meta": {"b": 1, "a": 2}}));
        let base = digest("", "refund", &one, Some(&alice));
        assert_eq!(base, digest("", "refund", &same, Some(&alice)));
        assert_ne!(base, digest("", "refund", &other, Some(&alice)));
        assert_ne!(base, digest("", "refund", &one, Some(&bob)));
        assert_ne!(base, digest("", "refund", &one, None));
        assert_ne!(base, digest("", "refund2", &one, Some(&alice)));
        assert_ne!(base, digest("shop", "refund", &one, Some(&alice)));
        // The same call however an agent writes it again: a whole number
        // as a float, an optional argument as `null`.
        let rewritten = object(
            json!({"order_id": "A-1", "amount": 620.0, "note": null, "meta": {"b": 1.0, "a": 2e0}}),
        );
        assert_eq!(base, digest("", "refund", &rewritten, Some(&alice)));
        // A `null` inside a value says something: a patch that removes.
        let removing =
            object(json!({"order_id": "A-1", "amount": 620, "meta": {"b": 1, "a": 2, "c": null}}));
        assert_ne!(base, digest("", "refund", &removing, Some(&alice)));
        let fraction =
            object(json!({"order_id": "A-1", "amount": 620.5, "meta": {"b": 1, "a": 2}}));
        assert_ne!(base, digest("", "refund", &fraction, Some(&alice)));
        let in_a_list = object(
            json!({"order_id": "A-1", "amount": 620, "meta": {"b": 1, "a": 2}, "l": [null]}),
        );
        assert_ne!(
            base,
            digest("", "refund", &in_a_list, Some(&alice)),
            "a null in a list is kept"
        );
        // The unnamed service's digest is the one kept before services.
        let before = object(json!({"order_id": "A-1", "amount": 620}));
        assert_eq!(
            digest("", "refund", &before, Some(&alice)),
            "11cae61faa4838ec70f75fadb82b5f652f192319dbe46b66bfa3c45489b38069"
        );
        // The parts are kept apart: a name cannot run into the next.
        assert_ne!(digest("a", "bc", &one, None), digest("ab", "c", &one, None));
        // A caller a host named "" is not the absence of one, and no
        // caller's digest moved.
        let nameless = Caller::new("", Vec::<String>::new());
        assert_ne!(
            digest("", "refund", &one, Some(&nameless)),
            digest("", "refund", &one, None)
        );
        assert_eq!(
            digest("", "refund", &before, None),
            "6f6269f7c92a9f7fc48bc2ff75494baf39d7f3df4faf8efa905de5a9473323ec"
        );
    }
}
