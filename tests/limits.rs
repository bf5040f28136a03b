//! Limits are a value: plain `Serialize` applies the documented defaults, the
//! same in every thread at every moment; a tool set applies its own; and what
//! is sent fits its caps as sent, escapes and markers included.

use serde_json::{Value, json};
use tool_envelope::mcp::ToolSet;
use tool_envelope::retry::RetryPolicy;
use tool_envelope::{EnvelopeLimits, ErrorEnvelope, Partial, tool};

/// Fails, reporting everything it was given.
#[tool(read_only)]
fn fail(query: String, items: u32) -> Result<(), ErrorEnvelope> {
    let _ = query;
    Err(ErrorEnvelope::transient("x".repeat(500))
        .with_partial_results(json!((0..items).collect::<Vec<_>>()))
        .with_alternatives((0..10).map(|i| format!("Option {i}"))))
}

/// Fails with `size` control characters as its message: each is six bytes of JSON.
#[tool(read_only)]
fn control(size: usize) -> Result<(), ErrorEnvelope> {
    Err(ErrorEnvelope::other("\u{1}".repeat(size))
        .with_alternatives((0..200).map(|_| "\u{2}".repeat(size))))
}

#[test]
fn the_documented_defaults_and_texts() {
    let limits = EnvelopeLimits::default();
    assert_eq!(limits.attempted_query_bytes, 16 * 1024);
    assert_eq!(limits.partial_results_bytes, 256 * 1024);
    assert_eq!(limits.text_bytes, 4 * 1024);
    assert_eq!(limits.list_items, 64);
    assert_eq!(
        tool_envelope::mcp::DEFAULT_MAX_RESULT_BYTES,
        4 * 1024 * 1024
    );
    assert_eq!(tool_envelope::MAX_DEPTH, 100);
    assert_eq!(
        ErrorEnvelope::NO_MESSAGE,
        "The tool failed without a message."
    );
    // One text for an empty message, whether built or read from the wire.
    assert_eq!(
        ErrorEnvelope::transient("  ").message(),
        ErrorEnvelope::NO_MESSAGE
    );
    let read: ErrorEnvelope = serde_json::from_value(json!({
        "isError": true, "errorCategory": "other", "isRetryable": false, "message": ""
    }))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&read).unwrap()["message"],
        ErrorEnvelope::NO_MESSAGE
    );
}

