//! Why a value could not be serialized as it is.

use std::fmt;

use crate::json::depth::MAX_DEPTH;

/// Why a value could not be serialized as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// A float JSON cannot carry: NaN or an infinity.
    NonFinite,
    /// An integer beyond 64 bits, which JSON readers round to a float.
    OutOfRange,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Its `Serialize` returned an error.
    Failed(String),
    /// Its `Serialize` panicked.
    Panicked(String),
    /// It holds JSON text as it was given (`serde_json`'s `RawValue`), which
    /// nothing here checks: its numbers, depth and keys.
    Raw,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NonFinite => f.write_str("a NaN or infinite number, which JSON cannot carry"),
            Problem::OutOfRange => {
                f.write_str("an integer beyond 64 bits, which JSON readers round")
            }
            Problem::TooDeep => write!(f, "nested more than {MAX_DEPTH} levels deep"),
            Problem::Failed(error) => write!(f, "its serialization failed: {error}"),
            Problem::Panicked(panic) => write!(f, "its serialization panicked: {panic}"),
            Problem::Raw => {
                f.write_str("raw JSON text, whose numbers, depth and keys are unchecked")
            }
        }
    }
}
