//! The blocks a person approved during one call
//! ([`Blocked::unless_approved`](crate::guard::Blocked::unless_approved)):
//! what the call's guards waive when it runs again, and the record of each
//! answer for the result's `_meta`.

use std::sync::{Mutex, PoisonError};

use serde_json::Value;

/// The blocks a person approved during one call, by the key each block got
/// when the call's guards met it ([`Waivers`](crate::guard::Waivers)): its
/// checkpoint, its place among the approvable blocks met, and a digest of
/// what it says. An approval waives that one block, never another that
/// shares its reason or its message.
#[derive(Default, Debug)]
pub(crate) struct Approvals {
    approved: Mutex<Vec<String>>,
    records: Mutex<Vec<Value>>,
}

impl Approvals {
    /// Keeps the records of the approvals asked, for the result's `_meta`.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn keep_records(&self, records: Vec<Value>) {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(records);
    }

    /// The records of the approvals asked, taken.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn take_records(&self) -> Vec<Value> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Approves the block whose key is `key`.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn approve(&self, key: &str) {
        self.approved
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(key.to_owned());
    }

    /// Whether the block whose key is `key` was approved.
    pub(crate) fn is_approved(&self, key: &str) -> bool {
        (self.approved.lock().unwrap_or_else(PoisonError::into_inner))
            .iter()
            .any(|approved| approved == key)
    }
}
