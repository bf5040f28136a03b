//! The error envelope: the whole bridge between a failed tool and its caller.
//!
//! Longer than the crate's other files, on purpose: the envelope's fields
//! are private to this file (as anyhow keeps `ErrorImpl`'s), so every method
//! that reads or changes them is here — the getters and builders, and the few
//! crate methods the settling, masking and wire code call. Writing and
//! reading the wire format live in `wire/`, through these methods.

use std::any::Any;
use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::category::ErrorCategory;
use crate::escalation::record::Escalated;
use crate::json::millis::duration_to_ms;
use crate::redact::values::Masker;

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
/// Its fields are this file's alone: everything else reads them through the
/// getters and changes them through the few methods below, so that each rule
/// about them — the retry flag, a reason's spelling — is written once.
#[derive(Clone)]
pub struct ErrorEnvelope {
    fields: Box<Fields>,
}

/// The fields of an envelope.
#[derive(Clone)]
struct Fields {
    /// `errorCategory`: the failure type.
    category: ErrorCategory,
    /// `isRetryable` as set; [`ErrorEnvelope::is_retryable`] is what is read.
    retryable: bool,
    /// `message`: one human-readable sentence.
    message: String,
    /// `attempted_query`: the captured arguments (an object) or a query string.
    attempted_query: Option<Value>,
    /// `partial_results`: what was gathered before the failure.
    partial_results: Option<Value>,
    /// `alternatives`: concrete next moves.
    alternatives: Vec<String>,
    /// `reason`: a stable machine code, normalized.
    reason: Option<Cow<'static, str>>,
    /// `retryAfterMs`: the server's hint for when to try again.
    retry_after: Option<Duration>,
    /// `violations`: field-level detail.
    violations: Vec<Violation>,
    /// `tool`: the name of the tool that failed.
    tool: Option<Cow<'static, str>>,
    /// `escalation`: the sender escalated this failure (read from the wire).
    escalated: Option<Box<Escalated>>,
    /// Off the wire: the original error, the call's retry safety.
    meta: Meta,
}

/// What an envelope knows about its call that does not go on the wire.
#[derive(Clone, Default)]
struct Meta {
    origin: Option<Origin>,
    idempotent: Option<bool>,
    /// The tool whose failure was made non-retryable because repeating it
    /// could apply it twice.
    withheld: Option<Cow<'static, str>>,
    not_applied: bool,
    /// The message was written by a type this crate does not know — a
    /// standard library error, an `anyhow` chain, a panic — and may quote
    /// internals: masked by a tool set's `mask_internal_errors`.
    foreign: bool,
    /// Why the call was refused before the tool ran, if it was.
    refused: Option<Refusal>,
    /// A guard blocked the call, and a person may approve it: the block's
    /// key among the approvable blocks of the call.
    approval: Option<Box<str>>,
}

/// Why a call was refused before its tool ran.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Refusal {
    /// Its arguments could not be used.
    Unusable,
    /// A guard blocked it.
    Blocked,
    /// A person declined it.
    #[cfg_attr(not(any(feature = "rmcp", feature = "client")), allow(dead_code))]
    Declined,
}

/// One offending field of a rejected input (AIP-193's `BadRequest.FieldViolation`).
///
/// ```
/// use tool_envelope::Violation;
///
/// let v = Violation::new("amount", "expected a positive integer, got -5");
/// assert_eq!(serde_json::to_string(&v).unwrap(),
///            r#"{"field":"amount","description":"expected a positive integer, got -5"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Violation {
    /// The path of the offending field, such as `filters.status` or `items[2]`.
    pub field: String,
    /// What is wrong with it and what was expected.
    pub description: String,
}

