//! Size limits: an envelope stays small enough to reach its caller, and never
//! loses a pillar doing so.
//!
//! The limits apply where an envelope leaves the process — when it is
//! serialized — so that a caller in the same process still holds everything,
//! and partial results gathered across retries are merged before they are
//! trimmed, once.

use std::borrow::Cow;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;
use serde_json::{Map, Value, json};

/// Caps on the parts of an envelope that grow with the data: the captured
/// arguments, the partial results, and the text a tool or its error writes.
/// Over a cap, the value is trimmed and a marker says how much was dropped;
/// the envelope stays valid against its schema, and the four pillars are
/// never removed.
///
/// Serializing an envelope applies the [installed](Self::install) limits
/// without changing the envelope; [`apply`](Self::apply) trims one in place.
///
/// ```
/// use serde_json::json;
/// use tool_envelope::{EnvelopeLimits, ErrorEnvelope};
///
/// let limits = EnvelopeLimits {
///     attempted_query_bytes: 64,
///     partial_results_bytes: 64,
///     ..EnvelopeLimits::default()
/// };
/// let mut envelope = ErrorEnvelope::transient("Provider rate-limited")
///     .with_attempted_query(json!({"topic": "x".repeat(200)}))
///     .with_partial_results(json!((1..=50).collect::<Vec<u32>>()));
/// limits.apply(&mut envelope);
///
/// let query = envelope.attempted_query.as_ref().unwrap().as_str().unwrap();
/// assert!(query.ends_with("bytes dropped]"));
/// let partial = envelope.partial_results.as_ref().unwrap().as_array().unwrap();
/// assert!(partial.last().unwrap()["_truncated"]["droppedItems"].as_u64().unwrap() > 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeLimits {
    /// The most bytes of `attempted_query`, as compact JSON.
    pub attempted_query_bytes: usize,
    /// The most bytes of `partial_results`, as compact JSON.
    pub partial_results_bytes: usize,
    /// The most bytes of each piece of text: `message`, `tool`, `reason`, each
    /// alternative, each violation's field and description, an escalation's
    /// detail.
    pub text_bytes: usize,
    /// The most entries of `alternatives`, and of `violations`; over it, the
    /// last entry sent says how many more there were.
    pub list_items: usize,
}

impl Default for EnvelopeLimits {
    /// 16 KiB of arguments, 256 KiB of partial results, 4 KiB per piece of
    /// text, 64 alternatives and 64 violations.
    fn default() -> Self {
        EnvelopeLimits {
            attempted_query_bytes: 16 * 1024,
            partial_results_bytes: 256 * 1024,
            text_bytes: 4 * 1024,
            list_items: 64,
        }
    }
}

static ATTEMPTED_QUERY_BYTES: AtomicUsize = AtomicUsize::new(16 * 1024);
static PARTIAL_RESULTS_BYTES: AtomicUsize = AtomicUsize::new(256 * 1024);
static TEXT_BYTES: AtomicUsize = AtomicUsize::new(4 * 1024);
static LIST_ITEMS: AtomicUsize = AtomicUsize::new(64);

/// A marker never needs more than this, so a trimmed value fits its cap.
const MARKER_ROOM: usize = 96;

impl EnvelopeLimits {
    /// The limits every envelope of this process is serialized with.
    pub fn current() -> Self {
        EnvelopeLimits {
            attempted_query_bytes: ATTEMPTED_QUERY_BYTES.load(Ordering::Relaxed),
            partial_results_bytes: PARTIAL_RESULTS_BYTES.load(Ordering::Relaxed),
            text_bytes: TEXT_BYTES.load(Ordering::Relaxed),
            list_items: LIST_ITEMS.load(Ordering::Relaxed),
        }
    }

    /// Makes these the limits every envelope of this process is serialized
    /// with, from now on.
    pub fn install(self) {
        ATTEMPTED_QUERY_BYTES.store(self.attempted_query_bytes, Ordering::Relaxed);
        PARTIAL_RESULTS_BYTES.store(self.partial_results_bytes, Ordering::Relaxed);
        TEXT_BYTES.store(self.text_bytes, Ordering::Relaxed);
        LIST_ITEMS.store(self.list_items, Ordering::Relaxed);
    }
}

/// `query` as it goes on the wire: itself, or a trimmed copy if it is over `cap`.
pub(crate) fn query_for_wire(query: &Value, cap: usize) -> Cow<'_, Value> {
    if fits(query, cap) {
        return Cow::Borrowed(query);
    }
    let mut trimmed = query.clone();
    trim_query(&mut trimmed, cap);
    Cow::Owned(trimmed)
}

