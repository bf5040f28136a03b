//! Settling a failure: what every failed call's envelope carries when it
//! leaves the call, decided in one place for every path — a `#[tool]`
//! called directly, a call served by a tool set, a remote tool called
//! through the client.
//!
//! 1. **The tool.** The one called. An envelope that another tool of this
//!    process settled already — a tool this one called, whose failure it
//!    passed on — keeps that tool's name and query: they say where the
//!    failure happened. A server's envelope names the tool that was called,
//!    whatever the server wrote.
//! 2. **The query**, when the envelope has none: the arguments, secrets
//!    masked. A server's own account of them, an object, is masked as they
//!    are; one of another shape, which no schema can mask, gives way to the
//!    arguments sent.
//! 3. **The partial results**, when the envelope has none: what the call
//!    gathered. An envelope passed on keeps its own, joined to the outer
//!    tool's, so that nothing gathered is lost.
//! 4. **Bounds.** No value deeper than [`MAX_DEPTH`](crate::MAX_DEPTH).
//! 5. **Secrets by value.** The values the call was sent as secrets appear in
//!    none of the envelope's texts and values.
//! 6. **The one retry decision.** `isRetryable: true` leaves only when
//!    repeating the same call is safe: every tool on its path is idempotent
//!    (or, remote, its annotations say read-only or idempotent), or the call
//!    was not applied — then the reason on the wire is
//!    [`NOT_APPLIED`](reasons::NOT_APPLIED), what callers decide by.
//!    Otherwise a retryable failure leaves as not retryable, with the reason
//!    [`MAY_HAVE_TAKEN_EFFECT`](reasons::MAY_HAVE_TAKEN_EFFECT) and a next
//!    move that says what to check — so no caller, ours or one running
//!    "retry while `isRetryable`", repeats a refund. A human request, a
//!    policy gap and an escalation are never retryable
//!    ([`ErrorEnvelope::is_retryable`] says so).

use std::borrow::Cow;

use serde_json::Value;

use crate::envelope::{Attempted, ErrorEnvelope, Parts};
use crate::json::depth::bounded;
use crate::partial::merge;
use crate::query::Query;
use crate::reasons;

/// Whose envelope a failure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Made in this process: by the tool, by a tool it called, by this crate.
    Local,
    /// Read from a server's reply, which nothing here vouches for.
    Remote,
}

/// What a call knows of itself when it fails.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    /// The tool that was called.
    pub(crate) tool: Cow<'static, str>,
    /// Whether repeating the call is safe: the tool is idempotent or
    /// read-only (a remote one's annotations say so).
    pub(crate) safe_to_repeat: bool,
    /// Whether the request may have reached the tool; `false` when it
    /// certainly did not (it was never sent), which makes repeating it safe.
    pub(crate) sent: bool,
    /// Whose envelope it is.
    pub(crate) source: Source,
}

impl Facts {
    /// The facts of a call of the tool `tool` of this process, which was
    /// made: `safe_to_repeat` when the tool is idempotent or read-only.
    pub(crate) fn local(tool: Cow<'static, str>, safe_to_repeat: bool) -> Self {
        Facts {
            tool,
            safe_to_repeat,
            sent: true,
            source: Source::Local,
        }
    }
}

/// Settles `envelope`, the failure of the call `facts` describes: see the
/// module's documentation. `query` is the call's arguments; `gathered` what
/// its `Partial` collector holds, read only if the envelope needs it.
///
/// Not generic, so that its code is generated once for every tool, not
/// once per tool.
pub(crate) fn settle(
    envelope: ErrorEnvelope,
    facts: &Facts,
    query: Query<'_>,
    gathered: &dyn Fn() -> Option<Value>,
) -> ErrorEnvelope {
    let passed_on = facts.source == Source::Local && envelope.is_settled();
    let masker = query.masker();
    let mut parts = envelope.into_parts();
    if !passed_on {
        parts.tool = Some(facts.tool.clone());
    }
    let remote = facts.source == Source::Remote;
    parts.attempted_query = Some(match parts.attempted_query.take() {
        None => query.into_attempted(),
        Some(account) if remote => match account.into_value() {
            Value::Object(account) => {
                Attempted::value(bounded(Value::Object(query.mask_account(account))))
            }
            _ => query.into_attempted(),
        },
        // Captured text is within depth already.
        Some(kept) if kept.as_text().is_some() => kept,
        Some(kept) => Attempted::value(bounded(kept.into_value())),
    });
    parts.partial_results = match parts.partial_results.take() {
        None => gathered(),
        Some(inner) if passed_on => merge(gathered(), Some(inner)),
        Some(kept) => Some(kept),
    }
    .map(bounded);
    decide(&mut parts, facts, passed_on);
    let mut envelope = ErrorEnvelope::from_parts(parts);
    if let Some(masker) = masker {
        masker.envelope(&mut envelope);
        if remote {
            envelope.visit_ticket_id(&mut |text| {
                if let Cow::Owned(masked) = masker.text(text) {
                    *text = masked;
                }
            });
        }
        // A server's reason that quotes a secret is dropped: a code is not
        // masked in part. It was made a code as it was read (upper case,
        // `_` for the rest): a secret is looked for as a code reads it. Never one that keeps the call from being retried
        // (a human request): dropping any other retries no more.
        if remote
            && let Some(reason) = envelope.reason()
            && !reasons::never_retried(Some(reason))
            && (matches!(masker.text(reason), Cow::Owned(_)) || masker.in_a_code(reason))
        {
            envelope.remake(|parts| parts.set_reason(None));
        }
    }
    envelope
}

