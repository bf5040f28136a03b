//! Secret values, wherever they turn up: a call knows the values that were
//! sent where its tool's schema marks a secret and into a
//! [`Secret`](crate::Secret) — and, calling a remote tool, those sent under
//! keys its schema does not declare, or every text it sent when it has no
//! schema; no text about the call may quote them.
//! A server's message that echoes a rejected password, an `attempted_query`
//! a server wrote with the arguments it received, a violation that quotes
//! the value: each is masked by the values themselves, whatever the schema
//! says of the place they turn up in.
//!
//! A value of four characters or more is masked wherever it appears; a
//! shorter one only where it stands as a word of its own (not inside a
//! longer run of letters and digits), so that a one-letter secret does not
//! take every such letter out of a message. A number is masked where it is
//! the number, or a word of a text.
//!
//! One call's secrets are bounded — the first [`MAX_VALUES`] texts,
//! [`MAX_BYTES`] in all — so that a client cannot make a server build a
//! search for half a million strings by sending them where a password goes.
//! Past the bound, the texts left out are not searched for, and every text
//! of the call is masked whole instead: none could be shown safely.
//!
//! A secret of 24 to 512 characters is searched for in stretches of 12
//! too, so that a text quoting it cut short shows none of it (pydantic
//! quotes a long input as its first 25 characters, `...` and its last 24).
//! Each string is searched for as it is, as JSON and Rust's `{:?}` escape
//! it, and as a URL carries it (percent-encoded, spaces as `%20` or `+`);
//! a whole float also as Rust writes it (`1234`, not `1234.0`).

use std::borrow::Cow;
use std::collections::HashSet;

use aho_corasick::AhoCorasick;
use serde_json::Value;

use crate::redact::REDACTED;

/// Values shorter than this are masked only where they stand as a word.
const ANYWHERE: usize = 4;

/// The most texts one call searches for.
pub(crate) const MAX_VALUES: usize = 4096;

/// How many characters of a long secret a text may quote, cut short,
/// before it is masked.
const WINDOW: usize = 12;

/// The shortest secret searched for in stretches too: shorter ones are
/// not cut short when quoted.
const WINDOWED: usize = 2 * WINDOW;

/// The longest: a key or a token, not a document.
const MOST_WINDOWED: usize = 512;

/// The most bytes of texts one call searches for.
pub(crate) const MAX_BYTES: usize = 256 * 1024;

/// The secret values of one call, as the texts to look for.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecretValues {
    texts: Vec<String>,
    known: HashSet<String>,
    bytes: usize,
    /// Whether a text was left out past the bound: then no text of the
    /// call can be shown as it is.
    overflowed: bool,
    /// The stretches of long secrets, bounded apart: they never crowd out
    /// a secret itself.
    stretches: Vec<String>,
}

/// The most stretches of long secrets one call searches for.
const MAX_STRETCHES: usize = 4096;

/// What a URL's component encoding escapes: all but RFC 3986's unreserved.
const COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

impl SecretValues {
    /// Every string and number inside `value` is secret.
    pub(crate) fn add(&mut self, value: &Value) {
        self.walk(value, |_| true);
    }

    /// Every string inside `value` long enough to be masked wherever it
    /// appears: what is sent to a tool whose schema says nothing of where
    /// its secrets are.
    pub(crate) fn add_long_strings(&mut self, value: &Value) {
        self.walk(
            value,
            |text| matches!(text, Value::String(text) if text.chars().count() >= ANYWHERE),
        );
    }

