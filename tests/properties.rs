//! Property tests: any envelope round-trips and validates; any JSON sent as
//! arguments to the example server's tools gets a success, a validation
//! envelope, or (unknown tool) a protocol error — never a panic, never a hang.

#[path = "../examples/mcp_server/tools.rs"]
#[allow(dead_code)]
mod example;

use std::sync::OnceLock;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tool_envelope::mcp::ToolSet;
use tool_envelope::{EnvelopeLimits, ErrorCategory, ErrorEnvelope, Violation};

fn envelope_schema() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value =
            serde_json::from_str(include_str!("../schema/error-envelope.schema.json")).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    })
}

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        ".{0,24}".prop_map(Value::String),
        prop_oneof![
            Just("C-0000"),
            Just("C-1001"),
            Just("C-4821"),
            Just("shipped"),
            Just("O-77")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// Keys: the tools' real parameter names, and anything else.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop_oneof![
            Just("customer_id"),
            Just("status"),
            Just("sku"),
            Just("order"),
            Just("amount"),
            Just("dept"),
            Just("topic"),
            Just("wanted"),
        ]
        .prop_map(str::to_owned),
        "[a-z_]{1,12}",
    ]
}

/// Well-typed arguments for the example tool `tool`: the tool runs on them.
fn well_typed(tool: &'static str) -> BoxedStrategy<Value> {
    let text = || {
        prop_oneof![
            Just("C-0000".to_owned()),
            Just("C-1001".to_owned()),
            Just("C-4821".to_owned()),
            ".{0,16}"
        ]
    };
    match tool {
        "lookup_orders" => (
            text(),
            prop::option::of(prop_oneof![Just("shipped".to_owned()), ".{0,8}"]),
        )
            .prop_map(|(id, status)| match status {
                Some(status) => json!({"customer_id": id, "status": status}),
                None => json!({"customer_id": id}),
            })
            .boxed(),
        "stock_level" => text().prop_map(|sku| json!({"sku": sku})).boxed(),
        "process_refund" => (text(), 0u64..2_000)
            .prop_map(|(order, amount)| json!({"order": order, "amount": amount}))
            .boxed(),
        "read_payroll" => text().prop_map(|dept| json!({"dept": dept})).boxed(),
        "research" => (text(), prop::option::of(0usize..20))
            .prop_map(|(topic, wanted)| json!({"topic": topic, "wanted": wanted}))
            .boxed(),
        other => unreachable!("no example tool {other}"),
    }
}

/// A tool and its arguments: well-typed half the time, otherwise an object of
/// real and made-up keys, or any JSON at all.
fn any_call() -> impl Strategy<Value = (&'static str, Value)> {
    prop::sample::select(vec![
        "lookup_orders",
        "stock_level",
        "process_refund",
        "read_payroll",
        "research",
    ])
    .prop_flat_map(|tool| {
        let arguments = prop_oneof![
            3 => well_typed(tool),
            2 => prop::collection::vec((key(), any_json()), 0..5)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
            1 => any_json(),
        ];
        (Just(tool), arguments)
    })
}

fn any_category() -> impl Strategy<Value = ErrorCategory> {
    prop::sample::select(ErrorCategory::ALL.to_vec())
}

/// `envelope` with each optional field that is `Some`.
fn with_optional(
    mut envelope: ErrorEnvelope,
    query: Option<Value>,
    partial: Option<Value>,
    reason: Option<String>,
    retry_after_ms: Option<u64>,
    tool: Option<String>,
) -> ErrorEnvelope {
    if let Some(query) = query {
        envelope = envelope.with_attempted_query(query);
    }
    if let Some(partial) = partial {
        envelope = envelope.with_partial_results(partial);
    }
    if let Some(reason) = reason {
        envelope = envelope.with_reason(reason);
    }
    if let Some(delay) = retry_after_ms {
        envelope = envelope.with_retry_after(Duration::from_millis(delay));
    }
    if let Some(tool) = tool {
        envelope = envelope.with_tool(tool);
    }
    envelope
}

/// Any envelope within the default size limits.
fn any_envelope() -> impl Strategy<Value = ErrorEnvelope> {
    (
        any_category(),
        any::<bool>(),
        "[^\\s].{0,60}",
        prop::option::of(prop_oneof![
            prop::collection::vec((key(), any_json()), 0..4)
                .prop_map(|f| Value::Object(f.into_iter().collect())),
            ".{0,40}".prop_map(Value::String),
        ]),
        prop::option::of(prop_oneof![
            prop::collection::vec(any_json(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), any_json()), 0..4)
                .prop_map(|f| Value::Object(f.into_iter().collect())),
        ]),
        prop::collection::vec(".{1,30}", 0..3),
        prop::option::of("[A-Z][A-Z0-9]{0,8}(_[A-Z0-9]{1,6}){0,3}"),
        prop::option::of(0u64..10_000_000),
        prop::collection::vec(("[a-z_.]{1,12}", ".{0,30}"), 0..3),
        prop::option::of("[A-Za-z0-9_.-]{1,64}"),
    )
        .prop_map(
            |(
                category,
                retryable,
                message,
                query,
                partial,
                alternatives,
                reason,
                retry_after,
                violations,
                tool,
            )| {
                let envelope = ErrorEnvelope::new(category, message)
                    .with_retryable(retryable)
                    .with_alternatives(alternatives)
                    .with_violations(violations.into_iter().map(|(f, d)| Violation::new(f, d)));
                with_optional(envelope, query, partial, reason, retry_after, tool)
            },
        )
}

