//! The arguments of an MCP call as they may be shown: masked where the
//! tool's input schema marks a secret or declares no key, and wherever a
//! value the call decoded into a [`Secret`](crate::Secret) turns up.

use crate::approvals::Approvals;
use crate::caller::Caller;
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
    /// The blocks a person approved for this call, which its guards waive.
    approvals: Option<&'a Approvals>,
    /// Who made the call, for its guards.
    caller: Option<&'a Caller>,
}

impl<'a> ArgumentMask<'a> {
    /// Masks by `paths`, and by `noted`, the values the call's `Secret`s
    /// were sent as.
    pub(crate) fn new(paths: &'a SecretPaths, noted: &'a [Value]) -> Self {
        ArgumentMask {
            paths,
            noted,
            approvals: None,
            caller: None,
        }
    }

    /// With who made the call.
    pub(crate) fn with_caller(mut self, caller: Option<&'a Caller>) -> Self {
        self.caller = caller;
        self
    }

    /// Who made the call, if a token validator said.
    pub(crate) fn caller(&self) -> Option<&'a Caller> {
        self.caller
    }

    /// With the blocks a person approved for the call.
    pub(crate) fn with_approvals(mut self, approvals: &'a Approvals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// The blocks a person approved for the call, if it is served.
    pub(crate) fn approvals(&self) -> Option<&'a Approvals> {
        self.approvals
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