#[test]
fn plain_serialize_uses_the_defaults_in_every_thread() {
    let envelope = fail("q".repeat(100_000), 100_000).unwrap_err();
    let here = serde_json::to_value(&envelope).unwrap();
    let there = std::thread::spawn({
        let envelope = envelope.clone();
        move || serde_json::to_value(&envelope).unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(here, there);
    assert_eq!(here, envelope.to_wire(&EnvelopeLimits::default()));
    assert!(here["attempted_query"].to_string().len() <= 16 * 1024);
    assert!(here["partial_results"].to_string().len() <= 256 * 1024);
}

#[test]
fn other_limits_apply_where_they_are_given() {
    let envelope = fail("q".repeat(1000), 1000).unwrap_err();
    let before = serde_json::to_value(&envelope).unwrap();
    assert_eq!(before["message"], "x".repeat(500), "within the defaults");

    let limits = EnvelopeLimits::default()
        .with_attempted_query_bytes(256)
        .with_partial_results_bytes(512)
        .with_text_bytes(128)
        .with_list_items(4);
    let after = envelope.to_wire(&limits);
    let size = |value: &Value| value.to_string().len();
    assert!(size(&after["attempted_query"]) <= 256);
    assert!(size(&after["partial_results"]) <= 512);
    assert!(size(&after["message"]) <= 128 + 2);
    assert!(
        after["message"]
            .as_str()
            .unwrap()
            .ends_with("of 500 bytes dropped]")
    );
    let alternatives = after["alternatives"].as_array().unwrap();
    assert_eq!(alternatives.len(), 4);
    assert_eq!(alternatives[3], "… and 7 more alternatives");
    // The envelope itself still holds everything.
    assert_eq!(envelope.message().len(), 500);
    assert_eq!(envelope.partial_count(), 1000);
    // And plain serialization is untouched by what was applied elsewhere.
    assert_eq!(serde_json::to_value(&envelope).unwrap(), before);
}

#[test]
fn escaped_text_counts_as_sent() {
    // 100,000 control characters: 600,000 bytes of JSON for 100,000 of text.
    let envelope = control(100_000).unwrap_err();
    let sent = serde_json::to_string(&envelope).unwrap();
    let value: Value = serde_json::from_str(&sent).unwrap();
    assert!(
        serde_json::to_string(&value["message"]).unwrap().len() <= 4 * 1024 + 2,
        "the message is within 4 KiB as sent"
    );
    for alternative in value["alternatives"].as_array().unwrap() {
        assert!(serde_json::to_string(alternative).unwrap().len() <= 4 * 1024 + 2);
    }
}

#[tokio::test]
async fn a_failing_call_stays_within_max_result_bytes_text_copy_included() {
    for cap in [16 * 1024, 64 * 1024, 1024 * 1024] {
        let tools = ToolSet::new().tool::<control>().max_result_bytes(cap);
        let result = tools
            .call("control", json!({"size": 100_000}))
            .await
            .unwrap();
        let sent = serde_json::to_string(&result).unwrap();
        assert!(
            sent.len() <= cap,
            "a {} byte result under a {cap} byte cap",
            sent.len()
        );
        let envelope = result.envelope().unwrap();
        assert_eq!(envelope.tool(), Some("control"));
        assert!(envelope.attempted_query().is_some(), "the pillars stay");
    }
}

/// Gathers `items` items of 100 control characters (600 bytes of JSON
/// each), then fails: the partial result is large but under its own cap.
#[tool(read_only)]
fn gathers_control(items: usize, gathered: Partial<String>) -> Result<(), ErrorEnvelope> {
    for _ in 0..items {
        gathered.push("\u{0}".repeat(100));
    }
    Err(ErrorEnvelope::transient("upstream timed out"))
}

/// Found by the `tool_output` fuzz target: a part under its own cap (here
/// 34 KB of partial results under a 256 KiB cap) could keep a reply over the
/// set's cap, since each round shrank the caps, not the parts.
#[tokio::test]
async fn a_large_part_under_its_own_cap_still_fits_the_reply_cap() {
    let cap = 64 * 1024;
    for retrying in [false, true] {
        let mut tools = ToolSet::new()
            .tool::<gathers_control>()
            .max_result_bytes(cap);
        if retrying {
            tools = tools.retry(RetryPolicy::default().constant(std::time::Duration::ZERO));
        }
        let result = tools
            .call("gathers_control", json!({"items": 53}))
            .await
            .unwrap();
        let sent = serde_json::to_string(&result).unwrap();
        assert!(
            sent.len() <= cap,
            "a {} byte result under a {cap} byte cap",
            sent.len()
        );
        let envelope = result.envelope().unwrap();
        let partial = envelope.partial_results().unwrap().as_array().unwrap();
        assert!(
            partial.len() > 10,
            "the partial results are cut to fit, not dropped: {} items",
            partial.len()
        );
        assert!(
            partial.last().unwrap()["_truncated"]["droppedItems"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
}

#[test]
fn tiny_limits_count_as_their_floors_and_markers_fit() {
    let envelope = fail("q".repeat(1000), 1000).unwrap_err();
    let sent = envelope.to_wire(
        &EnvelopeLimits::default()
            .with_attempted_query_bytes(1)
            .with_partial_results_bytes(1)
            .with_text_bytes(1)
            .with_list_items(0),
    );
    let size = |value: &Value| value.to_string().len();
    assert!(
        size(&sent["attempted_query"]) <= 64,
        "{}",
        sent["attempted_query"]
    );
    assert!(
        size(&sent["partial_results"]) <= 64,
        "{}",
        sent["partial_results"]
    );
    assert!(size(&sent["message"]) <= 32 + 2, "{}", sent["message"]);
    assert!(!sent["message"].as_str().unwrap().is_empty());
    // One alternative of its own beside the marker, never a marker alone.
    let alternatives = sent["alternatives"].as_array().unwrap();
    assert_eq!(alternatives.len(), 2);
    assert!(
        !alternatives[0]
            .as_str()
            .unwrap()
            .contains("more alternatives")
    );
    assert!(sent["partial_results"].to_string().contains("_truncated"));
}

/// Gathers 400 items of 600 bytes, then fails with three next moves.
#[tool(read_only)]
fn gathers_a_lot(gathered: Partial<String>) -> Result<(), ErrorEnvelope> {
    for n in 0..400 {
        gathered.push(format!("{n:03}{}", "x".repeat(597)));
    }
    Err(
        ErrorEnvelope::transient("the upstream index timed out after 400 of 1,000 pages")
            .with_alternative("Narrow the query to one year")
            .with_alternative("Ask for the next page from item 400")
            .with_alternative("Try again in a minute"),
    )
}

/// A reply shrunk to fit a cap shrinks what is large — the partial results
/// — never a pillar to a marker: the alternatives and the message stay.
#[tokio::test]
async fn a_reply_shrunk_to_fit_keeps_every_alternative_and_the_message() {
    let cap = 64 * 1024;
    let tools = ToolSet::new().tool::<gathers_a_lot>().max_result_bytes(cap);
    let result = tools.call("gathers_a_lot", json!({})).await.unwrap();
    assert!(serde_json::to_string(&result).unwrap().len() <= cap);
    let envelope = result.envelope().unwrap();
    assert_eq!(
        envelope.alternatives(),
        [
            "Narrow the query to one year",
            "Ask for the next page from item 400",
            "Try again in a minute"
        ]
    );
    assert_eq!(
        envelope.message(),
        "the upstream index timed out after 400 of 1,000 pages"
    );
    assert!(
        envelope.partial_count() > 10,
        "{}",
        envelope.partial_count()
    );
}