/// `partial` as it goes on the wire: itself, or a trimmed copy if it is over `cap`.
pub(crate) fn partial_for_wire(partial: &Value, cap: usize) -> Cow<'_, Value> {
    if fits(partial, cap) {
        return Cow::Borrowed(partial);
    }
    let mut trimmed = partial.clone();
    trim_partial(&mut trimmed, cap);
    Cow::Owned(trimmed)
}

/// `text`, or its start and a marker if it is over `cap` bytes of UTF-8.
pub(crate) fn text_for_wire(text: &str, cap: usize) -> Cow<'_, str> {
    if text.len() <= cap {
        return Cow::Borrowed(text);
    }
    Cow::Owned(truncated(
        text,
        cap.saturating_sub(marker(text.len(), text.len()).len()),
    ))
}

/// The first `keep` bytes of `text` (fewer, to end on a character) and a
/// marker saying how many were dropped.
fn truncated(text: &str, keep: usize) -> String {
    let mut keep = keep.min(text.len());
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{}", &text[..keep], marker(text.len() - keep, text.len()))
}

fn marker(dropped: usize, total: usize) -> String {
    format!("… [truncated: {dropped} of {total} bytes dropped]")
}

/// Counts the bytes of JSON written to it, and refuses past `cap`.
struct Counter {
    written: usize,
    cap: usize,
}

impl io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.written += bytes.len();
        if self.written > self.cap {
            return Err(io::Error::other("over the cap"));
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether `value` is at most `cap` bytes of JSON; stops counting past the cap.
///
/// Most values are far under their cap: a walk that bounds their size from
/// above, without formatting a number or escaping a string, settles those,
/// and only a value near or over its cap is counted exactly.
fn fits(value: &Value, cap: usize) -> bool {
    let mut budget = cap;
    within_bound(value, &mut budget)
        || serde_json::to_writer(&mut Counter { written: 0, cap }, value).is_ok()
}

/// The most bytes a number takes as JSON (`-1.7976931348623157e308`).
const NUMBER_MAX: usize = 24;

/// Takes an upper bound of `value`'s JSON size from `budget`; `false` as soon
/// as the bound is over what is left.
fn within_bound(value: &Value, budget: &mut usize) -> bool {
    match value {
        Value::Null | Value::Bool(_) => take(budget, 5),
        Value::Number(_) => take(budget, NUMBER_MAX),
        Value::String(text) => take(budget, string_bound(text)),
        Value::Array(items) => {
            take(budget, items.len() + 2) && items.iter().all(|item| within_bound(item, budget))
        }
        Value::Object(fields) => {
            take(budget, fields.len() * 2 + 2)
                && fields.iter().all(|(key, item)| {
                    take(budget, string_bound(key)) && within_bound(item, budget)
                })
        }
    }
}

/// Every byte of a string escapes to at most six (`\u001f`), plus the quotes.
fn string_bound(text: &str) -> usize {
    text.len().saturating_mul(6).saturating_add(2)
}

fn take(budget: &mut usize, bytes: usize) -> bool {
    match budget.checked_sub(bytes) {
        Some(left) => {
            *budget = left;
            true
        }
        None => false,
    }
}

/// The size of `value` as compact JSON, without building the text.
pub(crate) fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = Counter {
        written: 0,
        cap: usize::MAX,
    };
    serde_json::to_writer(&mut counter, value).expect("counting cannot fail");
    counter.written
}

/// Over the cap, the arguments become the start of their JSON text and a
/// marker — still "what was tried", as a string, which the schema allows.
fn trim_query(query: &mut Value, cap: usize) {
    let total = json_len(query);
    if total <= cap {
        return;
    }
    let text = match &mut *query {
        Value::String(text) => std::mem::take(text),
        other => other.to_string(),
    };
    let mut keep = cap.saturating_sub(MARKER_ROOM);
    loop {
        let trimmed = Value::String(truncated(&text, keep));
        // Escaping (quotes in a JSON text) can make the string longer than
        // the bytes kept: shrink until it fits.
        let size = json_len(&trimmed);
        if size <= cap || keep == 0 {
            *query = trimmed;
            return;
        }
        keep = keep
            .min(text.len())
            .saturating_sub((size - cap).max(keep / 8));
    }
}

