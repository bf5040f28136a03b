//! The scope of one call: how its arguments are masked wherever they are
//! shown, who made it, and the blocks a person approved for it — what its
//! guards may read besides the arguments. A call served by a tool set has
//! all three; a `#[tool]` called from Rust, none but its own capture.

use std::sync::{Mutex, PoisonError};

use crate::caller::Caller;
use crate::redact::arguments::ArgumentMask;

/// The scope of one call ([`crate::query::Query::Arguments`]).
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// How the call's arguments are masked wherever they are shown.
    pub(crate) mask: ArgumentMask<'a>,
    /// Who made the call, as a token validator said.
    pub(crate) caller: Option<&'a Caller>,
    /// The blocks a person approved for the call.
    pub(crate) approved: Option<&'a Approved>,
}

impl<'a> Scope<'a> {
    /// The scope of a call known only by how its arguments are masked.
    pub(crate) fn masked(mask: ArgumentMask<'a>) -> Self {
        Scope {
            mask,
            caller: None,
            approved: None,
        }
    }
}

/// The blocks a person approved during one call, by the key each block got
/// when the call's guards met it ([`Waivers`](crate::guard::Waivers)): its
/// checkpoint, its place among the approvable blocks met, and a digest of
/// what it says. An approval waives that one block, never another that
/// shares its reason or its message.
#[derive(Default, Debug)]
pub(crate) struct Approved {
    keys: Mutex<Vec<String>>,
}

impl Approved {
    /// Approves the block whose key is `key`.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn approve(&self, key: &str) {
        self.lock().push(key.to_owned());
    }

    /// Whether the block whose key is `key` was approved.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.lock().iter().any(|approved| approved == key)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
