//! Why a guard blocked a call, and the envelope that says so.

use std::borrow::Cow;
use std::fmt;

use crate::category::ErrorCategory;
use crate::classify::ToolError;
use crate::reasons;

/// Why a guard blocked a call. It becomes a `business`, non-retryable envelope
/// whose message and alternatives are the guard's.
///
/// ```
/// use tool_envelope::guard::Blocked;
///
/// let blocked = Blocked::new("Refund exceeds $500 policy cap")
///     .with_alternative("Escalate to a human for approval")
///     .with_reason("REFUND_OVER_CAP");
/// assert_eq!(blocked.to_string(), "Refund exceeds $500 policy cap");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub(super) message: String,
    alternatives: Vec<String>,
    pub(super) reason: Cow<'static, str>,
    pub(super) approvable: bool,
    /// The key of this block among the approvable blocks of its call, once
    /// a served call's guards met it.
    pub(super) approval: Option<String>,
    pub(super) category: ErrorCategory,
}

impl Blocked {
    /// A block with `message`, the sentence the caller reads.
    pub fn new(message: impl Into<String>) -> Self {
        Blocked {
            message: message.into(),
            alternatives: Vec::new(),
            reason: Cow::Borrowed(reasons::BLOCKED_BY_GUARD),
            approvable: false,
            approval: None,
            category: ErrorCategory::Business,
        }
    }

    /// A block for want of a right — a scope, a role — rather than by
    /// policy: a `permission` envelope, not `business`. Routed to whoever
    /// grants access, not to whoever sets policy.
    pub fn permission(message: impl Into<String>) -> Self {
        Blocked {
            category: ErrorCategory::Permission,
            ..Blocked::new(message)
        }
    }

    /// Lets a person approve the call instead: served through a
    /// [`ToolSet`](crate::mcp::ToolSet) to an MCP client that can ask its
    /// user (elicitation), the block becomes a question to that person,
    /// showing the message and the attempted query, secrets masked.
    ///
    /// - Accepted: the call runs, once, past this block only: every other
    ///   guard still runs, and another approvable block is asked for on its
    ///   own. Who answered, the authenticated caller, and when, are kept in
    ///   the result's `_meta`
    ///   ([`APPROVAL_META_KEY`](crate::mcp::APPROVAL_META_KEY)).
    /// - Declined or dismissed: a `business` envelope with reason
    ///   `HUMAN_DECLINED`, not retryable, that escalates as `human_declined`.
    /// - A caller that cannot be asked — Rust code, a client without
    ///   elicitation, a stateless server on 2025-11-25 — gets the block as
    ///   it is, with its alternatives.
    ///
    /// A [`permission`](Self::permission) block is never approvable: a
    /// missing right is granted by whoever grants access, not waived by
    /// whoever answers a form.
    #[must_use]
    pub fn unless_approved(mut self) -> Self {
        self.approvable = self.category != ErrorCategory::Permission;
        self
    }

    /// Adds a next move, such as routing to a human.
    #[must_use]
    pub fn with_alternative(mut self, alternative: impl Into<String>) -> Self {
        self.alternatives.push(alternative.into());
        self
    }

    /// Sets a machine `reason`, normalized into `UPPER_SNAKE_CASE` as every
    /// reason is ([`crate::reasons`]); `BLOCKED_BY_GUARD` by default, and
    /// when `reason` has no letter to make a code of.
    #[must_use]
    pub fn with_reason(mut self, reason: impl Into<Cow<'static, str>>) -> Self {
        if let Some(reason) = reasons::normalize(reason.into()) {
            self.reason = reason;
        }
        self
    }
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Blocked {}

impl ToolError for Blocked {
    fn category(&self) -> ErrorCategory {
        self.category
    }

    fn alternatives(&self) -> Vec<String> {
        self.alternatives.clone()
    }

    fn reason(&self) -> Option<Cow<'static, str>> {
        Some(self.reason.clone())
    }

    fn not_applied(&self) -> bool {
        true
    }

    fn as_error(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self)
    }

    fn into_envelope(mut self) -> crate::ErrorEnvelope {
        let approval = self.approval.take().filter(|_| self.approvable);
        crate::classify::envelope_of(self).remade(|parts| {
            parts.refused = Some(crate::envelope::Refusal::Blocked);
            parts.approval = approval.map(String::into_boxed_str);
        })
    }
}
