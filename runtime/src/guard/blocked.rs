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
    /// Who may approve it, when someone may.
    pub(super) approvers: Option<Approvers>,
    /// The key of this block among the approvable blocks of its call, once
    /// a served call's guards met it.
    pub(super) approval: Option<Box<str>>,
    pub(super) category: ErrorCategory,
}

impl Blocked {
    /// A block with `message`, the sentence the caller reads.
    pub fn new(message: impl Into<String>) -> Self {
        Blocked {
            message: message.into(),
            alternatives: Vec::new(),
            reason: Cow::Borrowed(reasons::BLOCKED_BY_GUARD),
            approvers: None,
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
    pub fn unless_approved(self) -> Self {
        self.unless_approved_by(Approvers::client())
    }

    /// Lets `approvers` approve the call instead. [`Approvers::client`] is
    /// [`unless_approved`](Self::unless_approved). [`Approvers::scope`]
    /// names people who sign in at the server, whom the calling agent
    /// cannot stand in for: served through a
    /// [`ToolSet`](crate::mcp::ToolSet) with a
    /// [`store`](crate::mcp::ToolSet::store), the call waits there and the
    /// caller gets a `business` envelope, not retryable, reason
    /// `AWAITING_APPROVAL`, whose `escalation` carries a
    /// [`Ticket`](crate::Ticket). Nothing the calling client sends decides
    /// it: an approver whose token grants the scope does, and never the
    /// caller itself ([`ToolSet::decide`](crate::mcp::ToolSet::decide)).
    /// Approved, the call runs once, on whichever replica claims it;
    /// calling again with the same arguments reads its result. Without a
    /// store, the block stands as it is.
    ///
    /// A call that other guards block for the client's user
    /// ([`unless_approved`](Self::unless_approved)), before this block or
    /// after it: that user is asked first, while the call is theirs —
    /// the tool set looks past the approvers' blocks (the tool does not
    /// run) for every block the user may approve. Declined, or with nobody
    /// to ask, the call ends there and never waits; approved, it waits,
    /// and its approved run passes the blocks both approved.
    ///
    /// A [`permission`](Self::permission) block is never approvable.
    ///
    /// ```
    /// use tool_envelope::guard::{Approvers, Blocked};
    ///
    /// let blocked = Blocked::new("Refund exceeds the $500 cap")
    ///     .unless_approved_by(Approvers::scope("refunds:approve"));
    /// # let _ = blocked;
    /// ```
    #[must_use]
    pub fn unless_approved_by(mut self, approvers: Approvers) -> Self {
        self.approvers = (self.category != ErrorCategory::Permission).then_some(approvers);
        self
    }

    /// The scope of the approvers at the server who may approve it; `None`
    /// when nobody may, or when the client's user may.
    pub(super) fn approver_scope(&self) -> Option<&str> {
        self.approvers.as_ref().and_then(Approvers::required_scope)
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

/// Who may approve a blocked call
/// ([`Blocked::unless_approved_by`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approvers {
    /// The scope an approver's token must grant; `None`: the client's user.
    scope: Option<Cow<'static, str>>,
}

impl Approvers {
    /// The person at the calling client, asked through elicitation: what
    /// [`Blocked::unless_approved`] means. Advisory for an autonomous
    /// agent, whose harness answers for it.
    pub fn client() -> Self {
        Approvers { scope: None }
    }

    /// People who sign in at the server with a token that grants `scope`
    /// (the tool set's [`BearerAuth`](crate::mcp::BearerAuth) validator
    /// says who they are), never the caller of the call itself.
    pub fn scope(scope: impl Into<Cow<'static, str>>) -> Self {
        Approvers {
            scope: Some(scope.into()),
        }
    }

    /// The scope an approver's token must grant; `None` for
    /// [`client`](Self::client).
    pub fn required_scope(&self) -> Option<&str> {
        self.scope.as_deref()
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
        let approval = self.approval.take().filter(|_| self.approvers.is_some());
        let approvers = self.approvers.take().and_then(|approvers| approvers.scope);
        crate::classify::envelope_of(self).remade(|parts| {
            parts.refused = Some(crate::envelope::Refusal::Blocked);
            parts.approval = approval;
            parts.approvers = approvers.map(|scope| scope.into_owned().into_boxed_str());
        })
    }
}
