//! Approvals the calling agent cannot give: a guard's block whose approvers
//! sign in at the server
//! ([`Approvers::scope`](crate::guard::Approvers::scope)) waits in the tool
//! set's store as a ticket. Nothing the calling client sends decides it; an
//! approver does, once; the call then runs once, on whichever replica claims
//! it, and the same call made again reads its outcome.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::caller::Caller;
use crate::envelope::ErrorEnvelope;
use crate::escalation::Escalation;
use crate::mcp::reply::ToolReply;
use crate::mcp::server::approval;
use crate::mcp::server::digest::digest;
use crate::mcp::server::turns::Turns;
use crate::store::{ApprovalRecord, ApprovalState, Decision, Store, StoreError, now_ms};
use crate::{keys, reasons};

mod standing;
use standing::standing;

/// How long an approval waits for a decision by default, and how long its
/// outcome is then given to the same call made again.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How many approvals one caller may have waiting for a decision at once
/// by default (`ToolSet::max_waiting_approvals`): past it, a blocked call
/// of theirs opens no new one (`TOO_MANY_APPROVALS`), so that a caller
/// cannot bury the approvers' inbox and their webhook under blocked calls.
pub const DEFAULT_MAX_WAITING_APPROVALS: usize = 100;

/// The longest time to live an approval is given, whatever is asked
/// (`ToolSet::approval_ttl`): a hundred years.
const MAX_APPROVAL_TTL: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// A served call a guard blocked until an approver decides.
pub(crate) struct Waiting<'a> {
    /// The service called: the tool set's name, empty when it has none.
    pub(crate) service: &'a str,
    /// The tool called.
    pub(crate) tool: &'a str,
    /// Its arguments, as the client sent them.
    pub(crate) arguments: &'a Map<String, Value>,
    /// Who called.
    pub(crate) caller: Option<&'a Caller>,
    /// The block's key among the approvable blocks of the call.
    pub(crate) block: &'a str,
    /// The keys of the blocks its client's user approved before it waits:
    /// its approved run passes them too.
    pub(crate) waived: Vec<String>,
    /// The records of the answers its client's user gave to the
    /// questions of those blocks, for its approved run's reply.
    pub(crate) client_answers: Vec<Value>,
    /// The scope an approver's token must grant.
    pub(crate) approvers: &'a str,
    /// Whether the tool may run again from the start (read-only, idempotent).
    pub(crate) safe_to_repeat: bool,
    /// How many approvals of the caller may wait at once.
    pub(crate) most_waiting: usize,
    /// The callers' turns, one held while a new approval is counted and
    /// opened.
    pub(crate) opening: &'a Turns,
    /// The ticket whose approved run met this block, and would hand on to
    /// its approval.
    pub(crate) handing_on: Option<&'a str>,
    /// How long after its opening a new approval's notice is due again, if
    /// it is not delivered by then (the set has a webhook); `None`, no notice
    /// is posted.
    pub(crate) notice_after_ms: Option<i64>,
}

/// The mark a call's caller leaves in the store when they withdraw it while
/// the approved run of the ticket `run` is under way (`Store::redeem`):
/// that run opens no next approval. It names the run, not the call: a
/// later call made the same way, approved anew, is not withdrawn by it.
pub(crate) fn withdrawn_mark(run: &str) -> String {
    format!("withdrawn-run:{run}")
}

/// Whether the caller withdrew the call whose approved run of `run` met
/// a block (none is: nothing was withdrawn).
async fn withdrawn_during(store: &dyn Store, run: Option<&str>) -> Result<bool, StoreError> {
    match run {
        Some(run) => store.redeemed(&withdrawn_mark(run)).await,
        None => Ok(false),
    }
}

/// The status of a task whose call waits for the approval `id`, which a
/// person granted `approvers` decides: the task's client reads it, and a
/// replica that takes the task over finds the ticket in it
/// ([`ticket_in_status`]).
pub(crate) fn waiting_status(approvers: &str, id: &str) -> String {
    format!("Waiting for an approver with `{approvers}` (ticket {id})")
}

/// The ticket a task's status names, as [`waiting_status`] wrote it.
pub(crate) fn ticket_in_status(status: &str) -> Option<&str> {
    let (_, ticket) = status.rsplit_once(" (ticket ")?;
    let ticket = ticket.strip_suffix(')')?;
    (!ticket.is_empty() && status.starts_with("Waiting for an approver with `")).then_some(ticket)
}

/// Who withdrew an approval whose caller has no subject, in the audit.
pub(crate) const ANONYMOUS: &str = "anonymous caller";

