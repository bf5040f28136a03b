//! Size limits: an envelope stays small enough to reach its caller, and never
//! loses a pillar doing so.
//!
//! The limits apply where an envelope leaves the process — when it is
//! serialized — so that a caller in the same process still holds everything,
//! and partial results gathered across retries are merged before they are
//! trimmed, once. Sizes are counted as sent: a control character that JSON
//! escapes into six bytes counts six.

use std::borrow::Cow;
use std::io;

use serde::Serialize;
use serde_json::{Map, Value, json};

/// Caps on the parts of an envelope that grow with the data: the captured
/// arguments, the partial results, and the text a tool or its error writes.
/// Over a cap, the value is trimmed and a marker, counted inside the cap,
/// says how much was dropped; the envelope stays valid against its schema,
/// and the four pillars are never removed.
///
/// Limits are a value, never process state: `serde_json::to_value(&envelope)`
/// applies the defaults, the same in every thread at every moment;
/// [`ErrorEnvelope::to_wire`](crate::ErrorEnvelope::to_wire) and a tool
/// set's [`limits`](crate::mcp::ToolSet::limits) apply others, and
/// [`apply`](Self::apply) trims an envelope in place.
///
/// Each cap has a floor, so that a marker always fits inside it: 64 bytes of
/// arguments and of partial results, 32 bytes of text, 1 list item. A
/// smaller setting counts as its floor.
///
/// ```
/// use serde_json::json;
/// use tool_envelope::{EnvelopeLimits, ErrorEnvelope};
///
/// let limits = EnvelopeLimits::default()
///     .with_attempted_query_bytes(64)
///     .with_partial_results_bytes(64);
/// let mut envelope = ErrorEnvelope::transient("Provider rate-limited")
///     .with_attempted_query(json!({"topic": "x".repeat(200)}))
///     .with_partial_results(json!((1..=50).collect::<Vec<u32>>()));
/// limits.apply(&mut envelope);
///
/// let query = envelope.attempted_query().unwrap().as_str().unwrap();
/// assert!(query.ends_with("bytes dropped]"));
/// let partial = envelope.partial_results().unwrap().as_array().unwrap();
/// assert!(partial.last().unwrap()["_truncated"]["droppedItems"].as_u64().unwrap() > 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvelopeLimits {
    /// The most bytes of `attempted_query`, as compact JSON (16 KiB by default).
    pub attempted_query_bytes: usize,
    /// The most bytes of `partial_results`, as compact JSON (256 KiB by default).
    pub partial_results_bytes: usize,
    /// The most bytes of each piece of text as it is sent, escapes included:
    /// `message`, `tool`, `reason`, each alternative, each violation's field
    /// and description, an escalation's detail (4 KiB by default).
    pub text_bytes: usize,
    /// The most entries of `alternatives`, and of `violations`; over it, the
    /// last entry sent says how many more there were (64 by default; 2 at
    /// least: one entry of its own beside that marker).
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

/// The bytes of each text a reply shrunk to fit keeps, when it has them.
const TEXT_KEPT: usize = 256;

/// The smallest caps: room for a marker and something of the value.
const MIN_VALUE_BYTES: usize = 64;
const MIN_TEXT_BYTES: usize = 32;

impl EnvelopeLimits {
    /// Sets the cap on `attempted_query`.
    #[must_use]
    pub fn with_attempted_query_bytes(mut self, bytes: usize) -> Self {
        self.attempted_query_bytes = bytes;
        self
    }

    /// Sets the cap on `partial_results`.
    #[must_use]
    pub fn with_partial_results_bytes(mut self, bytes: usize) -> Self {
        self.partial_results_bytes = bytes;
        self
    }

    /// Sets the cap on each piece of text.
    #[must_use]
    pub fn with_text_bytes(mut self, bytes: usize) -> Self {
        self.text_bytes = bytes;
        self
    }

    /// Sets the cap on the entries of `alternatives` and of `violations`.
    #[must_use]
    pub fn with_list_items(mut self, items: usize) -> Self {
        self.list_items = items;
        self
    }

    /// These limits with every cap raised to its floor.
    pub(crate) fn floored(self) -> Self {
        EnvelopeLimits {
            attempted_query_bytes: self.attempted_query_bytes.max(MIN_VALUE_BYTES),
            partial_results_bytes: self.partial_results_bytes.max(MIN_VALUE_BYTES),
            text_bytes: self.text_bytes.max(MIN_TEXT_BYTES),
            // One entry of its own beside the marker that says how many
            // more were dropped: a list is never a marker alone.
            list_items: self.list_items.max(2),
        }
    }

