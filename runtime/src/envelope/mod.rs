//! The error envelope: the whole bridge between a failed tool and its
//! caller, on the ground floor — it imports only the category, the reasons,
//! the wire keys and the JSON helpers below it.
//!
//! - `mod.rs`: the envelope — its getters and builders, equality, `Debug`;
//! - `parts`: its fields, taken out and put back whole ([`Parts`]): how the
//!   few places that remake an envelope (settling a failure, reading the
//!   wire, trimming to limits) reach them; no field has a setter of its own;
//! - `escalated`: the `escalation` object as it crosses the wire;
//! - `violation`: one offending field.
//!
//! Masking reaches the envelope through the visitors it offers
//! ([`ErrorEnvelope::visit_texts`], [`ErrorEnvelope::visit_values`]).

use std::any::Any;
use std::borrow::Cow;
use std::time::Duration;

use serde_json::Value;

use crate::category::ErrorCategory;

mod attempted;
mod escalated;
mod parts;
mod traits;
mod violation;

pub(crate) use attempted::{Attempted, Text as AttemptedText};
pub(crate) use escalated::Wire as EscalatedWire;
pub use escalated::{Escalated, EscalationReason, Ticket};
pub(crate) use parts::{ErasedOrigin, Origin, Parts, Refusal};
pub use violation::Violation;

/// The message of an envelope whose tool gave none, or only blanks.
pub(crate) const NO_MESSAGE: &str = ErrorEnvelope::NO_MESSAGE;

/// The result of a `#[tool]` function: its value, or the envelope of its failure.
pub type ToolResult<T> = Result<T, ErrorEnvelope>;

/// A structured tool failure: the four pillars a caller needs to recover.
///
/// 1. **failure type** — [`category`](Self::category) and [`is_retryable`](Self::is_retryable);
/// 2. **attempted query** — [`attempted_query`](Self::attempted_query), the captured arguments;
/// 3. **partial results** — [`partial_results`](Self::partial_results), gathered before the failure;
/// 4. **alternatives** — [`alternatives`](Self::alternatives), concrete next moves.
///
/// It serializes to the wire format of `schema/error-envelope.schema.json`, with the
/// key spellings of [`crate::keys`] (`isError`, `errorCategory`, `isRetryable`,
/// `message`, `attempted_query`, `partial_results`, `alternatives`, `reason`,
/// `retryAfterMs`, `violations`, `tool`, `escalation`). Optional keys are omitted
/// when there is nothing to say; readers ignore keys they do not know.
///
/// The error it was made from stays reachable — [`std::error::Error::source`] and
/// [`downcast_ref`](Self::downcast_ref) — without ever being serialized.
///
/// ```
/// use tool_envelope::{ErrorCategory, ErrorEnvelope};
/// use serde_json::json;
///
/// let envelope = ErrorEnvelope::new(ErrorCategory::Permission, "Access denied to payroll table")
///     .with_attempted_query("SELECT * FROM payroll WHERE dept='ENG'")
///     .with_partial_results(json!([]))
///     .with_alternatives(["Request read grant on payroll schema", "Escalate to data-owner for approval"]);
///
/// assert!(!envelope.is_retryable()); // defaults from the category
/// assert_eq!(
///     serde_json::to_value(&envelope).unwrap(),
///     json!({
///         "isError": true,
///         "errorCategory": "permission",
///         "isRetryable": false,
///         "message": "Access denied to payroll table",
///         "attempted_query": "SELECT * FROM payroll WHERE dept='ENG'",
///         "partial_results": [],
///         "alternatives": ["Request read grant on payroll schema", "Escalate to data-owner for approval"]
///     })
/// );
/// ```
///
/// An `ErrorEnvelope` is one pointer wide, so that `Result<T, ErrorEnvelope>`
/// costs a successful call nothing. Read it with its getters; build it with
/// its `with_*` methods.
///
/// Its fields are this folder's alone: everything else reads them through
/// the getters, and the few places that remake an envelope take its parts
/// out whole and put them back, so that each rule about them — the retry
/// flag, a reason's spelling — is written once.
#[derive(Clone)]
pub struct ErrorEnvelope {
    parts: Box<Parts>,
}

impl ErrorEnvelope {
    /// An envelope of `category` with `message`; `retryable` defaults from the
    /// category (only [`ErrorCategory::Transient`] is retryable).
    ///
    /// An empty message is replaced by [`Self::NO_MESSAGE`]: the envelope never
    /// says nothing.
    pub fn new(category: ErrorCategory, message: impl Into<String>) -> Self {
        let mut message = message.into();
        if message.trim().is_empty() {
            message = NO_MESSAGE.to_owned();
        }
        ErrorEnvelope {
            parts: Box::new(Parts::new(category, message)),
        }
    }

