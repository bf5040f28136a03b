//! With the `tracing` feature, the retry loop emits an event per retry and per
//! escalation with the tool's name, the attempt, the category and the delay.
#![cfg(feature = "tracing")]

mod common;

use std::time::Duration;

use tool_envelope::{ErrorEnvelope, retry::RetryPolicy, tool};

use common::Captured;

/// Always rate-limited.
#[tool(read_only, redact(api_key))]
fn quote(symbol: String, api_key: String) -> Result<f64, ErrorEnvelope> {
    let _ = (symbol, api_key);
    Err(ErrorEnvelope::transient("Rate limit hit on the quotes API"))
}

#[test]
fn one_event_per_retry_and_one_per_escalation() {
    let captured = Captured::default();
    let subscriber = captured.subscriber();
    tracing::subscriber::with_default(subscriber, || {
        let _ = RetryPolicy::default()
            .constant(Duration::ZERO)
            .retry_blocking(|| quote("ACME".into(), "sk-live-SECRET".into()));
    });
    let text = captured.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    for (line, attempt) in lines[..2].iter().zip(1..) {
        assert!(line.contains("WARN"), "{line}");
        assert!(line.contains("tool failed, retrying"), "{line}");
        assert!(line.contains("tool=\"quote\""), "{line}");
        assert!(line.contains(&format!("attempt={attempt}")), "{line}");
        assert!(line.contains("category=\"transient\""), "{line}");
        assert!(line.contains("delay_ms=0"), "{line}");
    }
    assert!(lines[2].contains("ERROR"), "{}", lines[2]);
    assert!(
        lines[2].contains("reason=\"retries_exhausted\""),
        "{}",
        lines[2]
    );
    assert!(
        !text.contains("SECRET"),
        "a redacted argument never reaches an event"
    );
    assert!(
        !text.contains("ACME"),
        "nor does any other argument: {text}"
    );
}

/// Fails with an internal detail, retryably.
#[tool(read_only)]
fn leaky(input: String) -> Result<(), ErrorEnvelope> {
    let _ = input;
    Err(ErrorEnvelope::other("pool exhausted at db-7:5432").with_retryable(true))
}

#[tokio::test]
async fn a_masked_internal_error_still_reaches_the_logs_in_full() {
    let captured = Captured::default();
    let subscriber = captured.subscriber();
    let _default = tracing::subscriber::set_default(subscriber);
    let tools = tool_envelope::mcp::ToolSet::new()
        .tool::<leaky>()
        .mask_internal_errors("Internal error; it has been logged");
    let result = tools
        .call("leaky", serde_json::json!({"input": "x"}))
        .await
        .unwrap();
    let envelope = result.envelope().unwrap();
    assert_eq!(envelope.message(), "Internal error; it has been logged");
    assert!(envelope.is_retryable(), "the retry flag is never masked");
    let text = captured.text();
    assert!(text.contains("ERROR"), "{text}");
    assert!(text.contains("tool=\"leaky\""), "{text}");
    assert!(text.contains("pool exhausted at db-7:5432"), "{text}");
}