/// `envelope`, settled already, with what the call's collector holds,
/// `gathered`, after the partial results it carries — bounded and masked
/// as [`settle`] makes them: an attempt cut off at the deadline returned
/// nothing, and what it gathered is in the collector only.
#[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
pub(crate) fn with_gathered(
    envelope: ErrorEnvelope,
    query: Query<'_>,
    gathered: Option<Value>,
) -> ErrorEnvelope {
    let Some(mut gathered) = gathered.map(bounded) else {
        return envelope;
    };
    if let Some(masker) = query.masker() {
        masker.value(&mut gathered);
    }
    // Bounded again once merged: an object beside a list is nested in one.
    envelope.remade(|parts| {
        parts.partial_results = merge(parts.partial_results.take(), Some(gathered)).map(bounded);
    })
}

/// The one retry decision: whether a failure that is `retryable` by
/// itself, with `reason`, leaves a call that is `safe_to_repeat` (or not)
/// retryable. A human request and a policy gap never do; a call that is not
/// safe to repeat keeps only the failures that say it was not applied.
/// [`settle`] applies it to every failure; a tool's definition, to the
/// failure modes it publishes, so that they say what its calls will send.
pub(crate) fn leaves_retryable(
    retryable: bool,
    reason: Option<&str>,
    safe_to_repeat: bool,
) -> bool {
    retryable
        && !reasons::never_retried(reason)
        && (safe_to_repeat || reason == Some(reasons::NOT_APPLIED))
}

/// `parts` of a failure that came after the tool ran: whatever stopped
/// another call before it ran (a tool this one called), or a refusal the
/// body returned as its own error (a [`Blocked`](crate::guard::Blocked) of
/// a check of its own), this one ran — and a person's yes to that one's
/// block is not a yes to this call. Nor do its codes or its escalation
/// say it never ran.
pub(crate) fn ran(parts: &mut Parts) {
    parts.set_not_applied(false);
    parts.refused = None;
    parts.approval = None;
    parts.approvers = None;
    let refusal =
        |reason: &str| reasons::BLOCKED.contains(&reason) || reasons::UNUSABLE.contains(&reason);
    if parts.reason.as_deref().is_some_and(refusal) {
        parts.set_reason(None);
    }
    if let Some(escalated) = &mut parts.escalated {
        escalated.attempts = escalated.attempts.max(1);
    }
}

/// Records the call's facts on the envelope's `parts`, then applies
/// [`leaves_retryable`]: a retryable failure it does not leave retryable is
/// sent as not retryable, saying why.
fn decide(parts: &mut Parts, facts: &Facts, passed_on: bool) {
    // The call stays safe to repeat only if every tool on its path is.
    parts.idempotent = Some(parts.idempotent.unwrap_or(true) && facts.safe_to_repeat);
    if passed_on {
        // This tool may have acted before the one it called failed.
        ran(parts);
    }
    if !facts.sent {
        parts.set_not_applied(true);
    }
    if !parts.is_retryable() {
        return;
    }
    let safe_to_repeat = parts.idempotent != Some(false);
    if !safe_to_repeat && parts.not_applied {
        // What keeps it retryable, said where callers read it.
        parts.set_reason(Some(Cow::Borrowed(reasons::NOT_APPLIED)));
    }
    if !leaves_retryable(true, parts.reason.as_deref(), safe_to_repeat) {
        // It may have taken effect: not retryable, and the caller told
        // what to check first.
        let tool = facts.tool.clone();
        parts.retryable = false;
        parts.reason = Some(Cow::Borrowed(reasons::MAY_HAVE_TAKEN_EFFECT));
        parts.alternatives.push(format!(
            "Check whether `{tool}` took effect before calling it again: it is not idempotent, so repeating it could apply it twice"
        ));
        parts.withheld = Some(tool);
    }
}