    fn walk(&mut self, value: &Value, wanted: impl Fn(&Value) -> bool) {
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            match value {
                Value::String(text) if wanted(value) => self.add_text(text.clone()),
                Value::Number(number) if wanted(value) => {
                    // `1234.0` as Rust's `Display` writes it: `1234`.
                    if let Some(whole) = number
                        .as_f64()
                        .filter(|n| n.fract() == 0.0 && n.abs() < 1e15)
                        && number.is_f64()
                    {
                        self.add_text(format!("{whole}"));
                    }
                    self.add_text(number.to_string());
                }
                Value::Array(items) => pending.extend(items),
                Value::Object(members) => pending.extend(members.values()),
                _ => {}
            }
        }
    }

    fn add_text(&mut self, text: String) {
        if text.is_empty() || text == REDACTED || self.known.contains(&text) {
            return;
        }
        // As a JSON text would quote it, as Rust's `{:?}` would, and as a
        // URL carries it (a component; a form, spaces as `+`), where those
        // differ.
        let escaped = serde_json::to_string(&text).expect("a string serializes");
        let escaped = &escaped[1..escaped.len() - 1];
        let debug = text.escape_debug().to_string();
        let component = percent_encoding::utf8_percent_encode(&text, COMPONENT).to_string();
        let form = component.replace("%20", "+");
        for form in [escaped, &debug, &component, &form] {
            if form != text {
                self.push(form.to_owned());
            }
        }
        self.push(text.clone());
        self.add_windows(&text);
    }

    /// The stretches of [`WINDOW`] characters of a long secret, to mask
    /// what a text quotes of it cut short: pydantic quotes a long input
    /// as its first 25 characters, `...` and its last 24. Past the bound,
    /// stretches are left out, never a secret (each is searched for whole
    /// still): they are bounded apart ([`MAX_STRETCHES`]).
    fn add_windows(&mut self, text: &str) {
        let count = text.chars().count();
        if !(WINDOWED..=MOST_WINDOWED).contains(&count) {
            return;
        }
        let bounds: Vec<usize> = (text.char_indices().map(|(at, _)| at))
            .chain([text.len()])
            .collect();
        for start in 0..=count - WINDOW {
            if self.stretches.len() == MAX_STRETCHES {
                return;
            }
            let window = &text[bounds[start]..bounds[start + WINDOW]];
            if self.known.insert(window.to_owned()) {
                self.stretches.push(window.to_owned());
            }
        }
    }

    fn push(&mut self, text: String) {
        if self.known.contains(&text) {
            return;
        }
        if self.texts.len() == MAX_VALUES || self.bytes + text.len() > MAX_BYTES {
            self.overflowed = true;
            return;
        }
        self.bytes += text.len();
        self.known.insert(text.clone());
        self.texts.push(text);
    }

    /// Every text of `other` too.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn merge(&mut self, other: &SecretValues) {
        self.overflowed |= other.overflowed;
        for text in &other.texts {
            self.push(text.clone());
        }
        for stretch in &other.stretches {
            if self.stretches.len() < MAX_STRETCHES && self.known.insert(stretch.clone()) {
                self.stretches.push(stretch.clone());
            }
        }
    }

    /// The values `masked` hides of `original`: wherever the masked value
    /// holds `"[redacted]"` and the original one something else.
    pub(crate) fn add_hidden(&mut self, original: &Value, masked: &Value) {
        let mut pending = vec![(original, masked)];
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
        if self.texts.is_empty() && !self.overflowed {
            return None;
        }
        // Bounded as they are, the texts always fit an automaton.
        let patterns = || self.texts.iter().chain(&self.stretches);
        let automaton = AhoCorasick::new(patterns()).expect("the secret values fit an automaton");
        let short = patterns()
            .map(|text| text.chars().count() < ANYWHERE)
            .collect();
        Some(Masker {
            automaton,
            short,
            whole: self.overflowed,
        })
    }
}

/// The most matches of secret values searched for in one text.
const MAX_MATCHES: usize = 64 * 1024;

/// Masks a call's secret values in texts and JSON values.
#[derive(Debug)]
pub(crate) struct Masker {
    automaton: AhoCorasick,
    /// Per value: whether it is masked only as a word of its own.
    short: Vec<bool>,
    /// Whether every text is masked whole: the call's secrets were past
    /// the bound, and some are not searched for.
    whole: bool,
}

