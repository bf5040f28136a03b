//! The escalations a tool set keeps for a person, in its store (or its
//! retry policy's): every one its calls end with — but a call that waits
//! for an approver, kept as its approval — and no more than so many open
//! of one caller, so that a caller who makes calls fail on purpose cannot
//! fill the store and bury the inbox.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::ToolSet;
use crate::mcp::reply::ToolReply;
use crate::mcp::server::state::CallState;
use crate::retry::RetryPolicy;
use crate::store::{EscalationRecord, Store};

/// How many open escalations of one caller a tool set keeps by default
/// ([`ToolSet::max_open_escalations`]).
pub const DEFAULT_MAX_OPEN_ESCALATIONS: usize = 100;

/// How long a call's reply waits for the store to keep its escalation,
/// its turn behind the caller's other escalations included: a store
/// answers in milliseconds; one out of reach does not hold every failing
/// call's reply (or the caller's next ones, kept in turn) longer. A burst
/// of one caller's failures against a slow store may leave the last of
/// them unkept (logged).
const KEEP_BOUND: Duration = Duration::from_secs(10);

impl ToolSet {
    /// How many open escalations of one caller (a bearer token's subject;
    /// every caller without one together) the set keeps in its store:
    /// [`DEFAULT_MAX_OPEN_ESCALATIONS`] unless set, at least 1. Past it,
    /// another escalation of theirs is not kept (a warning is logged) until
    /// a person resolves some; the caller's reply carries it whole all the
    /// same. Counted and kept in one step in the store
    /// ([`Store::record_escalation`]), so the bound holds exactly across
    /// the replicas sharing it. The escalations of approvals that expired
    /// undecided count too, and are not kept past it either. Only this
    /// service's escalations count (its
    /// [`server_info`](Self::server_info) name).
    ///
    /// [`Store::record_escalation`]: crate::store::Store::record_escalation
    #[must_use]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "tokio")))]
    pub fn max_open_escalations(mut self, per_caller: usize) -> Self {
        self.inner_mut().most_open_escalations = per_caller.max(1);
        self
    }

    /// Keeps an escalation [`escalation_to_keep`](Self::escalation_to_keep)
    /// found, if its caller has room; a store that fails, or has not kept
    /// it within [`KEEP_BOUND`], is logged, and the reply goes out as it is.
    pub(super) async fn keep_escalation(
        &self,
        (store, mut record): (&Arc<dyn Store>, EscalationRecord),
        kept_for: Option<&str>,
    ) {
        // The run of an approval: what it ends with is its approvers'.
        record.approvers = kept_for.map(str::to_owned);
        let most = u64::try_from(self.inner.most_open_escalations).unwrap_or(u64::MAX);
        // Kept one at a time for the caller here (the store counts and
        // keeps in one step across the replicas; this spares it the
        // caller's own crowd).
        let keeping = async {
            let _turn = self.inner.keeping.take(record.caller.as_deref()).await;
            store.record_escalation(&record, most).await
        };
        // `ToolSet::call` may be driven without a tokio runtime (its timer
        // is not there): the store is waited for whole then.
        let bounded = match tokio::runtime::Handle::try_current() {
            Ok(_) => tokio::time::timeout(KEEP_BOUND, keeping).await,
            Err(_) => Ok(keeping.await),
        };
        let Ok(kept) = bounded else {
            #[cfg(feature = "tracing")]
            tracing::warn!(
                "keeping an escalation: the store did not answer in 10 s; the reply goes out, the escalation unkept"
            );
            return;
        };
        match kept {
            Ok(true) => {}
            Ok(false) => {
                #[cfg(feature = "tracing")]
                tracing::warn!(
                    caller = record.caller.as_deref().unwrap_or("(none)"),
                    most,
                    "an escalation was not kept: its caller has as many open as the tool set keeps"
                );
            }
            Err(_error) => {
                #[cfg(feature = "tracing")]
                tracing::warn!(error = %_error, "keeping an escalation: the store failed");
            }
        }
    }

    /// The escalation `reply` carries, if it carries one and the set (or
    /// its retry policy) has a store, as the record to keep there, with the
    /// caller: every escalation a person may need to see, in the same
    /// inbox. A call that waits for an approver is kept as its approval,
    /// not again here; one whose caller has as many approvals waiting as
    /// may be (`TOO_MANY_APPROVALS`) is not kept at all: it would move a
    /// flood of blocked calls into the escalations. Nor is a call a person
    /// declined (`HUMAN_DECLINED`: they decided; and it names them and
    /// their note, for the caller, not for everyone in the inbox) or whose
    /// approval expired (`APPROVAL_EXPIRED`: the expiry is kept as an
    /// escalation once, for the approval's approvers, by the runner). Nor
    /// one a loop inside the tool kept in this store already (`kept_in`,
    /// that store's ledger): it is kept once.
    pub(super) fn escalation_to_keep(
        &self,
        reply: &ToolReply,
        state: &CallState,
        kept_in: Option<&str>,
    ) -> Option<(&Arc<dyn Store>, EscalationRecord)> {
        let store = self.escalation_store()?;
        if kept_in == Some(store.ledger()) {
            return None;
        }
        let structured = reply
            .structured_content
            .as_ref()
            .filter(|_| reply.is_error)?;
        let reason = (structured.get(crate::keys::ESCALATION)?)
            .get(crate::keys::escalation::REASON)
            .and_then(Value::as_str);
        let refused = structured.get(crate::keys::REASON).and_then(Value::as_str);
        if reason == Some(crate::EscalationReason::AwaitingApproval.as_str())
            || [
                crate::reasons::TOO_MANY_APPROVALS,
                crate::reasons::HUMAN_DECLINED,
                crate::reasons::APPROVAL_EXPIRED,
            ]
            .iter()
            .any(|not_kept| refused == Some(*not_kept))
        {
            return None;
        }
        let caller = state
            .context_ref()
            .caller()
            .map(|caller| caller.subject().to_owned());
        // Seen on this service's inbox: another one sharing the store is
        // another's.
        let record = EscalationRecord::new(structured.clone(), caller).for_service(self.service());
        Some((store, record))
    }

    /// Where the set keeps escalations: its store, else its retry
    /// policy's.
    fn escalation_store(&self) -> Option<&Arc<dyn Store>> {
        #[cfg(feature = "rmcp")]
        if let Some(store) = &self.inner.protocol.store {
            return Some(store);
        }
        self.inner
            .retry
            .as_ref()
            .and_then(RetryPolicy::escalation_store)
    }
}
