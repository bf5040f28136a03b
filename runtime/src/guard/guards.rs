//! Guards for a set of tools: some for every tool, some for one by name,
//! in order; a chain that goes on past a block a person approved.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Blocked, Guard, ToolCall};

/// Guards for a set of tools: some for every tool, some for one tool by name.
/// They run in the order they were added; the first block wins.
///
/// ```
/// use serde_json::json;
/// use tool_envelope::guard::{Blocked, Guards, ToolCall};
///
/// let guards = Guards::new()
///     .for_tool("process_refund", |call: &ToolCall| {
///         let amount: u64 = call.require("amount")?;
///         match amount > 500 {
///             true => Err(Blocked::new("Refund exceeds $500 policy cap")),
///             false => Ok(()),
///         }
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

    /// Whether a guard of the set applies to the tool called `tool`.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn apply_to(&self, tool: &str) -> bool {
        (self.entries.iter()).any(|(only, _)| only.as_deref().is_none_or(|name| name == tool))
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
///         let amount: u64 = call.require("amount")?;
///         match amount > 500 {
///             true => Err(Blocked::new("Refund exceeds $500 policy cap")),
///             false => Ok(()),
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