    /// These limits lowered to what `envelope` holds: no cap above the size
    /// of the part it bounds. Scaling from here shrinks the parts that are
    /// actually large, whatever their caps were.
    pub(crate) fn fitted_to(self, envelope: &crate::envelope::ErrorEnvelope) -> Self {
        let value_len = |value: Option<&Value>| value.map_or(0, json_len);
        let texts =
            std::iter::once(envelope.message())
                .chain(envelope.alternatives().iter().map(String::as_str))
                .chain(envelope.violations().iter().flat_map(|violation| {
                    [violation.field.as_str(), violation.description.as_str()]
                }))
                .chain(envelope.tool());
        let longest_text = texts.map(escaped_len).max().unwrap_or(0);
        EnvelopeLimits {
            attempted_query_bytes: self.attempted_query_bytes.min(
                envelope
                    .attempted_query_text()
                    .map_or_else(|| value_len(envelope.attempted_query()), str::len),
            ),
            partial_results_bytes: self
                .partial_results_bytes
                .min(value_len(envelope.partial_results())),
            text_bytes: self.text_bytes.min(longest_text),
            list_items: self.list_items.min(
                envelope
                    .alternatives()
                    .len()
                    .max(envelope.violations().len()),
            ),
        }
        .floored()
    }

    /// The smallest limits: every cap at its floor.
    pub(crate) fn floors() -> Self {
        EnvelopeLimits {
            attempted_query_bytes: 0,
            partial_results_bytes: 0,
            text_bytes: 0,
            list_items: 0,
        }
        .floored()
    }

    /// These limits scaled by `numerator / denominator`, floors kept: to
    /// fit a whole reply under a size. The number of alternatives and
    /// violations is not scaled, and a text keeps up to [`TEXT_KEPT`]
    /// bytes: the large parts shrink, never a pillar to a marker (the
    /// floors, [`floors`](Self::floors), are the last resort).
    pub(crate) fn scaled(self, numerator: usize, denominator: usize) -> Self {
        let scale = |bytes: usize| {
            let scaled = (bytes as u128 * numerator as u128 / denominator.max(1) as u128) as usize;
            scaled.min(bytes)
        };
        EnvelopeLimits {
            attempted_query_bytes: scale(self.attempted_query_bytes),
            partial_results_bytes: scale(self.partial_results_bytes),
            text_bytes: scale(self.text_bytes).max(self.text_bytes.min(TEXT_KEPT)),
            list_items: self.list_items,
        }
        .floored()
    }
}

/// The bytes one byte of a string takes inside a JSON string, as `serde_json`
/// writes it.
fn escaped(byte: u8) -> usize {
    match byte {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
        0..=0x1f => 6,
        _ => 1,
    }
}

/// The most bytes one byte of a string can take inside a JSON string
/// (`\u001f`).
pub(crate) const LONGEST_ESCAPE: usize = 6;

/// The bytes `text` takes inside a JSON string, without the quotes.
pub(crate) fn escaped_len(text: &str) -> usize {
    text.bytes().map(escaped).sum()
}

/// `query` as it goes on the wire: itself, or a trimmed copy if it is over `cap`.
pub(crate) fn query_for_wire(query: &Value, cap: usize) -> Cow<'_, Value> {
    if fits(query, cap) {
        return Cow::Borrowed(query);
    }
    // Over the cap, the arguments become the start of their JSON text and a
    // marker — still "what was tried", as a string, which the schema allows.
    let text = match query {
        Value::String(text) => Cow::Borrowed(text.as_str()),
        other => Cow::Owned(other.to_string()),
    };
    // The quotes of the string count too.
    Cow::Owned(Value::String(
        cut(&text, cap.saturating_sub(2)).into_owned(),
    ))
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

/// A person's note (a decision's, a resolution's) as every store keeps it:
/// within 1 KiB, cut as [`text_for_wire`] cuts, and without NUL, which
/// Postgres keeps in no text (it would refuse the decision whole).
#[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
pub(crate) fn kept_note(note: &str) -> Cow<'_, str> {
    match text_for_wire(note, 1024) {
        Cow::Borrowed(note) if !note.contains('\0') => Cow::Borrowed(note),
        note => Cow::Owned(note.replace('\0', "")),
    }
}

/// `text`, or its start and a marker if it takes more than `cap` bytes in a
/// JSON string.
pub(crate) fn text_for_wire(text: &str, cap: usize) -> Cow<'_, str> {
    cut(text, cap)
}

