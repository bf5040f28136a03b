//! Installed limits apply to every envelope the process serializes. In a test
//! binary of its own: installing changes them for the whole process.

use serde_json::{Value, json};
use tool_envelope::{EnvelopeLimits, ErrorEnvelope, tool};

/// Fails, reporting everything it was given.
#[tool(read_only)]
fn fail(query: String, items: u32) -> Result<(), ErrorEnvelope> {
    let _ = query;
    Err(ErrorEnvelope::transient("x".repeat(500))
        .with_partial_results(json!((0..items).collect::<Vec<_>>()))
        .with_alternatives((0..10).map(|i| format!("Option {i}"))))
}

#[test]
fn installed_limits_apply_to_every_envelope_serialized_afterwards() {
    assert_eq!(EnvelopeLimits::current(), EnvelopeLimits::default());
    let envelope = fail("q".repeat(1000), 1000).unwrap_err();
    let before = serde_json::to_value(&envelope).unwrap();
    assert_eq!(before["message"], "x".repeat(500), "within the defaults");

    let limits = EnvelopeLimits {
        attempted_query_bytes: 256,
        partial_results_bytes: 512,
        text_bytes: 128,
        list_items: 4,
    };
    limits.install();
    assert_eq!(EnvelopeLimits::current(), limits);

    let after = serde_json::to_value(&envelope).unwrap();
    let size = |value: &Value| value.to_string().len();
    assert!(size(&after["attempted_query"]) <= 256);
    assert!(size(&after["partial_results"]) <= 512);
    assert!(after["message"].as_str().unwrap().len() <= 128);
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
    assert_eq!(envelope.message.len(), 500);
    assert_eq!(envelope.partial_count(), 1000);
}
