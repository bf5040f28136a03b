//! The wire format: the fixtures of the design, the committed schema, and the keys.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tool_envelope::{ErrorCategory, ErrorEnvelope, Found, ToolError, Violation, keys};

fn fixtures(dir: &str) -> Vec<(PathBuf, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let value = serde_json::from_str(&text).unwrap();
            (path, value)
        })
        .collect()
}

fn committed_schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/error-envelope.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&committed_schema()).expect("the committed schema compiles")
}

#[test]
fn committed_schema_is_what_the_code_generates() {
    let generated = ErrorEnvelope::json_schema();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/error-envelope.schema.json");
    if std::env::var_os("TOOL_ENVELOPE_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        std::fs::write(&path, text).unwrap();
    }
    assert_eq!(
        committed_schema(),
        generated,
        "schema/error-envelope.schema.json is stale: regenerate it with \
         `TOOL_ENVELOPE_BLESS=1 cargo test --test envelope`"
    );
}

#[test]
fn committed_schema_is_a_valid_2020_12_schema() {
    let schema = committed_schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    jsonschema::meta::validate(&schema).expect("valid against the 2020-12 meta-schema");
}

/// The one place the spellings are written out here: the wire format's, as
/// the design fixes them. Every other test reads `keys`.
#[test]
fn the_key_table_spells_the_wire_format() {
    assert_eq!(
        keys::ALL,
        [
            "isError",
            "errorCategory",
            "isRetryable",
            "message",
            "attempted_query",
            "partial_results",
            "alternatives",
            "reason",
            "retryAfterMs",
            "violations",
            "tool",
            "escalation",
        ]
    );
    assert_eq!(
        keys::REQUIRED,
        ["isError", "errorCategory", "isRetryable", "message"]
    );
}

#[test]
fn schema_requires_only_what_is_always_present() {
    let schema = committed_schema();
    assert_eq!(schema["required"], json!(keys::REQUIRED));
    for key in keys::ALL {
        assert!(schema["properties"][key].is_object(), "{key} is described");
    }
    let described: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(described.len(), keys::ALL.len(), "{described:?}");
}

#[test]
fn every_fixture_envelope_deserializes_validates_and_round_trips() {
    let validator = validator();
    for (path, value) in fixtures("envelopes") {
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());

        let envelope: ErrorEnvelope = serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Serializing gives back the same JSON, key for key.
        let again = serde_json::to_value(&envelope).unwrap();
        assert_eq!(again, value, "{}", path.display());
        let back: ErrorEnvelope = serde_json::from_value(again).unwrap();
        assert_eq!(back, envelope, "{}", path.display());
    }
}

#[test]
fn the_invalid_fixtures_are_rejected_by_the_schema_and_by_deserialization() {
    let validator = validator();
    for (path, value) in fixtures("invalid") {
        assert!(
            !validator.is_valid(&value),
            "{} passed the schema",
            path.display()
        );
        assert!(
            serde_json::from_value::<ErrorEnvelope>(value).is_err(),
            "{} deserialized",
            path.display()
        );
    }
}

#[test]
fn an_empty_lookup_is_a_success_not_an_error() {
    for (path, value) in fixtures("success") {
        assert!(
            !validator().is_valid(&value),
            "{} is not an envelope",
            path.display()
        );
        assert!(serde_json::from_value::<ErrorEnvelope>(value.clone()).is_err());
        let found: Found<Value> = serde_json::from_value(value.clone()).unwrap();
        assert!(found.is_empty());
        assert_eq!(serde_json::to_value(&found).unwrap(), value);
    }
}

