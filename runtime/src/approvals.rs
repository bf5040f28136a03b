//! The blocks a person approved during one call
//! ([`Blocked::unless_approved`](crate::guard::Blocked::unless_approved)):
//! what the call's guards waive when it runs again, and the record of each
//! answer for the result's `_meta`.

use std::sync::{Mutex, PoisonError};

use serde_json::Value;

/// The blocks a person approved during one call, by their reason: the
/// call's guards waive them when it runs again. (By reason, not message: the
/// message a person read was settled, its secret values masked.)
#[derive(Default, Debug)]
pub(crate) struct Approvals(Mutex<Vec<String>>, Mutex<Vec<Value>>);

impl Approvals {
    /// Keeps the records of the approvals asked, for the result's `_meta`.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn keep_records(&self, records: Vec<Value>) {
        self.1
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(records);
    }

    /// The records of the approvals asked, taken.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn take_records(&self) -> Vec<Value> {
        std::mem::take(&mut *self.1.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Approves the blocks of this call that `blocked` stands for.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn approve(&self, blocked: &crate::ErrorEnvelope) {
        let reason = blocked.reason().unwrap_or_default().to_owned();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(reason);
    }

    /// Whether `envelope` is a block a person may approve, and approved.
    pub(crate) fn cover(&self, envelope: &crate::ErrorEnvelope) -> bool {
        let reason = envelope.reason().unwrap_or_default();
        envelope.is_approvable()
            && (self.0.lock().unwrap_or_else(PoisonError::into_inner))
                .iter()
                .any(|approved| approved == reason)
    }
}
