//! Who called: the identity and scopes a served tool set's token validator
//! found in the request's bearer token, for guards and tools to decide on.

use std::collections::BTreeSet;
use std::time::SystemTime;

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
    until: Option<SystemTime>,
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
            until: None,
        }
    }

    /// The same caller, whose token is good until `at` (its `exp`): a
    /// session the inbox opens with the token ends then, if not before.
    /// A validator that knows when its tokens expire should say so. Nothing
    /// else reads it: a request with an expired token is the validator's
    /// to refuse.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use tool_envelope::guard::Caller;
    ///
    /// let at = SystemTime::now() + Duration::from_secs(300);
    /// let caller = Caller::new("carol", ["refunds:approve"]).until(at);
    /// assert_eq!(caller.expires(), Some(at));
    /// ```
    #[must_use]
    pub fn until(mut self, at: SystemTime) -> Self {
        self.until = Some(at);
        self
    }

    /// When its token expires, if the validator said
    /// ([`until`](Self::until)).
    pub fn expires(&self) -> Option<SystemTime> {
        self.until
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

    /// Whether it may take up what `subject` started with a token that
    /// granted `scopes` (a session, a task): the same subject, granted each
    /// of them — another client of the same person, granted less, may not.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn stands_for<'a>(
        &self,
        subject: &str,
        mut scopes: impl Iterator<Item = &'a str>,
    ) -> bool {
        self.subject == subject && scopes.all(|scope| self.has_scope(scope))
    }
}