#[test]
fn keys_are_spelled_as_in_the_fixtures() {
    let envelope = ErrorEnvelope::transient("Orders service returned 503")
        .with_attempted_query(json!({"endpoint": "GET /orders"}))
        .with_partial_results(json!([]))
        .with_alternatives(["Retry against the read replica"])
        .with_reason("ORDERS_UNAVAILABLE")
        .with_retry_after(Duration::from_millis(1500))
        .with_violation(Violation::new("customer_id", "expected C-NNNN"))
        .with_tool("lookup_orders");
    let value = serde_json::to_value(&envelope).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // Every key but `escalation`, which only an escalated failure carries.
    let mut expected: Vec<&str> = keys::ALL
        .into_iter()
        .filter(|key| *key != keys::ESCALATION)
        .collect();
    expected.sort_unstable();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(keys, expected);
    assert_eq!(value["retryAfterMs"], 1500);
    assert!(validator().is_valid(&value));
}

#[test]
fn optional_pillars_are_omitted_when_there_is_nothing_to_say() {
    let value = serde_json::to_value(ErrorEnvelope::other("boom")).unwrap();
    assert_eq!(
        value,
        json!({"isError": true, "errorCategory": "other", "isRetryable": false, "message": "boom"})
    );
    // An empty collection of partials is still said: "I gathered, and got nothing".
    let value =
        serde_json::to_value(ErrorEnvelope::other("boom").with_partial_results(json!([]))).unwrap();
    assert_eq!(value["partial_results"], json!([]));
}

#[test]
fn retryable_defaults_from_the_category_and_can_be_overridden() {
    for category in ErrorCategory::ALL {
        let envelope = ErrorEnvelope::new(category, "x");
        assert_eq!(
            envelope.is_retryable(),
            category == ErrorCategory::Transient,
            "{category}"
        );
    }
    assert!(
        ErrorEnvelope::business("held for review")
            .with_retryable(true)
            .is_retryable()
    );
    assert!(
        !ErrorEnvelope::transient("quota gone for the month")
            .with_retryable(false)
            .is_retryable()
    );
}

#[test]
fn unknown_keys_are_ignored_when_reading() {
    let value = json!({
        "isError": true, "errorCategory": "transient", "isRetryable": true,
        "message": "Upstream timeout after 5s", "traceId": "abc", "escalation": {"reason": "x"}
    });
    let envelope: ErrorEnvelope = serde_json::from_value(value).unwrap();
    assert_eq!(envelope.message(), "Upstream timeout after 5s");
}

#[test]
fn an_envelope_must_say_it_is_an_error() {
    let value = json!({"isError": false, "errorCategory": "transient", "isRetryable": true, "message": "x"});
    let error = serde_json::from_value::<ErrorEnvelope>(value).unwrap_err();
    assert!(error.to_string().contains("success payload"), "{error}");
}

#[test]
fn an_empty_message_never_goes_out_empty() {
    let envelope = ErrorEnvelope::permission("  ");
    assert!(!envelope.message().trim().is_empty());
    assert!(validator().is_valid(&serde_json::to_value(&envelope).unwrap()));
}

#[test]
fn envelopes_made_from_errors_validate() {
    let io = std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "Connection to orders DB timed out after 5s",
    );
    let value = serde_json::to_value(io.into_envelope()).unwrap();
    assert!(validator().is_valid(&value), "{value}");
    assert_eq!(value["reason"], "TIMED_OUT");
}

/// The derive checks a `reason`'s spelling at compile time, with a check of
/// its own (a proc-macro crate cannot call the runtime). Its table of
/// spellings is read here and held to what the runtime does: a code is what
/// `with_reason` keeps as it is; anything else it rewrites or drops.
#[test]
fn the_derive_and_the_runtime_agree_on_what_a_reason_code_is() {
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("macros/src/tool_error/attr.rs"),
    )
    .unwrap();
    let table = &source[source.find("const SPELLINGS").expect("the derive's table")..];
    let table = &table[..table.find("];").unwrap()];
    let mut checked = 0;
    for line in table
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("(\""))
    {
        let (spelling, verdict) = line
            .trim_start_matches("(\"")
            .trim_end_matches("),")
            .split_once("\", ")
            .unwrap();
        let code = verdict == "true";
        let kept = ErrorEnvelope::other("x")
            .with_reason(spelling.to_owned())
            .reason()
            == Some(spelling);
        assert_eq!(kept, code, "{spelling:?}");
        checked += 1;
    }
    assert!(checked >= 10, "the table was read: {checked} spellings");
}

