//! Who called: the identity and scopes a served tool set's token validator
//! found in the request's bearer token, for guards and tools to decide on.

use std::collections::BTreeSet;

/// Who called a served tool: the subject and the scopes of the bearer token
/// the server's validator accepted
/// ([`BearerAuth`](crate::mcp::BearerAuth)). A tool reads it from its
/// [`ToolContext::caller`](crate::mcp::ToolContext::caller), a guard from
/// [`ToolCall::caller`](crate::guard::ToolCall::caller).
///
/// ```
/// use tool_envelope::guard::Caller;
///
/// let caller = Caller::new("agent-7", ["refunds:read", "refunds:write"]);
/// assert!(caller.has_scope("refunds:write"));
/// assert!(!caller.has_scope("payroll:read"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    subject: String,
    scopes: BTreeSet<String>,
}

impl Caller {
    /// A caller known as `subject` (a user, a client, a workload), granted
    /// `scopes`.
    pub fn new(
        subject: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Caller {
            subject: subject.into(),
            scopes: scopes.into_iter().map(Into::into).collect(),
        }
    }

    /// Who it is, as the validator named it.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The scopes its token grants.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scopes.iter().map(String::as_str)
    }

    /// Whether its token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }
}
