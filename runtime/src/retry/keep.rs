//! Escalations kept for a person: what a retry loop, a coordinator or a
//! tool set gives up on goes into a store
//! ([`RetryPolicy::keep_escalations`](super::RetryPolicy::keep_escalations)),
//! with its whole envelope, once.

use crate::escalation::Escalation;
use crate::redact::text::scrub_value;
use crate::store::{EscalationRecord, Store};

/// Keeps `escalation`, made for `caller`, in `store`, unless it was kept
/// already on its way up; a store that fails loses nothing that was
/// returned: the escalation still reaches its caller. Kept under one id
/// however often it is tried (the store keeps an id once): a store that
/// kept it and answered with an error — its connection lost after the
/// commit — is asked again by whoever keeps it next, and keeps no second.
pub(crate) async fn keep(store: &dyn Store, escalation: &mut Escalation, caller: Option<&str>) {
    // Kept on its way up already: by this loop, or by a loop below in
    // this store.
    if escalation.kept || escalation.kept_in.as_deref() == Some(store.ledger()) {
        return;
    }
    let envelope = serde_json::to_value(shown(escalation)).unwrap_or_default();
    let mut record = EscalationRecord::new(envelope, caller.map(str::to_owned));
    match &escalation.kept_as {
        Some(id) => record.id.clone_from(id),
        None => escalation.kept_as = Some(record.id.clone()),
    }
    match store.record_escalation(&record, u64::MAX).await {
        Ok(_) => {
            escalation.kept = true;
            escalation.kept_in = Some(store.ledger().to_owned());
        }
        Err(_error) => {
            #[cfg(feature = "tracing")]
            tracing::warn!(error = %_error, "keeping an escalation: the store failed");
        }
    }
}

/// `escalation` as people read it, in every inbox that shares the store:
/// what is recognisably a credential in its texts — a URL's user and
/// password, `password=…`, a bearer token — masked, as a tool set masks an
/// internal error's ([`Escalation::scrub_credentials`]), and so in its
/// attempted query and partial results, where a secret's key masks its
/// value too ([`scrub_value`]). A call's own secrets are masked already.
fn shown(escalation: &Escalation) -> Escalation {
    let mut shown = escalation.clone();
    shown.scrub_credentials();
    shown.envelope.visit_values(&mut scrub_value);
    shown
}