impl Masker {
    /// `text` with every secret value in it replaced by `"[redacted]"`;
    /// borrowed when there is none.
    ///
    /// Secret values that overlap each other are all found, so their
    /// matches are bounded ([`MAX_MATCHES`]): values a caller chose to
    /// nest inside each other (`aaaa`, `aaaaa`, …) would otherwise find
    /// hundreds of matches at every byte of a long text. A text past the
    /// bound is masked whole.
    pub(crate) fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.whole && !text.is_empty() && text != REDACTED {
            return Cow::Owned(REDACTED.to_owned());
        }
        self.searched(text)
    }

    /// `text` with every secret value searched for masked.
    fn searched<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let word = |at: Option<char>| at.is_none_or(|c| !c.is_alphanumeric());
        let mut found = self.automaton.find_overlapping_iter(text);
        let mut spans: Vec<(usize, usize)> = (found.by_ref())
            .take(MAX_MATCHES)
            .filter(|found| {
                !self.short[found.pattern().as_usize()]
                    || (word(text[..found.start()].chars().next_back())
                        && word(text[found.end()..].chars().next()))
            })
            .map(|found| (found.start(), found.end()))
            .collect();
        if found.next().is_some() {
            return Cow::Owned(REDACTED.to_owned());
        }
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

    /// Masks the secret values everywhere in `envelope`: its texts, its
    /// attempted query, its partial results, and the original error it
    /// keeps (its `Debug`, its `source()`) — through the visitors the
    /// envelope offers.
    pub(crate) fn envelope(&self, envelope: &mut crate::ErrorEnvelope) {
        envelope.visit_texts(&mut |text| {
            if let Cow::Owned(masked) = self.text(text) {
                *text = masked;
            }
        });
        envelope.visit_values(&mut |value| self.value(value));
        envelope.mask_origin(&|text| match self.text(text) {
            Cow::Owned(masked) => Some(masked),
            Cow::Borrowed(_) => None,
        });
    }

    /// Whether `text` is, whole, one of the secret values.
    fn is_whole(&self, text: &str) -> bool {
        self.whole
            || self
                .automaton
                .find_overlapping_iter(text)
                .any(|found| found.start() == 0 && found.end() == text.len())
    }

    /// Masks `value` in place: secret values inside its strings and keys,
    /// and numbers that are one (a number that merely holds one keeps its
    /// type: `7.5` is not the secret `7`).
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
                    if self.is_whole(&number.to_string()) {
                        *value = Value::String(REDACTED.to_owned());
                    }
                }
                Value::Array(items) => pending.extend(items.iter_mut()),
                Value::Object(members) => {
                    // Keys are searched, never masked whole: they name what
                    // an object holds, each its own place.
                    if members
                        .keys()
                        .any(|key| matches!(self.searched(key), Cow::Owned(_)))
                    {
                        *members = std::mem::take(members)
                            .into_iter()
                            .map(|(key, value)| (self.searched(&key).into_owned(), value))
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

    /// Secrets a caller nested inside each other find hundreds of matches
    /// at every byte of a long text: past the bound, the text is masked
    /// whole — in bounded time and memory, and hiding its tail too.
    #[test]
    fn nested_secrets_cost_a_bounded_search() {
        let nested: Vec<Value> = (4..600).map(|n| json!("a".repeat(n))).collect();
        let masker = masker(Value::Array(nested));
        let text = format!("{}tail-visible", "a".repeat(100_000));
        assert_eq!(masker.text(&text), REDACTED);
        // Below the bound, masked as always.
        assert_eq!(masker.text("xx aaaa yy"), "xx [redacted] yy");
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
        let masker = masker(json!({"a": "hunter2", "b": 424242, "c": 7}));
        let mut value = json!({"password": "hunter2", "pin": 424242, "hunter2": true,
            "note": ["said hunter2"], "other": 8, "price": 7.5, "delta": -7, "seven": 7});
        masker.value(&mut value);
        assert_eq!(
            value,
            json!({"password": "[redacted]", "pin": "[redacted]", "[redacted]": true,
                "note": ["said [redacted]"], "other": 8, "price": 7.5, "delta": -7,
                "seven": "[redacted]"})
        );
    }

    #[test]
    fn hidden_values_are_those_the_mask_replaced() {
        let original = json!({"user": "ops", "creds": {"password": "hunter2"}, "apiKey": "sk-1"});
        let masked =
            json!({"user": "ops", "creds": {"password": "[redacted]"}, "apiKey": "[redacted]"});
        let mut secrets = SecretValues::default();
        secrets.add_hidden(&original, &masked);
        let masker = secrets.masker().unwrap();
        assert_eq!(
            masker.text("ops: hunter2 sk-1"),
            "ops: [redacted] [redacted]"
        );
    }

    #[test]
    fn a_call_searches_for_a_bounded_number_of_values() {
        // Half a million short strings where a password goes: the search
        // holds the first MAX_VALUES, each added in constant time.
        let many: Vec<Value> = (0..500_000).map(|i| json!(format!("v{i:06}"))).collect();
        let mut secrets = SecretValues::default();
        secrets.add(&Value::Array(many));
        assert_eq!(secrets.texts.len(), MAX_VALUES);
        assert!(secrets.masker().is_some());
        let mut big = SecretValues::default();
        big.add(&json!(["x".repeat(MAX_BYTES), "hunter2"]));
        assert_eq!(big.texts, ["hunter2"]);
        // What is left out is not searched for, so nothing is shown.
        // Keys are searched still, not masked whole.
        for (secrets, key) in [(secrets, "v499999"), (big, "hunter2")] {
            let masker = secrets.masker().unwrap();
            assert_eq!(masker.text("the directory is down"), REDACTED);
            let mut value = json!({"user": "ops", "n": 7, key: true});
            masker.value(&mut value);
            assert_eq!(
                value,
                json!({"user": REDACTED, "n": REDACTED, REDACTED: true})
            );
        }
    }

    /// A long secret quoted cut short, as pydantic quotes a long input.
    #[test]
    fn a_long_secret_quoted_cut_short_shows_none_of_it() {
        let key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijklmnop";
        let masker = masker(json!([key]));
        let quoted = format!(
            "Field required [type=missing, input_value={{'api_key': '{}...{}'}}, input_type=dict]",
            &key[..25],
            &key[key.len() - 24..]
        );
        assert_eq!(
            masker.text(&quoted),
            "Field required [type=missing, input_value={'api_key': '[redacted]...[redacted]'}, input_type=dict]"
        );
        // Words of it shorter than a stretch are left alone.
        assert_eq!(
            masker.text("sk-proj-Ab is a prefix"),
            "sk-proj-Ab is a prefix"
        );
    }

    /// Stretches are bounded apart: forty long secrets crowd out neither
    /// the secret after them nor the texts that hold none.
    #[test]
    fn stretches_never_crowd_out_a_secret() {
        let long: Vec<Value> = (0..40)
            .map(|n| {
                json!(format!(
                    "{n:03}-{}",
                    "abcdefghijklmnopqrstuvwxyz0123456789".repeat(14)
                ))
            })
            .collect();
        let mut secrets = SecretValues::default();
        secrets.add(&Value::Array(long));
        secrets.add(&json!("hunter2"));
        let masker = secrets.masker().unwrap();
        assert_eq!(
            masker.text("the directory is down"),
            "the directory is down"
        );
        assert_eq!(
            masker.text("bad password hunter2"),
            "bad password [redacted]"
        );
    }

    /// A secret as a URL, Rust's `{:?}` or Rust's `Display` of a float
    /// writes it.
    #[test]
    fn a_secret_is_masked_in_the_forms_it_is_written_in() {
        let masker = masker(json!(["Ab+c/d== x", "tab\there\u{1}", 1234.0]));
        for (text, masked) in [
            (
                "GET https://api.test/v1?key=Ab%2Bc%2Fd%3D%3D%20x failed",
                "GET https://api.test/v1?key=[redacted] failed",
            ),
            ("key=Ab%2Bc%2Fd%3D%3D+x", "key=[redacted]"),
            (&format!("{:?}", "tab\there\u{1}"), "\"[redacted]\""),
            ("took 1234 ms", "took [redacted] ms"),
        ] {
            assert_eq!(masker.text(text), masked, "{text}");
        }
    }

    #[test]
    fn an_unknown_schema_makes_every_long_string_sent_a_secret() {
        let mut secrets = SecretValues::default();
        secrets.add_long_strings(&json!({"user": "ops", "password": "hunter2", "n": 123_456}));
        assert_eq!(secrets.texts, ["hunter2"]);
    }
}
