//! Deterministic guards: hard limits checked before a call runs.
//!
//! A prompt is followed most of the time; a guard always. A guard sees the
//! tool's name and its arguments — the same JSON as `attempted_query` — and
//! either lets the call through or blocks it. A blocked call never runs the
//! tool: it fails with a `business` envelope whose message and alternatives
//! come from the guard, and escalates as "blocked by a guard".
//!
//! Guards fail closed: [`ToolCall::require`] reads an argument or blocks the
//! call, a guard that panics blocks it, and a call whose arguments JSON
//! cannot carry (a NaN, an infinity) is refused before the guard could
//! misread it. [`Guards`] holds guards for a set of tools (a
//! [`ToolSet`](crate::mcp::ToolSet), a client): for every tool, or for one by
//! name.
//!
//! ```
//! use tool_envelope::guard::{Blocked, ToolCall};
//! use tool_envelope::{tool, ErrorCategory, ErrorEnvelope};
//!
//! /// Refunds above $500 are routed to a human. An amount it cannot read blocks the call.
//! fn refund_cap(call: &ToolCall) -> Result<(), Blocked> {
//!     let amount: f64 = call.require("amount")?;
//!     if amount > 500.0 {
//!         return Err(Blocked::new(format!("Refund of ${amount} exceeds the $500 policy cap"))
//!             .with_alternative("Escalate to a human for approval"));
//!     }
//!     Ok(())
//! }
//!
//! /// Refund an order.
//! #[tool(destructive, guard = refund_cap)]
//! fn process_refund(order: String, amount: f64) -> Result<String, ErrorEnvelope> {
//!     Ok(format!("refunded ${amount} on {order}"))
//! }
//!
//! assert!(process_refund("O-78".into(), 300.0).is_ok());
//! let blocked = process_refund("O-77".into(), 620.0).unwrap_err();
//! assert_eq!(blocked.category(), ErrorCategory::Business);
//! assert_eq!(blocked.alternatives(), ["Escalate to a human for approval"]);
//! // JSON cannot carry an infinity: the guard is never asked, the refund never runs.
//! let refused = process_refund("O-79".into(), f64::INFINITY).unwrap_err();
//! assert_eq!(refused.category(), ErrorCategory::Validation);
//! ```

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::approvals::Approvals;
pub use crate::caller::Caller;
use crate::category::ErrorCategory;
use crate::classify::ToolError;
use crate::reasons;

/// The call a guard inspects.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolCall<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The arguments, as captured (`attempted_query`).
    pub arguments: &'a Map<String, Value>,
    /// Who called, when a served tool set's token validator said
    /// ([`ToolCall::caller`]).
    pub caller: Option<&'a Caller>,
    /// The blocks a person approved for this call, and the count of the
    /// approvable blocks met so far: what lets a chain of guards go on past
    /// the one block each approval answered.
    waivers: Option<&'a Waivers<'a>>,
}

