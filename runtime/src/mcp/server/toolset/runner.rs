//! The runner every replica of a tool set with a store keeps in the
//! background ([`ToolSet::run_approved`]): it runs each approved call once,
//! under a lease, expires the approvals nobody decided and the approved
//! calls no runner took up in time, and takes over the tasks of a replica
//! that stopped.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::unrun::{LEASE, expired_escalation};
use super::{Inner, ToolSet};
use crate::caller::Caller;
use crate::envelope::ErrorEnvelope;
use crate::mcp::context::ToolContext;
use crate::mcp::server::{held, ticket};
use crate::store::{ApprovalRecord, ApprovalState, EscalationRecord, Store, StoreError, now_ms};

/// How often a replica looks for approved calls it did not see decided.
const POLL: Duration = Duration::from_secs(1);

/// How often a replica's runner sweeps the store of what no one can read
/// any more ([`Store::sweep`]).
const SWEEP: Duration = Duration::from_secs(60);

/// How often a replica renews the lease of an approved call it runs.
const RENEW: Duration = Duration::from_secs(60);

/// How many passes of the background runner go on at once: one whose
/// approved call runs long goes on beside the next.
const MOST_PASSES: usize = 4;

/// How many approved calls one batch of the runner takes on.
pub(super) const BATCH: u32 = 16;

/// How many batches one pass takes on at most.
const MAX_BATCHES: usize = 64;

