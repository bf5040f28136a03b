//! `#[tool]` as a user sees it: what comes back from a failing call.

use std::error::Error as _;
use std::io;

use serde::Serialize;
use serde_json::json;
use tool_envelope::{ErrorCategory, ErrorEnvelope, Found, Partial, ToolError, ToolResult, tool};

#[derive(Debug, thiserror::Error, ToolError)]
enum OrdersError {
    #[error("Connection to orders DB timed out after {0}s")]
    #[tool_error(
        transient,
        reason = "DB_TIMEOUT",
        alternatives("Retry against the read replica")
    )]
    Timeout(u64),
    #[error("Refund of {amount} exceeds the {cap} cap")]
    #[tool_error(
        business,
        alternatives("Refund exceeds ${cap} policy cap — escalate to human")
    )]
    OverCap { amount: u64, cap: u64 },
    #[error("bad customer id: {0}")]
    #[tool_error(validation)]
    BadId(#[from] std::num::ParseIntError),
}

/// Look up a customer's orders.
#[tool(read_only)]
fn lookup_orders(customer_id: String, status: Option<String>) -> Result<Found<u32>, OrdersError> {
    let _ = status;
    match customer_id.as_str() {
        "C-timeout" => Err(OrdersError::Timeout(5)),
        "C-0000" => Ok(Found::none()),
        id => {
            // `?` converts with `From`, into the function's own error type.
            let n: u32 = id.trim_start_matches("C-").parse()?;
            Ok(Found::new(vec![n]))
        }
    }
}

#[test]
fn failure_comes_back_as_an_envelope_with_the_arguments() {
    let envelope = lookup_orders("C-timeout".into(), Some("shipped".into())).unwrap_err();
    assert_eq!(envelope.category(), ErrorCategory::Transient);
    assert!(envelope.is_retryable());
    assert_eq!(
        envelope.message(),
        "Connection to orders DB timed out after 5s"
    );
    assert_eq!(envelope.reason(), Some("DB_TIMEOUT"));
    assert_eq!(envelope.alternatives(), ["Retry against the read replica"]);
    assert_eq!(envelope.tool(), Some("lookup_orders"));
    assert_eq!(
        envelope.attempted_query(),
        Some(&json!({"customer_id": "C-timeout", "status": "shipped"}))
    );
    assert_eq!(
        envelope.partial_results(),
        None,
        "this tool gathers no partials"
    );
    assert_eq!(
        envelope.idempotent(),
        Some(true),
        "read_only implies idempotent"
    );
}

#[test]
fn empty_lookup_is_not_an_error() {
    let found = lookup_orders("C-0000".into(), None).expect("an empty result is a success");
    assert!(found.is_empty());
    assert_eq!(
        serde_json::to_value(found).unwrap(),
        json!({"isError": false, "empty": true, "matches": 0})
    );
    assert_eq!(lookup_orders("C-42".into(), None).unwrap().results(), [42]);
}

#[test]
fn question_mark_keeps_the_original_error_type_and_it_stays_reachable() {
    let envelope = lookup_orders("C-4x".into(), None).unwrap_err();
    assert_eq!(envelope.category(), ErrorCategory::Validation);
    let original: &OrdersError = envelope.downcast_ref().expect("typed downcast");
    assert!(matches!(original, OrdersError::BadId(_)));
    let source = envelope.source().expect("source");
    assert!(source.downcast_ref::<OrdersError>().is_some());
    // The chain goes on to the error's own source.
    assert!(
        source
            .source()
            .unwrap()
            .downcast_ref::<std::num::ParseIntError>()
            .is_some()
    );
    // It is never serialized.
    let text = serde_json::to_string(&envelope).unwrap();
    assert!(!text.contains("BadId"));
}

/// Refund an order.
#[tool(name = "process_refund")]
fn refund(order: String, amount: u64) -> Result<String, OrdersError> {
    if amount > 500 {
        return Err(OrdersError::OverCap { amount, cap: 500 });
    }
    Ok(format!("refunded {amount} on {order}"))
}

