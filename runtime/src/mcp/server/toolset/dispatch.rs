//! One call through a tool set: the tool found, its arguments checked, its
//! attempts run (under the set's retry policy), and its success or failure
//! made into the reply.

use super::ToolSet;
use super::entry::Entry;
use super::failure::{Failure, reply_over};

use serde_json::{Map, Value};

use crate::classify::panicked;
use crate::envelope::{ErrorEnvelope, Violation};
#[cfg(feature = "tokio")]
use crate::escalation::Escalation;
use crate::json::depth::{MAX_DEPTH, deeper_than, dismantle, too_deep_marker};
use crate::limits::json_len;
use crate::mcp::context::ToolContext;
use crate::mcp::reply::{ProtocolError, ToolReply};
#[cfg(feature = "rmcp")]
use crate::mcp::server::approval::APPROVAL_META_KEY;
use crate::mcp::server::arguments::{Success, invalid_arguments};
use crate::mcp::server::state::CallState;
use crate::mcp::violations::not_an_object;
use crate::panic::catch_unwind_future;
use crate::query::Query;
use crate::reasons;
use crate::redact::arguments::ArgumentMask;
#[cfg(feature = "tokio")]
use crate::retry::{Keep, RetryNotice, TokioSleeper};
use crate::scope::Scope;
use crate::settle::settle;
use futures_util::future::{Either, select};
use std::pin::pin;

/// How a call ended: it ran (or was refused), or — an approved call that
/// waited in the store — its reply was kept.
pub(super) enum Outcome {
    /// It ran, or was refused: its success or its failure.
    Ran(Result<Success, Failure>),
    /// The reply kept for it.
    #[cfg(feature = "rmcp")]
    Stored(ToolReply),
}

/// A call begun: its tool, its arguments (an object) and its state.
type Begun<'a> = (&'a Entry, Map<String, Value>, CallState);

/// What a call is let past: the blocks approved before it began, for the
/// run of which ticket, and whose scope its escalation is kept for.
#[derive(Default)]
struct Past<'a> {
    ticket: Option<&'a str>,
    approved: &'a [String],
    waived: &'a [String],
    answers: &'a [Value],
    kept_for: Option<&'a str>,
}

