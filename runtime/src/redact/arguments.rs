//! The arguments of an MCP call as they may be shown: masked where the
//! tool's input schema marks a secret or declares no key, and wherever a
//! value the call decoded into a [`Secret`](crate::Secret) turns up.

use serde_json::{Map, Value};

use crate::redact::schema::SecretPaths;
use crate::redact::values::SecretValues;

/// How the arguments of one call are masked: by the tool's schema, and by
/// the values its `Secret`s were sent as.
#[derive(Clone, Copy)]
pub struct ArgumentMask<'a> {
    paths: &'a SecretPaths,
    noted: &'a [Value],
}

/// The paths, and how many values were noted: never the values, which are
/// secrets.
impl std::fmt::Debug for ArgumentMask<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentMask")
            .field("paths", self.paths)
            .field("noted", &self.noted.len())
            .finish()
    }
}

impl<'a> ArgumentMask<'a> {
    /// Masks by `paths`, and by `noted`, the values the call's `Secret`s
    /// were sent as.
    pub(crate) fn new(paths: &'a SecretPaths, noted: &'a [Value]) -> Self {
        ArgumentMask { paths, noted }
    }

    /// The schema's part.
    pub(crate) fn paths(&self) -> &'a SecretPaths {
        self.paths
    }

    /// Whether showing `arguments` masks more than the places the schema
    /// marks secret: a value elsewhere that equals (or quotes) a secret —
    /// one a `Secret` was sent as, or one at a place the schema marks
    /// (`redact(…)`, `writeOnly`). A caller chooses what their secrets are
    /// sent as, so such a part could be any part — the amount, the account
    /// — and a person who sees it masked does not see the call.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn hides_beyond_secrets(&self, arguments: &Map<String, Value>) -> bool {
        let Some(masker) = self.values(arguments).masker() else {
            return false;
        };
        let by_paths = Value::Object(self.paths.mask(arguments).into_owned());
        let mut by_values = by_paths.clone();
        masker.value(&mut by_values);
        by_paths != by_values
    }

    /// The secret values of a call with `arguments`: those the schema
    /// hides, and those the `Secret`s were sent as.
    pub(crate) fn values(&self, arguments: &Map<String, Value>) -> SecretValues {
        let mut values = self.noted_values();
        self.paths.add_values(arguments, &mut values);
        values
    }

    fn noted_values(&self) -> SecretValues {
        let mut values = SecretValues::default();
        for value in self.noted {
            values.add(value);
        }
        values
    }
}