impl Violation {
    /// A violation of `field`, described by `description`.
    pub fn new(field: impl Into<String>, description: impl Into<String>) -> Self {
        Violation {
            field: field.into(),
            description: description.into(),
        }
    }
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
            fields: Box::new(Fields {
                category,
                retryable: category.is_retryable_by_default(),
                message,
                attempted_query: None,
                partial_results: None,
                alternatives: Vec::new(),
                reason: None,
                retry_after: None,
                violations: Vec::new(),
                tool: None,
                escalated: None,
                meta: Meta::default(),
            }),
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
        self.fields.category
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
        let fields = &self.fields;
        fields.retryable
            && !crate::reasons::never_retried(fields.reason.as_deref())
            && fields.escalated.is_none()
    }

    /// `message`: one human-readable sentence.
    pub fn message(&self) -> &str {
        &self.fields.message
    }

    /// `attempted_query`: what was tried — the captured arguments (an
    /// object) or a query string; `None` when unknown.
    pub fn attempted_query(&self) -> Option<&Value> {
        self.fields.attempted_query.as_ref()
    }

    /// `partial_results`: what was gathered before the failure (an array or
    /// an object). `Some([])` says "I gather partial results and got none";
    /// `None` says "this tool gathers none".
    pub fn partial_results(&self) -> Option<&Value> {
        self.fields.partial_results.as_ref()
    }

    /// `alternatives`: concrete next moves.
    pub fn alternatives(&self) -> &[String] {
        &self.fields.alternatives
    }

    /// `reason`: a stable machine code in `UPPER_SNAKE_CASE` (as AIP-193's
    /// `ErrorInfo.reason`), normalized when it was set; see [`crate::reasons`].
    pub fn reason(&self) -> Option<&str> {
        self.fields.reason.as_deref()
    }

    /// `retryAfterMs`: the server's hint for when to try again.
    pub fn retry_after(&self) -> Option<Duration> {
        self.fields.retry_after
    }

    /// `violations`: field-level detail, mostly of a `validation` failure.
    pub fn violations(&self) -> &[Violation] {
        &self.fields.violations
    }

    /// `tool`: the name of the tool that failed.
    pub fn tool(&self) -> Option<&str> {
        self.fields.tool.as_deref()
    }

    /// `escalation`: how the layer that sent this envelope escalated it,
    /// when it was read from the wire with an `escalation` object. Such an
    /// envelope is never retryable, and it is sent on with the object.
    pub fn escalation(&self) -> Option<&Escalated> {
        self.fields.escalated.as_deref()
    }

    /// Overrides `isRetryable`.
    #[must_use]
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.fields.retryable = retryable;
        self
    }

    /// Sets `attempted_query`: captured arguments (an object) or a query string.
    #[must_use]
    pub fn with_attempted_query(mut self, query: impl Into<Value>) -> Self {
        self.fields.attempted_query = Some(query.into());
        self
    }

    /// Sets `partial_results` (an array or an object).
    #[must_use]
    pub fn with_partial_results(mut self, partial: impl Into<Value>) -> Self {
        self.fields.partial_results = Some(partial.into());
        self
    }

    /// Appends one alternative.
    #[must_use]
    pub fn with_alternative(mut self, alternative: impl Into<String>) -> Self {
        self.fields.alternatives.push(alternative.into());
        self
    }

    /// Appends alternatives.
    #[must_use]
    pub fn with_alternatives<I>(mut self, alternatives: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.fields
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
        self.set_reason(Some(reason.into()));
        self
    }

    /// Sets the reason, normalized ([`crate::reasons`]): the one way a
    /// reason enters an envelope. [`NOT_APPLIED`](crate::reasons::NOT_APPLIED)
    /// says what [`with_not_applied`](Self::with_not_applied) says.
    /// `None` clears it; a reason with no letter to make a code of is no
    /// reason and leaves the envelope's as it was.
    pub(crate) fn set_reason(&mut self, reason: Option<Cow<'static, str>>) {
        let Some(reason) = reason else {
            self.fields.reason = None;
            return;
        };
        let Some(reason) = crate::reasons::normalize(reason) else {
            return;
        };
        if reason == crate::reasons::NOT_APPLIED {
            self.fields.meta.not_applied = true;
        }
        self.fields.reason = Some(reason);
    }

    /// Sets the `retryAfterMs` hint.
    #[must_use]
    pub fn with_retry_after(mut self, delay: Duration) -> Self {
        self.fields.retry_after = Some(delay);
        self
    }

    /// Appends a field violation.
    #[must_use]
    pub fn with_violation(mut self, violation: Violation) -> Self {
        self.fields.violations.push(violation);
        self
    }

    /// Appends field violations.
    #[must_use]
    pub fn with_violations(mut self, violations: impl IntoIterator<Item = Violation>) -> Self {
        self.fields.violations.extend(violations);
        self
    }

    /// Sets the name of the tool that failed.
    #[must_use]
    pub fn with_tool(mut self, tool: impl Into<Cow<'static, str>>) -> Self {
        self.fields.tool = Some(tool.into());
        self
    }

    /// Marks the operation as certainly not applied: nothing reached the
    /// other side, so repeating the call cannot apply it twice. Only the
    /// tool's author knows this — a refused connection says nothing of what
    /// the tool did before it — and it is the one way a failure of a tool
    /// that is not idempotent keeps `isRetryable: true`. On the wire it is
    /// the reason [`NOT_APPLIED`](crate::reasons::NOT_APPLIED), which says
    /// the same when it is set or read.
    ///
    /// `false` takes back a reason `NOT_APPLIED` too: the two never disagree.
    #[must_use]
    pub fn with_not_applied(mut self, not_applied: bool) -> Self {
        self.fields.meta.not_applied = not_applied;
        if !not_applied && self.fields.reason.as_deref() == Some(crate::reasons::NOT_APPLIED) {
            self.fields.reason = None;
        }
        self
    }

    /// Whether the error proves the operation was not applied. See
    /// [`with_not_applied`](Self::with_not_applied).
    pub fn not_applied(&self) -> bool {
        self.fields.meta.not_applied
    }

    /// Whether the failed call is safe to repeat: every `#[tool]` it passed
    /// through declared itself idempotent (`#[tool(idempotent)]` or
    /// `read_only`). `None` when the envelope was not made by a `#[tool]`.
    pub fn idempotent(&self) -> Option<bool> {
        self.fields.meta.idempotent
    }

    /// The tool whose failure was sent as not retryable because repeating it
    /// could apply it twice, if that is why `isRetryable` is false.
    pub(crate) fn withheld_by(&self) -> Option<&str> {
        self.fields.meta.withheld.as_deref()
    }

    /// Whether a call of this process settled the envelope already
    /// ([`crate::settle`]): it recorded the tool it failed in.
    pub(crate) fn is_settled(&self) -> bool {
        self.fields.meta.idempotent.is_some()
    }

    /// Records that the call passed through a tool, `idempotent` or not: it
    /// stays safe to repeat only if every tool on its path is.
    pub(crate) fn record_tool(&mut self, idempotent: bool) {
        self.fields.meta.idempotent =
            Some(self.fields.meta.idempotent.unwrap_or(true) && idempotent);
    }

    /// Makes a retryable failure of a call that is not safe to repeat non-retryable,
    /// saying why: `tool` may have taken effect.
    pub(crate) fn withhold_retry(&mut self, tool: Cow<'static, str>) {
        self.fields.retryable = false;
        self.fields.reason = Some(Cow::Borrowed(crate::reasons::MAY_HAVE_TAKEN_EFFECT));
        self.fields.alternatives.push(format!(
            "Check whether `{tool}` took effect before calling it again: it is not idempotent, so repeating it could apply it twice"
        ));
        self.fields.meta.withheld = Some(tool);
    }

    pub(crate) fn set_origin(&mut self, origin: Origin) {
        self.fields.meta.origin = Some(origin);
    }

    /// Marks the message as written by a type this crate does not know, so
    /// that masking internal errors hides it.
    pub(crate) fn set_foreign(&mut self) {
        self.fields.meta.foreign = true;
    }

    /// Whether the message was written by a type this crate does not know
    /// (a standard library error, an `anyhow` chain, a panic).
    pub(crate) fn is_foreign(&self) -> bool {
        self.fields.meta.foreign
    }

    /// Marks the call as refused before the tool ran, and why.
    pub(crate) fn set_refused(&mut self, refusal: Refusal) {
        self.fields.meta.refused = Some(refusal);
    }

    /// Whether the call was refused before the tool ran, so that it ran 0 times.
    pub(crate) fn was_refused(&self) -> bool {
        self.fields.meta.refused.is_some()
    }

    /// Whether a guard blocked the call.
    pub(crate) fn was_blocked(&self) -> bool {
        self.fields.meta.refused == Some(Refusal::Blocked)
    }

    /// Whether a guard blocked the call or a person declined it: a policy,
    /// not the arguments, stopped it before the tool ran.
    pub(crate) fn was_stopped_by_policy(&self) -> bool {
        matches!(
            self.fields.meta.refused,
            Some(Refusal::Blocked | Refusal::Declined)
        )
    }

    /// Marks a guard's block as one a person may approve, by its `key`
    /// among the approvable blocks of the call.
    pub(crate) fn set_approval(&mut self, key: String) {
        self.fields.meta.approval = Some(key.into_boxed_str());
    }

    /// The key of the block a person may approve, when a guard blocked the
    /// call and a person may approve it.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn approval_key(&self) -> Option<&str> {
        self.fields
            .meta
            .approval
            .as_deref()
            .filter(|_| self.was_blocked())
    }

    /// Sets the tool that failed.
    pub(crate) fn set_tool(&mut self, tool: Cow<'static, str>) {
        self.fields.tool = Some(tool);
    }

    /// Takes the attempted query out, to put back what it becomes.
    pub(crate) fn take_attempted_query(&mut self) -> Option<Value> {
        self.fields.attempted_query.take()
    }

    /// Sets `attempted_query`, or takes it away.
    pub(crate) fn set_attempted_query(&mut self, query: Option<Value>) {
        self.fields.attempted_query = query;
    }

    /// Takes the partial results out, to put back what they become.
    pub(crate) fn take_partial_results(&mut self) -> Option<Value> {
        self.fields.partial_results.take()
    }

    /// Sets `partial_results`, or takes them away.
    pub(crate) fn set_partial_results(&mut self, partial: Option<Value>) {
        self.fields.partial_results = partial;
    }

    /// Sets the alternatives, in place of any (moved in, not copied).
    pub(crate) fn set_alternatives(&mut self, alternatives: Vec<String>) {
        self.fields.alternatives = alternatives;
    }

    /// Sets the violations, in place of any (moved in, not copied).
    pub(crate) fn set_violations(&mut self, violations: Vec<Violation>) {
        self.fields.violations = violations;
    }

    /// Sets `retryAfterMs`, or takes it away.
    pub(crate) fn set_retry_after(&mut self, delay: Option<Duration>) {
        self.fields.retry_after = delay;
    }

    /// Replaces the message (a tool set that masks internal errors).
    pub(crate) fn set_message(&mut self, message: String) {
        self.fields.message = message;
    }

    /// The violations, to rewrite in place.
    pub(crate) fn violations_mut(&mut self) -> &mut [Violation] {
        &mut self.fields.violations
    }

    /// Takes the message out, leaving an empty one: for a reader that keeps
    /// the text and drops the envelope.
    pub(crate) fn take_message(&mut self) -> String {
        std::mem::take(&mut self.fields.message)
    }

    /// The reason as it is held: borrowed for the constants of
    /// [`crate::reasons`], for a caller that keeps it.
    pub(crate) fn reason_code(&self) -> Option<Cow<'static, str>> {
        self.fields.reason.clone()
    }

    /// Sets the `escalation` object the envelope was read with.
    pub(crate) fn set_escalated(&mut self, escalated: Escalated) {
        self.fields.escalated = Some(Box::new(escalated));
    }

    /// Forgets the `escalation` object the envelope was read with: an
    /// [`Escalation`](crate::Escalation) read back holds it itself.
    pub(crate) fn forget_escalation(&mut self) {
        self.fields.escalated = None;
    }

    /// Puts back the fields as they would be sent ([`EnvelopeLimits::apply`](crate::EnvelopeLimits::apply)).
    pub(crate) fn set_sent(&mut self, sent: Sent) {
        let fields = &mut *self.fields;
        fields.message = sent.message;
        fields.attempted_query = sent.attempted_query;
        fields.partial_results = sent.partial_results;
        fields.alternatives = sent.alternatives;
        fields.violations = sent.violations;
        fields.tool = sent.tool;
        self.set_reason(sent.reason);
    }

    /// Rewrites every text a reader of the envelope sees — the message, the
    /// alternatives, the violations, the detail of the escalation it came
    /// with — through `rewrite`, which borrows what it leaves as it is.
    pub(crate) fn rewrite_texts(&mut self, rewrite: &dyn Fn(&str) -> Cow<'_, str>) {
        fn apply(text: &mut String, rewrite: &dyn Fn(&str) -> Cow<'_, str>) {
            if let Cow::Owned(rewritten) = rewrite(text) {
                *text = rewritten;
            }
        }
        let fields = &mut *self.fields;
        apply(&mut fields.message, rewrite);
        for alternative in &mut fields.alternatives {
            apply(alternative, rewrite);
        }
        for violation in &mut fields.violations {
            apply(&mut violation.field, rewrite);
            apply(&mut violation.description, rewrite);
        }
        if let Some(detail) = fields.escalated.as_mut().and_then(|e| e.detail.as_mut()) {
            apply(detail, rewrite);
        }
    }

    /// Masks the secret values of the call everywhere in the envelope: its
    /// texts ([`rewrite_texts`](Self::rewrite_texts)), its attempted query,
    /// its partial results.
    pub(crate) fn mask_values(&mut self, masker: &Masker) {
        self.rewrite_texts(&|text| masker.text(text));
        let fields = &mut *self.fields;
        for value in [&mut fields.attempted_query, &mut fields.partial_results]
            .into_iter()
            .flatten()
        {
            masker.value(value);
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
        self.fields.meta.origin.as_ref()?.0.as_any().downcast_ref()
    }

    /// Whether the envelope still holds the error it was made from. An envelope
    /// that crossed the wire does not.
    pub fn has_origin(&self) -> bool {
        self.fields.meta.origin.is_some()
    }

    /// The number of partial results: an array's items, an object's fields,
    /// 0 when absent.
    pub fn partial_count(&self) -> usize {
        count(self.fields.partial_results.as_ref())
    }
}

