//! An approver's decision on an approval that waits in the store
//! ([`ToolSet::decide`]), and why one is not taken ([`DecisionError`]).

use std::fmt;

use super::ToolSet;
use crate::caller::Caller;
use crate::store::{ApprovalRecord, ApprovalState, Decision, StoreError};

/// Why an approver's decision was not taken
/// ([`ToolSet::decide`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum DecisionError {
    /// The tool set has no store ([`ToolSet::store`]).
    NoStore,
    /// No approval of this service has this id.
    UnknownTicket,
    /// The approver's token does not grant the scope the approval needs.
    NotAnApprover {
        /// The scope it needs.
        scope: String,
    },
    /// The approver is the caller whose call waits: nobody approves their
    /// own call.
    OwnCall,
    /// It was decided already, or expired: where it is.
    NotPending(ApprovalState),
    /// The store failed.
    Store(StoreError),
}

impl fmt::Display for DecisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecisionError::NoStore => {
                f.write_str("this tool set keeps no approvals: it has no store")
            }
            DecisionError::UnknownTicket => f.write_str("no approval has this id"),
            DecisionError::NotAnApprover { scope } => {
                write!(f, "deciding this approval needs the scope `{scope}`")
            }
            DecisionError::OwnCall => f.write_str("nobody decides the approval of their own call"),
            DecisionError::NotPending(state) => {
                write!(f, "the approval is {} already", state.as_str())
            }
            // `StoreError` says "the store failed" itself.
            DecisionError::Store(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for DecisionError {}

impl From<StoreError> for DecisionError {
    fn from(error: StoreError) -> Self {
        DecisionError::Store(error)
    }
}

impl ToolSet {
    /// Decides the approval `ticket` (the id of a
    /// [`Ticket`](crate::Ticket)) as `approver`, with `note`: approved, the
    /// call runs once, soon, on whichever replica sharing the store claims
    /// it (unless no runner takes it up within a time to live: then it
    /// expires unrun); declined, the caller reads `HUMAN_DECLINED`. The decision is one
    /// conditional update of a pending approval, so that of two decisions
    /// only one is taken, and it is kept in the store's audit (who, when,
    /// note).
    ///
    /// # Errors
    ///
    /// No store, no such approval (another service's, sharing the store,
    /// included: it is theirs to decide), an approver whose token lacks the scope
    /// the approval names, the approval's own caller, an approval decided
    /// already or expired, or a store that fails — which may have kept the
    /// decision all the same (a connection lost after the commit): read
    /// the approval again to know.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn decide(
        &self,
        ticket: &str,
        approver: &Caller,
        approve: bool,
        note: &str,
    ) -> Result<ApprovalRecord, DecisionError> {
        let store = self.store_ref().ok_or(DecisionError::NoStore)?;
        // Another service's approval, sharing the store, is theirs to
        // decide: its scope may mean something else there.
        let approval = (store.approval(ticket).await?)
            .filter(|approval| self.owns(approval))
            .ok_or(DecisionError::UnknownTicket)?;
        if !approver.has_scope(&approval.approvers) {
            return Err(DecisionError::NotAnApprover {
                scope: approval.approvers,
            });
        }
        if approval.caller.as_deref() == Some(approver.subject()) {
            return Err(DecisionError::OwnCall);
        }
        let note = crate::limits::kept_note(note);
        let decision = Decision::new(approve, approver.subject(), note.as_ref());
        if !store.decide(ticket, &decision).await? {
            let state = store
                .approval(ticket)
                .await?
                .map_or(ApprovalState::Expired, |approval| {
                    approval.state_at(crate::store::now_ms())
                });
            return Err(DecisionError::NotPending(state));
        }
        if approve {
            self.start_runner();
            self.inner.protocol.approving.wake.notify_one();
        }
        // Decided: a store that fails to say how it stands now does not
        // undo it — the approval as this decision left it.
        let read = store.approval(ticket).await;
        if let Err(error) = &read {
            tracing::warn!(%error, ticket, "an approval decided could not be read again");
        }
        match read {
            Ok(Some(decided)) => Ok(decided),
            Ok(None) | Err(_) => Ok(ApprovalRecord {
                expires_ms: match decision.state() {
                    ApprovalState::Withdrawn => approval.expires_ms,
                    _ => approval.readable_until(decision.at_ms),
                },
                state: decision.state(),
                decided_by: Some(decision.by),
                decided_ms: Some(decision.at_ms),
                note: Some(decision.note),
                ..approval
            }),
        }
    }
}

#[cfg(test)]
mod tests;
