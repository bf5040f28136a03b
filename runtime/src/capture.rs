//! Capturing a call's arguments — the `attempted_query` — before the body runs.
//!
//! The arguments are serialized once, as compact JSON text, into a reused
//! per-thread buffer, and copied out: into the capture itself when they are
//! short — the common case, no allocation at all — or into one allocation of
//! the exact size. Nothing is parsed unless the call fails: a successful call
//! pays for one serialization, never for a `serde_json::Value` tree.

use std::cell::RefCell;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::envelope::REDACTED;

/// Captures up to this many bytes of JSON are kept inline.
const INLINE: usize = 118;

/// The captured arguments of one call: a JSON object, as text.
#[derive(Clone, PartialEq, Eq)]
pub struct Capture {
    repr: Repr,
}

#[derive(Clone, PartialEq, Eq)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Capture {
    fn new(json: &[u8]) -> Self {
        let repr = match u8::try_from(json.len()) {
            Ok(len) if json.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..json.len()].copy_from_slice(json);
                Repr::Inline { len, bytes }
            }
            _ => Repr::Heap(json.into()),
        };
        Capture { repr }
    }

    fn bytes(&self) -> &[u8] {
        match &self.repr {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Heap(bytes) => bytes,
        }
    }

    /// The JSON text of the arguments object.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.bytes()).expect("serde_json writes UTF-8")
    }

    /// The arguments as a JSON value (an object).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(self.bytes())
            .expect("a capture holds the JSON that serde_json wrote for it")
    }
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Writes the fields of the arguments object, one call per captured parameter.
pub struct CaptureWriter<'a> {
    buf: &'a mut Vec<u8>,
    empty: bool,
}

/// An argument a `#[tool]` can capture into `attempted_query`.
#[diagnostic::on_unimplemented(
    message = "the argument type `{Self}` cannot be captured into `attempted_query`: it does not implement `serde::Serialize`",
    label = "`{Self}` is not `Serialize`",
    note = "leave it out of the capture with `#[tool(skip(<parameter>))]`, or derive `serde::Serialize` for it"
)]
pub trait Capturable {
    /// Serializes the argument as the value of its key.
    fn capture_into(&self, writer: &mut Vec<u8>) -> Result<(), serde_json::Error>;
}

#[diagnostic::do_not_recommend]
impl<T: Serialize + ?Sized> Capturable for T {
    fn capture_into(&self, writer: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(writer, self)
    }
}

impl CaptureWriter<'_> {
    fn key(&mut self, name: &str) {
        if !std::mem::take(&mut self.empty) {
            self.buf.push(b',');
        }
        // Parameter names are Rust identifiers: nothing to escape.
        self.buf.push(b'"');
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    /// Captures `value` under `name`. A value whose `Serialize` fails is kept as
    /// a string saying why, so the capture stays valid JSON.
    pub fn arg<T: Capturable + ?Sized>(&mut self, name: &str, value: &T) {
        self.key(name);
        let start = self.buf.len();
        if let Err(error) = value.capture_into(self.buf) {
            self.buf.truncate(start);
            let note = format!("[unserializable: {error}]");
            serde_json::to_writer(&mut *self.buf, &note).expect("a string always serializes");
        }
    }

    /// Captures `name` with the value `"[redacted]"`: the key stays, the secret
    /// is never serialized.
    pub fn redacted(&mut self, name: &str) {
        self.key(name);
        self.buf.push(b'"');
        self.buf.extend_from_slice(REDACTED.as_bytes());
        self.buf.push(b'"');
    }
}

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Captures the arguments written by `write` as one JSON object.
///
/// `write` is a trait object so that this function, and the thread-local
/// buffer behind it, are compiled once rather than once per tool.
pub fn capture(write: &mut dyn FnMut(&mut CaptureWriter<'_>)) -> Capture {
    fn run(buf: &mut Vec<u8>, write: &mut dyn FnMut(&mut CaptureWriter<'_>)) -> Capture {
        buf.clear();
        buf.push(b'{');
        write(&mut CaptureWriter { buf, empty: true });
        buf.push(b'}');
        Capture::new(buf)
    }

    BUFFER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => run(&mut buf, write),
        // An argument's `Serialize` captured another tool call: use a fresh buffer.
        Err(_) => run(&mut Vec::new(), write),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
                .starts_with("[unserializable")
        );
        assert_eq!(value["ok"], 1);
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

    #[test]
    fn short_captures_are_inline_and_long_ones_on_the_heap() {
        let short = capture(&mut |w| w.arg("id", &42));
        assert!(matches!(short.repr, Repr::Inline { .. }));
        let long_text = "x".repeat(200);
        let long = capture(&mut |w| w.arg("text", &long_text));
        assert!(matches!(long.repr, Repr::Heap(_)));
        assert_eq!(long.to_value()["text"], long_text);
        let exact = "y".repeat(INLINE - r#"{"t":""}"#.len());
        let edge = capture(&mut |w| w.arg("t", &exact));
        assert_eq!(edge.as_str().len(), INLINE);
        assert!(matches!(edge.repr, Repr::Inline { .. }));
        assert_eq!(edge.to_value()["t"], exact);
    }
}