impl ToolSet {
    /// Calls the tool `name` with `arguments` (a JSON object, or `null` for
    /// none) and returns MCP's `ToolReply`; the tool gets a detached
    /// [`ToolContext`]. See [`call_with`](Self::call_with).
    ///
    /// - success: the value as `structuredContent` and its JSON as text; a
    ///   valid empty look-up stays a success;
    /// - failure: `isError: true` and the envelope (or, under a retry policy,
    ///   the escalation) as `structuredContent` and text;
    /// - arguments that do not decode, that are not an object, or that nest
    ///   deeper than [`MAX_DEPTH`]: a `validation` envelope naming each
    ///   offending field, with the arguments as received — secrets and keys
    ///   the tool does not declare masked;
    /// - a blocked call: the guard's `business` envelope; the tool never runs;
    /// - a panic anywhere in the call: an `other` envelope that keeps the
    ///   arguments and the partial results gathered;
    /// - an unknown tool: `Err`, a JSON-RPC `-32602` protocol error.
    ///
    /// # Errors
    ///
    /// A protocol error for an unknown tool; every failure of a tool is a
    /// reply.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<ToolReply, ProtocolError> {
        self.call_with(name, arguments, ToolContext::detached())
            .await
    }

    /// [`call`](Self::call), in the request `context`: the tool gets it if
    /// it takes a [`ToolContext`], local retries are reported to it as
    /// progress, and once it is cancelled the call stops at its next
    /// `.await` — no retry follows, and the answer is `Err`, a
    /// [`ProtocolError::REQUEST_CANCELLED`] that is never sent (a cancelled
    /// MCP request gets no reply).
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call), and [`ProtocolError::REQUEST_CANCELLED`]
    /// once the request is cancelled.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        context: ToolContext,
    ) -> Result<ToolReply, ProtocolError> {
        self.call_past(name, arguments, context, Past::default())
            .await
    }

    /// [`call_with`](Self::call_with)'s future itself, for a served
    /// request: not held inside a second one.
    #[cfg(feature = "rmcp")]
    pub(crate) fn served<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        context: ToolContext,
    ) -> impl Future<Output = Result<ToolReply, ProtocolError>> + Send + 'a {
        self.call_past(name, arguments, context, Past::default())
    }

    /// [`call_with`](Self::call_with) for the run of `approval`: past the
    /// blocks whose keys are `approved`, which people with the approval's
    /// scope approved for this very call, and those its client's user
    /// approved before it waited for them (`waived`, their answers in the
    /// reply's `_meta`). An escalation it ends with is kept for the
    /// approvers alone, as the approval was.
    #[cfg(feature = "rmcp")]
    pub(super) async fn call_approved(
        &self,
        arguments: Value,
        context: ToolContext,
        approval: &crate::store::ApprovalRecord,
        approved: &[String],
    ) -> Result<ToolReply, ProtocolError> {
        let past = Past {
            ticket: Some(&approval.id),
            approved,
            waived: &approval.waived,
            answers: &approval.client_answers,
            kept_for: Some(&approval.approvers),
        };
        self.call_past(&approval.tool, arguments, context, past)
            .await
    }

    /// A call past the blocks `approved` for the run of `ticket`, its
    /// escalation kept for the people with the scope `kept_for` when it
    /// names one.
    ///
    /// Not an `async fn`, whose future would hold each argument twice:
    /// this one is inside every served call's (figure 3).
    fn call_past<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        context: ToolContext,
        Past {
            ticket,
            approved,
            waived,
            answers,
            kept_for,
        }: Past<'a>,
    ) -> impl Future<Output = Result<ToolReply, ProtocolError>> + Send + 'a {
        // What needs no `.await` is done before the future is made: it
        // holds what the call goes on with, not what it began with.
        let (entry, arguments, state) = match self.begin(name, arguments, context) {
            Ok(begun) => begun,
            Err(replied) => return Either::Left(std::future::ready(replied)),
        };
        let state = state.approved_before(approved, waived, ticket);
        if !answers.is_empty() {
            state.keep_audit(answers.to_vec());
        }
        Either::Right(async move {
            // A block, so that nothing of it is held past it, where the
            // escalation may be kept.
            #[cfg_attr(not(feature = "rmcp"), allow(unused_mut))]
            let (mut reply, kept_in) = {
                // Whatever panics — the decoding, a `Serialize`, the set
                // itself — answers with an envelope that keeps what the
                // call knows: a request is never left without a reply.
                let work = catch_unwind_future(self.decided(entry, &arguments, &state));
                let finished = match state.context_ref().is_detached() {
                    true => work.await,
                    false => {
                        let cancelled = state.context_ref().stopped();
                        match select(pin!(work), pin!(cancelled)).await {
                            Either::Left((finished, _)) => finished,
                            Either::Right(((), _)) => return Err(ProtocolError::cancelled(name)),
                        }
                    }
                };
                let outcome = match finished {
                    Ok(outcome) => outcome,
                    Err(panic) => {
                        let what = format!("tool `{}`", entry.facts.tool);
                        let envelope = panicked(&what, panic.as_ref());
                        let envelope = settle_here(envelope, entry, &arguments, &state);
                        Outcome::Ran(Err(Failure::Envelope(envelope)))
                    }
                };
                match outcome {
                    Outcome::Ran(Ok(success)) => {
                        (self.success(entry, success, &arguments, &state), None)
                    }
                    Outcome::Ran(Err(failure)) => {
                        // Where a loop inside the tool kept its escalation.
                        let escalated = failure.envelope().escalation();
                        let kept_in = escalated.and_then(|escalated| escalated.kept_in.clone());
                        (self.failure(entry, failure), kept_in)
                    }
                    #[cfg(feature = "rmcp")]
                    Outcome::Stored(reply) => return Ok(reply),
                }
            };
            #[cfg(feature = "tokio")]
            if let Some(kept) = self.escalation_to_keep(&reply, &state, kept_in.as_deref()) {
                // Boxed: a rare way (a failure, and a store to keep it in),
                // its record kept out of every call's future.
                Box::pin(self.keep_escalation(kept, kept_for)).await;
            }
            #[cfg(not(feature = "tokio"))]
            let _ = (kept_for, kept_in);
            #[cfg(feature = "rmcp")]
            {
                let records = state.take_audit();
                if !records.is_empty() {
                    let meta = reply.meta.get_or_insert_with(Map::new);
                    meta.insert(APPROVAL_META_KEY.to_owned(), Value::Array(records));
                }
            }
            Ok(reply)
        })
    }

    /// A call's beginning, up to its first `.await`: the tool found, its
    /// arguments an object no deeper than [`MAX_DEPTH`], and the call's
    /// state — or the reply that ends it there.
    fn begin(
        &self,
        name: &str,
        arguments: Value,
        context: ToolContext,
    ) -> Result<Begun<'_>, Result<ToolReply, ProtocolError>> {
        let Some(&index) = self.inner.index.get(name) else {
            dismantle(arguments);
            return Err(Err(ProtocolError::unknown_tool(
                name,
                self.inner.definitions.iter().map(|d| d.name.clone()),
            )));
        };
        let entry = &self.inner.entries[index];
        if deeper_than(&arguments, MAX_DEPTH) {
            let envelope = too_deep(entry, arguments);
            return Err(Ok(self.failure(entry, Failure::Envelope(envelope))));
        }
        let arguments = match arguments {
            Value::Object(arguments) => arguments,
            Value::Null => Map::new(),
            other => {
                let (envelope, shown) = not_an_object(&entry.facts.tool, &other);
                let envelope = settle(envelope, &entry.facts, Query::Described(shown), &|| None);
                return Err(Ok(self.failure(entry, Failure::Envelope(envelope))));
            }
        };
        let state = CallState::new(&entry.definition.checks, &self.inner.guards, context);
        Ok((entry, arguments, state))
    }

    /// The reply of a call of `name` with `arguments`, refused before it
    /// ran with `envelope` — settled, masked and sized as every failure of
    /// the set; `None` for a tool the set does not have.
    #[cfg(feature = "rmcp")]
    pub(crate) fn refuse(
        &self,
        name: &str,
        arguments: Value,
        envelope: ErrorEnvelope,
    ) -> ToolReply {
        let refused =
            envelope.remade(|parts| parts.refused = Some(crate::envelope::Refusal::Unusable));
        self.failed(name, arguments, refused)
    }

    /// The reply of a call of `name` with `arguments` that failed with
    /// `envelope` outside the tool — settled, masked and sized as every
    /// failure of the set.
    #[cfg(feature = "rmcp")]
    pub(crate) fn failed(
        &self,
        name: &str,
        arguments: Value,
        envelope: ErrorEnvelope,
    ) -> ToolReply {
        self.failed_as(name, arguments, Failure::Envelope(envelope))
    }

    /// [`failed`](Self::failed), with `failure`: an envelope, or an
    /// escalation (a call that waits for an approver).
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(super) fn failed_as(&self, name: &str, arguments: Value, failure: Failure) -> ToolReply {
        let Some(&index) = self.inner.index.get(name) else {
            return self.shaped(name, failure);
        };
        let entry = &self.inner.entries[index];
        let arguments = match arguments {
            Value::Object(arguments) => arguments,
            _ => Map::new(),
        };
        let mask = ArgumentMask::new(&entry.definition.checks.secrets, &[]);
        let settled = |envelope| {
            let query = Query::Arguments(&arguments, Scope::masked(mask));
            settle(envelope, &entry.facts, query, &|| None)
        };
        let failure = match failure {
            Failure::Envelope(envelope) => Failure::Envelope(settled(envelope)),
            Failure::Escalated(escalation) => Failure::Escalated(crate::escalation::Escalation {
                envelope: settled(escalation.envelope),
                ..escalation
            }),
        };
        self.failure(entry, failure)
    }

    /// A success: the value as `structuredContent` and its JSON as text, or
    /// the content blocks as they are; when that is over
    /// `max_result_bytes`, the envelope that says so.
    fn success(
        &self,
        entry: &Entry,
        success: Success,
        arguments: &Map<String, Value>,
        state: &CallState,
    ) -> ToolReply {
        let cap = self.inner.max_result_bytes;
        let (reply, over) = match success {
            Success::Json(value) => {
                let structured = entry.definition.structured(value);
                let text = structured.to_string();
                let over = reply_over(&text, cap);
                (ToolReply::structured(structured, text, false), over)
            }
            Success::Contents(contents) => {
                let reply = ToolReply::contents(contents);
                let size = json_len(&reply);
                (reply, (size > cap).then_some(size))
            }
        };
        if let Some(size) = over {
            let query = state.query(arguments);
            let envelope = too_large(entry, size, cap, query);
            return self.failure(entry, Failure::Envelope(envelope));
        }
        reply
    }

    #[cfg(feature = "tokio")]
    pub(super) async fn attempts(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        context: &CallState,
    ) -> Result<Success, Failure> {
        let Some(policy) = &self.inner.retry else {
            return self.attempt(entry, arguments, context).await;
        };
        let report = |notice: RetryNotice| {
            let context = context.context_ref();
            async move { context.retrying(&notice).await }
        };
        // Boxed: the retry loop's state stays out of every call's future.
        let retried = Box::pin(policy.retry_observed(
            &TokioSleeper,
            || entry.call.call(arguments, context),
            report,
            Keep::ByCaller,
        ));
        let escalation = match retried.await.result {
            Ok(value) => return Ok(value),
            Err(escalation) => escalation,
        };
        let mut envelope = settle_here(escalation.envelope, entry, arguments, context);
        if escalation.reason == crate::escalation::EscalationReason::DeadlineExceeded {
            let query = context.query(arguments);
            envelope = crate::settle::with_gathered(envelope, query, context.gathered());
        }
        Err(Failure::Escalated(Escalation {
            envelope,
            ..escalation
        }))
    }

    #[cfg(not(feature = "tokio"))]
    pub(super) async fn attempts(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        context: &CallState,
    ) -> Result<Success, Failure> {
        self.attempt(entry, arguments, context).await
    }

    /// One attempt, its failure as an envelope.
    pub(super) async fn attempt(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        context: &CallState,
    ) -> Result<Success, Failure> {
        entry
            .call
            .call(arguments, context)
            .await
            .map_err(|envelope| Failure::Envelope(settle_here(envelope, entry, arguments, context)))
    }
}

