//! A call's attempts, and the people asked about its blocks: the client's
//! user, and the call run again if they approve; approvers at the server,
//! the call kept in the store to wait for them — their user asked first,
//! while the call is still theirs, for every block they may approve
//! (looked ahead of, past the approvers' blocks: no tool runs) — and not
//! asked about one their yes would send to wait where the store would
//! refuse it (looked behind).

use serde_json::{Map, Value};

use super::ToolSet;
use super::dispatch::Outcome;
#[cfg(feature = "rmcp")]
use super::dispatch::settle_here;
use super::entry::Entry;
#[cfg(feature = "rmcp")]
use super::failure::Failure;
#[cfg(feature = "rmcp")]
use crate::envelope::ErrorEnvelope;
#[cfg(feature = "rmcp")]
use crate::mcp::server::approval::{self, Approval, MAX_APPROVALS};
#[cfg(feature = "rmcp")]
use crate::mcp::server::arguments::Success;
use crate::mcp::server::state::CallState;

impl ToolSet {
    /// The call's attempts; when a guard blocked it and a person may
    /// approve it, the person is asked — the client's user, and the call
    /// runs again if they approve — or the call waits in the store for an
    /// approver the caller cannot stand in for.
    pub(super) async fn decided(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        state: &CallState,
    ) -> Outcome {
        // The same call made again meets its approval while one lives.
        #[cfg(feature = "rmcp")]
        if let Some(store) = self.may_be_made_again(entry, state)
            && let Some(outcome) = Box::pin(self.made_again((entry, arguments, state), store)).await
        {
            return outcome;
        }
        let outcome = self.attempts(entry, arguments, state).await;
        #[cfg(feature = "rmcp")]
        let outcome = {
            let mut outcome = outcome;
            let mut records = Vec::new();
            let mut read = false;
            for _ in 0..MAX_APPROVALS {
                let (blocked, key) = match &outcome {
                    Err(failure) => match failure.envelope().approval_key() {
                        Some(key) => (failure.envelope(), key.to_owned()),
                        None => break,
                    },
                    Ok(_) => break,
                };
                // A person sees the call whole but for its secrets, or is
                // not asked.
                if state.mask().hides_beyond_secrets(arguments) {
                    let envelope = settle_here(approval::hidden(blocked), entry, arguments, state);
                    outcome = Err(Failure::Envelope(envelope));
                    break;
                }
                if let Some(scope) = blocked.approvers().map(str::to_owned) {
                    // The client's user is asked now for what they may
                    // approve past the approvers' block: once the call
                    // waits, nobody could ask them.
                    let waits = (blocked, key.as_str(), scope.as_str());
                    let ahead = self.ahead(entry, arguments, state, waits, &mut records);
                    if let Some(instead) = Box::pin(ahead).await {
                        outcome = instead;
                        break;
                    }
                    let Err(failure) = outcome else {
                        unreachable!("a block is a failure")
                    };
                    state.keep_audit(records);
                    // Boxed, as the question below: the rare ways keep
                    // every call's future small.
                    return Box::pin(self.ticketed(entry, arguments, state, failure, &key, &scope))
                        .await;
                }
                // Nor is the client's user asked about a call their yes
                // would send to wait for approvers, where the store would
                // refuse it.
                if !read && approval::would_ask(state.context_ref(), &key) {
                    let asked = records.len();
                    let behind = self.behind(entry, arguments, state, &key, asked, &mut read);
                    if let Some(instead) = Box::pin(behind).await {
                        outcome = instead;
                        break;
                    }
                }
                match Box::pin(approval::ask(
                    state.context_ref(),
                    &key,
                    &self.as_asked(blocked),
                    &mut records,
                ))
                .await
                {
                    Approval::Approved => {
                        state.approved().approve(&key, true);
                        outcome = self.attempts(entry, arguments, state).await;
                    }
                    Approval::Declined(envelope) => {
                        let envelope = settle_here(envelope, entry, arguments, state);
                        outcome = Err(Failure::Envelope(envelope));
                        break;
                    }
                    Approval::NotAsked => break,
                }
            }
            state.keep_audit(records);
            outcome
        };
        Outcome::Ran(outcome)
    }