/// Over the cap, partial results keep their first items (or fields) that fit,
/// and a `_truncated` marker says how many and how many bytes were dropped.
fn trim_partial(partial: &mut Value, cap: usize) {
    let total = json_len(partial);
    if total <= cap {
        return;
    }
    let room = cap.saturating_sub(MARKER_ROOM);
    match partial {
        Value::Array(items) => {
            let total_items = items.len();
            let mut used = 2;
            let kept = items
                .iter()
                .take_while(|item| {
                    used += json_len(*item) + 1;
                    used <= room
                })
                .count();
            let dropped: Vec<Value> = items.drain(kept..).collect();
            let dropped_bytes: usize = dropped.iter().map(json_len).sum();
            items.push(json!({ "_truncated": {
                "droppedItems": dropped.len(),
                "droppedBytes": dropped_bytes,
                "totalItems": total_items,
            }}));
        }
        Value::Object(fields) => {
            let total_fields = fields.len();
            let mut used = 2;
            let mut kept = Map::new();
            let mut dropped = 0;
            let mut dropped_bytes = 0;
            for (key, value) in std::mem::take(fields) {
                let size = json_len(&key) + json_len(&value) + 2;
                if used + size <= room {
                    used += size;
                    kept.insert(key, value);
                } else {
                    dropped += 1;
                    dropped_bytes += size;
                }
            }
            kept.insert(
                "_truncated".to_owned(),
                json!({ "droppedFields": dropped, "droppedBytes": dropped_bytes, "totalFields": total_fields }),
            );
            *fields = kept;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_untouched() {
        let query = json!({"a": 1});
        assert!(matches!(query_for_wire(&query, 100), Cow::Borrowed(_)));
        let partial = json!([1, 2]);
        assert!(matches!(partial_for_wire(&partial, 100), Cow::Borrowed(_)));
        assert!(matches!(text_for_wire("short", 100), Cow::Borrowed(_)));
    }

    #[test]
    fn long_text_keeps_its_start_and_fits() {
        let text = "é".repeat(3000);
        let trimmed = text_for_wire(&text, 1000);
        assert!(trimmed.len() <= 1000, "{}", trimmed.len());
        assert!(trimmed.starts_with("éé"));
        assert!(trimmed.ends_with("of 6000 bytes dropped]"));
    }

    #[test]
    fn trimmed_values_fit_their_caps_and_say_what_was_dropped() {
        let query = json!({"q": "é\"".repeat(1000)});
        let query = query_for_wire(&query, 200);
        assert!(json_len(&*query) <= 200, "{}", json_len(&*query));
        let partial = json!((0..1000).map(|i| json!({"id": i})).collect::<Vec<_>>());
        let partial = partial_for_wire(&partial, 300);
        assert!(json_len(&*partial) <= 300, "{}", json_len(&*partial));
        let items = partial.as_array().unwrap();
        let marker = &items.last().unwrap()["_truncated"];
        assert_eq!(marker["totalItems"], 1000);
        assert_eq!(
            marker["droppedItems"].as_u64().unwrap() as usize + items.len() - 1,
            1000
        );
        assert_eq!(items[0], json!({"id": 0}), "the first items are kept");
    }

    #[test]
    fn the_bound_is_never_below_the_exact_size() {
        let values = [
            json!(null),
            json!(-1.797_693_134_862_315_7e308),
            json!(i64::MIN),
            json!(u64::MAX),
            json!("\u{1}\u{1f}\"\\é"),
            json!({"\u{1}": [true, false, null, {"": ""}], "b": [[], {}]}),
        ];
        for value in values {
            let exact = json_len(&value);
            // Whenever the bound claims the value fits, it really does.
            for cap in 0..=exact + 200 {
                let mut budget = cap;
                if within_bound(&value, &mut budget) {
                    assert!(exact <= cap, "{value}: {exact} > {cap}");
                }
            }
            assert!(fits(&value, exact) && !fits(&value, exact - 1), "{value}");
        }
    }

    #[test]
    fn objects_keep_the_fields_that_fit() {
        let mut partial = json!({"a": "x".repeat(50), "b": "y".repeat(500), "c": 1});
        trim_partial(&mut partial, 200);
        assert_eq!(partial["a"], "x".repeat(50));
        assert!(partial.get("b").is_none());
        assert_eq!(partial["_truncated"]["droppedFields"], 1);
        assert!(json_len(&partial) <= 200);
    }
}