impl<'a> ToolCall<'a> {
    /// The argument `name`, if present.
    pub fn arg(&self, name: &str) -> Option<&'a Value> {
        self.arguments.get(name)
    }

    /// The argument `name` as a `T`, or a block when it is missing or not a
    /// `T`: a guard that cannot read what it guards refuses the call rather
    /// than let it through. Use it with `?`:
    ///
    /// ```
    /// use tool_envelope::guard::{Blocked, ToolCall};
    ///
    /// fn refund_cap(call: &ToolCall) -> Result<(), Blocked> {
    ///     let amount: f64 = call.require("amount")?;
    ///     if amount > 500.0 {
    ///         return Err(Blocked::new(format!("Refund of ${amount} exceeds the $500 policy cap")));
    ///     }
    ///     Ok(())
    /// }
    ///
    /// let arguments = |v: serde_json::Value| v.as_object().unwrap().clone();
    /// let check = |v| refund_cap(&ToolCall::new("process_refund", &arguments(v)));
    /// assert!(check(serde_json::json!({"amount": 300})).is_ok());
    /// assert!(check(serde_json::json!({"amount": 620})).is_err());
    /// assert!(check(serde_json::json!({"amount": "[redacted]"})).is_err(), "unreadable: blocked");
    /// assert!(check(serde_json::json!({})).is_err(), "missing: blocked");
    /// ```
    ///
    /// # Errors
    ///
    /// A block, reason `UNREADABLE_ARGUMENT`, when the argument is missing
    /// or is not a `T`.
    pub fn require<T: DeserializeOwned>(&self, name: &str) -> Result<T, Blocked> {
        let unreadable = |why: &str| {
            Blocked::new(format!(
                "The guard of `{}` could not read the argument `{name}` ({why}), so the call was not run",
                self.tool
            ))
            .with_reason(reasons::UNREADABLE_ARGUMENT)
        };
        let value = self
            .arguments
            .get(name)
            .ok_or_else(|| unreadable("it is missing"))?;
        T::deserialize(value).map_err(|_| unreadable("it does not have the type the guard expects"))
    }

    /// A call to `tool` with `arguments`, to test a guard with.
    pub fn new(tool: &'a str, arguments: &'a Map<String, Value>) -> Self {
        ToolCall {
            tool,
            arguments,
            caller: None,
            waivers: None,
        }
    }

    /// The same call, checked under `waivers`: each approvable block is
    /// given its key, and one a person approved is passed.
    pub(crate) fn with_waivers(mut self, waivers: &'a Waivers<'a>) -> Self {
        self.waivers = Some(waivers);
        self
    }

    /// Whether `blocked` is waived for this call: it may be approved, and a
    /// person approved it. Each approvable block met gets its key here —
    /// its place among the approvable blocks of this check, and a digest of
    /// what it says — so that an approval answers one block of one guard,
    /// never another that happens to share its reason. A block that has a
    /// key already was met by an inner chain, which did not waive it.
    fn waive(&self, blocked: &mut Blocked) -> bool {
        let Some(waivers) = self.waivers else {
            return false;
        };
        if !blocked.approvable || blocked.approval.is_some() {
            return false;
        }
        let key = waivers.key_of(blocked);
        let waived = waivers.approvals.is_approved(&key);
        blocked.approval = Some(key);
        waived
    }

    /// The same call, made by `caller`.
    #[must_use]
    pub fn with_caller(mut self, caller: Option<&'a Caller>) -> Self {
        self.caller = caller;
        self
    }

    /// Who called: the identity and scopes of the bearer token a served
    /// tool set accepted ([`BearerAuth`](crate::mcp::BearerAuth)); `None`
    /// for a call from Rust, or from a server that checks no token.
    pub fn caller(&self) -> Option<&'a Caller> {
        self.caller
    }

    /// A block unless the caller's token grants `scope`: a `permission`
    /// envelope, reason `INSUFFICIENT_SCOPE`, that names the scope — and
    /// the same for a call with no caller, since no token granted it.
    ///
    /// ```
    /// use tool_envelope::guard::{Blocked, Caller, ToolCall};
    ///
    /// fn only_refund_writers(call: &ToolCall) -> Result<(), Blocked> {
    ///     call.require_scope("refunds:write")
    /// }
    ///
    /// let arguments = serde_json::Map::new();
    /// let writer = Caller::new("ops", ["refunds:write"]);
    /// let reader = Caller::new("agent", ["refunds:read"]);
    /// let call = ToolCall::new("process_refund", &arguments);
    /// assert!(only_refund_writers(&call.with_caller(Some(&writer))).is_ok());
    /// assert!(only_refund_writers(&call.with_caller(Some(&reader))).is_err());
    /// assert!(only_refund_writers(&call).is_err(), "no token, no scope");
    /// ```
    ///
    /// # Errors
    ///
    /// The block, when no token of the call grants `scope`.
    pub fn require_scope(&self, scope: &str) -> Result<(), Blocked> {
        if self.caller.is_some_and(|caller| caller.has_scope(scope)) {
            return Ok(());
        }
        let who = match self.caller {
            Some(caller) => format!("the token of `{}` does not grant", caller.subject()),
            None => "the call carries no token that grants".to_owned(),
        };
        Err(Blocked::permission(format!(
            "`{}` needs the scope `{scope}`, and {who} it",
            self.tool
        ))
        .with_reason(reasons::INSUFFICIENT_SCOPE)
        .with_alternative(format!(
            "Call with a token that grants `{scope}`, or ask someone who has it"
        )))
    }
}

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
    message: String,
    alternatives: Vec<String>,
    reason: Cow<'static, str>,
    approvable: bool,
    /// The key of this block among the approvable blocks of its call, once
    /// a served call's guards met it.
    approval: Option<String>,
    category: ErrorCategory,
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