/// The fields of an envelope as they are sent, to put back into it.
pub(crate) struct Sent {
    pub(crate) message: String,
    pub(crate) attempted_query: Option<Value>,
    pub(crate) partial_results: Option<Value>,
    pub(crate) alternatives: Vec<String>,
    pub(crate) reason: Option<Cow<'static, str>>,
    pub(crate) violations: Vec<Violation>,
    pub(crate) tool: Option<Cow<'static, str>>,
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

/// Equality of what goes on the wire; the original error and the off-wire
/// hints are not compared.
impl PartialEq for ErrorEnvelope {
    fn eq(&self, other: &Self) -> bool {
        self.fields.category == other.fields.category
            && self.is_retryable() == other.is_retryable()
            && self.fields.message == other.fields.message
            && self.fields.attempted_query == other.fields.attempted_query
            && self.fields.partial_results == other.fields.partial_results
            && self.fields.alternatives == other.fields.alternatives
            && self.fields.reason == other.fields.reason
            && self.fields.retry_after.map(duration_to_ms)
                == other.fields.retry_after.map(duration_to_ms)
            && self.fields.violations == other.fields.violations
            && self.fields.tool == other.fields.tool
            && self.fields.escalated == other.fields.escalated
    }
}

impl fmt::Debug for ErrorEnvelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ErrorEnvelope");
        d.field("category", &self.fields.category)
            .field("retryable", &self.is_retryable())
            .field("message", &self.fields.message);
        if let Some(query) = &self.fields.attempted_query {
            d.field("attempted_query", query);
        }
        if let Some(partial) = &self.fields.partial_results {
            d.field("partial_results", partial);
        }
        if !self.fields.alternatives.is_empty() {
            d.field("alternatives", &self.fields.alternatives);
        }
        if let Some(reason) = &self.fields.reason {
            d.field("reason", reason);
        }
        if let Some(delay) = &self.fields.retry_after {
            d.field("retry_after", delay);
        }
        if !self.fields.violations.is_empty() {
            d.field("violations", &self.fields.violations);
        }
        if let Some(tool) = &self.fields.tool {
            d.field("tool", tool);
        }
        if let Some(escalated) = &self.fields.escalated {
            d.field("escalation", escalated);
        }
        if let Some(origin) = &self.fields.meta.origin {
            d.field("source", &origin.0.as_error());
        }
        d.finish()
    }
}

/// The message, as a human would read it in a log line.
impl fmt::Display for ErrorEnvelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.fields.message)
    }
}

impl StdError for ErrorEnvelope {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.fields
            .meta
            .origin
            .as_ref()
            .map(|origin| origin.0.as_error())
    }
}

/// The error an envelope was made from, shared so that envelopes stay cheap to clone.
#[derive(Clone)]
pub(crate) struct Origin(pub(crate) Arc<dyn ErasedOrigin>);

/// A type-erased original error: a typed view for downcasting and an
/// [`std::error::Error`] view for `source()` chains.
pub(crate) trait ErasedOrigin: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn as_error(&self) -> &(dyn StdError + 'static);
}