/// Where a waiting call stands.
pub(crate) enum Ticketed {
    /// It waits (pending, approved, running): the escalation that carries
    /// its ticket.
    Awaiting(Escalation),
    /// It ended without running: an approver declined it, or it expired
    /// (undecided, or approved and not run in time).
    Ended(ErrorEnvelope),
    /// It ran: its reply, as kept.
    Ran(ToolReply),
}

/// Where `call`, blocked with `blocked` (shown to approvers as `shown`
/// makes it, which runs only when an approval may be opened),
/// stands in `store`: the approval of its block is opened when there is no
/// live one, and read when there is — unless the caller has as many
/// waiting as they may, and the call ends `TOO_MANY_APPROVALS`. The
/// approval, too, when this call opened it.
///
/// # Errors
///
/// When the store cannot be read or written.
pub(crate) async fn wait(
    store: &dyn Store,
    call: &Waiting<'_>,
    blocked: &ErrorEnvelope,
    shown: impl FnOnce() -> Value,
    ttl: Duration,
) -> Result<(Ticketed, Option<ApprovalRecord>), StoreError> {
    let digest = digest(call.service, call.tool, call.arguments, call.caller);
    let now = now_ms();
    let mut live = store.call_approvals(&digest, now).await?;
    let mut opening = None;
    if !live.iter().any(|approval| approval.block == call.block) {
        // Opened one at a time for the caller here (the store counts and
        // keeps in one step across the replicas; this spares it the
        // caller's own crowd). The same call made at once (the same
        // caller's) may have opened it meanwhile: read again.
        opening = Some(call.opening.take(call.caller.map(Caller::subject)).await);
        live = store.call_approvals(&digest, now).await?;
    }
    // Opened meanwhile by a token with more scopes (the same call made
    // at once): neither its ticket nor its outcome is this one's.
    if let Some(refused) = lacking_scope(&live, call.caller, call.tool) {
        return Ok((Ticketed::Ended(refused), None));
    }
    let mut opened = None;
    let approval = match live.iter().find(|approval| approval.block == call.block) {
        Some(approval) => {
            joined(approval, call);
            onward(approval, &live)
        }
        None => {
            let shown = match not_opened(store, call, blocked, now, shown).await? {
                Ok(shown) => shown,
                Err(refused) => return Ok((Ticketed::Ended(refused), None)),
            };
            // Bounded, so that an expiry moved after a late decision and a
            // late run stays far inside every store's integers.
            let ttl_ms = i64::try_from(ttl.min(MAX_APPROVAL_TTL).as_millis()).unwrap_or(i64::MAX);
            let most = u64::try_from(call.most_waiting).unwrap_or(u64::MAX);
            let mut approval = ApprovalRecord::new(
                digest,
                call.block,
                call.tool,
                Value::Object(call.arguments.clone()),
                shown,
                call.caller.map(|caller| caller.subject().to_owned()),
                call.approvers,
                now.saturating_add(ttl_ms),
            );
            approval.service = call.service.to_owned();
            approval.caller_scopes = call
                .caller
                .map(|caller| caller.scopes().map(str::to_owned).collect())
                .unwrap_or_default();
            approval.safe_to_repeat = call.safe_to_repeat;
            approval.waived.clone_from(&call.waived);
            approval.client_answers.clone_from(&call.client_answers);
            // Due again if the opener's post did not get through.
            approval.notice_due_ms = call.notice_after_ms.map(|after| now.saturating_add(after));
            // Refused by the store's own count: as many as may wait, wait.
            let Some(kept) = store.open_approval(&approval, most).await? else {
                return Ok((Ticketed::Ended(approval::too_many(blocked, most)), None));
            };
            // Its caller may have taken the call back since the mark was
            // looked for, and not seen this approval then: looked for
            // again, now that it is kept, and withdrawn if so.
            if withdrawn_during(store, call.handing_on).await? {
                let by = call.caller.map_or(ANONYMOUS, Caller::subject);
                let note =
                    "withdrawn: its caller took the call back while its approved run went on";
                store
                    .decide(&kept.id, &Decision::withdrawn(by, note))
                    .await?;
                return Ok((
                    Ticketed::Ended(approval::withdrawn_meanwhile(blocked)),
                    None,
                ));
            }
            if kept.id == approval.id {
                opened = Some(kept.clone());
            } else {
                joined(&kept, call);
            }
            kept
        }
    };
    drop(opening);
    Ok((standing(&approval, blocked, now), opened))
}

