//! Which answers a task keeps ([`Store::answer_task`](super::Store::answer_task)):
//! answers to the questions it asks, the first to each — as rmcp's own task
//! manager keeps them, whichever replica an answer reaches. An answer to
//! anything else is dropped, so a caller cannot grow their task's record
//! by answering what nobody asked. (A client learns of a question only
//! once it is kept: the replica running the task shows it no sooner.)

use serde_json::{Map, Value};

/// Adds to `kept` each answer of `responses` (key → answer) whose key
/// `asked` (the task's input requests, key → question) names and `kept`
/// has no answer for yet: whether any was added.
pub(crate) fn merge(
    kept: &mut Map<String, Value>,
    asked: Option<&Value>,
    responses: &Value,
) -> bool {
    let (Some(Value::Object(asked)), Value::Object(responses)) = (asked, responses) else {
        return false;
    };
    let mut added = false;
    for (key, answer) in responses {
        if asked.contains_key(key) && !kept.contains_key(key) {
            kept.insert(key.clone(), answer.clone());
            added = true;
        }
    }
    added
}