/// A deterministic policy check run before a tool.
///
/// Closures and functions taking a [`ToolCall`] and returning
/// `Result<(), Blocked>` are guards:
///
/// ```
/// use tool_envelope::{tool, ErrorCategory, ErrorEnvelope, guard::{Blocked, ToolCall}};
///
/// /// Refunds above $500 go to a human.
/// fn refund_cap(call: &ToolCall) -> Result<(), Blocked> {
///     match call.arg("amount").and_then(|a| a.as_u64()) {
///         Some(amount) if amount > 500 => Err(Blocked::new(format!("Refund of ${amount} exceeds the $500 policy cap"))
///             .with_alternative("Escalate to a human for approval")),
///         _ => Ok(()),
///     }
/// }
///
/// /// Refund an order.
/// #[tool(guard = refund_cap)]
/// fn process_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
///     Ok(format!("refunded {amount} on {order}"))
/// }
///
/// assert!(process_refund("O-1".into(), 300).is_ok());
/// let blocked = process_refund("O-77".into(), 620).unwrap_err();
/// assert_eq!(blocked.category(), ErrorCategory::Business);
/// assert_eq!(blocked.alternatives(), ["Escalate to a human for approval"]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a guard",
    label = "not a guard",
    note = "a guard is a `fn(&ToolCall) -> Result<(), Blocked>`, a closure of that shape, or a type implementing `tool_envelope::Guard`"
)]
pub trait Guard: Send + Sync {
    /// `Ok` lets the call run; `Err` blocks it.
    ///
    /// # Errors
    ///
    /// The block, which the caller reads: why, and what to do instead.
    fn check(&self, call: &ToolCall<'_>) -> Result<(), Blocked>;
}

impl<F> Guard for F
where
    F: Fn(&ToolCall<'_>) -> Result<(), Blocked> + Send + Sync,
{
    fn check(&self, call: &ToolCall<'_>) -> Result<(), Blocked> {
        self(call)
    }
}

/// Guards for a set of tools: some for every tool, some for one tool by name.
/// They run in the order they were added; the first block wins.
///
/// ```
/// use serde_json::json;
/// use tool_envelope::guard::{Blocked, Guards, ToolCall};
///
/// let guards = Guards::new()
///     .for_tool("process_refund", |call: &ToolCall| match call.arg("amount").and_then(|a| a.as_u64()) {
///         Some(amount) if amount > 500 => Err(Blocked::new("Refund exceeds $500 policy cap")),
///         _ => Ok(()),
///     })
///     .for_all(|call: &ToolCall| if call.tool.starts_with("drop_") {
///         Err(Blocked::new("Dropping is never automatic"))
///     } else {
///         Ok(())
///     });
///
/// let args = |value: serde_json::Value| value.as_object().unwrap().clone();
/// assert!(guards.check("process_refund", &args(json!({"amount": 300}))).is_ok());
/// assert!(guards.check("process_refund", &args(json!({"amount": 620}))).is_err());
/// assert!(guards.check("drop_table", &args(json!({}))).is_err());
/// ```
#[derive(Clone, Default)]
pub struct Guards {
    entries: Vec<Entry>,
}

/// A guard, and the one tool it is for (`None`: every tool).
type Entry = (Option<Cow<'static, str>>, Arc<dyn Guard>);

impl Guards {
    /// No guards.
    pub fn new() -> Self {
        Guards::default()
    }

    /// Adds a guard for every tool.
    #[must_use]
    pub fn for_all(mut self, guard: impl Guard + 'static) -> Self {
        self.entries.push((None, Arc::new(guard)));
        self
    }

    /// Adds a guard for the tool called `tool`.
    #[must_use]
    pub fn for_tool(
        mut self,
        tool: impl Into<Cow<'static, str>>,
        guard: impl Guard + 'static,
    ) -> Self {
        self.entries.push((Some(tool.into()), Arc::new(guard)));
        self
    }

    /// Whether there are no guards at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Runs the guards that apply to `tool`.
    ///
    /// # Errors
    ///
    /// The first block of a guard that applies.
    pub fn check(&self, tool: &str, arguments: &Map<String, Value>) -> Result<(), Blocked> {
        self.check_call(&ToolCall::new(tool, arguments))
    }

    /// Runs the guards that apply to `call`'s tool, on `call`: the first
    /// block that was not approved for this call stops the chain; an
    /// approved one is passed, and the guards after it still run.
    pub(crate) fn check_call(&self, call: &ToolCall<'_>) -> Result<(), Blocked> {
        let applying = (self.entries.iter())
            .filter(|(only, _)| only.as_deref().is_none_or(|name| name == call.tool));
        for (_, guard) in applying {
            if let Err(mut blocked) = guard.check(call)
                && !call.waive(&mut blocked)
            {
                return Err(blocked);
            }
        }
        Ok(())
    }
}

/// A set is itself a guard, so that one policy can guard plain calls too:
///
/// ```
/// use std::sync::LazyLock;
/// use tool_envelope::{tool, ErrorEnvelope, guard::{Blocked, Guards, ToolCall}};
///
/// static POLICY: LazyLock<Guards> = LazyLock::new(|| {
///     Guards::new().for_tool("process_refund", |call: &ToolCall| {
///         match call.arg("amount").and_then(|a| a.as_u64()) {
///             Some(amount) if amount > 500 => Err(Blocked::new("Refund exceeds $500 policy cap")),
///             _ => Ok(()),
///         }
///     })
/// });
///
/// /// Refund an order.
/// #[tool(guard = *POLICY)]
/// fn process_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
///     Ok(format!("refunded {amount} on {order}"))
/// }
///
/// assert!(process_refund("O-1".into(), 300).is_ok());
/// assert!(process_refund("O-77".into(), 620).is_err());
/// ```
impl Guard for Guards {
    fn check(&self, call: &ToolCall<'_>) -> Result<(), Blocked> {
        self.check_call(call)
    }
}

/// What the guards of one served call may waive: the blocks a person
/// approved, named by the keys [`ToolCall::waive`] gives the approvable
/// blocks it meets — `checkpoint` (which set of guards), then the block's
/// place among the approvable ones met, then a digest of what it says.
#[derive(Debug)]
pub(crate) struct Waivers<'a> {
    checkpoint: char,
    approvals: &'a Approvals,
    met: AtomicU32,
}

impl<'a> Waivers<'a> {
    /// The waivers of one check of the guards at `checkpoint`.
    pub(crate) fn new(checkpoint: char, approvals: &'a Approvals) -> Self {
        Waivers {
            checkpoint,
            approvals,
            met: AtomicU32::new(0),
        }
    }

    /// The key of the next approvable block met, `blocked`.
    fn key_of(&self, blocked: &Blocked) -> String {
        let place = self.met.fetch_add(1, Ordering::Relaxed);
        let mut digest = Sha256::new();
        for part in [
            blocked.category.as_str(),
            blocked.reason.as_ref(),
            blocked.message.as_str(),
        ] {
            digest.update(part.as_bytes());
            digest.update([0]);
        }
        let digest = digest.finalize();
        let short: String = digest[..6]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        format!("{}{place}-{short}", self.checkpoint)
    }
}

/// The guard's verdict on `call`: a block is the guard's envelope, and a
/// guard that panics blocks the call with an `other` one — the call never
/// runs unchecked. A block a person approved for this call (the call's
/// [`Waivers`]) lets it through; the guards of a chain after it still run.
/// Every path that checks guards asks here: a `#[tool]`'s own guard, a tool
/// set's guards, a client's.
pub(crate) fn verdict(
    call: &ToolCall<'_>,
    guard: &(impl Guard + ?Sized),
) -> Result<(), crate::ErrorEnvelope> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guard.check(call))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(mut blocked)) => match call.waive(&mut blocked) {
            true => Ok(()),
            false => Err(crate::classify::caught_envelope(blocked)),
        },
        Err(panic) => {
            let envelope = crate::classify::panicked(
                &format!("the guard of tool `{}`", call.tool),
                panic.as_ref(),
            )
            .with_reason(reasons::GUARD_PANIC);
            Err(envelope.remade(|parts| parts.refused = Some(crate::envelope::Refusal::Blocked)))
        }
    }
}

impl fmt::Debug for Guards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(
                self.entries
                    .iter()
                    .map(|(only, _)| only.as_deref().unwrap_or("*")),
            )
            .finish()
    }
}