    /// A [`Transient`](ErrorCategory::Transient) envelope (retryable).
    pub fn transient(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Transient, message)
    }

    /// A [`Validation`](ErrorCategory::Validation) envelope (not retryable).
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Validation, message)
    }

    /// A [`Business`](ErrorCategory::Business) envelope (not retryable).
    pub fn business(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Business, message)
    }

    /// A [`Permission`](ErrorCategory::Permission) envelope (not retryable).
    pub fn permission(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Permission, message)
    }

    /// An [`Other`](ErrorCategory::Other) envelope (not retryable).
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Other, message)
    }

    /// The message of an envelope whose tool gave none, or only blanks.
    pub const NO_MESSAGE: &'static str = "The tool failed without a message.";

    /// `errorCategory`: the failure type.
    pub fn category(&self) -> ErrorCategory {
        self.parts.category
    }

    /// `isRetryable`: whether the same call may succeed if repeated. A
    /// `#[tool]` that is not idempotent says `false` unless its error says
    /// the call was not applied; see [`crate::reasons::MAY_HAVE_TAKEN_EFFECT`].
    /// Always `false` with the reason [`HUMAN_REQUESTED`](crate::reasons::HUMAN_REQUESTED)
    /// or [`POLICY_GAP`](crate::reasons::POLICY_GAP), whatever
    /// [`with_retryable`](Self::with_retryable) set: such a failure is never
    /// retried, and is sent so.
    ///
    /// Always `false` too for an envelope that was [escalated](Self::escalation)
    /// by the layer that sent it: an escalation ends a loop.
    pub fn is_retryable(&self) -> bool {
        self.parts.is_retryable()
    }

    /// `message`: one human-readable sentence.
    pub fn message(&self) -> &str {
        &self.parts.message
    }

    /// `attempted_query`: what was tried — the captured arguments (an
    /// object) or a query string; `None` when unknown.
    pub fn attempted_query(&self) -> Option<&Value> {
        self.parts.attempted_query.as_ref().map(Attempted::get)
    }

    /// `attempted_query` as the compact JSON text it was captured as, while
    /// it is one: sent as it is.
    pub(crate) fn attempted_query_text(&self) -> Option<&str> {
        self.parts.attempted_query.as_ref()?.as_text()
    }

    /// `partial_results`: what was gathered before the failure (an array or
    /// an object). `Some([])` says "I gather partial results and got none";
    /// `None` says "this tool gathers none".
    pub fn partial_results(&self) -> Option<&Value> {
        self.parts.partial_results.as_ref()
    }

    /// `alternatives`: concrete next moves.
    pub fn alternatives(&self) -> &[String] {
        &self.parts.alternatives
    }

    /// `reason`: a stable machine code in `UPPER_SNAKE_CASE` (as AIP-193's
    /// `ErrorInfo.reason`), normalized when it was set; see [`crate::reasons`].
    pub fn reason(&self) -> Option<&str> {
        self.parts.reason.as_deref()
    }

    /// `retryAfterMs`: the server's hint for when to try again.
    pub fn retry_after(&self) -> Option<Duration> {
        self.parts.retry_after
    }

    /// `violations`: field-level detail, mostly of a `validation` failure.
    pub fn violations(&self) -> &[Violation] {
        &self.parts.violations
    }

    /// `tool`: the name of the tool that failed.
    pub fn tool(&self) -> Option<&str> {
        self.parts.tool.as_deref()
    }

    /// `escalation`: how the layer that sent this envelope escalated it,
    /// when it was read from the wire with an `escalation` object. Such an
    /// envelope is never retryable, and it is sent on with the object.
    pub fn escalation(&self) -> Option<&Escalated> {
        self.parts.escalated.as_deref()
    }

    /// Overrides `isRetryable`.
    #[must_use]
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.parts.retryable = retryable;
        self
    }

    /// Sets `attempted_query`: captured arguments (an object) or a query string.
    #[must_use]
    pub fn with_attempted_query(mut self, query: impl Into<Value>) -> Self {
        self.parts.attempted_query = Some(Attempted::value(query.into()));
        self
    }

    /// Sets `partial_results` (an array or an object).
    #[must_use]
    pub fn with_partial_results(mut self, partial: impl Into<Value>) -> Self {
        self.parts.partial_results = Some(partial.into());
        self
    }

    /// Appends one alternative.
    #[must_use]
    pub fn with_alternative(mut self, alternative: impl Into<String>) -> Self {
        self.parts.alternatives.push(alternative.into());
        self
    }

    /// Appends alternatives.
    #[must_use]
    pub fn with_alternatives<I>(mut self, alternatives: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.parts
            .alternatives
            .extend(alternatives.into_iter().map(Into::into));
        self
    }

    /// Sets the machine `reason` code, rewritten into `UPPER_SNAKE_CASE` here,
    /// once: `"db timeout"` and `"dbTimeout"` are both `"DB_TIMEOUT"`, and
    /// every rule — a human request is never retried — reads that form. A
    /// reason with no ASCII letter to start a code with is ignored: the
    /// envelope keeps the reason it had, as [`Blocked`](crate::guard::Blocked)
    /// and [`FailureMode`](crate::mcp::FailureMode) do. See
    /// [`crate::reasons`].
    ///
    /// ```
    /// use tool_envelope::{reasons, ErrorEnvelope};
    ///
    /// let envelope = ErrorEnvelope::transient("CRM timed out").with_reason("human requested");
    /// assert_eq!(envelope.reason(), Some(reasons::HUMAN_REQUESTED));
    /// assert!(!envelope.is_retryable());
    /// ```
    #[must_use]
    pub fn with_reason(mut self, reason: impl Into<Cow<'static, str>>) -> Self {
        self.parts.set_reason(Some(reason.into()));
        self
    }

    /// Sets the `retryAfterMs` hint.
    #[must_use]
    pub fn with_retry_after(mut self, delay: Duration) -> Self {
        self.parts.retry_after = Some(delay);
        self
    }

    /// Appends a field violation.
    #[must_use]
    pub fn with_violation(mut self, violation: Violation) -> Self {
        self.parts.violations.push(violation);
        self
    }

    /// Appends field violations.
    #[must_use]
    pub fn with_violations(mut self, violations: impl IntoIterator<Item = Violation>) -> Self {
        self.parts.violations.extend(violations);
        self
    }

    /// Sets the name of the tool that failed.
    #[must_use]
    pub fn with_tool(mut self, tool: impl Into<Cow<'static, str>>) -> Self {
        self.parts.tool = Some(tool.into());
        self
    }

    /// Marks the operation as certainly not applied: nothing reached the
    /// other side, so repeating the call cannot apply it twice. Only the
    /// tool's author knows this — a refused connection says nothing of what
    /// the tool did before it — and it is the one way a failure of a tool
    /// that is not idempotent keeps `isRetryable: true`. On the wire it is
    /// the reason [`NOT_APPLIED`](crate::reasons::NOT_APPLIED), which says
    /// the same when it is set or read: set here when the envelope has no
    /// reason, and by the tool's settling over any other when the tool is
    /// not idempotent.
    ///
    /// `false` takes back a reason `NOT_APPLIED` too: the two never disagree.
    #[must_use]
    pub fn with_not_applied(mut self, not_applied: bool) -> Self {
        self.parts.set_not_applied(not_applied);
        self
    }

    /// Whether the error proves the operation was not applied. See
    /// [`with_not_applied`](Self::with_not_applied).
    pub fn not_applied(&self) -> bool {
        self.parts.not_applied
    }

    /// Whether the failed call is safe to repeat: every `#[tool]` it passed
    /// through declared itself idempotent (`#[tool(idempotent)]` or
    /// `read_only`). `None` when the envelope was not made by a `#[tool]`.
    pub fn idempotent(&self) -> Option<bool> {
        self.parts.idempotent
    }

    /// The tool whose failure was sent as not retryable because repeating it
    /// could apply it twice, if that is why `isRetryable` is false.
    pub(crate) fn withheld_by(&self) -> Option<&str> {
        self.parts.withheld.as_deref()
    }

    /// Whether a call of this process settled the envelope already
    /// ([`crate::settle`]): it recorded the tool it failed in.
    pub(crate) fn is_settled(&self) -> bool {
        self.parts.idempotent.is_some()
    }

    /// Whether the call was refused before the tool ran, so that it ran 0 times.
    pub(crate) fn was_refused(&self) -> bool {
        self.parts.refused.is_some()
    }

    /// Whether a guard blocked the call.
    pub(crate) fn was_blocked(&self) -> bool {
        self.parts.refused == Some(Refusal::Blocked)
    }

    /// Whether a guard blocked the call or a person declined it: a policy,
    /// not the arguments, stopped it before the tool ran.
    pub(crate) fn was_stopped_by_policy(&self) -> bool {
        matches!(
            self.parts.refused,
            Some(Refusal::Blocked | Refusal::Declined)
        )
    }

    /// The key of the block a person may approve, when a guard blocked the
    /// call and a person may approve it.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn approval_key(&self) -> Option<&str> {
        self.parts
            .approval
            .as_deref()
            .filter(|_| self.was_blocked())
    }

    /// The scope an approver's token must grant, when the block whose key
    /// [`approval_key`](Self::approval_key) gives waits for approvers the
    /// caller cannot stand in for; `None` when the client's user decides.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn approvers(&self) -> Option<&str> {
        self.approval_key().and(self.parts.approvers.as_deref())
    }

    /// The reason as it is held: borrowed for the constants of
    /// [`crate::reasons`], for a caller that keeps it.
    pub(crate) fn reason_code(&self) -> Option<Cow<'static, str>> {
        self.parts.reason.clone()
    }

    /// Visits every text a reader of the envelope sees — the message, the
    /// alternatives, the violations, the detail of the escalation it came
    /// with and its ticket's status, approvers and how to read it — to
    /// rewrite it in place: how masking reaches the envelope. (The
    /// ticket's id, read back to find the approval, is a server's words
    /// only in a remote envelope: [`visit_ticket_id`](Self::visit_ticket_id).)
    pub(crate) fn visit_texts(&mut self, visit: &mut dyn FnMut(&mut String)) {
        let parts = &mut *self.parts;
        visit(&mut parts.message);
        for alternative in &mut parts.alternatives {
            visit(alternative);
        }
        for violation in &mut parts.violations {
            visit(&mut violation.field);
            visit(&mut violation.description);
        }
        if let Some(escalated) = parts.escalated.as_mut() {
            if let Some(detail) = escalated.detail.as_mut() {
                visit(detail);
            }
            if let Some(ticket) = escalated.ticket.as_mut() {
                visit(&mut ticket.status);
                visit(&mut ticket.approvers);
                visit(&mut ticket.read);
            }
        }
    }

    /// Visits the id of the ticket the envelope's escalation carries, if
    /// any, to rewrite it in place: a remote server's words, masked as its
    /// other texts are. (The id of a ticket made here is read back.)
    pub(crate) fn visit_ticket_id(&mut self, visit: &mut dyn FnMut(&mut String)) {
        let escalated = self.parts.escalated.as_mut();
        if let Some(ticket) = escalated.and_then(|e| e.ticket.as_mut()) {
            visit(&mut ticket.id);
        }
    }

    /// Masks the original error's texts as `mask` masks a text (it answers
    /// a text it changed): an error that quoted a secret is replaced by a
    /// stand-in carrying its `Display` and `Debug` masked.
    pub(crate) fn mask_origin(&mut self, mask: &dyn Fn(&str) -> Option<String>) {
        let parts = &mut *self.parts;
        parts.origin = parts.origin.take().map(|origin| origin.masked(mask));
    }

    /// Visits the values the envelope carries — its attempted query, its
    /// partial results — to rewrite them in place.
    pub(crate) fn visit_values(&mut self, visit: &mut dyn FnMut(&mut Value)) {
        let parts = &mut *self.parts;
        let query = parts.attempted_query.as_mut().map(Attempted::get_mut);
        for value in [query, parts.partial_results.as_mut()]
            .into_iter()
            .flatten()
        {
            visit(value);
        }
    }

    /// The original error, if it is of type `E`.
    ///
    /// ```
    /// use tool_envelope::{ErrorEnvelope, ToolError};
    ///
    /// let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "orders DB timed out");
    /// let envelope = io.into_envelope();
    /// let original: &std::io::Error = envelope.downcast_ref().unwrap();
    /// assert_eq!(original.kind(), std::io::ErrorKind::TimedOut);
    /// ```
    pub fn downcast_ref<E: Any>(&self) -> Option<&E> {
        self.parts.origin.as_ref()?.0.as_any().downcast_ref()
    }

    /// Whether the envelope still holds the error it was made from. An envelope
    /// that crossed the wire does not.
    pub fn has_origin(&self) -> bool {
        self.parts.origin.is_some()
    }

    /// The number of partial results: an array's items, an object's fields,
    /// 0 when absent.
    pub fn partial_count(&self) -> usize {
        count(self.parts.partial_results.as_ref())
    }
}

/// The number of partial results in `value`: an array's items, an object's
/// fields, one for anything else, none for nothing.
pub(crate) fn count(value: Option<&Value>) -> usize {
    match value {
        Some(Value::Array(items)) => items.len(),
        Some(Value::Object(fields)) => fields.len(),
        Some(Value::Null) | None => 0,
        Some(_) => 1,
    }
}
