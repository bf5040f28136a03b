//! The approving states a tool set has already opened: a person's yes
//! opens one call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::store::Store;

/// The states of approving rounds already opened: each opens once, so that
/// one person's yes runs one call. A state is remembered for as long as it
/// could be opened (its time to live); past [`MAX_REDEMPTIONS`] remembered
/// at once, another approving round is refused rather than forgotten.
///
/// Without a store ([`ToolSet::store`](crate::mcp::ToolSet::store)) this
/// is the ledger of one tool set in one process: replicas that share a key
/// share states, not this ledger. With one, the store keeps it, and every
/// replica that shares the store shares it (SECURITY.md).
#[derive(Default)]
pub(super) struct Redemptions {
    used: Mutex<HashMap<String, Instant>>,
    shared: Option<Arc<dyn Store>>,
}

/// The most approving states one tool set remembers at once.
const MAX_REDEMPTIONS: usize = 100_000;

impl Redemptions {
    /// A ledger kept in `store`.
    pub(super) fn shared(store: Arc<dyn Store>) -> Self {
        Redemptions {
            shared: Some(store),
            ..Redemptions::default()
        }
    }

    /// Records the state `nonce` as used for `ttl`: `false` when it was
    /// used already, when no more can be remembered, or when the store
    /// cannot say (a state is refused rather than opened twice).
    pub(super) async fn redeem(&self, nonce: &str, ttl: Duration) -> bool {
        if let Some(store) = &self.shared {
            let until = crate::store::now_ms()
                .saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
            return match store.redeem(nonce, until).await {
                Ok(first) => first,
                Err(error) => {
                    tracing::warn!(%error, "an approving state was refused: the store failed");
                    false
                }
            };
        }
        let until = Instant::now() + ttl;
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if used.len() >= MAX_REDEMPTIONS {
            used.retain(|_, until| *until > now);
        }
        match used.get(nonce) {
            Some(kept) if *kept > now => false,
            _ if used.len() >= MAX_REDEMPTIONS => false,
            _ => {
                used.insert(nonce.to_owned(), until);
                true
            }
        }
    }
}
