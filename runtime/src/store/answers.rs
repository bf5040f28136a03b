//! Which answers a task keeps ([`Store::answer_task`](super::Store::answer_task)):
//! the first to each key, as rmcp's own task manager keeps them, whichever
//! replica an answer reaches. An answer to a question the record does not
//! show yet is kept too — the replica that runs the task shows its
//! questions before it writes them here, and a client may answer through
//! another at once — but within a bound: a caller cannot grow their task's
//! record by answering what nobody asked.

use serde_json::{Map, Value};

use crate::limits::json_len;

/// The most answers a task keeps to keys its record does not ask.
pub(crate) const MOST_UNASKED: usize = 64;

/// The most bytes (as JSON) a task's answers may take before an answer to
/// a key its record does not ask is dropped.
pub(crate) const MOST_BYTES: usize = 1 << 20;

/// Adds to `kept` each answer of `responses` (key → answer) whose key has
/// no answer yet: always when `asked` (the task's input requests, key →
/// question) names it, else while the answers not asked for stay under
/// [`MOST_UNASKED`] and all of them under [`MOST_BYTES`]. Whether any was
/// added.
pub(crate) fn merge(
    kept: &mut Map<String, Value>,
    asked: Option<&Value>,
    responses: &Value,
) -> bool {
    let Value::Object(responses) = responses else {
        return false;
    };
    let asked = asked.and_then(Value::as_object);
    let is_asked = |key: &str| asked.is_some_and(|asked| asked.contains_key(key));
    let mut unasked = kept.keys().filter(|key| !is_asked(key)).count();
    let mut bytes = json_len(&*kept);
    let mut added = false;
    for (key, answer) in responses {
        if kept.contains_key(key) {
            continue;
        }
        let size = json_len(key.as_str()) + 1 + json_len(answer);
        if !is_asked(key) {
            if unasked >= MOST_UNASKED || bytes + size > MOST_BYTES {
                continue;
            }
            unasked += 1;
        }
        bytes += size;
        kept.insert(key.clone(), answer.clone());
        added = true;
    }
    added
}