proptest! {
    #[test]
    fn any_envelope_round_trips_and_validates(envelope in any_envelope()) {
        let value = serde_json::to_value(&envelope).unwrap();
        let errors: Vec<String> = envelope_schema().iter_errors(&value).map(|e| e.to_string()).collect();
        prop_assert!(errors.is_empty(), "{value}: {errors:?}");
        let back: ErrorEnvelope = serde_json::from_value(value).unwrap();
        prop_assert_eq!(back, envelope);
    }
}

/// Fails, quoting what it was called with.
#[tool_envelope::tool(local)]
fn refuses(text: String, ratio: f64, value: Value) -> Result<(), ErrorEnvelope> {
    let _ = (text, ratio, value);
    Err(ErrorEnvelope::business("Refused"))
}

proptest! {
    /// Short and long (written in place, or past 118 bytes on the heap),
    /// and a number JSON cannot carry in the middle, replaced by its
    /// marker after whatever was written before it.
    #[test]
    fn a_capture_is_the_json_of_its_arguments_in_their_order(
        text in ".{0,160}",
        ratio in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), -1e9f64..1e9],
        value in any_json(),
    ) {
        let envelope = refuses(text.clone(), ratio, value.clone()).unwrap_err();
        let wire = serde_json::to_string(&envelope).unwrap();
        let head = format!(r#""attempted_query":{{"text":{},"ratio":"#, json(&text));
        let tail = format!(r#","value":{}}}"#, json(&value));
        let start = wire.find(&head).map(|at| at + head.len());
        prop_assert!(start.is_some(), "{head} not in {wire}");
        let rest = &wire[start.unwrap()..];
        let end = rest.find(&tail);
        prop_assert!(end.is_some(), "{tail} not in {rest}");
        let written = &rest[..end.unwrap()];
        match ratio.is_finite() {
            true => prop_assert_eq!(written.to_owned(), json(&ratio)),
            false => prop_assert!(written.starts_with(r#""[not representable in JSON"#), "{written}"),
        }
        let query = envelope.attempted_query().unwrap();
        prop_assert_eq!(&query["text"], &Value::String(text));
        prop_assert_eq!(&query["value"], &value);
    }
}

/// The compact JSON text of `value`, as `serde_json` writes it.
fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

/// Any envelope at all: whatever a tool could build.
fn any_fields() -> impl Strategy<Value = ErrorEnvelope> {
    (
        any_category(),
        any::<bool>(),
        prop_oneof![Just(String::new()), ".{0,60}", "x{5000,6000}"],
        prop::option::of(any_json()),
        prop::option::of(any_json()),
        prop::collection::vec(".{0,30}", 0..70),
        prop::option::of(prop_oneof![".{0,20}", "[a-zA-Z _-]{0,20}"]),
        prop::collection::vec((".{0,12}", ".{0,30}"), 0..3),
        prop::option::of(".{0,64}"),
    )
        .prop_map(
            |(
                category,
                retryable,
                message,
                query,
                partial,
                alternatives,
                reason,
                violations,
                tool,
            )| {
                let envelope = ErrorEnvelope::new(category, message)
                    .with_retryable(retryable)
                    .with_alternatives(alternatives)
                    .with_violations(violations.into_iter().map(|(f, d)| Violation::new(f, d)));
                with_optional(envelope, query, partial, reason, None, tool)
            },
        )
}

proptest! {
    #[test]
    fn whatever_the_fields_hold_the_json_validates_and_is_stable(mut envelope in any_fields()) {
        let original = envelope.clone();
        let value = serde_json::to_value(&envelope).unwrap();
        let errors: Vec<String> = envelope_schema().iter_errors(&value).map(|e| e.to_string()).collect();
        prop_assert!(errors.is_empty(), "{value}: {errors:?}");
        // What a caller reads back goes out again unchanged.
        let back: ErrorEnvelope = serde_json::from_value(value.clone()).unwrap();
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), value.clone());
        // Measured here, not by the crate: every part within its cap as sent...
        let limits = EnvelopeLimits::default();
        let size = |value: &Value| serde_json::to_string(value).unwrap().len();
        prop_assert!(size(&value["message"]) <= limits.text_bytes + 2);
        prop_assert!(value.get("attempted_query").is_none_or(|q| size(q) <= limits.attempted_query_bytes));
        prop_assert!(value.get("partial_results").is_none_or(|p| size(p) <= limits.partial_results_bytes));
        for list in ["alternatives", "violations"] {
            prop_assert!(value.get(list).is_none_or(|l| l.as_array().unwrap().len() <= limits.list_items));
        }
        // ...and what fits is sent as it is.
        let message_fits = !original.message().trim().is_empty()
            && size(&json!(original.message())) <= limits.text_bytes + 2;
        if message_fits {
            prop_assert_eq!(&value["message"], &json!(original.message()));
        }
        if original.alternatives().len() <= limits.list_items
            && original.alternatives().iter().all(|a| size(&json!(a)) <= limits.text_bytes + 2)
        {
            let sent = value.get("alternatives").cloned().unwrap_or(json!([]));
            prop_assert_eq!(sent, json!(original.alternatives()));
        }
        prop_assert_eq!(value["errorCategory"].as_str(), Some(original.category().as_str()));
        prop_assert_eq!(value["isRetryable"].as_bool(), Some(original.is_retryable()));
        // `apply` makes the envelope what the wire says, and applying it again changes nothing.
        EnvelopeLimits::default().apply(&mut envelope);
        prop_assert_eq!(serde_json::to_value(&envelope).unwrap(), value);
        let applied = envelope.clone();
        EnvelopeLimits::default().apply(&mut envelope);
        prop_assert_eq!(envelope, applied);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

fn example_tools() -> &'static ToolSet {
    static TOOLS: OnceLock<ToolSet> = OnceLock::new();
    TOOLS.get_or_init(example::tools)
}

/// The example tools' definitions as committed: the oracle of the property
/// below, independent of the code that generates them. Regenerate with
/// `TOOL_ENVELOPE_GOLDEN=overwrite cargo test --test properties` and read
/// the diff before committing.
const GOLDEN: &str = "tests/golden/example-tools.json";

fn golden() -> &'static Value {
    static GOLDEN_TOOLS: OnceLock<Value> = OnceLock::new();
    GOLDEN_TOOLS.get_or_init(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
        serde_json::from_str(&std::fs::read_to_string(path).expect("the golden file")).unwrap()
    })
}