#[test]
fn the_tool_name_can_be_set_and_alternatives_interpolate_fields() {
    let envelope = refund("O-77".into(), 620).unwrap_err();
    assert_eq!(envelope.tool(), Some("process_refund"));
    assert_eq!(envelope.category(), ErrorCategory::Business);
    assert!(!envelope.is_retryable());
    assert_eq!(
        envelope.alternatives(),
        ["Refund exceeds $500 policy cap — escalate to human"]
    );
    assert_eq!(
        envelope.attempted_query(),
        Some(&json!({"order": "O-77", "amount": 620}))
    );
    assert_eq!(
        envelope.idempotent(),
        Some(false),
        "not declared idempotent"
    );
    assert_eq!(refund("O-78".into(), 300).unwrap(), "refunded 300 on O-78");
}

struct Db;

/// Query payroll.
#[tool(skip(db), redact(api_token))]
fn query_payroll(db: &Db, dept: String, api_token: String) -> io::Result<Vec<String>> {
    let _ = (db, api_token);
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("Access denied to payroll table for {dept}"),
    ))
}

#[test]
fn io_result_alias_skip_and_redact() {
    let envelope = query_payroll(&Db, "ENG".into(), "tok-s3cr3t-123".into()).unwrap_err();
    assert_eq!(envelope.category(), ErrorCategory::Permission);
    assert!(!envelope.is_retryable());
    assert_eq!(
        envelope.attempted_query(),
        Some(&json!({"dept": "ENG", "api_token": "[redacted]"}))
    );
    let everything = format!(
        "{}\n{envelope}\n{envelope:?}\n{envelope:#?}",
        serde_json::to_string(&envelope).unwrap()
    );
    assert!(!everything.contains("tok-s3cr3t-123"), "{everything}");
}

mod crate_result {
    use super::*;

    /// A crate's own alias, as many crates have.
    pub type Result<T> = std::result::Result<T, OrdersError>;

    /// Parse an order number.
    #[tool]
    pub fn parse_order(text: String) -> Result<u64> {
        Ok(text.parse()?)
    }
}

#[test]
fn a_crates_own_result_alias_works() {
    assert_eq!(crate_result::parse_order("77".into()).unwrap(), 77);
    let envelope = crate_result::parse_order("x".into()).unwrap_err();
    assert_eq!(envelope.category(), ErrorCategory::Validation);
}

