//! Escalations kept for a person: what a retry loop, a coordinator or a
//! tool set gives up on goes into a store
//! ([`RetryPolicy::keep_escalations`](super::RetryPolicy::keep_escalations)),
//! with its whole envelope, once.

use crate::escalation::Escalation;
use crate::store::{EscalationRecord, Store};

/// Keeps `escalation`, made for `caller`, in `store`, unless it was kept
/// already on its way up; a store that fails loses nothing that was
/// returned: the escalation still reaches its caller.
pub(crate) async fn keep(store: &dyn Store, escalation: &mut Escalation, caller: Option<&str>) {
    if escalation.kept {
        return;
    }
    let envelope = serde_json::to_value(&*escalation).unwrap_or_default();
    let record = EscalationRecord::new(envelope, caller.map(str::to_owned));
    match store.record_escalation(&record, u64::MAX).await {
        Ok(_) => escalation.kept = true,
        Err(_error) => {
            #[cfg(feature = "tracing")]
            tracing::warn!(error = %_error, "keeping an escalation: the store failed");
        }
    }
}