/// `text` within `cap` escaped bytes: itself, or its start and the longest
/// marker that fits — `… [truncated: N of M bytes dropped]`, or `…` alone
/// under a small cap.
fn cut(text: &str, cap: usize) -> Cow<'_, str> {
    // Every byte escapes to at most six: a short text cannot be over.
    if text.len().saturating_mul(6) <= cap || escaped_len(text) <= cap {
        return Cow::Borrowed(text);
    }
    let long = marker(text.len(), text.len()).len();
    let (room, full) = if cap > long {
        (cap - long, true)
    } else {
        (cap.saturating_sub(SHORT_MARKER.len()), false)
    };
    let mut keep = 0;
    let mut used = 0;
    for (at, c) in text.char_indices() {
        let size: usize = text[at..at + c.len_utf8()].bytes().map(escaped).sum();
        if used + size > room {
            break;
        }
        used += size;
        keep = at + c.len_utf8();
    }
    let mut out = String::with_capacity(keep + long);
    out.push_str(&text[..keep]);
    if full {
        out.push_str(&marker(text.len() - keep, text.len()));
    } else if cap >= SHORT_MARKER.len() {
        out.push_str(SHORT_MARKER);
    }
    Cow::Owned(out)
}

/// The marker of a cut too small for the long one.
const SHORT_MARKER: &str = "…";

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
pub(crate) fn fits(value: &Value, cap: usize) -> bool {
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
        Value::Object(members) => {
            take(budget, members.len() * 2 + 2)
                && members.iter().all(|(key, item)| {
                    take(budget, string_bound(key)) && within_bound(item, budget)
                })
        }
    }
}

/// Every byte of a string escapes to at most six (`\u001f`), plus the quotes.
fn string_bound(text: &str) -> usize {
    text.len().saturating_mul(LONGEST_ESCAPE).saturating_add(2)
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

/// The size of `value` as compact JSON, without building the text;
/// `usize::MAX` for a value whose `Serialize` fails, which no limit admits.
pub(crate) fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = Counter {
        written: 0,
        cap: usize::MAX,
    };
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.written,
        Err(_) => usize::MAX,
    }
}

/// Over the cap, partial results keep their first items (or object members) that fit,
/// and a `_truncated` marker says how many were dropped: with how many bytes
/// and of how many in all when there is room, the count alone when there is not.
fn trim_partial(partial: &mut Value, cap: usize) {
    let total = json_len(partial);
    if total <= cap {
        return;
    }
    match partial {
        Value::Array(items) => {
            let total_items = items.len();
            let full = |dropped: usize, bytes: usize| {
                json!({ "_truncated": {
                    "droppedItems": dropped,
                    "droppedBytes": bytes,
                    "totalItems": total_items,
                }})
            };
            let short = |dropped: usize| json!({ "_truncated": { "droppedItems": dropped } });
            // The room the marker needs at most, whatever the counts.
            let (room, long) = match cap.checked_sub(json_len(&full(total_items, total)) + 3) {
                Some(room) => (room, true),
                None => (cap.saturating_sub(json_len(&short(total_items)) + 3), false),
            };
            let mut used = 0;
            let kept = items
                .iter()
                .take_while(|item| {
                    used += json_len(*item) + 1;
                    used <= room
                })
                .count();
            let dropped: Vec<Value> = items.drain(kept..).collect();
            let dropped_bytes: usize = dropped.iter().map(json_len).sum();
            items.push(if long {
                full(dropped.len(), dropped_bytes)
            } else {
                short(dropped.len())
            });
        }
        Value::Object(members) => {
            let total_fields = members.len();
            let full = |dropped: usize, bytes: usize| json!({ "droppedFields": dropped, "droppedBytes": bytes, "totalFields": total_fields });
            let short = |dropped: usize| json!({ "droppedFields": dropped });
            let marker_len = |marker: &Value| json_len("_truncated") + 1 + json_len(marker) + 3;
            let (room, long) = match cap.checked_sub(marker_len(&full(total_fields, total))) {
                Some(room) => (room, true),
                None => (cap.saturating_sub(marker_len(&short(total_fields))), false),
            };
            let mut used = 0;
            let mut kept = Map::new();
            let mut dropped = 0;
            let mut dropped_bytes = 0;
            for (key, value) in std::mem::take(members) {
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
                if long {
                    full(dropped, dropped_bytes)
                } else {
                    short(dropped)
                },
            );
            *members = kept;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