/// Fetch `n` sources, keeping what was fetched when the provider gives out.
#[tool]
fn research(
    topic: String,
    n: usize,
    limit: usize,
    sources: Partial<Source>,
) -> Result<Vec<Source>, ErrorEnvelope> {
    for i in sources.len()..n {
        if i >= limit {
            return Err(ErrorEnvelope::transient(format!(
                "Provider rate-limited after {i} sources on '{topic}'"
            )));
        }
        sources.push(Source {
            title: format!("source {}", i + 1),
        });
    }
    Ok(sources.to_vec())
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Source {
    title: String,
}

#[test]
fn partial_results_come_from_the_collector_and_the_caller_can_resume() {
    let sources = Partial::new();
    let envelope = research("EU AI Act timelines".into(), 10, 6, sources.clone()).unwrap_err();
    assert_eq!(envelope.partial_count(), 6);
    assert_eq!(
        envelope.partial_results().unwrap()[5],
        json!({"title": "source 6"})
    );
    // The collector is never captured as an argument.
    assert_eq!(
        envelope.attempted_query(),
        Some(&json!({"topic": "EU AI Act timelines", "n": 10, "limit": 6}))
    );
    // The caller still holds the six, and a later attempt resumes from them.
    assert_eq!(sources.len(), 6);
    let all = research("EU AI Act timelines".into(), 10, 100, sources.clone()).unwrap();
    assert_eq!(all.len(), 10);
    assert_eq!(all[6].title, "source 7");
}

#[test]
fn a_collector_that_gathered_nothing_still_says_so() {
    let envelope = research("x".into(), 10, 0, Partial::new()).unwrap_err();
    assert_eq!(envelope.partial_results(), Some(&json!([])));
}

#[derive(Debug, thiserror::Error, ToolError)]
#[error("Refund blocked by policy threshold")]
#[tool_error(business)]
struct Blocked {
    #[tool_error(partial)]
    checked: serde_json::Value,
}

/// Refund, carrying what was verified in the error.
#[tool]
fn refund_checked(order: String, seen: Partial<u32>) -> Result<(), Blocked> {
    seen.push(1);
    Err(Blocked {
        checked: json!({"order_total": 620, "customer_verified": true, "order": order}),
    })
}

#[test]
fn partial_results_carried_by_the_error_win_over_the_collector() {
    let envelope = refund_checked("O-77".into(), Partial::new()).unwrap_err();
    assert_eq!(
        envelope.partial_results(),
        Some(&json!({"order_total": 620, "customer_verified": true, "order": "O-77"}))
    );
}

#[test]
fn on_success_partials_are_not_the_result() {
    let seen = Partial::new();
    let value: ToolResult<Vec<Source>> = research("x".into(), 2, 10, seen.clone());
    assert_eq!(value.unwrap().len(), 2);
    assert_eq!(
        seen.len(),
        2,
        "the collector is the caller's, not part of the result"
    );
}

/// Fetch a page.
#[tool]
async fn fetch_page(url: String) -> Result<String, io::Error> {
    tokio::task::yield_now().await;
    if url.starts_with("https://down") {
        return Err(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            "connection refused",
        ));
    }
    Ok(format!("<html>{url}</html>"))
}

#[tokio::test]
async fn async_tools_work_the_same() {
    assert_eq!(
        fetch_page("https://up".into()).await.unwrap(),
        "<html>https://up</html>"
    );
    let envelope = fetch_page("https://down".into()).await.unwrap_err();
    assert_eq!(envelope.category(), ErrorCategory::Transient);
    assert!(
        !envelope.not_applied(),
        "a refused connection says nothing of what the tool did before it"
    );
    assert_eq!(
        envelope.attempted_query(),
        Some(&json!({"url": "https://down"}))
    );
}

/// Panics.
#[tool]
fn explode(n: u32) -> Result<u32, ErrorEnvelope> {
    if n == 0 {
        panic!("division by zero in explode");
    }
    Ok(10 / n)
}

/// Panics, asynchronously.
#[tool]
async fn explode_later(n: u32) -> Result<u32, ErrorEnvelope> {
    tokio::task::yield_now().await;
    let items: Vec<u32> = Vec::new();
    Ok(items[n as usize])
}

#[tokio::test]
async fn a_panic_becomes_an_envelope_sync_and_async() {
    let envelope = explode(0).unwrap_err();
    assert_eq!(envelope.category(), ErrorCategory::Other);
    assert!(!envelope.is_retryable());
    assert!(
        envelope.message().contains("panicked"),
        "{}",
        envelope.message()
    );
    assert!(envelope.message().contains("division by zero in explode"));
    assert_eq!(envelope.attempted_query(), Some(&json!({"n": 0})));
    assert_eq!(explode(2).unwrap(), 5);

    let envelope = explode_later(3).await.unwrap_err();
    assert_eq!(envelope.category(), ErrorCategory::Other);
    assert!(
        envelope.message().contains("index out of bounds"),
        "{}",
        envelope.message()
    );
    assert_eq!(envelope.reason(), Some("PANIC"));
}

struct Inventory {
    stock: Vec<(String, u32)>,
    reserved: u32,
}

impl Inventory {
    /// How many of `sku` are in stock.
    #[tool(read_only)]
    fn stock_of(&self, sku: String) -> Result<u32, ErrorEnvelope> {
        self.stock
            .iter()
            .find(|(s, _)| *s == sku)
            .map(|(_, n)| *n)
            .ok_or_else(|| ErrorEnvelope::validation(format!("unknown sku {sku}")))
    }

