//! Secret values, wherever they turn up: a call knows the values that were
//! sent where its tool's schema marks a secret, under keys the tool does not
//! declare, and into a [`Secret`](crate::Secret); no text about the call may
//! quote them. A server's message that echoes a rejected password, an
//! `attempted_query` a server wrote with the arguments it received, a
//! violation that quotes the value: each is masked by the values themselves,
//! whatever the schema says of the place they turn up in.
//!
//! A value of four characters or more is masked wherever it appears; a
//! shorter one only where it stands as a word of its own (not inside a
//! longer run of letters and digits), so that a one-letter secret does not
//! take every such letter out of a message. Strings are searched for as
//! they are and as JSON escapes them; numbers as JSON writes them.

use std::borrow::Cow;

use aho_corasick::AhoCorasick;
use serde_json::{Map, Value};

use crate::redact::REDACTED;

/// Values shorter than this are masked only where they stand as a word.
const ANYWHERE: usize = 4;

/// The secret values of one call, as the texts to look for.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecretValues {
    texts: Vec<String>,
}

impl SecretValues {
    /// Every string and number inside `value` is secret.
    pub(crate) fn add(&mut self, value: &Value) {
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            match value {
                Value::String(text) => self.add_text(text.clone()),
                Value::Number(number) => self.add_text(number.to_string()),
                Value::Array(items) => pending.extend(items),
                Value::Object(members) => pending.extend(members.values()),
                Value::Bool(_) | Value::Null => {}
            }
        }
    }

    fn add_text(&mut self, text: String) {
        if text.is_empty() || text == REDACTED || self.texts.contains(&text) {
            return;
        }
        // As a JSON text would quote it, if that differs.
        let escaped = serde_json::to_string(&text).expect("a string serializes");
        let escaped = &escaped[1..escaped.len() - 1];
        if escaped != text && !self.texts.iter().any(|known| known == escaped) {
            self.texts.push(escaped.to_owned());
        }
        self.texts.push(text);
    }

    /// The values `masked` hides of `original`: wherever the masked
    /// arguments hold `"[redacted]"` and the original ones something else.
    pub(crate) fn add_hidden(
        &mut self,
        original: &Map<String, Value>,
        masked: &Map<String, Value>,
    ) {
        let mut pending: Vec<(&Value, &Value)> = original
            .iter()
            .filter_map(|(key, value)| Some((value, masked.get(key)?)))
            .collect();
        while let Some((original, masked)) = pending.pop() {
            match (original, masked) {
                (original, Value::String(text)) if text == REDACTED && original != masked => {
                    self.add(original);
                }
                (Value::Object(original), Value::Object(masked)) => pending.extend(
                    original
                        .iter()
                        .filter_map(|(key, value)| Some((value, masked.get(key)?))),
                ),
                (Value::Array(original), Value::Array(masked)) => {
                    pending.extend(original.iter().zip(masked));
                }
                _ => {}
            }
        }
    }

    /// What masks the values, or `None` when there are none.
    pub(crate) fn masker(&self) -> Option<Masker> {
        if self.texts.is_empty() {
            return None;
        }
        let automaton = AhoCorasick::new(&self.texts).expect("the secret values fit an automaton");
        let short = self
            .texts
            .iter()
            .map(|text| text.chars().count() < ANYWHERE)
            .collect();
        Some(Masker { automaton, short })
    }
}

/// Masks a call's secret values in texts and JSON values.
#[derive(Debug)]
pub(crate) struct Masker {
    automaton: AhoCorasick,
    /// Per value: whether it is masked only as a word of its own.
    short: Vec<bool>,
}

