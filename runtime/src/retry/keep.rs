//! Escalations kept for a person: what a retry loop, a coordinator or a
//! tool set gives up on goes into a store
//! ([`RetryPolicy::keep_escalations`](super::RetryPolicy::keep_escalations)),
//! with its whole envelope, once.

use std::time::Duration;

use futures_util::future::{Either, select};

use crate::escalation::Escalation;
use crate::retry::Sleeper;
use crate::store::{EscalationRecord, Store};

/// How long a retry loop waits for its store to keep the escalation it gives
/// up with: a store that does not answer by then does not hold the
/// escalation back from its caller (nor keep the loop past its deadline
/// longer than this). Kept under its id, it may still be kept later.
pub(crate) const KEEP_WITHIN: Duration = Duration::from_secs(5);

/// [`keep`], within [`KEEP_WITHIN`] on `sleeper`'s clock.
pub(crate) async fn keep_within(
    sleeper: &impl Sleeper,
    store: &dyn Store,
    escalation: &mut Escalation,
) {
    let keeping = std::pin::pin!(keep(store, escalation, None));
    let waited = std::pin::pin!(sleeper.sleep(KEEP_WITHIN));
    if let Either::Right(_) = select(keeping, waited).await {
        #[cfg(feature = "tracing")]
        tracing::warn!(
            within_ms = KEEP_WITHIN.as_millis(),
            "keeping an escalation: the store did not answer in time"
        );
    }
}

/// Keeps `escalation`, made for `caller`, in `store`, unless it was kept
/// already on its way up; a store that fails loses nothing that was
/// returned: the escalation still reaches its caller. Kept under one id
/// however often it is tried (the store keeps an id once): a store that
/// kept it and answered with an error — its connection lost after the
/// commit — is asked again by whoever keeps it next, and keeps no second.
pub(crate) async fn keep(store: &dyn Store, escalation: &mut Escalation, caller: Option<&str>) {
    if escalation.kept {
        return;
    }
    let envelope = serde_json::to_value(shown(escalation)).unwrap_or_default();
    let mut record = EscalationRecord::new(envelope, caller.map(str::to_owned));
    match &escalation.kept_as {
        Some(id) => record.id.clone_from(id),
        None => escalation.kept_as = Some(record.id.clone()),
    }
    match store.record_escalation(&record, u64::MAX).await {
        Ok(_) => escalation.kept = true,
        Err(_error) => {
            #[cfg(feature = "tracing")]
            tracing::warn!(error = %_error, "keeping an escalation: the store failed");
        }
    }
}

/// `escalation` as people read it, in every inbox that shares the store:
/// what is recognisably a credential in its texts — a URL's user and
/// password, `password=…`, a bearer token — masked, as a tool set masks an
/// internal error's ([`Escalation::scrub_credentials`]). A call's own secrets are masked already.
fn shown(escalation: &Escalation) -> Escalation {
    let mut shown = escalation.clone();
    shown.scrub_credentials();
    shown
}

#[cfg(all(test, feature = "rmcp"))]
mod tests {
    use super::KEEP_WITHIN;
    use crate::envelope::ErrorEnvelope;
    use crate::retry::RetryPolicy;
    use crate::store::gated::Gated;

    #[tokio::test(start_paused = true)]
    async fn a_store_that_does_not_answer_holds_an_escalation_back_no_longer_than_its_time() {
        let store = Gated::new();
        store.hold_escalations();
        let policy = RetryPolicy::default()
            .max_attempts(1)
            .keep_escalations(store.clone());
        let started = tokio::time::Instant::now();
        let retried =
            policy.retry(|| async { Err::<(), _>(ErrorEnvelope::validation("no such order")) });
        let outcome = tokio::time::timeout(KEEP_WITHIN * 2, retried)
            .await
            .expect("the escalation came back without its store's answer");
        let escalation = outcome.result.expect_err("it failed");
        assert_eq!(escalation.envelope.message(), "no such order");
        // The paused clock: exactly the time given, not a moment more.
        assert_eq!(started.elapsed(), KEEP_WITHIN);
    }
}