    /// Reserve `n` of `sku`.
    #[tool]
    fn reserve(&mut self, sku: String, n: u32) -> Result<u32, ErrorEnvelope> {
        let available = self.stock_of(sku)?;
        if n > available {
            return Err(
                ErrorEnvelope::business("not enough stock").with_alternative("Reserve fewer")
            );
        }
        self.reserved += n;
        Ok(self.reserved)
    }

    /// Restock, asynchronously.
    #[tool]
    async fn restock(&mut self, sku: String, n: u32) -> Result<u32, ErrorEnvelope> {
        tokio::task::yield_now().await;
        let entry = self.stock.iter_mut().find(|(s, _)| *s == sku);
        let entry = entry.ok_or_else(|| ErrorEnvelope::validation("unknown sku"))?;
        entry.1 += n;
        Ok(entry.1)
    }
}

#[tokio::test]
async fn methods_with_self_and_mut_self() {
    let mut inventory = Inventory {
        stock: vec![("A-1".into(), 3)],
        reserved: 0,
    };
    assert_eq!(inventory.stock_of("A-1".into()).unwrap(), 3);
    assert_eq!(inventory.reserve("A-1".into(), 2).unwrap(), 2);
    assert_eq!(inventory.restock("A-1".into(), 4).await.unwrap(), 7);

    // A tool calling a tool: the inner envelope passes through unchanged.
    let envelope = inventory.reserve("Z-9".into(), 1).unwrap_err();
    assert_eq!(envelope.tool(), Some("stock_of"));
    assert_eq!(envelope.attempted_query(), Some(&json!({"sku": "Z-9"})));

    let envelope = inventory.reserve("A-1".into(), 99).unwrap_err();
    assert_eq!(envelope.tool(), Some("reserve"));
    assert_eq!(envelope.alternatives(), ["Reserve fewer"]);
}

/// The first item.
#[tool]
fn first<T: Serialize + Clone>(items: Vec<T>) -> Result<T, ErrorEnvelope> {
    items
        .first()
        .cloned()
        .ok_or_else(|| ErrorEnvelope::validation("no items"))
}

#[test]
fn generic_functions() {
    assert_eq!(first(vec![3, 4]).unwrap(), 3);
    let envelope = first::<String>(Vec::new()).unwrap_err();
    assert_eq!(envelope.attempted_query(), Some(&json!({"items": []})));
}

/// Takes its arguments apart.
#[tool]
fn consume(r#type: String, tags: Vec<String>) -> Result<usize, ErrorEnvelope> {
    // The body moves the arguments; they were captured before it ran.
    let all: Vec<String> = tags.into_iter().chain([r#type]).collect();
    Err(ErrorEnvelope::other(format!("{} items", all.len())))
}

#[test]
fn arguments_are_captured_before_the_body_moves_them() {
    let envelope = consume("kind".into(), vec!["a".into()]).unwrap_err();
    assert_eq!(
        envelope.attempted_query(),
        Some(&json!({"type": "kind", "tags": ["a"]}))
    );
}

/// Documented parameters.
#[tool]
fn documented(
    /// The customer, as `C-NNNN`.
    customer: String,
) -> Result<String, ErrorEnvelope> {
    Ok(customer)
}

#[test]
fn parameter_doc_comments_are_accepted() {
    assert_eq!(documented("C-1".into()).unwrap(), "C-1");
}

#[cfg(feature = "anyhow")]
mod with_anyhow {
    use super::*;
    use anyhow::Context as _;

    /// Load a config file.
    #[tool]
    pub fn load(path: String) -> anyhow::Result<String> {
        if path == "envelope" {
            return Err(ErrorEnvelope::permission("no access to the config store").into());
        }
        std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))
    }

    #[test]
    fn anyhow_result_works_and_passes_envelopes_through() {
        let envelope = load("/definitely/not/here".into()).unwrap_err();
        assert_eq!(envelope.category(), ErrorCategory::Other);
        assert!(
            envelope
                .message()
                .starts_with("reading /definitely/not/here: ")
        );
        assert_eq!(
            envelope.attempted_query(),
            Some(&json!({"path": "/definitely/not/here"}))
        );

        let envelope = load("envelope".into()).unwrap_err();
        assert_eq!(envelope.category(), ErrorCategory::Permission);
        assert_eq!(envelope.tool(), Some("load"));
    }

    /// Parse a page number and a port, with context.
    #[tool]
    pub fn parse(page: String, address: String) -> anyhow::Result<u32> {
        let page: u32 = page.parse().context("reading the page number")?;
        let _: std::net::SocketAddr = address.parse().context("reading the address")?;
        Ok(page)
    }

    #[test]
    fn a_parse_error_inside_anyhow_is_validation_as_on_its_own() {
        let envelope = parse("seven".into(), "127.0.0.1:80".into()).unwrap_err();
        assert_eq!(envelope.category(), ErrorCategory::Validation);
        assert_eq!(envelope.reason(), Some("INVALID_INTEGER"));
        assert!(
            envelope.message().starts_with("reading the page number: "),
            "{}",
            envelope.message()
        );
        let envelope = parse("7".into(), "nowhere".into()).unwrap_err();
        assert_eq!(envelope.category(), ErrorCategory::Validation);
        assert_eq!(envelope.reason(), Some("INVALID_ADDRESS"));
    }
}

