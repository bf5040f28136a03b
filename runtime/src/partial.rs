//! Partial results: what a tool gathered before it failed.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Serialize;
use serde_json::Value;

pub(crate) use crate::envelope::count;

/// A collector a tool pushes into as it makes progress.
///
/// A `#[tool]` function takes it as a parameter (`Partial<T>`, by value). The
/// macro keeps it out of `attempted_query`, and when the tool fails its items
/// become the envelope's `partial_results` — `[]` when it gathered nothing —
/// unless the error carries partial results of its own. On success the items
/// are *not* the tool's result: partial data is never presented as complete.
///
/// `Partial` is a handle: clones share the same items. The caller keeps one
/// clone and reads it back after the call, so a retry can resume where the
/// failed attempt stopped.
///
/// ```
/// use tool_envelope::{tool, ErrorEnvelope, Partial};
///
/// /// Fetch `n` sources, keeping what was fetched if the provider gives out.
/// #[tool]
/// fn research(n: usize, sources: Partial<String>) -> Result<Vec<String>, ErrorEnvelope> {
///     for i in sources.len()..n {
///         if i == 6 {
///             return Err(ErrorEnvelope::transient(format!("Provider rate-limited after {i} sources")));
///         }
///         sources.push(format!("source {}", i + 1));
///     }
///     Ok(sources.to_vec())
/// }
///
/// let sources = Partial::new();
/// let envelope = research(10, sources.clone()).unwrap_err();
/// assert_eq!(envelope.partial_count(), 6);
/// assert_eq!(sources.len(), 6); // the caller still holds them, to resume later
/// ```
pub struct Partial<T> {
    items: Arc<Mutex<Vec<T>>>,
}

impl<T> Partial<T> {
    /// An empty collector.
    pub fn new() -> Self {
        Partial {
            items: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        // A panic while pushing cannot leave the Vec half-written; keep what is there.
        self.items.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records one item of progress.
    pub fn push(&self, item: T) {
        self.lock().push(item);
    }

    /// Records several items of progress.
    pub fn extend<I: IntoIterator<Item = T>>(&self, items: I) {
        self.lock().extend(items);
    }

    /// The number of items gathered so far.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing has been gathered yet.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Whether `item` was already gathered — the resume check of a retried attempt.
    pub fn contains(&self, item: &T) -> bool
    where
        T: PartialEq,
    {
        self.lock().contains(item)
    }

    /// Reads the items without copying them.
    pub fn with<R>(&self, read: impl FnOnce(&[T]) -> R) -> R {
        read(&self.lock())
    }

    /// A copy of the items gathered so far.
    pub fn to_vec(&self) -> Vec<T>
    where
        T: Clone,
    {
        self.lock().clone()
    }

    /// Takes the items out, leaving the collector empty.
    pub fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.lock())
    }

    /// The shared items, to count the handles.
    pub(crate) fn items(&self) -> &Arc<Mutex<Vec<T>>> {
        &self.items
    }

    /// Whether `other` is a handle to the same items.
    pub fn same_as(&self, other: &Partial<T>) -> bool {
        Arc::ptr_eq(&self.items, &other.items)
    }

    /// The items as a JSON array, the shape of `partial_results`. An item
    /// JSON cannot carry as it is — one whose `Serialize` fails or panics,
    /// one nested deeper than [`MAX_DEPTH`](crate::MAX_DEPTH), a NaN — is
    /// kept as a string saying why rather than dropped.
    pub fn to_json(&self) -> Value
    where
        T: Serialize,
    {
        Value::Array(
            self.lock()
                .iter()
                .map(|item| {
                    crate::json::strict::to_value(item).unwrap_or_else(|problem| {
                        Value::String(format!(
                            "[partial result not representable in JSON: {problem}]"
                        ))
                    })
                })
                .collect(),
        )
    }
}

impl<T> Clone for Partial<T> {
    /// Another handle to the same items.
    fn clone(&self) -> Self {
        Partial {
            items: Arc::clone(&self.items),
        }
    }
}