#[test]
fn not_applied_and_its_reason_never_disagree() {
    use tool_envelope::reasons;
    // Set by the reason, taken back by the flag: the reason goes with it.
    let envelope = ErrorEnvelope::transient("refused").with_reason(reasons::NOT_APPLIED);
    assert!(envelope.not_applied());
    let taken_back = envelope.with_not_applied(false);
    assert!(!taken_back.not_applied());
    assert_eq!(taken_back.reason(), None);
    // Another reason stays.
    let other = ErrorEnvelope::transient("refused")
        .with_reason("DB_DOWN")
        .with_not_applied(false);
    assert_eq!(other.reason(), Some("DB_DOWN"));
}

#[test]
fn a_reason_with_nothing_to_make_a_code_of_is_ignored_everywhere() {
    use tool_envelope::guard::Blocked;
    use tool_envelope::mcp::FailureMode;
    let envelope = ErrorEnvelope::transient("x")
        .with_reason("DB_DOWN")
        .with_reason("!!! 42");
    assert_eq!(envelope.reason(), Some("DB_DOWN"));
    let blocked = Blocked::new("over the cap")
        .with_reason("OVER_CAP")
        .with_reason("!!!");
    assert_eq!(blocked.into_envelope().reason(), Some("OVER_CAP"));
    let mode = FailureMode::new(ErrorCategory::Business)
        .with_reason("OVER_CAP")
        .with_reason("");
    assert_eq!(mode.reason.as_deref(), Some("OVER_CAP"));
}

#[test]
fn an_optional_key_that_is_not_what_the_format_says_is_read_as_absent() {
    let envelope: ErrorEnvelope = serde_json::from_value(json!({
        "isError": true, "errorCategory": "transient", "isRetryable": true,
        "message": "busy", "retryAfterMs": 1500.0, "alternatives": "x",
        "violations": [1, 2], "tool": 7, "reason": ["R"]
    }))
    .unwrap();
    assert_eq!(
        envelope.retry_after(),
        Some(std::time::Duration::from_millis(1500))
    );
    assert!(envelope.alternatives().is_empty());
    assert!(envelope.violations().is_empty());
    assert_eq!(envelope.tool(), None);
    assert_eq!(envelope.reason(), None);
    // The required keys stay required, and a key given twice is refused.
    assert!(
        serde_json::from_value::<ErrorEnvelope>(json!({
            "isError": true, "errorCategory": "transient", "isRetryable": "yes", "message": "m"
        }))
        .is_err()
    );
    assert!(
        serde_json::from_str::<ErrorEnvelope>(
            r#"{"isError": true, "errorCategory": "other", "isRetryable": false, "message": "a", "message": "b"}"#
        )
        .is_err()
    );
}

/// "Not applied" is said on the wire by the reason alone: an envelope
/// marked so, written and read back, is still marked — unless its own
/// reason says something else, which it keeps.
#[test]
fn not_applied_survives_the_wire() {
    let marked =
        ErrorEnvelope::transient("throttled before anything was charged").with_not_applied(true);
    let wire = serde_json::to_value(&marked).unwrap();
    assert_eq!(wire["reason"], "NOT_APPLIED", "{wire}");
    assert!(validator().is_valid(&wire), "{wire}");
    let read: ErrorEnvelope = serde_json::from_value(wire).unwrap();
    assert!(read.not_applied());
    let reasoned = ErrorEnvelope::transient("busy")
        .with_reason("RATE_LIMITED")
        .with_not_applied(true);
    assert_eq!(reasoned.reason(), Some("RATE_LIMITED"));
    // Taken back, the reason it implied goes with it.
    assert_eq!(marked.with_not_applied(false).reason(), None);
}

