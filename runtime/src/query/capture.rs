//! Capturing a call's arguments — the `attempted_query` — before the body runs.
//!
//! The arguments are serialized once, as compact JSON text, straight into
//! the capture when they are short — the common case, no allocation, no
//! per-thread buffer, nothing copied afterwards — or onto the heap past
//! that.
//! Nothing is parsed unless the call fails: a successful call pays for one
//! serialization, and a `serde_json::Value` tree only for the value of each
//! redacted or `Secret` argument, noted to be masked wherever a failure
//! quotes it.
//!
//! An argument JSON cannot carry — a NaN or an infinity, a value nested too
//! deep, a `Serialize` that fails or panics — is captured as a marker that
//! says so, and the capture remembers it: a guard is never asked to judge a
//! value it cannot read (see [`Capture::unrepresentable`]).
// Support for generated code, reached only through `__private`: the
// `# Errors` of these functions are the generated code's concern.
#![allow(clippy::missing_errors_doc)]

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::envelope::Violation;
use crate::json::strict::{self, Problem};
use crate::json::text::{JsonText, TextBuf};
use crate::redact::REDACTED;
use crate::redact::secret::{Secret, noting};

/// The captured arguments of one call: a JSON object, as text.
#[derive(Clone, PartialEq, Eq)]
pub struct Capture {
    text: JsonText,
    /// What only some calls have; `None` in the common case, so that it
    /// costs nothing.
    rare: Option<Box<Rare>>,
}

/// What only some captures have.
#[derive(Clone, PartialEq, Eq, Default)]
struct Rare {
    /// The arguments that could not be represented, and why.
    unrepresentable: Vec<Violation>,
    /// The values of the redacted arguments and the `Secret`s, as JSON:
    /// masked wherever a failure of the call quotes them.
    secrets: Vec<Value>,
}

impl Capture {
    /// The arguments JSON could not carry as they are, each with why: they
    /// are captured as markers, so a guard would read something else than
    /// what the tool gets.
    pub fn unrepresentable(&self) -> &[Violation] {
        self.rare
            .as_deref()
            .map_or(&[], |rare| rare.unrepresentable.as_slice())
    }

    /// The values of the arguments captured as `"[redacted]"` — redacted
    /// ones, and `Secret`s — that could be serialized: what a failure of the
    /// call may not quote.
    pub(crate) fn secrets(&self) -> &[Value] {
        self.rare
            .as_deref()
            .map_or(&[], |rare| rare.secrets.as_slice())
    }

    /// The JSON text of the arguments object.
    pub fn as_str(&self) -> &str {
        self.text.as_str()
    }

    /// The JSON text, to keep: an envelope's attempted query.
    pub(crate) fn into_text(self) -> JsonText {
        self.text
    }

    /// The arguments as a JSON value (an object).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.as_str())
            .expect("a capture holds the JSON that serde_json wrote for it")
    }
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Writes the fields of the arguments object, one call per captured parameter.
pub struct CaptureWriter {
    buf: TextBuf,
    empty: bool,
    /// Made at the first argument that needs it, or after the arguments,
    /// for a `Secret` noted inside one.
    rare: Option<Box<Rare>>,
}

/// Prints what it wrote so far, never the secret values it noted.
impl fmt::Debug for CaptureWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rare = self.rare.as_deref();
        f.debug_struct("CaptureWriter")
            .field("written", &self.buf)
            .field(
                "unrepresentable",
                &rare.map_or(&[][..], |rare| &rare.unrepresentable),
            )
            .field("secrets", &rare.map_or(0, |rare| rare.secrets.len()))
            .finish()
    }
}

/// An argument a `#[tool]` can capture into `attempted_query`.
#[diagnostic::on_unimplemented(
    message = "the argument type `{Self}` cannot be captured into `attempted_query`: it does not implement `serde::Serialize`",
    label = "`{Self}` is not `Serialize`",
    note = "leave it out of the capture with `#[tool(skip(<parameter>))]`, or derive `serde::Serialize` for it"
)]
pub trait Capturable {
    /// Serializes the argument as the value of its key, refusing what JSON
    /// cannot carry.
    fn capture_into(&self, writer: &mut TextBuf) -> Result<(), CaptureProblem>;
}

/// Why an argument could not be captured as it is.
#[derive(Debug)]
pub struct CaptureProblem(Problem);

#[diagnostic::do_not_recommend]
impl<T: Serialize + ?Sized> Capturable for T {
    fn capture_into(&self, writer: &mut TextBuf) -> Result<(), CaptureProblem> {
        strict::to_writer(self, writer).map_err(CaptureProblem)
    }
}