    /// Looks behind the block whose key is `key`, about to be put to the
    /// client's user: were they to say yes — to it and to each block of
    /// theirs after it, as many as one call may ask (`asked` asked
    /// already) — would the call next meet a block approvers decide, and
    /// the store refuse to keep it waiting ([`would_end`](Self::would_end))?
    /// Then it ends with that refusal now, its user asked nothing (`Some`);
    /// `None` when their yes would not end so — every guard passed, another
    /// failure met, an approval it would open or join, or no store. `read`
    /// says the store was read for the call: once is enough.
    #[cfg(feature = "rmcp")]
    async fn behind(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        state: &CallState,
        key: &str,
        asked: usize,
        read: &mut bool,
    ) -> Option<Result<Success, Failure>> {
        self.store_ref()?;
        let approved = state.approved();
        let mut passing = vec![key.to_owned()];
        // Bounded: each turn passes one block more, or ends.
        loop {
            approved.probe_past(&passing, true);
            let looked = self.attempt(entry, arguments, state).await;
            let reached = approved.probe_past(&passing, false);
            let failure = match looked {
                Err(_) if reached => return None,
                Err(failure) => failure,
                // A body ran looked behind (none `#[tool]` generates does),
                // past a block its user has not approved: it cannot be
                // undone, nor run again; its outcome is the call's.
                Ok(success) => {
                    tracing::error!(tool = %entry.facts.tool, "a tool ran while its call was looked behind, past a block its client's user had not approved: its body does not stop where a `#[tool]`'s does");
                    return Some(Ok(success));
                }
            };
            let blocked = failure.envelope();
            // Another failure than a block a person may approve: it
            // stands as it would, whatever the user said.
            let next = blocked.approval_key()?;
            let Some(scope) = blocked.approvers() else {
                // Another block of the client's user: looked past too.
                if asked + passing.len() >= MAX_APPROVALS || passing.iter().any(|k| k == next) {
                    return None;
                }
                passing.push(next.to_owned());
                continue;
            };
            // Met past as many questions as one call may ask, the
            // approvers' block stands unopened: the store has no say.
            if asked + passing.len() >= MAX_APPROVALS {
                return None;
            }
            *read = true;
            let call = (entry, arguments, state);
            let refused = Box::pin(self.would_end(call, blocked, next, scope)).await?;
            let envelope = settle_here(refused, entry, arguments, state);
            return Some(Err(Failure::Envelope(envelope)));
        }
    }

    /// Looks ahead of a call about to wait for approvers — the blocks they
    /// decide pass as if they said yes, and the tool does not run — and
    /// puts each block after theirs that the client's user may approve to
    /// that user now: once the call waits, nobody could ask them, and its
    /// approved run would stop there. `None`: the call may wait, every
    /// such block approved (or none met); otherwise what it ends with
    /// instead — a person declined, or nobody could be asked (as many
    /// questions asked as one call may) and the block stands, as it would
    /// for any call. Without a store the approvers' block stands as it
    /// is, and nobody is asked for a call that cannot wait — nor for one
    /// the store would refuse to keep waiting (`waits`: the approvers'
    /// block, its key and their scope): before the first question to a
    /// client that can be asked, not answered yet (a round of 2026-07-28
    /// carries the answers of earlier ones), the refusal it would meet is
    /// read, and
    /// the call ends with it (a store that cannot be read then tells
    /// nothing: the user is asked, and ticketing the call says what the
    /// store does).
    #[cfg(feature = "rmcp")]
    async fn ahead(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        state: &CallState,
        waits: (&ErrorEnvelope, &str, &str),
        records: &mut Vec<Value>,
    ) -> Option<Result<Success, Failure>> {
        self.store_ref()?;
        let mut read = false;
        // Bounded: each turn asks a question (one record more) or ends.
        loop {
            state.approved().look_ahead(true);
            let looked = self.attempt(entry, arguments, state).await;
            let reached = state.approved().look_ahead(false);
            let failure = match looked {
                Err(_) if reached => return None,
                Err(failure) => failure,
                // A body ran looked ahead of (none `#[tool]` generates
                // does): its outcome is the call's, never run again.
                Ok(success) => return Some(Ok(success)),
            };
            let blocked = failure.envelope();
            // Another failure than a block the client's user may approve
            // (one approvers decide passes here): the approved run meets
            // it, as any call would.
            let key = match blocked.approval_key() {
                Some(key) if blocked.approvers().is_none() => key.to_owned(),
                _ => return None,
            };
            if records.len() >= MAX_APPROVALS {
                return Some(Err(failure));
            }
            if !read && approval::would_ask(state.context_ref(), &key) {
                read = true;
                // The approvers' block, not the client's met here.
                let (theirs, their_key, scope) = waits;
                let call = (entry, arguments, state);
                let ends = self.would_end(call, theirs, their_key, scope);
                if let Some(refused) = Box::pin(ends).await {
                    let envelope = settle_here(refused, entry, arguments, state);
                    return Some(Err(Failure::Envelope(envelope)));
                }
            }
            let asked = self.as_asked(blocked);
            match approval::ask(state.context_ref(), &key, &asked, records).await {
                Approval::Approved => state.approved().approve(&key, true),
                Approval::Declined(envelope) => {
                    let envelope = settle_here(envelope, entry, arguments, state);
                    return Some(Err(Failure::Envelope(envelope)));
                }
                Approval::NotAsked => return Some(Err(failure)),
            }
        }
    }
}
