//! What must outlive a call: tasks, approvals that wait for a person,
//! escalations nobody at the client could take, the approving rounds
//! already used, and the audit of every decision — behind one trait, so
//! that any replica answers for any of them and a restart loses nothing.
//!
//! - [`MemoryStore`]: in the process, for tests and a single server that
//!   may forget on restart;
//! - `SqliteStore` (feature `sqlite`): a file, nothing to install — the
//!   embedded default; replicas on one host may share the file;
//! - `PostgresStore` (feature `postgres`): for N replicas.
//!
//! Open one from a URL with [`open()`]: `memory:`, `sqlite:PATH`,
//! `postgres://…`. The SQL backends run their migrations when opened.
//!
//! Every change that decides something is one conditional update: a
//! pending approval is decided once (`pending` → `approved` or
//! `declined`), an approved one is run by the one replica whose claim
//! (`approved` → `running`, with a lease) succeeds, and a used approving
//! state is redeemed once. Times are wall-clock milliseconds since the Unix
//! epoch, given by the caller, so that every replica and every backend read
//! a lease the same way.

mod answers;
mod audit;
mod clock;
mod debug;
mod error;
mod escalations;
#[cfg(all(test, feature = "tokio"))]
pub(crate) mod gated;
mod memory;
mod open;
mod records;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

pub use audit::{AuditEntry, Decision};
pub use clock::now_ms;
pub(crate) use clock::{KEEP_CANCELLED_TASK_MS, KEEP_DECIDED_MS};
pub use error::StoreError;
pub use escalations::{EscalationRecord, EscalationState};
pub use memory::MemoryStore;
pub use open::open;
pub use records::{ApprovalRecord, ApprovalState, TaskRecord, TaskState, TaskUpdate};
#[cfg(feature = "postgres")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "postgres")))]
pub use sql::PostgresStore;
#[cfg(feature = "sqlite")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "sqlite")))]
pub use sql::SqliteStore;

/// What [`Store::expire_approvals`] keeps for an approval that expired
/// undecided, given how many escalations of its caller are open then in
/// the approval's service ([`ApprovalRecord::service`]): the
/// escalation that tells someone, or none (its caller has as many open as
/// are kept).
pub type Escalate<'a> = dyn Fn(&ApprovalRecord, u64) -> Option<EscalationRecord> + Send + Sync + 'a;