impl<T> Default for Partial<T> {
    fn default() -> Self {
        Partial::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for Partial<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Partial").field(&*self.lock()).finish()
    }
}

/// Serializes as the array of items gathered so far.
impl<T: Serialize> Serialize for Partial<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.lock().serialize(serializer)
    }
}

impl<T> From<Vec<T>> for Partial<T> {
    /// A collector that starts with `items`, such as the partial results of an
    /// earlier attempt.
    fn from(items: Vec<T>) -> Self {
        Partial {
            items: Arc::new(Mutex::new(items)),
        }
    }
}

/// Partial results gathered so far and a later report, together, losing
/// no item: a later array that starts with everything gathered (a shared
/// collector reporting again) replaces it, one that is already its end
/// (the same report again) adds nothing, any other is appended; objects
/// are merged key by key. Under a key both hold, two
/// scalars are the later one (a cursor, a count: what it is now), a later
/// `null` keeps what was there, and arrays and objects are merged as
/// above (`{"eu": [1, 2]}` then `{"eu": [3]}` is `{"eu": [1, 2, 3]}`);
/// values of different shapes are kept side by side in an array.
pub(crate) fn merge(gathered: Option<Value>, latest: Option<Value>) -> Option<Value> {
    match (gathered, latest) {
        (None, latest) => latest,
        (gathered, None) => gathered,
        (Some(gathered), Some(latest)) => Some(merged(gathered, latest, 0)),
    }
}

/// How deep [`merged`] follows objects under keys that both hold: past
/// it, the later object's keys replace the earlier's (no report nested
/// on purpose deepens the stack).
const MERGE_DEPTH: usize = 32;

fn merged(gathered: Value, latest: Value, depth: usize) -> Value {
    match (gathered, latest) {
        (Value::Object(mut members), Value::Object(latest)) if depth < MERGE_DEPTH => {
            for (key, value) in latest {
                let value = match members.remove(&key) {
                    Some(earlier) => member(earlier, value, depth + 1),
                    None => value,
                };
                members.insert(key, value);
            }
            Value::Object(members)
        }
        (Value::Object(mut members), Value::Object(latest)) => {
            members.extend(latest);
            Value::Object(members)
        }
        (gathered, latest) if gathered == latest => gathered,
        (gathered, latest) => {
            let as_items = |value: Value| match value {
                Value::Array(items) => items,
                Value::Null => Vec::new(),
                other => vec![other],
            };
            let mut items = as_items(gathered);
            let latest = as_items(latest);
            if latest.len() >= items.len() && latest[..items.len()] == items[..] {
                items = latest;
            } else if !items.ends_with(&latest) {
                items.extend(latest);
            }
            Value::Array(items)
        }
    }
}

/// The value under a key both `earlier` and `later` hold.
fn member(earlier: Value, later: Value, depth: usize) -> Value {
    let scalar =
        |value: &Value| matches!(value, Value::Bool(_) | Value::Number(_) | Value::String(_));
    match (earlier, later) {
        (earlier, Value::Null) => earlier,
        (Value::Null, later) => later,
        (earlier, later) if scalar(&earlier) && scalar(&later) => later,
        (earlier, later) => merged(earlier, later, depth),
    }
}