/// A failure the call did not settle itself — a panic in the set, an
/// attempt cut off by the deadline, a result that would not serialize —
/// settled with what the call knows: which tool, which arguments, everything
/// its collector gathered. One the call settled is left as it is.
pub(super) fn settle_here(
    envelope: ErrorEnvelope,
    entry: &Entry,
    arguments: &Map<String, Value>,
    state: &CallState,
) -> ErrorEnvelope {
    if envelope.is_settled() {
        return envelope;
    }
    let query = state.query(arguments);
    settle(envelope, &entry.facts, query, &|| state.gathered())
}

/// The envelope of a result too large to send: not retryable — the same call
/// gives the same result — and the way out is a narrower call.
fn too_large(entry: &Entry, size: usize, cap: usize, query: Query<'_>) -> ErrorEnvelope {
    let envelope = ErrorEnvelope::other(format!(
        "the result of `{}` is {size} bytes with its text copy, over the {cap}-byte limit of this server",
        entry.facts.tool
    ))
    .with_reason(reasons::RESULT_TOO_LARGE)
    .with_alternative(
        "Call again with narrower arguments: tighter filters, a lower limit, a smaller page",
    );
    settle(envelope, &entry.facts, query, &|| None)
}

/// The validation envelope of arguments nested too deep: each offending
/// field named, and kept in `attempted_query` as a marker — the rest as sent,
/// secrets masked.
fn too_deep(entry: &Entry, arguments: Value) -> ErrorEnvelope {
    let description = format!("is nested more than {MAX_DEPTH} levels deep");
    let mut violations = Vec::new();
    let mut shown = Map::new();
    match &arguments {
        Value::Object(fields) => {
            for (key, value) in fields {
                if deeper_than(value, MAX_DEPTH - 1) {
                    violations.push(Violation::new(key.clone(), description.clone()));
                    shown.insert(key.clone(), too_deep_marker());
                } else {
                    shown.insert(key.clone(), value.clone());
                }
            }
        }
        _ => violations.push(Violation::new("arguments", description)),
    }
    let mask = ArgumentMask::new(&entry.definition.checks.secrets, &[]);
    let query = match arguments.is_object() {
        true => Query::Arguments(&shown, Scope::masked(mask)),
        false => Query::Described(too_deep_marker()),
    };
    let envelope = invalid_arguments(&entry.facts, violations, query);
    dismantle(arguments);
    envelope
}