/// A boxed future, as the store's methods answer.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// What must outlive a call, kept where every replica can read it.
///
/// Implemented by [`MemoryStore`], `SqliteStore` and `PostgresStore`; a
/// store of your own (in Redis, say) implements it the same way, each
/// "decide once" method as one conditional update.
pub trait Store: Send + Sync + fmt::Debug + 'static {
    // ---- tasks ----

    /// Keeps a new task, unless its caller has `most_running` or more
    /// [running](Self::running_tasks) in its service already: whether it
    /// was kept. Pass
    /// `u64::MAX` to keep it whatever runs.
    ///
    /// The count and the keeping are one step for the caller, on every
    /// replica sharing the store, as in
    /// [`open_approval`](Self::open_approval): however many start at the
    /// same moment, no more than `most_running` of theirs run.
    fn create_task<'a>(&'a self, task: &'a TaskRecord, most_running: u64) -> StoreFuture<'a, bool>;

    /// The task `id`, if it is kept.
    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;

    /// Changes the task `id` as `update` says, if `holder` still holds it:
    /// whether it did.
    fn update_task<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        update: &'a TaskUpdate,
    ) -> StoreFuture<'a, bool>;

    /// Adds `responses` (an object: key → answer) to what the task `id`
    /// was answered, while it is not finished: whether it was (it is not
    /// finished). Kept are only answers to questions the task asks
    /// ([`TaskRecord::input_requests`]) and has no answer to yet — as
    /// rmcp's task manager keeps them — the others dropped: a caller
    /// cannot grow the record with answers to nothing, nor change one.
    fn answer_task<'a>(
        &'a self,
        id: &'a str,
        responses: &'a serde_json::Value,
    ) -> StoreFuture<'a, bool>;

    /// Asks the task `id` to stop, while it is not finished: whether it was.
    fn cancel_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool>;

    /// How many tasks of `service` ([`TaskRecord::service`]) are not
    /// finished: in all, and of `caller`. Another service's are not
    /// counted: a subject there may be someone else, under bounds of its
    /// own.
    fn running_tasks<'a>(
        &'a self,
        service: &'a str,
        caller: Option<&'a str>,
    ) -> StoreFuture<'a, (u64, u64)>;

    /// Claims, for `holder` until `lease_until_ms`, up to `limit` unfinished
    /// tasks of `service` ([`TaskRecord::service`]) whose lease ran out
    /// before `now_ms`: the tasks claimed. With `tools`, only tasks of
    /// those tools ([`TaskRecord::tool`]), and of any tool those whose time
    /// to live ran out by `now_ms` (`created_ms + ttl_ms`: no replica runs
    /// them again, and whoever claims one ends it) — a replica that lacks a
    /// tool (a release rolling out) leaves its tasks to one that has it;
    /// `None`, every tool's. Each claim is one conditional update, so that
    /// two replicas never claim one task; another service's tasks are never
    /// claimed. One the store cannot read back
    /// ([`StoreError::is_unreadable`]) can neither run again nor be
    /// answered: it is ended [failed](TaskState::Failed) and not returned,
    /// and holds none of the others back.
    fn claim_abandoned_tasks<'a>(
        &'a self,
        service: &'a str,
        tools: Option<&'a [&'a str]>,
        holder: &'a str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<TaskRecord>>;

    // ---- approvals ----

    /// Keeps `approval`, pending, unless a live one (pending, approved,
    /// running, or done, declined or withdrawn and not yet past its
    /// expiry) exists for the same
    /// call and block: the one kept, new or old. Or keeps nothing and
    /// answers `None` when there is no such live one and its caller has
    /// `most_waiting` or more [waiting](Self::waiting_approvals) in its
    /// service at `approval.created_ms` already. Pass `u64::MAX` to count nothing.
    ///
    /// The count and the keeping are one step for the caller, on every
    /// replica sharing the store: however many open one of theirs at the
    /// same moment, no more than `most_waiting` wait at once (SQLite: one
    /// write transaction, `BEGIN IMMEDIATE`; Postgres: a read-committed
    /// transaction that takes an advisory lock on the caller in the
    /// approval's service first). What
    /// waits is judged at `approval.created_ms`, by the opening replica's
    /// clock, as every time here is. A store of your own must keep that
    /// promise too; the store contract's test holds it.
    fn open_approval<'a>(
        &'a self,
        approval: &'a ApprovalRecord,
        most_waiting: u64,
    ) -> StoreFuture<'a, Option<ApprovalRecord>>;

    /// The live approvals of the call `digest` at `now_ms` (pending,
    /// approved, running; done, declined or withdrawn and not yet
    /// expired), newest first.
    fn call_approvals<'a>(
        &'a self,
        digest: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;

    /// How many approvals of `service` ([`ApprovalRecord::service`]) and
    /// `caller` (a subject; `None`, of callers without one) wait for a
    /// decision at `now_ms`: pending, not expired — and withdrawn ones
    /// until they expire, so that a caller who opens and takes back
    /// approval after approval stays within the bound. Another service's
    /// are not counted.
    fn waiting_approvals<'a>(
        &'a self,
        service: &'a str,
        caller: Option<&'a str>,
        now_ms: i64,
    ) -> StoreFuture<'a, u64>;

    /// The approval `id`; an error [unreadable](StoreError::unreadable)
    /// when the store holds it and cannot read it back.
    fn approval<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<ApprovalRecord>>;

    /// The approvals of `service` ([`ApprovalRecord::service`]) in
    /// `states` — with `approvers`, only those whose approvers' scope is
    /// one of them (`Some(&[])`: none) — newest first, at most `limit`:
    /// another service's (and, with `approvers`, another scope's) are not
    /// listed, nor do they crowd these out.
    fn approvals<'a>(
        &'a self,
        service: &'a str,
        approvers: Option<&'a [&'a str]>,
        states: &'a [ApprovalState],
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;

    /// As [`approvals`](Self::approvals), the oldest first: what the inbox
    /// lists as waiting, so that what waited longest (and expires first)
    /// is never crowded off the page by what came after it. A store of
    /// your own that does not implement it lists the newest first.
    fn oldest_approvals<'a>(
        &'a self,
        service: &'a str,
        approvers: Option<&'a [&'a str]>,
        states: &'a [ApprovalState],
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        self.approvals(service, approvers, states, limit)
    }

    /// Decides the pending approval `id`: one conditional update of a
    /// pending row that has not expired at `decision.at_ms` — or, for a
    /// withdrawal ([`Decision::withdrawn`]), of an approved one no replica
    /// has claimed to run yet and [`expire_approvals`](Self::expire_approvals)
    /// has not ended — which also moves its expiry to
    /// [`readable_until(decision.at_ms)`](ApprovalRecord::readable_until)
    /// of the record as it was before the decision (a withdrawal keeps it
    /// where it was), leaves it in
    /// [`decision.state()`](Decision::state), and, in the same transaction,
    /// the decision's line of the audit ([`Decision::audit_entry`]): no
    /// decision is taken without it. Whether it was this decision that
    /// decided it. A store that takes a withdrawal for a plain decline
    /// withdraws only pending approvals.
    fn decide<'a>(&'a self, id: &'a str, decision: &'a Decision) -> StoreFuture<'a, bool>;

    /// Claims the approval `id` to run its call, for `holder` until
    /// `lease_until_ms`: an approved one, or a running one whose lease ran
    /// out before `now_ms`. The approval as claimed, or `None` when another
    /// holder has it or it is not approved.
    ///
    /// An approval claimed that the store cannot read back is an error
    /// [unreadable](StoreError::unreadable), the claim kept: the runner
    /// then ends it, unrun, with [`finish_approval`](Self::finish_approval),
    /// so that it holds none of the approved calls after it back. (A store
    /// that reads before it claims holds nothing: the runner's pass then
    /// ends at the row, as at any failure.)
    fn claim_approval<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        now_ms: i64,
        lease_until_ms: i64,
    ) -> StoreFuture<'a, Option<ApprovalRecord>>;

    /// Holds the approval `id`'s call for `holder` until `lease_until_ms`,
    /// if `holder` still holds it and it still runs: whether it does. The
    /// runner renews its lease this way while the call runs, so that a long
    /// call is not taken for an abandoned one.
    fn renew_approval<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        lease_until_ms: i64,
    ) -> StoreFuture<'a, bool>;

    /// The ids of the approvals of `service` ([`ApprovalRecord::service`])
    /// that wait to be run — approved, or running with a lease that ran
    /// out before `now_ms` — at most `limit`, the oldest first
    /// ([`ApprovalRecord::created_ms`]): a yes waits behind no newer one.
    /// Another service's are never
    /// listed: a tool of the same name there may do something else.
    fn approvals_to_run<'a>(
        &'a self,
        service: &'a str,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<String>>;

    /// Keeps the `result` of the approval `id`'s call and ends it (`done`),
    /// its expiry moved to
    /// [`readable_until(at_ms)`](ApprovalRecord::readable_until), if
    /// `holder` still holds it: whether it did.
    fn finish_approval<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        result: &'a serde_json::Value,
        at_ms: i64,
    ) -> StoreFuture<'a, bool>;

    /// Ends every approval of `service` ([`ApprovalRecord::service`])
    /// whose time ran out before `now_ms` (`expired`) while it was pending,
    /// or approved and not yet claimed to run (an approval's yes is for
    /// one time to live after the decision: a runner that was down longer
    /// does not run it late, with its caller's scopes of then), and keeps, in the same transaction, its line of the
    /// audit ([`AuditEntry::expired`]) and the escalation `escalate` makes
    /// of it, if any, given the open escalations of its caller in its
    /// service ([`open_escalations`](Self::open_escalations) of
    /// `Some(&approval.service)`) counted in that transaction, under the
    /// same lock a [`record_escalation`](Self::record_escalation) of that
    /// service and caller takes (an approval the store cannot read back
    /// expires with its line alone: no escalation can be made of it, and
    /// it holds none of the others back): no approval expires unrecorded, however the store
    /// fails. Those it ended and could read back. A store may end them in
    /// batches, each its own transaction (the SQL stores, 64 at a time):
    /// on an error, the batches before it stand. Another service's are
    /// left to it: each service escalates its own under its own bounds.
    fn expire_approvals<'a>(
        &'a self,
        service: &'a str,
        now_ms: i64,
        escalate: &'a Escalate<'a>,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;

    /// Claims up to `limit` approvals of `service` whose notice is due by
    /// `now_ms` ([`ApprovalRecord::notice_due_ms`]) and which still wait
    /// for a decision (pending, not expired), the oldest due first: those
    /// claimed, each now due again at `now_ms` plus `wait_ms` or its age
    /// (`now_ms - created_ms`), whichever is longer — so that no other
    /// replica posts it meanwhile, and the waits between its posts double
    /// as it waits on (a notice a receiver never takes is not posted every
    /// `wait_ms` for a day); if it is not [sent](Self::notice_sent) by
    /// then, any replica posts it again. Each claim is one conditional
    /// update. One the store cannot read back is no longer due (it cannot
    /// be told), and not returned.
    ///
    /// The default claims none: a store of your own that does not
    /// implement it leaves each notice to the one post of the replica that
    /// opened its approval. Implement both this and
    /// [`notice_sent`](Self::notice_sent), or neither: a store that
    /// claims notices but does not keep them sent posts each again, with
    /// waits that double, until its approval is decided.
    fn claim_due_notices<'a>(
        &'a self,
        service: &'a str,
        now_ms: i64,
        wait_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let _ = (service, now_ms, wait_ms, limit);
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Keeps that the notice of the approval `id` was delivered: it is no
    /// longer due ([`ApprovalRecord::notice_due_ms`] is `None`).
    ///
    /// The default keeps nothing (see
    /// [`claim_due_notices`](Self::claim_due_notices)).
    fn notice_sent<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let _ = id;
        Box::pin(std::future::ready(Ok(())))
    }

    // ---- single use ----

    /// Records `nonce` as used until `until_ms`: whether it was not used
    /// already. An approving state is spent this way, an inbox session
    /// signed out of, and every session of a person ended (until
    /// `i64::MAX`). The record must be kept until `until_ms` has passed —
    /// `i64::MAX` is for good: a store that lets records expire sooner
    /// would bring ended sessions back. Every replica sharing the store
    /// must see the record at once: only one of two redeeming the same
    /// nonce gets `true`.
    fn redeem<'a>(&'a self, nonce: &'a str, until_ms: i64) -> StoreFuture<'a, bool>;
    /// Whether `nonce` was redeemed ([`redeem`](Self::redeem)) and not
    /// swept since, as every replica sees it once `redeem` returned: the
    /// inbox reads a session it ended this way.
    fn redeemed<'a>(&'a self, nonce: &'a str) -> StoreFuture<'a, bool>;
    /// The name of this store's record of used nonces
    /// ([`redeem`](Self::redeem)): the same for every handle on the same
    /// data (every replica sharing the database, the same file after a
    /// restart), another for any other (each new [`MemoryStore`], another
    /// database). A `requestState` carrying a person's yes is sealed with
    /// it and spent only where it is the same: a store that never saw the
    /// state spent does not take it as unspent. The SQL stores keep it in
    /// the database (`te_ledger`): a copy that goes on apart (a staging
    /// clone, a SQLite file copied to each replica) must have that row
    /// deleted before it is first opened, to be named anew.
    fn ledger(&self) -> &str;

    // ---- escalations ----

    /// Keeps `escalation` unless its caller has `most_open` or more
    /// [open](Self::open_escalations) in its service (or, for a calling
    /// agent's, among calling agents') already: whether it was kept. Pass
    /// `u64::MAX` to keep it whatever is open.
    ///
    /// The count and the keeping are one step for the caller, on every
    /// replica sharing the store, as in
    /// [`open_approval`](Self::open_approval): however many are kept at
    /// the same moment, no more than `most_open` of theirs are open.
    ///
    /// An escalation whose [`id`](EscalationRecord::id) is kept already is
    /// not kept again, and is answered `true`: a keeper whose store kept
    /// one and then failed to say so (its connection lost after the
    /// commit) asks again under the same id.
    fn record_escalation<'a>(
        &'a self,
        escalation: &'a EscalationRecord,
        most_open: u64,
    ) -> StoreFuture<'a, bool>;

    /// The escalations of `service` ([`EscalationRecord::service`]) and
    /// of calling agents (none) in `state` — with `approvers`, only those
    /// anyone may resolve (no [`approvers`](EscalationRecord::approvers))
    /// and those whose approvers' scope is one of them (`Some(&[])`: only
    /// the former) — newest first, at most `limit`: another service's (and,
    /// with `approvers`, another scope's) are not listed, nor do they
    /// crowd these out.
    fn escalations<'a>(
        &'a self,
        service: &'a str,
        approvers: Option<&'a [&'a str]>,
        state: EscalationState,
        limit: u32,
    ) -> StoreFuture<'a, Vec<EscalationRecord>>;

    /// The escalation `id`, open or resolved, if it is kept.
    fn escalation<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<EscalationRecord>>;

    /// How many escalations of `service` ([`EscalationRecord::service`];
    /// `None`, of calling agents) and `caller` (a subject; `None`, of
    /// callers without one) are open. Another service's are not counted.
    fn open_escalations<'a>(
        &'a self,
        service: Option<&'a str>,
        caller: Option<&'a str>,
    ) -> StoreFuture<'a, u64>;

    /// Resolves the open escalation `id`: one conditional update and, in
    /// the same transaction, its line of the audit
    /// ([`AuditEntry::resolved`]). Whether it was this call that resolved
    /// it.
    fn resolve_escalation<'a>(
        &'a self,
        id: &'a str,
        by: &'a str,
        note: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, bool>;

    /// Forgets the escalations of `service` and of calling agents (as
    /// [`escalations`](Self::escalations) lists them) resolved before
    /// `resolved_before_ms`: their records — their resolutions' lines stay
    /// in the audit. Open ones are never forgotten, nor another service's.
    /// How many were. What
    /// [`ToolSet::forget_resolved_escalations_after`] asks of the sweep.
    ///
    /// [`ToolSet::forget_resolved_escalations_after`]: crate::mcp::ToolSet::forget_resolved_escalations_after
    fn forget_resolved_escalations<'a>(
        &'a self,
        service: &'a str,
        resolved_before_ms: i64,
    ) -> StoreFuture<'a, u64>;

    // ---- audit ----

    /// Keeps an entry of the audit.
    fn audit<'a>(&'a self, entry: &'a AuditEntry) -> StoreFuture<'a, ()>;

    /// The newest entries of the audit, at most `limit`.
    fn audit_log<'a>(&'a self, limit: u32) -> StoreFuture<'a, Vec<AuditEntry>>;

    // ---- upkeep ----

    /// Forgets what no one can read any more at `now_ms`: tasks a time to
    /// live after their last change (a finished one is read for its time
    /// to live after it finished, as rmcp keeps it; one its caller
    /// cancelled that never finished is kept a week longer, for its
    /// service to take it over and withdraw what it waited for — any
    /// service's pass sweeps every service's), redeemed nonces whose
    /// `until_ms` is past (never one redeemed until `i64::MAX`), approvals
    /// done, declined or expired more than a week past their expiry.
    fn sweep<'a>(&'a self, now_ms: i64) -> StoreFuture<'a, ()>;
}

/// A fresh, unguessable id: 128 bits from the operating system's random
/// source, base64url.
pub(crate) fn new_id() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system gives random bytes");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
