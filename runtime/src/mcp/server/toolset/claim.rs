//! A claim of an approved call: each claim's lease its own, and a claim
//! the store kept without an answer read back and taken up.

use crate::store::{ApprovalRecord, ApprovalState, Store, StoreError};

/// `lease`, or the first instant after it no claim or renewal of this
/// process was given: every lease is its own, so that the holder and the
/// lease name one claim, even two passes' of one tool set in one
/// millisecond.
pub(super) fn claims_own(lease: i64) -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static LAST: AtomicI64 = AtomicI64::new(i64::MIN);
    let after = |last: i64| lease.max(last.saturating_add(1));
    match LAST.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some(after(last))) {
        Ok(last) | Err(last) => after(last),
    }
}

/// What a claim of the approved call `id` took: `claim`'s answer — or,
/// when the store failed to answer after it may have kept the claim (its
/// connection lost after the commit), the approval read back, if it is
/// this claim's (running, held by `holder` under this claim's own
/// `lease`, [`claims_own`]): run now, rather than left for its lease to
/// lapse and then ended unrun as one whose runner died. (A claim still on
/// its way when the store's time ran out, kept after the read, is left
/// to its lease, as before.)
pub(super) async fn taken_by_claim(
    store: &dyn Store,
    id: &str,
    holder: &str,
    lease: i64,
    claim: Result<Option<ApprovalRecord>, StoreError>,
) -> Result<Option<ApprovalRecord>, StoreError> {
    let Err(error) = claim else {
        return claim;
    };
    match store.approval(id).await {
        Ok(Some(read))
            if read.state == ApprovalState::Running
                && read.holder.as_deref() == Some(holder)
                && read.lease_until_ms == lease =>
        {
            tracing::warn!(%error, ticket = %id, "claiming an approved call: the store failed, but kept the claim; it runs");
            Ok(Some(read))
        }
        _ => Err(error),
    }
}
