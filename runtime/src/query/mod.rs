//! The attempted query of a call — what was tried — as it may be shown: the
//! typed arguments a `#[tool]` captured, or the JSON arguments of an MCP call
//! with their secrets masked.

pub(crate) mod capture;

use serde_json::{Map, Value};

use crate::envelope::Attempted;
use crate::json::depth::bounded;
use crate::query::capture::Capture;
use crate::redact::values::{Masker, SecretValues};
use crate::scope::Scope;

/// Where a call's `attempted_query` comes from.
pub enum Query<'a> {
    /// The typed arguments, serialized by the `#[tool]` function before its
    /// body ran; redacted parameters and `Secret`s were captured as
    /// `"[redacted]"`, their values noted to be masked wherever a failure of
    /// the call quotes them.
    Captured(Capture),
    /// The JSON arguments of an MCP `tools/call`, as received: not serialized
    /// again. Wherever they are shown, the secrets the tool's input schema
    /// marks are masked at any depth, and so are keys it does not declare
    /// and the values the call's `Secret`s were sent as.
    Arguments(&'a Map<String, Value>, Scope<'a>),
    /// Arguments that cannot be shown — not an object, nested too deep —
    /// as a description of what they were, never their content.
    Described(Value),
}

/// Captured arguments as the capture wrote them (secrets already
/// `"[redacted]"`); an MCP call's arguments by their names only, since
/// their secrets are masked only where they are shown.
impl std::fmt::Debug for Query<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Query::Captured(capture) => f.debug_tuple("Captured").field(capture).finish(),
            Query::Arguments(arguments, _) => f
                .debug_tuple("Arguments")
                .field(&arguments.keys().collect::<Vec<_>>())
                .finish_non_exhaustive(),
            Query::Described(description) => f.debug_tuple("Described").field(description).finish(),
        }
    }
}

impl Query<'_> {
    /// The arguments as an envelope holds them, masked where the schema
    /// says: captured ones as their JSON text, others as a value bounded in
    /// depth. The secret values are masked by the one who shows it, with
    /// every other text of the failure ([`crate::settle`]).
    pub(crate) fn into_attempted(self) -> Attempted {
        match self {
            // Within depth, as the capture wrote it: read only if asked.
            Query::Captured(capture) => Attempted::text(capture.into_text()),
            other => Attempted::value(bounded(other.into_value())),
        }
    }

    /// The arguments as a JSON value, masked where the schema says.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Query::Captured(capture) => capture.to_value(),
            Query::Arguments(arguments, scope) => {
                Value::Object(scope.mask.paths().mask(arguments).into_owned())
            }
            Query::Described(description) => description,
        }
    }

    /// `account`, an account of these arguments that someone else wrote (a
    /// server's `attempted_query`), masked where the schema says, as
    /// [`into_value`](Self::into_value) masks the arguments.
    pub(crate) fn mask_account(&self, account: Map<String, Value>) -> Map<String, Value> {
        match self {
            Query::Captured(_) | Query::Described(_) => account,
            Query::Arguments(_, scope) => match scope.mask.paths().mask(&account) {
                std::borrow::Cow::Owned(masked) => masked,
                std::borrow::Cow::Borrowed(_) => account,
            },
        }
    }

    /// What masks the secret values these arguments were sent with
    /// wherever a failure quotes them; `None` when there are none — at
    /// once for a capture that noted none, the common case.
    pub(crate) fn masker(&self) -> Option<Masker> {
        match self {
            Query::Captured(capture) if capture.secrets().is_empty() => None,
            Query::Described(_) => None,
            _ => self.secret_values().masker(),
        }
    }

    /// The secret values these arguments were sent with: for a capture,
    /// the values of its redacted arguments and its `Secret`s.
    fn secret_values(&self) -> SecretValues {
        match self {
            Query::Captured(capture) => {
                let mut values = SecretValues::default();
                for secret in capture.secrets() {
                    values.add(secret);
                }
                values
            }
            Query::Described(_) => SecretValues::default(),
            Query::Arguments(arguments, scope) => scope.mask.values(arguments),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::Query;
    use crate::redact::arguments::ArgumentMask;
    use crate::redact::schema::SecretPaths;
    use crate::scope::Scope;

    #[test]
    fn debug_names_a_calls_arguments_never_their_values() {
        let Value::Object(arguments) = json!({"account": "IN-0621", "token": "hunter2"}) else {
            unreachable!()
        };
        let noted = [json!("hunter2")];
        let paths = SecretPaths::UNKNOWN;
        let mask = ArgumentMask::new(&paths, &noted);
        let shown = format!("{:?}", Query::Arguments(&arguments, Scope::masked(mask)));
        assert!(
            shown.contains("account") && shown.contains("token"),
            "{shown}"
        );
        assert!(
            !shown.contains("hunter2") && !shown.contains("IN-0621"),
            "{shown}"
        );
        let empty = Map::new();
        assert!(format!("{:?}", Query::Arguments(&empty, Scope::masked(mask))).contains("[]"));
        // Nor the mask, which holds the values the call's `Secret`s were.
        let mask = format!("{:?}", Scope::masked(mask));
        assert!(!mask.contains("hunter2"), "{mask}");
    }
}
