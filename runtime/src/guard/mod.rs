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

mod blocked;
mod call;
mod guards;
mod verdict;

pub use crate::caller::Caller;
pub use blocked::{Approvers, Blocked};
pub use call::ToolCall;
pub use guards::Guards;
pub(crate) use verdict::{Waivers, verdict};

/// A deterministic policy check run before a tool.
///
/// A served call may be checked more than once: again after each block a
/// person approves, and, where a block may be put to a person, looked ahead
/// of or behind without running the tool (to ask now what would be asked
/// later, or not ask about a call that could not go on). A guard answers
/// from the call alone: one that counts or spends something as it checks
/// would count those checks too.
///
/// Closures and functions taking a [`ToolCall`] and returning
/// `Result<(), Blocked>` are guards:
///
/// ```
/// use tool_envelope::{tool, ErrorCategory, ErrorEnvelope, guard::{Blocked, ToolCall}};
///
/// /// Refunds above $500 go to a human.
/// fn refund_cap(call: &ToolCall) -> Result<(), Blocked> {
///     // Read with `require`: an amount it cannot read blocks the call.
///     let amount: u64 = call.require("amount")?;
///     if amount > 500 {
///         return Err(Blocked::new(format!("Refund of ${amount} exceeds the $500 policy cap"))
///             .with_alternative("Escalate to a human for approval"));
///     }
///     Ok(())
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
