//! The call a guard inspects: the tool, its arguments as shown, who
//! called, and what a person approved for it.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Blocked, Caller, Waivers};
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
    pub(super) fn waive(&self, blocked: &mut Blocked) -> bool {
        let Some(waivers) = self.waivers else {
            return false;
        };
        if blocked.approvers.is_none() || blocked.approval.is_some() {
            return false;
        }
        let key = waivers.key_of(blocked);
        // Looked ahead of, a block approvers decide passes as if they said
        // yes: what follows it is what the client may be asked now.
        let for_approvers = blocked.approver_scope().is_some();
        let waived =
            waivers.approved.contains(&key) || (for_approvers && waivers.approved.looking());
        blocked.approval = Some(key.into_boxed_str());
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