/// Waits on a dependency that never answers, gathering what it can first.
#[tool(read_only, timeout = "250ms")]
async fn hangs(topic: String, seen: Partial<String>) -> Result<(), ErrorEnvelope> {
    seen.push(format!("{topic}: first page"));
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_hung_async_tool_times_out_into_a_transient_envelope() {
    let start = tokio::time::Instant::now();
    let envelope = hangs("rates".into(), Partial::new()).await.unwrap_err();
    assert_eq!(start.elapsed(), std::time::Duration::from_millis(250));
    assert_eq!(envelope.category(), ErrorCategory::Transient);
    assert!(envelope.is_retryable());
    assert_eq!(
        envelope.message(),
        "tool `hangs` did not finish within 250 ms and was stopped"
    );
    assert_eq!(envelope.reason(), Some("TIMEOUT"));
    assert_eq!(envelope.attempted_query(), Some(&json!({"topic": "rates"})));
    assert_eq!(
        envelope.partial_results(),
        Some(&json!(["rates: first page"])),
        "nothing gathered is lost"
    );
}

/// Gathers two pages, then waits on a server that never answers.
#[tool(read_only, timeout = "2s")]
async fn crawl_slowly(site: String, pages: Partial<u32>) -> Result<(), ErrorEnvelope> {
    pages.extend([1, 2]);
    let _ = site;
    std::future::pending::<()>().await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_tool_keeps_its_arguments_and_partial_results() {
    let start = tokio::time::Instant::now();
    let envelope = crawl_slowly("example.org".into(), Partial::new())
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), std::time::Duration::from_secs(2));
    assert_eq!(envelope.category(), ErrorCategory::Transient);
    assert!(envelope.is_retryable());
    assert_eq!(envelope.reason(), Some("TIMEOUT"));
    assert_eq!(
        envelope.attempted_query(),
        Some(&json!({"site": "example.org"}))
    );
    assert_eq!(envelope.partial_results(), Some(&json!([1, 2])));
}

/// A constant of the user's, named as the macro's own once was.
const INFO: &str = "orders-v2";

/// Tags an order with the service's version.
#[tool(local, read_only)]
fn tagged(order: String) -> Result<String, ErrorEnvelope> {
    Ok(format!("{INFO}:{order}"))
}

/// The body sees the user's constant, not one the macro generated beside it.
#[test]
fn a_constant_of_the_users_is_the_one_its_body_sees() {
    assert_eq!(tagged("A-1".into()).unwrap(), "orders-v2:A-1");
}