/// What `call`, blocked with `blocked`, would end with instead of waiting
/// if it were ticketed now, read from `store` without writing to it: the
/// refusals of [`wait`] — a token that grants less than the live
/// approval's, the caller's run withdrawn, as many approvals of theirs
/// waiting as may, arguments too long to show whole. `None`: it would open
/// the approval of its block, or join the live one (which may have been
/// decided since: then it ends as that approval did). Asked before the client's user
/// is, so that nobody is asked about a call that will not wait; the store
/// may change before the call is ticketed, and [`wait`] asks again.
///
/// # Errors
///
/// When the store cannot be read.
pub(crate) async fn would_end(
    store: &dyn Store,
    call: &Waiting<'_>,
    blocked: &ErrorEnvelope,
    shown: impl FnOnce() -> Value,
) -> Result<Option<ErrorEnvelope>, StoreError> {
    let now = now_ms();
    let digest = digest(call.service, call.tool, call.arguments, call.caller);
    let live = store.call_approvals(&digest, now).await?;
    if let Some(refused) = lacking_scope(&live, call.caller, call.tool) {
        return Ok(Some(refused));
    }
    if live.iter().any(|approval| approval.block == call.block) {
        return Ok(None);
    }
    Ok(not_opened(store, call, blocked, now, shown).await?.err())
}

/// Whether `call` may open the approval of its block, none living: the
/// view approvers get of it (made by `shown`, only when the rest allows),
/// or the refusal it ends with — its caller took back the approved run
/// that met the block, as many approvals of theirs wait as may (a read
/// alone: the store counts again as it opens one), or approvers would not
/// see its arguments whole.
async fn not_opened(
    store: &dyn Store,
    call: &Waiting<'_>,
    blocked: &ErrorEnvelope,
    now: i64,
    shown: impl FnOnce() -> Value,
) -> Result<Result<Value, ErrorEnvelope>, StoreError> {
    // Its caller took the call back while this approved run of it went
    // on: the next approval is not asked for.
    if withdrawn_during(store, call.handing_on).await? {
        return Ok(Err(approval::withdrawn_meanwhile(blocked)));
    }
    // Refused at once when plainly past the bound, with a read alone: no
    // write, no view made for approvers.
    let caller = call.caller.map(Caller::subject);
    let most = u64::try_from(call.most_waiting).unwrap_or(u64::MAX);
    let waiting = store.waiting_approvals(call.service, caller, now).await?;
    if waiting >= most {
        return Ok(Err(approval::too_many(blocked, waiting)));
    }
    // An approver sees the arguments whole, or is not asked: a part cut
    // from what they see could be the part that matters.
    let shown = shown();
    if shown
        .get(keys::ATTEMPTED_QUERY)
        .is_some_and(Value::is_string)
    {
        return Ok(Err(approval::too_long(blocked)));
    }
    Ok(Ok(shown))
}

/// Notes a call that joined the live approval `approval` of the same
/// call, opened by another making of it, when the blocks its client's user
/// approved differ from those the approval keeps: the approval's are the
/// ones its run passes (an approval of an earlier release keeps none, and
/// its run stops at the client's block).
fn joined(approval: &ApprovalRecord, call: &Waiting<'_>) {
    if approval.waived != call.waived {
        tracing::warn!(
            ticket = %approval.id,
            kept = ?approval.waived,
            approved = ?call.waived,
            "a call joined the live approval of the same call, whose client-approved blocks differ: its run passes the approval's"
        );
    }
}

/// The most approvals one call waits for in turn, one a guard: past it, a
/// chain of approvals is read no further.
pub(crate) const MOST_IN_TURN: usize = 16;

/// The approval that tells where the call of `approval` stands: itself,
/// unless its run only met another guard's block and opened that block's
/// approval (of the same call, among `live`) — then that one, and so on
/// down the chain.
pub(crate) fn onward(approval: &ApprovalRecord, live: &[ApprovalRecord]) -> ApprovalRecord {
    let mut at = approval;
    for _ in 0..MOST_IN_TURN {
        let next = waits_for(at).and_then(|id| live.iter().find(|other| other.id == id));
        match next {
            Some(next) if next.digest == at.digest && next.id != at.id => at = next,
            _ => break,
        }
    }
    at.clone()
}

