//! The arguments of an MCP call as they may be shown: masked where the
//! tool's input schema marks a secret or declares no key, and wherever a
//! value the call decoded into a [`Secret`](crate::Secret) turns up.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::redact::schema::SecretPaths;
use crate::redact::values::SecretValues;

/// How the arguments of one call are masked: by the tool's schema, and by
/// the values its `Secret`s were sent as.
#[derive(Debug, Clone, Copy)]
pub struct ArgumentMask<'a> {
    paths: &'a SecretPaths,
    noted: &'a [Value],
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

    /// `arguments` as they may be shown; borrowed when nothing is masked.
    pub(crate) fn apply<'b>(
        &self,
        arguments: &'b Map<String, Value>,
    ) -> Cow<'b, Map<String, Value>> {
        let masked = self.paths.mask(arguments);
        let Some(masker) = self.noted_values().masker() else {
            return masked;
        };
        let mut shown = Value::Object(masked.into_owned());
        masker.value(&mut shown);
        match shown {
            Value::Object(shown) => Cow::Owned(shown),
            _ => unreachable!("masking keeps an object an object"),
        }
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