impl Masker {
    /// `text` with every secret value in it replaced by `"[redacted]"`;
    /// borrowed when there is none.
    pub(crate) fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let word = |at: Option<char>| at.is_none_or(|c| !c.is_alphanumeric());
        let mut spans: Vec<(usize, usize)> = self
            .automaton
            .find_overlapping_iter(text)
            .filter(|found| {
                !self.short[found.pattern().as_usize()]
                    || (word(text[..found.start()].chars().next_back())
                        && word(text[found.end()..].chars().next()))
            })
            .map(|found| (found.start(), found.end()))
            .collect();
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable();
        let mut masked = String::with_capacity(text.len());
        let mut copied = 0;
        for (start, end) in spans {
            if end <= copied {
                continue;
            }
            if start >= copied {
                masked.push_str(&text[copied..start]);
                masked.push_str(REDACTED);
            }
            copied = end;
        }
        masked.push_str(&text[copied..]);
        Cow::Owned(masked)
    }

    /// Masks `value` in place: secret values inside its strings and keys,
    /// and numbers that are one.
    pub(crate) fn value(&self, value: &mut Value) {
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            match value {
                Value::String(text) => {
                    if let Cow::Owned(masked) = self.text(text) {
                        *text = masked;
                    }
                }
                Value::Number(number) => {
                    if matches!(self.text(&number.to_string()), Cow::Owned(_)) {
                        *value = Value::String(REDACTED.to_owned());
                    }
                }
                Value::Array(items) => pending.extend(items.iter_mut()),
                Value::Object(members) => {
                    if members
                        .keys()
                        .any(|key| matches!(self.text(key), Cow::Owned(_)))
                    {
                        *members = std::mem::take(members)
                            .into_iter()
                            .map(|(key, value)| (self.text(&key).into_owned(), value))
                            .collect();
                    }
                    pending.extend(members.values_mut());
                }
                Value::Bool(_) | Value::Null => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn masker(values: Value) -> Masker {
        let mut secrets = SecretValues::default();
        secrets.add(&values);
        secrets.masker().unwrap()
    }

    #[test]
    fn a_secret_is_masked_wherever_a_text_quotes_it() {
        let masker = masker(json!(["hunter2", 12345678]));
        for (text, masked) in [
            (
                "Input should be a valid string [type=string_type, input_value=12345678, input_type=int]",
                "Input should be a valid string [type=string_type, input_value=[redacted], input_type=int]",
            ),
            (
                "Field required [type=missing, input_value={'password': 'hunter2'}, input_type=dict]",
                "Field required [type=missing, input_value={'password': '[redacted]'}, input_type=dict]",
            ),
            ("xhunter2y", "x[redacted]y"),
            ("nothing here", "nothing here"),
        ] {
            assert_eq!(masker.text(text), masked, "{text}");
        }
        assert!(matches!(masker.text("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_short_secret_is_masked_only_as_a_word() {
        let masker = masker(json!(["ab", "abcdef"]));
        assert_eq!(masker.text("pin ab rejected"), "pin [redacted] rejected");
        assert_eq!(masker.text("tab, cab, abc"), "tab, cab, abc");
        assert_eq!(masker.text("xabcdefx"), "x[redacted]x");
        assert_eq!(masker.text("ab=abcdef"), "[redacted]=[redacted]");
    }

    #[test]
    fn json_escapes_are_found_too() {
        let masker = masker(json!("pa\"ss\\word"));
        let quoted = serde_json::to_string(&json!({"password": "pa\"ss\\word"})).unwrap();
        assert_eq!(masker.text(&quoted), r#"{"password":"[redacted]"}"#);
    }

    #[test]
    fn values_keys_and_numbers_are_masked() {
        let masker = masker(json!({"a": "hunter2", "b": 424242}));
        let mut value = json!({"password": "hunter2", "pin": 424242, "hunter2": true,
            "note": ["said hunter2"], "other": 7});
        masker.value(&mut value);
        assert_eq!(
            value,
            json!({"password": "[redacted]", "pin": "[redacted]", "[redacted]": true,
                "note": ["said [redacted]"], "other": 7})
        );
    }

    #[test]
    fn hidden_values_are_those_the_mask_replaced() {
        let original = json!({"user": "ops", "creds": {"password": "hunter2"}, "apiKey": "sk-1"});
        let masked =
            json!({"user": "ops", "creds": {"password": "[redacted]"}, "apiKey": "[redacted]"});
        let mut secrets = SecretValues::default();
        secrets.add_hidden(original.as_object().unwrap(), masked.as_object().unwrap());
        let masker = secrets.masker().unwrap();
        assert_eq!(
            masker.text("ops: hunter2 sk-1"),
            "ops: [redacted] [redacted]"
        );
    }
}