/// A duration on the wire is one every JSON reader holds exactly: at most
/// 2^53 − 1 milliseconds, whatever the envelope was given.
#[test]
fn durations_on_the_wire_stay_exact_for_every_reader() {
    let envelope = ErrorEnvelope::transient("slow").with_retry_after(Duration::MAX);
    let wire = serde_json::to_value(&envelope).unwrap();
    assert_eq!(wire["retryAfterMs"], (1u64 << 53) - 1, "{wire}");
    assert!(validator().is_valid(&wire), "{wire}");
}

/// One odd entry of a list a server sent does not lose the others.
#[test]
fn an_odd_entry_of_a_list_loses_only_itself() {
    let read: ErrorEnvelope = serde_json::from_value(json!({
        "isError": true, "errorCategory": "transient", "isRetryable": true,
        "message": "busy",
        "alternatives": ["Retry later", null, 7, "Use the mirror"],
        "violations": [{"field": "a", "description": "bad"}, "odd"]
    }))
    .unwrap();
    assert_eq!(read.alternatives(), ["Retry later", "Use the mirror"]);
    assert_eq!(read.violations().len(), 1);
    assert_eq!(read.violations()[0].field, "a");
}

/// A ticket without an id names no approval: it is neither sent nor read.
#[test]
fn a_ticket_without_an_id_is_neither_sent_nor_read() {
    use tool_envelope::{Escalation, EscalationReason, Ticket};
    let escalation = Escalation::new(
        EscalationReason::AwaitingApproval,
        ErrorEnvelope::business("waits for an approver"),
        0,
        Duration::ZERO,
    )
    .with_ticket(Ticket::new(
        "",
        "pending",
        "refunds:approve",
        0,
        "call again",
    ));
    let wire = serde_json::to_value(&escalation).unwrap();
    assert!(wire["escalation"].get("ticket").is_none(), "{wire}");
    assert!(validator().is_valid(&wire), "{wire}");

    let mut sent = wire.clone();
    sent["escalation"]["ticket"] = json!({"id": "", "status": "pending",
        "approvers": "refunds:approve", "expiresAtMs": 0, "read": "call again"});
    let read: ErrorEnvelope = serde_json::from_value(sent).unwrap();
    assert!(read.escalation().unwrap().ticket.is_none());
}

/// A ticket read from a server's envelope keeps to a bound: a text over
/// 1 KiB is not kept (cut before it is masked, it could keep a secret's
/// beginning), and a ticket whose id is too long to be an approval's names
/// none — a server cannot make a failure passed on larger than its limits
/// with a ticket of megabytes.
#[test]
fn a_tickets_texts_are_bounded_as_they_are_read_and_sent() {
    let huge = "p".repeat(10 * 1024 * 1024);
    let read = |id: &str| {
        let sent = json!({"isError": true, "errorCategory": "business", "isRetryable": false,
            "message": "Refund waits for an approver",
            "escalation": {"reason": "awaiting_approval", "attempts": 0, "elapsedMs": 0,
                "ticket": {"id": id, "status": huge, "approvers": huge,
                    "expiresAtMs": 1_767_225_600_000_u64, "read": huge}}});
        serde_json::from_value::<ErrorEnvelope>(sent).unwrap()
    };
    let envelope = read("q3T0");
    let ticket = envelope.escalation().unwrap().ticket.as_ref().unwrap();
    assert_eq!(ticket.id, "q3T0");
    // Not cut, as it is read (before it is masked): not kept at all.
    for text in [&ticket.status, &ticket.approvers, &ticket.read] {
        assert_eq!(text, "[10485760 bytes not kept]");
    }
    assert!(serde_json::to_string(&envelope).unwrap().len() < 8 * 1024);
    let envelope = read(&"i".repeat(100_000));
    assert!(envelope.escalation().unwrap().ticket.is_none());
}
