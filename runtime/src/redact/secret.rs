//! Secrets: values that are redacted wherever they are captured.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::redact::REDACTED;

/// A value that never appears in an envelope, a log line or an MCP result.
///
/// As a `#[tool]` parameter it is redacted without being named in
/// `#[tool(redact(...))]`: `attempted_query` holds `"[redacted]"` for it, from a
/// direct call and from an MCP call alike. It serializes, displays and
/// debug-prints as `"[redacted]"`; it deserializes from the plain value, so a
/// client can send it. Read it with [`expose`](Self::expose).
///
/// ```
/// use tool_envelope::{tool, ErrorEnvelope, Secret};
///
/// /// Charge a card.
/// #[tool]
/// fn charge(amount: u64, api_key: Secret<String>) -> Result<(), ErrorEnvelope> {
///     let _key: &str = api_key.expose();
///     Err(ErrorEnvelope::transient("payments API timed out"))
/// }
///
/// let envelope = charge(10, Secret::new("sk_live_123".into())).unwrap_err();
/// let json = serde_json::to_string(&envelope).unwrap();
/// assert!(json.contains(r#""api_key":"[redacted]""#));
/// assert!(!json.contains("sk_live_123"));
/// assert_eq!(format!("{:?}", Secret::new("sk_live_123")), "[redacted]");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a secret.
    pub const fn new(value: T) -> Self {
        Secret(value)
    }

    /// The secret itself. Keep it out of error messages.
    pub fn expose(&self) -> &T {
        &self.0
    }

    /// The secret itself, by value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Secret(value)
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Always `"[redacted]"`.
///
/// While a `#[tool]` captures its arguments, a `Secret` inside one (a
/// field, an item of a list) notes the value it holds too, so that the
/// call's failure masks it wherever a message quotes it — as a `Secret`
/// decoded from a client's arguments is noted.
impl<T: Serialize> Serialize for Secret<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Inside a secret being noted: its value is part of that one, in
        // the same serialization (and the same bound on depth).
        let state = STATE.try_with(Cell::get).unwrap_or_default();
        if state.exposing {
            return self.0.serialize(serializer);
        }
        if state.noting {
            /// Ends the exposing however the serialization ends.
            struct Exposing;
            impl Drop for Exposing {
                fn drop(&mut self) {
                    let _ = STATE.try_with(|state| {
                        state.set(Noting {
                            exposing: false,
                            ..state.get()
                        });
                    });
                }
            }
            STATE.set(Noting {
                exposing: true,
                ..state
            });
            let exposing = Exposing;
            let value = crate::json::strict::to_value(&self.0);
            drop(exposing);
            if let Ok(value) = value {
                note(value);
            }
        }
        serializer.serialize_str(REDACTED)
    }
}

/// From the plain value, as a client sends it.
///
/// While a tool set decodes the arguments of a call, the value as the client
/// sent it is noted too, so that the call's failure masks it wherever it
/// turns up — in `attempted_query`, a message, a violation — whatever the
/// schema says of its place: a `#[schemars(with = "String")]` over a
/// `Secret` takes its `writeOnly` mark away, not its masking.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Secret<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !STATE.try_with(Cell::get).unwrap_or_default().noting {
            return T::deserialize(deserializer).map(Secret);
        }
        let sent = serde_json::Value::deserialize(deserializer)?;
        note(sent.clone());
        T::deserialize(sent)
            .map(Secret)
            .map_err(serde::de::Error::custom)
    }
}

/// Where this thread's noting stands: plain flags in a `Cell`, so that a
/// call that notes nothing — most of them — reads and writes a word and
/// never touches the list of values.
#[derive(Clone, Copy, Default)]
struct Noting {
    /// Whether [`noting`] runs.
    noting: bool,
    /// Whether a `Secret`'s value is being serialized to be noted.
    exposing: bool,
    /// How many values [`NOTED`] holds: those of the runs of [`noting`]
    /// this one is inside, then its own.
    noted: usize,
}

thread_local! {
    static STATE: Cell<Noting> = const {
        Cell::new(Noting {
            noting: false,
            exposing: false,
            noted: 0,
        })
    };
    /// The values every `Secret` decoded on this thread was sent as, or
    /// serialized on it holds, while [`noting`] runs.
    static NOTED: RefCell<Vec<serde_json::Value>> = const { RefCell::new(Vec::new()) };
}

/// Notes `value`, while [`noting`] runs.
///
/// # Panics
///
/// On a thread whose list is gone (its thread-locals being destroyed): a
/// secret not noted would be shown.
fn note(value: serde_json::Value) {
    NOTED.with(|noted| noted.borrow_mut().push(value));
    STATE.with(|state| {
        let now = state.get();
        state.set(Noting {
            noted: now.noted + 1,
            ..now
        });
    });
}

/// Runs `decode` — the decoding of arguments from JSON, or their capture —
/// and returns, with its result, the value each `Secret` it decoded was
/// sent as, or it serialized holds.
/// A panic in `decode` ends the noting too.
#[inline]
pub(crate) fn noting<R>(decode: impl FnOnce() -> R) -> (R, Vec<serde_json::Value>) {
    /// Puts back the noting this one is inside, however `decode` ends: the
    /// values noted since are taken off the list.
    struct Scope(Noting);
    impl Drop for Scope {
        #[inline]
        fn drop(&mut self) {
            let outer = self.0;
            if STATE.get().noted > outer.noted {
                NOTED.with(|noted| noted.borrow_mut().truncate(outer.noted));
            }
            STATE.set(outer);
        }
    }
    // A `#[tool]` called from within a secret's serialization captures its
    // own arguments with their secrets redacted.
    let outer = STATE.get();
    STATE.set(Noting {
        noting: true,
        exposing: false,
        noted: outer.noted,
    });
    let scope = Scope(outer);
    let result = decode();
    let noted = match STATE.get().noted > outer.noted {
        // The outermost takes the list whole: nothing is kept on the thread.
        true if outer.noted == 0 => NOTED.with(|noted| std::mem::take(&mut *noted.borrow_mut())),
        true => NOTED.with(|noted| noted.borrow_mut().split_off(outer.noted)),
        false => Vec::new(),
    };
    drop(scope);
    (result, noted)
}

/// The schema of the plain value, marked `writeOnly`.
impl<T: JsonSchema> JsonSchema for Secret<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Secret_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = generator.subschema_for::<T>();
        schema
            .ensure_object()
            .insert("writeOnly".to_owned(), true.into());
        schema
    }
}