/// How much `value` holds, at any depth: the items of its arrays and the
/// keys of its objects. What was gathered grew when this did; a value
/// that only changed (a cursor, a time) made no progress.
pub(crate) fn held(value: Option<&Value>) -> usize {
    let mut pending: Vec<&Value> = value.into_iter().collect();
    let mut held = 0usize;
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => {
                held = held.saturating_add(items.len());
                pending.extend(items);
            }
            Value::Object(members) => {
                held = held.saturating_add(members.len());
                pending.extend(members.values());
            }
            _ => {}
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merging_loses_nothing() {
        // A shared collector reports its earlier items again: kept once.
        assert_eq!(
            merge(Some(json!([1, 2])), Some(json!([1, 2, 3]))),
            Some(json!([1, 2, 3]))
        );
        // A fresh collector reports new items, duplicates included.
        assert_eq!(
            merge(Some(json!([1, 2])), Some(json!([2, 2]))),
            Some(json!([1, 2, 2, 2]))
        );
        assert_eq!(merge(Some(json!([1])), None), Some(json!([1])));
        assert_eq!(
            merge(Some(json!({"a": 1})), Some(json!({"b": 2}))),
            Some(json!({"a": 1, "b": 2}))
        );
        // A key both hold is merged, not replaced: what the first attempt
        // gathered for it stays.
        assert_eq!(
            merge(
                Some(json!({"eu": [1, 2], "us": {"east": [1]}, "n": 2})),
                Some(json!({"eu": [3], "us": {"east": [1, 2], "west": [9]}, "n": 2}))
            ),
            Some(json!({"eu": [1, 2, 3], "us": {"east": [1, 2], "west": [9]}, "n": 2}))
        );
        // A scalar under a key is what it is now: a cursor, a count; a
        // later null keeps what was there; a later value of another shape
        // is kept beside it.
        assert_eq!(
            merge(
                Some(json!({"next_cursor": "a", "rows": [1], "more": [5], "n": 1})),
                Some(json!({"next_cursor": "b", "rows": [2], "more": null, "n": {"x": 1}}))
            ),
            Some(json!({"next_cursor": "b", "rows": [1, 2], "more": [5], "n": [1, {"x": 1}]}))
        );
        // A report already at the end of what was gathered adds nothing:
        // the same failure reported again does not grow it.
        let status = |code: u16| json!({"status": {"code": code}});
        let once = merge(Some(json!({"status": "partial"})), Some(status(429)));
        let twice = merge(once.clone(), Some(status(429)));
        assert_eq!(twice, Some(json!({"status": ["partial", {"code": 429}]})));
        assert_eq!(twice, once);
        assert_eq!(
            merge(Some(json!(["x", "a", "b"])), Some(json!(["a", "b"]))),
            Some(json!(["x", "a", "b"]))
        );
        // Past the depth followed, the later object's keys replace.
        let nested = |leaf: Value| (0..40).fold(leaf, |inner, _| json!({ "k": inner }));
        let both = merge(Some(nested(json!([1]))), Some(nested(json!([2])))).unwrap();
        assert_eq!(both, nested(json!([2])));
        // What is held counts at every depth.
        assert_eq!(held(Some(&json!({"eu": [1, 2], "us": {"east": [3]}}))), 6);
        assert_eq!(held(Some(&json!("cursor"))), 0);
        assert_eq!(held(None), 0);
        let shallow = |leaf: Value| (0..4).fold(leaf, |inner, _| json!({ "k": inner }));
        assert_eq!(
            merge(Some(shallow(json!([1]))), Some(shallow(json!([2])))),
            Some(shallow(json!([1, 2])))
        );
        // Different shapes are kept side by side.
        assert_eq!(
            merge(Some(json!({"a": 1})), Some(json!([2]))),
            Some(json!([{"a": 1}, 2]))
        );
        assert_eq!(
            merge(Some(json!([1])), Some(json!("x"))),
            Some(json!([1, "x"]))
        );
        assert_eq!(count(Some(&json!({"a": 1, "b": 2}))), 2);
    }

    #[test]
    fn clones_share_items() {
        let a = Partial::new();
        let b = a.clone();
        a.push(1);
        b.extend([2, 3]);
        assert_eq!(a.to_vec(), [1, 2, 3]);
        assert!(a.same_as(&b));
        assert!(a.contains(&2));
        assert_eq!(b.take(), [1, 2, 3]);
        assert!(a.is_empty());
    }

    #[test]
    fn to_json_is_an_array_even_when_empty() {
        let p: Partial<u8> = Partial::new();
        assert_eq!(p.to_json(), serde_json::json!([]));
        p.push(7);
        assert_eq!(p.to_json(), serde_json::json!([7]));
    }
}