#[test]
fn the_example_definitions_match_the_golden_file() {
    let generated = serde_json::to_value(example_tools().list()).unwrap();
    if std::env::var("TOOL_ENVELOPE_GOLDEN").as_deref() == Ok("overwrite") {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        std::fs::write(path, text).unwrap();
        return;
    }
    assert_eq!(
        &generated,
        golden(),
        "the generated definitions differ from {GOLDEN}; if the change is intended, regenerate it"
    );
}

fn input_validator(tool: &str) -> jsonschema::Validator {
    let definition = golden()
        .as_array()
        .unwrap()
        .iter()
        .find(|definition| definition["name"] == tool)
        .expect("an example tool in the golden file");
    jsonschema::validator_for(&definition["inputSchema"]).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_arguments_to_any_tool_get_a_result_or_a_validation_envelope((name, arguments) in any_call()) {
        let input = input_validator(name);
        let as_object = match &arguments {
            Value::Null => json!({}),
            other => other.clone(),
        };
        let schema_valid = input.is_valid(&as_object);
        let result = runtime().block_on(async {
            tokio::time::timeout(Duration::from_secs(600), example_tools().call(name, arguments.clone())).await
        });
        let result = result.expect("no hang").expect("a known tool is never a protocol error");
        let structured = result.structured_content.clone().expect("structured content");
        // The text block is the JSON of the structured content, as a client
        // reads both (both parsed the same way, so that a float reads the same).
        let read = |json: &str| serde_json::from_str::<Value>(json).unwrap();
        prop_assert_eq!(read(result.text().unwrap()), read(&structured.to_string()));
        if result.is_error {
            let errors: Vec<String> = envelope_schema().iter_errors(&structured).map(|e| e.to_string()).collect();
            prop_assert!(errors.is_empty(), "{structured}: {errors:?}");
        }
        if !schema_valid {
            prop_assert!(result.is_error, "{name} accepted {arguments}");
            prop_assert_eq!(&structured["errorCategory"], "validation");
            prop_assert!(!structured["violations"].as_array().unwrap().is_empty());
        }
    }

    #[test]
    fn an_unknown_tool_is_always_a_protocol_error(name in "[a-z_.-]{1,20}", arguments in any_json()) {
        prop_assume!(example_tools().get(&name).is_none());
        let error = runtime().block_on(example_tools().call(&name, arguments)).unwrap_err();
        prop_assert_eq!(error.code, -32602);
    }
}