impl CaptureWriter {
    fn key(&mut self, name: &str) {
        let open: &[u8] = match std::mem::take(&mut self.empty) {
            true => b"\"",
            false => b",\"",
        };
        // Parameter names are Rust identifiers: nothing to escape.
        self.buf.extend(open);
        self.buf.extend(name.as_bytes());
        self.buf.extend(b"\":");
    }

    fn rare(&mut self) -> &mut Rare {
        self.rare.get_or_insert_default()
    }

    /// Captures `value` under `name`. A value JSON cannot carry as it is is
    /// kept as a string saying why, so the capture stays valid JSON, and is
    /// remembered as [unrepresentable](Capture::unrepresentable).
    pub fn arg<T: Capturable + ?Sized>(&mut self, name: &str, value: &T) {
        self.key(name);
        let start = self.buf.len();
        if let Err(CaptureProblem(problem)) = value.capture_into(&mut self.buf) {
            self.buf.truncate(start);
            let note = format!("[not representable in JSON: {problem}]");
            serde_json::to_writer(&mut self.buf, &note).expect("a string always serializes");
            self.rare().unrepresentable.push(Violation::new(
                name,
                format!("cannot be represented in JSON: {problem}"),
            ));
        }
    }

    /// Captures `name` with the value `"[redacted]"`: the key stays, the secret
    /// is never written into the capture.
    pub fn redacted(&mut self, name: &str) {
        self.key(name);
        self.buf.extend(b"\"");
        self.buf.extend(REDACTED.as_bytes());
        self.buf.extend(b"\"");
    }

    /// Notes `value`, a secret, so that a failure of the call that quotes
    /// it is masked. A value that cannot be serialized is not noted.
    fn secret_value<T: Serialize + ?Sized>(&mut self, value: &T) {
        if let Ok(value) = strict::to_value(value) {
            self.rare().secrets.push(value);
        }
    }
}

/// Autoref specialization: the value of a redacted argument, or the one a
/// `Secret` argument holds, noted when it can be serialized
/// (`(&SecretProbe(&argument)).note_redacted(writer)`, `….note_secret(writer)`).
pub struct SecretProbe<'a, T: ?Sized>(pub &'a T);

/// Never the value it probes: that is a secret.
impl<T: ?Sized> fmt::Debug for SecretProbe<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretProbe([redacted])")
    }
}

/// Chosen when a redacted argument can be serialized.
pub trait ViaRedactedValue {
    /// Notes the argument's value as a secret.
    fn note_redacted(&self, writer: &mut CaptureWriter);
}

impl<T: Serialize + ?Sized> ViaRedactedValue for SecretProbe<'_, T> {
    fn note_redacted(&self, writer: &mut CaptureWriter) {
        writer.secret_value(self.0);
    }
}

/// Chosen otherwise: nothing to note.
pub trait ViaNoRedactedValue {
    /// Nothing.
    fn note_redacted(&self, _: &mut CaptureWriter) {}
}

impl<T: ?Sized> ViaNoRedactedValue for &SecretProbe<'_, T> {}

/// Chosen when an argument is a `Secret` of a value that can be serialized.
pub trait ViaSecretValue {
    /// Notes the value the `Secret` holds.
    fn note_secret(&self, writer: &mut CaptureWriter);
}

impl<T: Serialize> ViaSecretValue for SecretProbe<'_, Secret<T>> {
    fn note_secret(&self, writer: &mut CaptureWriter) {
        writer.secret_value(self.0.expose());
    }
}

impl<T: Serialize> ViaSecretValue for SecretProbe<'_, &Secret<T>> {
    fn note_secret(&self, writer: &mut CaptureWriter) {
        writer.secret_value(self.0.expose());
    }
}

impl<T: Serialize> ViaSecretValue for SecretProbe<'_, Option<Secret<T>>> {
    fn note_secret(&self, writer: &mut CaptureWriter) {
        if let Some(secret) = self.0 {
            writer.secret_value(secret.expose());
        }
    }
}

/// Chosen otherwise: nothing to note.
pub trait ViaNoSecretValue {
    /// Nothing.
    fn note_secret(&self, _: &mut CaptureWriter) {}
}

impl<T: ?Sized> ViaNoSecretValue for &SecretProbe<'_, T> {}