/// The blocks the run of `approval` passes, of the approvals `live` of its
/// call: its own, and those of the approvals whose runs met its block and
/// handed on to it (each approved, its run then blocked by the next guard,
/// which opened `approval` or one before it in the same chain). No other
/// approval of the call counts: one that ran the tool, or one that waits
/// to run on its own, waives nothing here.
pub(crate) fn chain_blocks(approval: &ApprovalRecord, live: &[ApprovalRecord]) -> Vec<String> {
    let mut ids = vec![approval.id.as_str()];
    let mut blocks = vec![approval.block.clone()];
    for _ in 0..MOST_IN_TURN {
        let handed = live.iter().find(|before| {
            before.digest == approval.digest
                && !ids.contains(&before.id.as_str())
                && waits_for(before).is_some_and(|next| ids.contains(&next))
        });
        let Some(before) = handed else {
            break;
        };
        ids.push(before.id.as_str());
        if !blocks.contains(&before.block) {
            blocks.push(before.block.clone());
        }
    }
    blocks
}

/// The id of the approval the run of `approval` waits for: the run ended
/// blocked again, by another guard that approvers decide.
pub(crate) fn waits_for(approval: &ApprovalRecord) -> Option<&str> {
    if approval.state != ApprovalState::Done {
        return None;
    }
    let result = approval.result.as_ref()?;
    // A failure's only: a success may be any object its caller shaped.
    if result.get("isError") != Some(&Value::Bool(true)) {
        return None;
    }
    let envelope = result.get("structuredContent")?;
    if envelope.get(crate::keys::REASON)?.as_str()? != reasons::AWAITING_APPROVAL {
        return None;
    }
    envelope
        .get(crate::keys::ESCALATION)?
        .get(crate::keys::escalation::TICKET)?
        .get("id")?
        .as_str()
}

/// Where the call of the approval `id` stands now.
///
/// # Errors
///
/// When the store cannot be read.
pub(crate) async fn follow(
    store: &dyn Store,
    id: &str,
    blocked: &ErrorEnvelope,
) -> Result<Ticketed, StoreError> {
    let Some(mut approval) = store.approval(id).await? else {
        return Ok(Ticketed::Ended(
            ErrorEnvelope::other("the approval the call waited for is gone from the store")
                .with_reason(reasons::APPROVAL_EXPIRED),
        ));
    };
    if waits_for(&approval).is_some() {
        let live = store.call_approvals(&approval.digest, now_ms()).await?;
        approval = onward(&approval, &live);
    }
    Ok(standing(&approval, blocked, now_ms()))
}

/// Where the same call made again stands when an approval of it lives in
/// `store`, whatever the guards say of it now (run beside a pending one, it
/// would run twice once the approver's yes is run), and the block as its
/// approvers were shown it; `None` when none lives.
///
/// # Errors
///
/// When the store cannot be read.
pub(crate) async fn made_again(
    store: &dyn Store,
    call: (&str, &str, &Map<String, Value>),
    caller: Option<&Caller>,
) -> Result<Option<(Ticketed, ErrorEnvelope)>, StoreError> {
    let (service, tool, arguments) = call;
    let now = now_ms();
    let live = store
        .call_approvals(&digest(service, tool, arguments, caller), now)
        .await?;
    let Some(newest) = live.first() else {
        return Ok(None);
    };
    if let Some(refused) = lacking_scope(&live, caller, tool) {
        return Ok(Some((Ticketed::Ended(refused.clone()), refused)));
    }
    let blocked = serde_json::from_value::<ErrorEnvelope>(newest.shown.clone())
        .unwrap_or_else(|_| ErrorEnvelope::business(format!("`{tool}` waits for an approval")));
    let approval = onward(newest, &live);
    Ok(Some((standing(&approval, &blocked, now), blocked)))
}

/// The refusal of `caller`'s call when one of its `live` approvals was
/// asked with a token that granted a scope `caller`'s lacks (another client
/// of the same person, the subject being the same): such a token neither
/// runs the call beside the approval (it would run twice on the yes) nor
/// reads its ticket or outcome.
fn lacking_scope(
    live: &[ApprovalRecord],
    caller: Option<&Caller>,
    tool: &str,
) -> Option<ErrorEnvelope> {
    let caller = caller?;
    let scopes = live.iter().flat_map(|approval| &approval.caller_scopes);
    (!scopes.into_iter().all(|scope| caller.has_scope(scope))).then(|| {
        ErrorEnvelope::permission(format!(
            "`{tool}` with these arguments waits for, or ran on, an approval asked with a token that grants more than this one: it is not run beside it, nor is its outcome shown"
        ))
        .with_reason(reasons::INSUFFICIENT_SCOPE)
        .with_alternative("Call with the token that asked for the approval")
        .with_not_applied(true)
    })
}

#[cfg(test)]
mod tests;