impl ToolSet {
    /// Forgets each escalation kept in the store `age` after a person
    /// resolved it, at the runner's sweep (once a minute): its record, not
    /// its resolution's line in the audit, which stays. Open escalations
    /// are never forgotten. Without it, resolved escalations are kept for
    /// good (the default: nothing a person may look for is lost unasked).
    /// It is the set's own store ([`ToolSet::store`]) that is swept, of
    /// this service's escalations and calling agents' (another service
    /// sharing the store forgets its own as it says): for escalations kept
    /// in another store (a retry policy's, a coordinator's), call
    /// [`Store::forget_resolved_escalations`] yourself.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_envelope::mcp::ToolSet;
    ///
    /// let tools = ToolSet::new().forget_resolved_escalations_after(Duration::from_secs(90 * 86_400));
    /// # let _ = tools;
    /// ```
    #[must_use]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub fn forget_resolved_escalations_after(mut self, age: Duration) -> Self {
        self.inner_mut().forget_resolved_after = Some(age);
        self
    }

    /// Runs, once each, the approved calls that wait in the store, expires
    /// the approvals nobody decided in time and the approved calls no
    /// runner took up within a time to live of the yes (this service's: each service
    /// escalates its own under its own bounds), takes over the tasks of a
    /// replica that stopped (see below), posts again the approvals'
    /// notices that are due, with a webhook
    /// (`Webhook::resend_after`), and, once a minute, sweeps the
    /// store of what no one can read any more
    /// ([`Store::sweep`]): what the background
    /// runner does every second on every replica (started when the set
    /// first serves), for a host that drives it itself; the sweep also
    /// forgets old resolved escalations when
    /// [`forget_resolved_escalations_after`](Self::forget_resolved_escalations_after)
    /// says how old (a pass runs its calls one after another; the
    /// background runner starts the next pass beside one still running
    /// after a second, up to four at once, so that a call that runs long
    /// holds back none approved after it — a host that drives passes
    /// itself does the same). Each call is
    /// claimed under a lease, so that of the replicas sharing the store
    /// exactly one runs it; its reply is kept for the caller to read. A
    /// call whose runner died while it ran is run again only if its tool is
    /// read-only or idempotent and its yes's time to live has not run out
    /// (else it ends unrun); else it ends `MAY_HAVE_TAKEN_EFFECT`. An
    /// approved call of a tool this set does not have is left to a
    /// replica that has it (a release rolling out; an inbox served apart),
    /// and expires unrun if none takes it up in time. A task
    /// whose replica stopped renewing its lease is taken over the same way:
    /// run again here if that is safe, for what is left of its time to
    /// live from when it was made (and never after it was taken over
    /// twice), else ended `MAY_HAVE_TAKEN_EFFECT`
    /// (cancelled, if its caller asked). An approved call the store cannot
    /// read back ([`StoreError::is_unreadable`]: a row written by hand,
    /// say) is ended `done`, unrun (the reply kept in its row says why;
    /// the row itself still cannot be read), one whose other approvals the
    /// store cannot read back is left for a later pass, and a stopped task
    /// it cannot read back is ended failed: none holds back what comes
    /// after it. The number of approved calls run.
    ///
    /// # Errors
    ///
    /// When the store fails: listing, claiming or keeping an approved call
    /// at once (the calls before it ran); expiring approvals or taking
    /// tasks over after the approved calls ran all the same.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn run_approved(&self) -> Result<usize, StoreError> {
        let Some(store) = self.store_ref() else {
            return Ok(0);
        };
        // Each expired approval's audit, and its escalation unless its
        // caller has as many open as the set keeps, are kept with its
        // expiry, in one transaction: none expires unrecorded.
        let most = u64::try_from(self.inner.most_open_escalations).unwrap_or(u64::MAX);
        let escalate = |expired: &ApprovalRecord, open: u64| {
            // Seen only by those who could have decided it.
            (open < most).then(|| {
                EscalationRecord::new(expired_escalation(expired), expired.caller.clone())
                    .for_approvers(expired.approvers.clone())
                    .for_service(expired.service.clone())
            })
        };
        // Each step whichever failed before it: approvals that cannot be
        // expired (a row the store cannot read back, say) or tasks that
        // cannot be taken over hold no approved call back; the first
        // failure is reported once the calls ran.
        let expired = store
            .expire_approvals(self.service(), now_ms(), &escalate)
            .await
            .map(drop);
        if let Err(error) = &expired {
            tracing::warn!(%error, "expiring approvals failed; approved calls run all the same");
        }
        let recovered = self.recover_tasks(store.as_ref()).await;
        if let Err(error) = &recovered {
            tracing::warn!(%error, "taking stopped tasks over failed; approved calls run all the same");
        }
        if let Err(error) = self.sweep(store.as_ref()).await {
            tracing::warn!(%error, "sweeping the store failed; approved calls run all the same");
        }
        #[cfg(feature = "inbox")]
        if let Err(error) = self.resend_notices(store).await {
            tracing::warn!(%error, "claiming the notices due failed; approved calls run all the same");
        }
        let mut ran = 0;
        // Batch after batch, until one is not full: what another replica
        // claimed meanwhile is not listed again. The first call the store
        // fails ends the pass: a store that is down is not asked again for
        // each call listed. (One it answers but cannot read back is ended
        // unrun: `set_aside`.) A call left for a later pass is listed again,
        // first (the oldest): each batch asks for as many more as were left
        // in the batch before, so that those left never crowd out the calls
        // after them, and none is tried twice in a pass.
        let mut tried = std::collections::HashSet::new();
        let mut left = 0u32;
        for _ in 0..MAX_BATCHES {
            let limit = BATCH.saturating_add(left);
            let ids = (store.approvals_to_run(self.service(), now_ms(), limit)).await?;
            left = 0;
            let mut new = false;
            for id in &ids {
                if !tried.insert(id.clone()) {
                    left += 1; // listed again: left for a later pass
                    continue;
                }
                new = true;
                let ran_here = self.run_one(store.as_ref(), id).await?;
                // Not run here: left, or taken by another replica.
                left += u32::from(ran_here == 0);
                ran += ran_here;
            }
            if ids.len() < limit as usize || !new {
                break;
            }
        }
        expired.and(recovered)?;
        Ok(ran)
    }

    /// Sweeps `store` ([`Store::sweep`]) when this set last did so a
    /// minute ago or more: finished tasks past their time to live, used
    /// states past their expiry, approvals decided long ago, and, when the
    /// set says so, escalations resolved long ago. Without it, every state
    /// a caller spends and every task it starts would be kept for ever.
    async fn sweep(&self, store: &dyn Store) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        let now = now_ms();
        let every = held::ms(SWEEP);
        let swept = &self.inner.protocol.approving.swept_ms;
        let last = swept.load(Ordering::Relaxed);
        if now.saturating_sub(last) < every
            || swept
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return Ok(());
        }
        // Both steps, whichever fails: the first error is reported.
        let swept = store.sweep(now).await;
        let forgotten = match self.inner.forget_resolved_after {
            Some(age) => {
                let age = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
                store
                    .forget_resolved_escalations(self.service(), now.saturating_sub(age))
                    .await
                    .map(drop)
            }
            None => Ok(()),
        };
        swept.and(forgotten)
    }

    /// Claims the approved call `id` and runs it: 1 if it ran here, 0 if
    /// another replica has it or it may not run again.
    async fn run_one(&self, store: &dyn Store, id: &str) -> Result<usize, StoreError> {
        let holder = &self.inner.protocol.approving.holder;
        let before = match store.approval(id).await {
            Ok(Some(before)) => before,
            Ok(None) => return Ok(0),
            Err(unread) if unread.is_unreadable() => {
                return self.set_aside(store, id, unread).await;
            }
            Err(error) => return Err(error),
        };
        // Another service's call, whatever listed it, is theirs to run; an
        // approved call of a tool this set does not have, a replica's that
        // has it (a release rolling out that adds it; an inbox served
        // apart, with no tools): claimed here, it could only fail, and the
        // yes would be spent unrun. If no replica has it any more, it
        // expires unrun, escalated, as every yes no runner took up in its
        // time. (One whose runner died as it ran is ended below, wherever:
        // nothing else would end it.)
        let has_tool = self.inner.index.contains_key(&before.tool);
        let yes_live = before.expires_ms > now_ms();
        let for_another = match before.state {
            ApprovalState::Approved => true,
            // A replica with the tool runs it again, if that is safe.
            _ => before.safe_to_repeat && yes_live,
        };
        if !self.owns(&before) || (!has_tool && for_another) {
            return Ok(0);
        }
        // The blocks its run passes, read before anything is claimed: a
        // store that cannot say leaves the call to the next pass. One that
        // cannot read back another approval of the call (its row mangled)
        // leaves it there too, and the pass goes on: such a row ends with
        // its expiry, a time to live at most.
        let live = match store.call_approvals(&before.digest, now_ms()).await {
            Ok(live) => live,
            Err(error) if error.is_unreadable() => {
                tracing::warn!(%error, ticket = %id, "another approval of the approved call could not be read back: left for a later pass");
                return Ok(0);
            }
            Err(error) => return Err(error),
        };
        let blocks = ticket::chain_blocks(&before, &live);
        let now = now_ms();
        // An approver's yes is for one time to live after it: a call
        // approved and not claimed by then (every runner was down) is not
        // run late, as its caller was then; it is left to expire (the next
        // pass's `expire_approvals`, which escalates it).
        if before.state == ApprovalState::Approved && before.state_at(now) == ApprovalState::Expired
        {
            return Ok(0);
        }
        let lease = super::claim::claims_own(now.saturating_add(held::ms(LEASE)));
        // The claim takes the call from where it was read, and from nowhere
        // else: read as approved, only an approved call is claimed (no lease
        // ran out before the first instant). Otherwise a read gone stale —
        // another replica claimed the call since, then died — would take
        // its run for a first one, and run it again.
        let abandoned = before.state == ApprovalState::Running;
        let ran_out_before = if abandoned { now } else { i64::MIN };
        let claim = store
            .claim_approval(id, holder, ran_out_before, lease)
            .await;
        let Some(claimed) = super::claim::taken_by_claim(store, id, holder, lease, claim).await?
        else {
            return Ok(0);
        };
        let (reply, ran) = match abandoned {
            true if !claimed.safe_to_repeat => (
                self.may_have_taken_effect(&claimed.tool, &claimed.arguments),
                0,
            ),
            // Its runner died, and the yes's time ran out before another
            // took it over: not run again, late, as its caller was then.
            true if claimed.expires_ms <= now => (
                self.not_run_again_late(&claimed.tool, &claimed.arguments),
                0,
            ),
            // Left above for a replica with the tool; claimed here only
            // when the read went stale meanwhile.
            true if !has_tool => (
                self.may_have_taken_effect(&claimed.tool, &claimed.arguments),
                0,
            ),
            _ => (self.run_renewed(store, &claimed, &blocks).await, 1),
        };
        let reply = serde_json::to_value(&reply).unwrap_or_default();
        if !store.finish_approval(id, holder, &reply, now_ms()).await? {
            tracing::warn!(ticket = %id, "another replica holds the approved call now: this run's reply is not kept");
        }
        Ok(ran)
    }

    /// [`run_claimed`](Self::run_claimed), its lease renewed every
    /// [`RENEW`] while the call runs: a call that runs longer than a lease
    /// is not taken for one whose runner died.
    async fn run_renewed(
        &self,
        store: &dyn Store,
        approval: &ApprovalRecord,
        blocks: &[String],
    ) -> crate::mcp::reply::ToolReply {
        let holder = self.holder();
        let renew = move || async move {
            // Its own, as a claim's is: no other pass's claim reads as it.
            let lease = super::claim::claims_own(now_ms().saturating_add(held::ms(LEASE)));
            match store.renew_approval(&approval.id, holder, lease).await {
                Ok(true) => {}
                Ok(false) => tracing::warn!(
                    ticket = %approval.id,
                    "the approved call's lease was lost to another replica; its reply will not be kept"
                ),
                Err(error) => tracing::warn!(
                    %error,
                    ticket = %approval.id,
                    "the approved call's lease could not be renewed"
                ),
            }
        };
        held::renewing(self.run_claimed(approval, blocks), RENEW, renew).await
    }

    /// The call of `approval`, run past `blocks` (its own, and those of
    /// the approvals that handed on to it: `ticket::chain_blocks`) and
    /// those its client's user approved before it waited (`waived`), as
    /// its caller, with its ticket as the idempotency key.
    async fn run_claimed(
        &self,
        approval: &ApprovalRecord,
        blocks: &[String],
    ) -> crate::mcp::reply::ToolReply {
        // No guard applies to the tool any more (a release removed it): the
        // block that was approved is gone, and the same call made again
        // runs without looking for this approval — run here too, it could
        // run twice. Not run; the caller calls again.
        if !self.guarded(&approval.tool) {
            let envelope = ErrorEnvelope::transient(format!(
                "the approved call was not run: no guard applies to `{}` any more, so the block that was approved is gone; call it again",
                approval.tool
            ))
            .with_not_applied(true);
            return self.failed(&approval.tool, approval.arguments.clone(), envelope);
        }
        let mut context = ToolContext::detached().with_idempotency_key(approval.id.as_str());
        if let Some(subject) = &approval.caller {
            context = context.with_caller(Caller::new(subject.as_str(), &approval.caller_scopes));
        }
        let arguments = approval.arguments.clone();
        match self
            .call_approved(arguments, context, approval, blocks)
            .await
        {
            Ok(reply) => reply,
            Err(error) => {
                let envelope = ErrorEnvelope::other(format!(
                    "the approved call could not run: {}",
                    error.message
                ));
                self.failed(&approval.tool, approval.arguments.clone(), envelope)
            }
        }
    }

    /// This tool set's name as a holder of leases in the store.
    pub(crate) fn holder(&self) -> &str {
        &self.inner.protocol.approving.holder
    }

    /// Whether the tool `name` may run again from the start: read-only or
    /// idempotent.
    pub(crate) fn safe_to_repeat(&self, name: &str) -> bool {
        self.inner
            .index
            .get(name)
            .is_some_and(|&index| self.inner.entries[index].facts.safe_to_repeat)
    }

    /// Whether a guard applies to the tool `name`, which could block it for
    /// approvers: one of the set's, or its own (`#[tool(guard = …)]`).
    pub(crate) fn guarded(&self, name: &str) -> bool {
        let own = (self.inner.index.get(name))
            .is_some_and(|&index| self.inner.entries[index].definition.guarded);
        own || self.inner.guards.apply_to(name)
    }

    /// The store, when the set has one.
    pub(crate) fn store_ref(&self) -> Option<&Arc<dyn Store>> {
        self.inner.protocol.store.as_ref()
    }

    /// Whether `approval` is this set's service's to list, decide and run:
    /// another service sharing the store may have a tool, or a scope, of
    /// the same name meaning something else.
    pub(crate) fn owns(&self, approval: &ApprovalRecord) -> bool {
        approval.service == self.service()
    }

    /// Where this set's tasks are kept, if anywhere: its store, and the
    /// service they are kept as.
    pub(crate) fn kept_in(&self) -> Option<(&Arc<dyn Store>, &str)> {
        self.store_ref().map(|store| (store, self.service()))
    }

    /// Starts the background runner of approved calls, once per tool set,
    /// when the set has a store and a tokio runtime runs. It holds the set
    /// weakly: it ends when the set is dropped.
    pub(crate) fn start_runner(&self) {
        if self.store_ref().is_none() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let approving = &self.inner.protocol.approving;
        if !approving.background || approving.started.set(()).is_err() {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let approving = Arc::clone(approving);
        tokio::spawn(async move {
            let passes = Arc::new(tokio::sync::Semaphore::new(MOST_PASSES));
            loop {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                // Held by nothing but its passes (and this look): the set
                // was dropped; its passes end as they end, and no other
                // starts.
                let running = MOST_PASSES - passes.available_permits();
                if Arc::strong_count(&inner) <= running + 1 {
                    return;
                }
                // A pass still running after a look's time (its approved
                // call runs long) goes on beside the next one, so that it
                // holds back no call approved after it, whose yes would
                // lapse waiting: at most `MOST_PASSES` at once.
                if let Ok(permit) = Arc::clone(&passes).try_acquire_owned() {
                    let tools = ToolSet {
                        inner,
                        log_threshold: Arc::default(),
                    };
                    let pass = tokio::spawn(async move {
                        if let Err(error) = tools.run_approved().await {
                            tracing::warn!(%error, "running approved calls: the store failed");
                        }
                        // The set let go before the permit: the loop never
                        // counts a pass ended whose set it still holds.
                        drop(tools);
                        drop(permit);
                    });
                    let _ = tokio::time::timeout(POLL, pass).await;
                } else {
                    drop(inner);
                }
                let _ = tokio::time::timeout(POLL, approving.wake.notified()).await;
            }
        });
    }
}