/// Captures the arguments written by `write` as one JSON object.
///
/// `write` is a trait object so that this function is compiled once rather
/// than once per tool.
pub fn capture(write: &mut dyn FnMut(&mut CaptureWriter)) -> Capture {
    let mut writer = CaptureWriter {
        buf: TextBuf::starting_with(b"{"),
        empty: true,
        rare: None,
    };
    // A `Secret` inside an argument (a field, an item) serializes as
    // `"[redacted]"` and notes the value it holds.
    let ((), noted) = noting(|| write(&mut writer));
    let CaptureWriter {
        mut buf, mut rare, ..
    } = writer;
    if !noted.is_empty() {
        rare.get_or_insert_default().secrets.extend(noted);
    }
    buf.extend(b"}");
    Capture {
        text: buf.into_text(),
        rare,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn debug_never_prints_a_secret_probed_or_noted() {
        let probe = SecretProbe(&"hunter2");
        assert_eq!(format!("{probe:?}"), "SecretProbe([redacted])");
        let capture = capture(&mut |w| {
            w.redacted("token");
            SecretProbe(&"hunter2").note_redacted(w);
            assert!(!format!("{w:?}").contains("hunter2"), "{w:?}");
        });
        assert!(!format!("{capture:?}").contains("hunter2"), "{capture:?}");
    }

    #[test]
    fn empty_capture_is_an_empty_object() {
        let query = capture(&mut |_| {});
        assert_eq!(query.as_str(), "{}");
        assert_eq!(query.to_value(), json!({}));
    }

    #[test]
    fn captures_in_parameter_order_and_parses_back() {
        let query = capture(&mut |w| {
            w.arg("order", "O-77");
            w.arg("amount", &620);
            w.arg("tags", &["a", "b"]);
        });
        assert_eq!(
            query.as_str(),
            r#"{"order":"O-77","amount":620,"tags":["a","b"]}"#
        );
        assert_eq!(
            query.to_value(),
            json!({"order": "O-77", "amount": 620, "tags": ["a", "b"]})
        );
    }

    #[test]
    fn a_failing_serialize_leaves_valid_json() {
        use std::collections::HashMap;
        let mut bad = HashMap::new();
        bad.insert(vec![1u8], 1); // non-string map keys fail in serde_json
        let query = capture(&mut |w| {
            w.arg("bad", &bad);
            w.arg("ok", &1);
        });
        let value = query.to_value();
        assert!(
            value["bad"]
                .as_str()
                .unwrap()
                .starts_with("[not representable in JSON")
        );
        assert_eq!(value["ok"], 1);
        assert_eq!(query.unrepresentable().len(), 1);
        assert_eq!(query.unrepresentable()[0].field, "bad");
    }

    #[test]
    fn what_json_cannot_carry_is_never_captured_as_something_else() {
        struct Panics;
        impl Serialize for Panics {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                panic!("no")
            }
        }
        let query = capture(&mut |w| {
            w.arg("amount", &f64::INFINITY);
            w.arg("ratio", &f64::NAN);
            w.arg("weird", &Panics);
            w.arg("fine", &2.5);
        });
        let value = query.to_value();
        assert!(value["amount"].is_string(), "not null: {value}");
        assert!(value["ratio"].is_string(), "not null: {value}");
        assert!(value["weird"].as_str().unwrap().contains("panicked"));
        assert_eq!(value["fine"], 2.5);
        let fields: Vec<_> = query
            .unrepresentable()
            .iter()
            .map(|v| v.field.as_str())
            .collect();
        assert_eq!(fields, ["amount", "ratio", "weird"]);
    }

    #[test]
    fn nested_capture_uses_its_own_buffer() {
        struct Nested;
        impl Serialize for Nested {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let inner = capture(&mut |w| w.arg("inner", &1));
                s.serialize_str(inner.as_str())
            }
        }
        let query = capture(&mut |w| w.arg("outer", &Nested));
        assert_eq!(query.to_value(), json!({"outer": "{\"inner\":1}"}));
    }
}

#[cfg(test)]
mod size {
    use super::*;
    use crate::json::text::INLINE;

    #[test]
    fn short_captures_are_inline_and_long_ones_on_the_heap() {
        let short = capture(&mut |w| w.arg("id", &42));
        assert!(short.text.is_inline());
        let long_text = "x".repeat(200);
        let long = capture(&mut |w| w.arg("text", &long_text));
        assert!(!long.text.is_inline());
        assert_eq!(long.to_value()["text"], long_text);
        let exact = "y".repeat(INLINE - r#"{"t":""}"#.len());
        let edge = capture(&mut |w| w.arg("t", &exact));
        assert_eq!(edge.as_str().len(), INLINE);
        assert!(edge.text.is_inline());
        assert_eq!(edge.to_value()["t"], exact);
    }
}
