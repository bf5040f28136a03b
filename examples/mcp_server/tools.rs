//! The example's tools — orders, stock, refunds, payroll, research — shared by the example server, the hostile-input tests,
//! the property tests and the fuzz target, so that they all exercise the
//! tools a user would actually serve.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_envelope::mcp::ToolSet;
use tool_envelope::{
    ErrorEnvelope, Found, Partial, ToolError,
    guard::{Approvers, Blocked, ToolCall},
    retry::RetryPolicy,
    tool, tools,
};

/// How the orders service can fail.
#[derive(Debug, thiserror::Error, ToolError)]
enum OrdersError {
    #[error("Connection to orders DB timed out after {0}s")]
    #[tool_error(
        transient,
        reason = "DB_TIMEOUT",
        alternatives("Retry against the read replica")
    )]
    Timeout(u64),
    #[error("Customer id `{0}` is not of the form C-NNNN")]
    #[tool_error(
        validation,
        reason = "BAD_CUSTOMER_ID",
        alternatives("Ask the user for their customer id")
    )]
    BadCustomerId(String),
}

/// An order.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Order {
    /// The order number.
    id: String,
    /// `pending`, `shipped` or `delivered`.
    status: String,
    /// The total, in dollars.
    total: u64,
}

/// The orders store: state shared by its tools.
struct Orders {
    by_customer: HashMap<String, Vec<Order>>,
}

#[tools]
impl Orders {
    /// Look up a customer's orders, optionally only those with a given status.
    /// Finding none is a valid answer, not an error.
    #[tool(read_only, describe_failures)]
    async fn lookup_orders(
        &self,
        /// The customer, as `C-NNNN`.
        customer_id: String,
        /// Only orders with this status.
        status: Option<String>,
    ) -> Result<Found<Order>, OrdersError> {
        if !customer_id.starts_with("C-") {
            return Err(OrdersError::BadCustomerId(customer_id));
        }
        if customer_id == "C-4821" {
            // The orders database does not answer.
            return Err(OrdersError::Timeout(5));
        }
        let orders = self
            .by_customer
            .get(&customer_id)
            .cloned()
            .unwrap_or_default();
        Ok(orders
            .into_iter()
            .filter(|order| status.as_ref().is_none_or(|s| *s == order.status))
            .collect())
    }
}

static STOCK_CALLS: AtomicU64 = AtomicU64::new(0);

/// Read the stock level of a SKU. The inventory service drops every other
/// request; the server retries it locally, so callers never see the blip.
#[tool(read_only)]
fn stock_level(
    /// The stock-keeping unit.
    sku: String,
) -> Result<u32, std::io::Error> {
    if STOCK_CALLS.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "Inventory service reset the connection",
        ));
    }
    Ok(sku.len() as u32 * 7)
}

/// Whether the client's user approves refunds over the cap even from a
/// caller with a token (`--approvals client`); set once, at start.
pub static CLIENT_APPROVES: AtomicBool = AtomicBool::new(false);

/// The refund policy: a hard limit, checked in code before the tool runs. It
/// fails closed: an amount it cannot read blocks the call.
///
/// Over the cap, someone may approve the refund. Served with
/// `--require-token`, where people sign in, that is an approver whose token
/// grants `refunds:approve`, on the inbox page — never the calling agent:
/// the call waits as a ticket. A call with no token at all comes over
/// stdio (or an open port), where the process that started the server is
/// trusted and nobody signs in: there the client's user is asked.
///
/// With a token, a refund also needs the scope `refunds:write`.
fn refund_cap(call: &ToolCall) -> Result<(), Blocked> {
    const CAP: u64 = 500;
    if call.caller().is_some() {
        call.require_scope("refunds:write")?;
    }
    let amount: u64 = call.require("amount")?;
    if amount > CAP {
        let blocked = Blocked::new(format!("Refund of ${amount} exceeds the ${CAP} policy cap"))
            .with_reason("REFUND_OVER_CAP")
            .with_alternative("Escalate to a human for approval")
            .with_alternative(format!("Offer store credit up to ${CAP}"));
        let people_decide = call.caller().is_some() && !CLIENT_APPROVES.load(Ordering::Relaxed);
        return Err(match people_decide {
            true => blocked.unless_approved_by(Approvers::scope("refunds:approve")),
            false => blocked.unless_approved(),
        });
    }
    Ok(())
}

/// Refund an order. Refunds above $500 need a human's approval.
#[tool(destructive, guard = refund_cap)]
fn process_refund(
    /// The order to refund.
    order: String,
    /// The amount, in dollars.
    amount: u64,
) -> Result<String, ErrorEnvelope> {
    // The payment system's own record of every refund made: what
    // scripts/test-replicas.sh counts, across replicas, to prove each
    // approved refund ran once.
    eprintln!("refunded {order} ${amount}");
    Ok(format!("Refunded ${amount} on {order}"))
}

/// Why payroll is off limits.
#[derive(Debug, thiserror::Error, ToolError)]
#[error("Access denied to payroll table")]
#[tool_error(
    permission,
    reason = "PAYROLL_DENIED",
    alternatives(
        "Request read grant on payroll schema",
        "Escalate to data-owner for approval"
    )
)]
struct PayrollDenied;

/// Read the payroll of a department.
#[tool(read_only)]
fn read_payroll(
    /// The department, such as `ENG`.
    dept: String,
) -> Result<Vec<String>, PayrollDenied> {
    let _ = dept;
    Err(PayrollDenied)
}

/// A source gathered by the research tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Source {
    /// The source's title.
    title: String,
}

/// Gather sources on a topic. The provider rate-limits after 6 sources; what
/// was gathered comes back with the failure.
#[tool(read_only)]
async fn research(
    /// What to research.
    topic: String,
    /// How many sources to gather, at most 10.
    wanted: Option<usize>,
    sources: Partial<Source>,
) -> Result<Vec<Source>, ErrorEnvelope> {
    let wanted = wanted.unwrap_or(10).min(10);
    for i in sources.len()..wanted {
        if i == 6 {
            return Err(ErrorEnvelope::transient(format!(
                "Provider rate-limited after {i} sources"
            ))
            .with_reason("RATE_LIMITED")
            .with_alternative("Continue with the sources gathered, flagged as partial")
            .with_alternative("Retry the remaining sources after the quota resets"));
        }
        sources.push(Source {
            title: format!("{topic}: source {}", i + 1),
        });
    }
    Ok(sources.to_vec())
}

/// The example's tool set, recovering transient faults locally before it
/// answers.
pub fn tools() -> ToolSet {
    tools_without_retry().retry(
        RetryPolicy::default()
            .max_attempts(3)
            .constant(Duration::from_millis(20))
            .stop_after_no_progress(2),
    )
}

/// The example's tool set, leaving recovery to its callers: every failure is
/// answered as it happened.
pub fn tools_without_retry() -> ToolSet {
    let orders = Orders {
        by_customer: HashMap::from([(
            "C-1001".to_owned(),
            vec![
                Order {
                    id: "O-77".into(),
                    status: "shipped".into(),
                    total: 620,
                },
                Order {
                    id: "O-78".into(),
                    status: "pending".into(),
                    total: 40,
                },
            ],
        )]),
    };
    ToolSet::new()
        .server_info("tool-envelope-example", env!("CARGO_PKG_VERSION"))
        .provider(orders)
        .tool::<stock_level>()
        .tool::<process_refund>()
        .tool::<read_payroll>()
        .tool::<research>()
}
