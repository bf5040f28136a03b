//! `attempted_query` as an envelope holds it: a JSON value, or the JSON text
//! of one — the arguments a `#[tool]` captured — read into a value only when
//! someone asks for it. A failed call whose envelope is sent and dropped never
//! builds the tree: its text is sent as it was captured.

use std::fmt;
use std::sync::OnceLock;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::json::text::JsonText;

/// The attempted query: a value, or the compact JSON text of one.
#[derive(Clone)]
pub(crate) struct Attempted {
    /// The JSON text, while the value has not been changed: inline when
    /// short, so that a failed call's captured query is moved, not copied.
    text: Option<JsonText>,
    /// The value, once read (or given).
    value: OnceLock<Value>,
}

impl Attempted {
    /// The attempted query `value`.
    pub(crate) fn value(value: Value) -> Self {
        Attempted {
            text: None,
            value: OnceLock::from(value),
        }
    }

    /// The attempted query written as `text`, compact JSON that `serde_json`
    /// wrote, nested no deeper than [`MAX_DEPTH`](crate::MAX_DEPTH).
    pub(crate) fn text(text: JsonText) -> Self {
        Attempted {
            text: Some(text),
            value: OnceLock::new(),
        }
    }

    /// The value, read from the text the first time it is asked for.
    pub(crate) fn get(&self) -> &Value {
        self.value.get_or_init(|| {
            let text = self.text.as_ref().map_or("null", JsonText::as_str);
            serde_json::from_str(text).expect("an attempted query's text is JSON serde_json wrote")
        })
    }

    /// The value, to change: the text, which would no longer say it, is
    /// forgotten.
    pub(crate) fn get_mut(&mut self) -> &mut Value {
        self.get();
        self.text = None;
        self.value.get_mut().expect("read just above")
    }

    /// The value.
    pub(crate) fn into_value(mut self) -> Value {
        self.get_mut();
        self.value.into_inner().expect("read just above")
    }

    /// The JSON text, while it says the value: its length is the length of
    /// the value as sent.
    pub(crate) fn as_text(&self) -> Option<&str> {
        self.text.as_ref().map(JsonText::as_str)
    }
}

impl PartialEq for Attempted {
    fn eq(&self, other: &Self) -> bool {
        match (self.as_text(), other.as_text()) {
            (Some(mine), Some(theirs)) if mine == theirs => true,
            _ => self.get() == other.get(),
        }
    }
}

impl fmt::Debug for Attempted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.get(), f)
    }
}

/// The text, sent as it is read (its keys in the order they were captured),
/// to any serializer, with no value built on the way.
pub(crate) struct Text<'a>(pub(crate) &'a str);

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut json = serde_json::Deserializer::from_str(self.0);
        serde_transcode::transcode(&mut json, serializer)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Attempted, Text};
    use crate::json::text::JsonText;

    const CAPTURED: &str = r#"{"order":"O-1","amount":620,"note":"a \"quoted\" word"}"#;

    #[test]
    fn text_is_read_once_asked_and_sent_as_captured() {
        let attempted = Attempted::text(JsonText::new(CAPTURED));
        assert_eq!(attempted.as_text(), Some(CAPTURED));
        let value = json!({"order": "O-1", "amount": 620, "note": "a \"quoted\" word"});
        assert_eq!(attempted.get(), &value);
        // Read, it is still sent as captured: keys in their captured order.
        assert_eq!(serde_json::to_string(&Text(CAPTURED)).unwrap(), CAPTURED);
        assert_eq!(serde_json::to_value(Text(CAPTURED)).unwrap(), value);
        assert_eq!(attempted, Attempted::value(value.clone()));
        assert_eq!(format!("{attempted:?}"), format!("{value:?}"));
    }

    #[test]
    fn a_changed_value_forgets_its_text() {
        let mut attempted = Attempted::text(JsonText::new(CAPTURED));
        attempted.get_mut()["order"] = json!("[masked]");
        assert_eq!(attempted.as_text(), None);
        assert_eq!(attempted.get()["order"], "[masked]");
        assert_eq!(attempted.into_value()["amount"], 620);
    }
}
