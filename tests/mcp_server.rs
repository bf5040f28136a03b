//! The example MCP server, run as a child process and driven by rmcp's own
//! client over stdio: the tools it lists, their schemas, and what each call
//! returns.
#![cfg(feature = "rmcp")]

mod common;

use rmcp::model::{CallToolResult, ErrorCode, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};
use tool_envelope::ErrorEnvelope;

use common::{call_tool as call, server_binary};

async fn connect() -> RunningService<RoleClient, ()> {
    let command = tokio::process::Command::new(server_binary());
    let transport = TokioChildProcess::new(command).expect("the server starts");
    let client = ().serve(transport).await.expect("the server initializes");
    client
        .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
        .await;
    client
}

/// The envelope of a failed call: `isError`, the envelope as
/// `structuredContent`, and the same JSON as text.
fn envelope(result: &CallToolResult) -> ErrorEnvelope {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let structured = result
        .structured_content
        .clone()
        .expect("structured content");
    let text = result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), structured);
    serde_json::from_value(structured).expect("an envelope")
}

fn validator(schema: &serde_json::Map<String, Value>) -> jsonschema::Validator {
    jsonschema::validator_for(&Value::Object(schema.clone())).expect("a valid schema")
}

fn envelope_schema() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../schema/error-envelope.schema.json")).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn find<'t>(tools: &'t [Tool], name: &str) -> &'t Tool {
    tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("{name} is listed"))
}

#[tokio::test]
async fn lists_every_tool_with_valid_schemas() {
    let client = connect().await;
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "lookup_orders",
            "process_refund",
            "read_payroll",
            "research",
            "stock_level"
        ]
    );
    for tool in &tools {
        assert!(
            !tool.description.as_deref().unwrap_or_default().is_empty(),
            "{} has a description",
            tool.name
        );
        let input = Value::Object((*tool.input_schema).clone());
        assert_eq!(input["type"], "object", "{}", tool.name);
        assert_eq!(
            input["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        jsonschema::meta::validate(&input).unwrap_or_else(|e| panic!("{}: {e}", tool.name));
        let output = tool
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{} has an output schema", tool.name));
        jsonschema::meta::validate(&Value::Object((**output).clone())).unwrap();
        assert!(tool.annotations.is_some(), "{}", tool.name);
    }

    let lookup = find(&tools, "lookup_orders");
    assert_eq!(lookup.input_schema["required"], json!(["customer_id"]));
    assert_eq!(
        lookup.input_schema["properties"]["customer_id"]["description"],
        "The customer, as `C-NNNN`."
    );
    let annotations = lookup.annotations.as_ref().unwrap();
    assert_eq!(annotations.read_only_hint, Some(true));
    let meta = lookup.meta.as_ref().expect("failure modes in _meta");
    assert_eq!(
        meta["tool-envelope/failureModes"][0]["reason"],
        "DB_TIMEOUT"
    );
    assert!(
        lookup
            .description
            .as_deref()
            .unwrap()
            .contains("Can fail: transient (DB_TIMEOUT, retryable)")
    );

    let research = find(&tools, "research");
    let properties = research.input_schema["properties"].as_object().unwrap();
    assert!(
        !properties.contains_key("sources"),
        "the Partial collector is not an argument"
    );

    let refund = find(&tools, "process_refund");
    assert_eq!(
        refund.annotations.as_ref().unwrap().destructive_hint,
        Some(true)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn each_tool_answers_with_a_value_or_an_envelope() {
    let client = connect().await;
    let tools = client.list_all_tools().await.unwrap();
    let check_output = |tool: &str, result: &CallToolResult| {
        let schema = find(&tools, tool).output_schema.as_ref().unwrap();
        let structured = result.structured_content.clone().unwrap();
        let errors: Vec<String> = validator(schema)
            .iter_errors(&structured)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{tool}: {structured} {errors:?}");
    };

    // A valid empty look-up is a success.
    let result = call(&client, "lookup_orders", json!({"customer_id": "C-0000"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"isError": false, "empty": true, "matches": 0}))
    );
    check_output("lookup_orders", &result);

    let result = call(
        &client,
        "lookup_orders",
        json!({"customer_id": "C-1001", "status": "shipped"}),
    )
    .await
    .unwrap();
    assert_eq!(
        result.structured_content.as_ref().unwrap()["results"][0]["id"],
        "O-77"
    );

    // A transient timeout, retried locally, then escalated with its context.
    let result = call(&client, "lookup_orders", json!({"customer_id": "C-4821"}))
        .await
        .unwrap();
    let timeout = envelope(&result);
    assert_eq!(timeout.category(), tool_envelope::ErrorCategory::Transient);
    assert!(
        !timeout.is_retryable(),
        "escalated after the server's own retries: not an invitation to retry again"
    );
    assert_eq!(
        timeout.attempted_query(),
        Some(&json!({"customer_id": "C-4821"}))
    );
    assert_eq!(timeout.tool(), Some("lookup_orders"));
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(structured["escalation"]["reason"], "retries_exhausted");
    assert_eq!(structured["escalation"]["attempts"], 3);
    assert!(envelope_schema().is_valid(&structured));
    check_output("lookup_orders", &result);

    // A flaky service is recovered locally: the caller sees the value.
    for _ in 0..3 {
        let result = call(&client, "stock_level", json!({"sku": "SKU-1"}))
            .await
            .unwrap();
        assert_eq!(result.structured_content, Some(json!({"result": 35})));
    }

    // A refund over the cap is blocked by the guard; one within it goes through.
    let result = call(
        &client,
        "process_refund",
        json!({"order": "O-77", "amount": 620}),
    )
    .await
    .unwrap();
    let blocked = envelope(&result);
    assert_eq!(blocked.category(), tool_envelope::ErrorCategory::Business);
    assert_eq!(
        blocked.alternatives()[0],
        "Escalate to a human for approval"
    );
    assert_eq!(
        result.structured_content.as_ref().unwrap()["escalation"]["reason"],
        "blocked_by_guard"
    );
    check_output("process_refund", &result);
    let result = call(
        &client,
        "process_refund",
        json!({"order": "O-78", "amount": 300}),
    )
    .await
    .unwrap();
    assert_eq!(
        result.structured_content,
        Some(json!({"result": "Refunded $300 on O-78"}))
    );

    // Permission: not retried, with the next moves.
    let result = call(&client, "read_payroll", json!({"dept": "ENG"}))
        .await
        .unwrap();
    let denied = envelope(&result);
    assert_eq!(denied.category(), tool_envelope::ErrorCategory::Permission);
    assert!(!denied.is_retryable());
    assert_eq!(
        denied.alternatives(),
        [
            "Request read grant on payroll schema",
            "Escalate to data-owner for approval"
        ]
    );
    assert_eq!(
        result.structured_content.as_ref().unwrap()["escalation"]["attempts"],
        1
    );
    check_output("read_payroll", &result);

    // Partial results: 6 of 10 sources come back with the failure.
    let result = call(&client, "research", json!({"topic": "EU AI Act timelines"}))
        .await
        .unwrap();
    let research = envelope(&result);
    assert_eq!(research.partial_count(), 6);
    assert_eq!(
        research.partial_results().unwrap()[5]["title"],
        "EU AI Act timelines: source 6"
    );
    check_output("research", &result);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_arguments_are_a_validation_envelope_and_an_unknown_tool_a_protocol_error() {
    let client = connect().await;
    let result = call(
        &client,
        "lookup_orders",
        json!({"customer_id": 4821, "colour": "red"}),
    )
    .await
    .unwrap();
    let invalid = envelope(&result);
    assert_eq!(invalid.category(), tool_envelope::ErrorCategory::Validation);
    assert_eq!(
        invalid.attempted_query(),
        Some(&json!({"customer_id": 4821, "colour": "[redacted]"})),
        "an undeclared key is named, its value never shown"
    );
    let fields: Vec<&str> = invalid
        .violations()
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(fields, ["customer_id", "colour"]);

    match call(&client, "drop_database", json!({})).await {
        Err(ServiceError::McpError(error)) => assert_eq!(error.code, ErrorCode::INVALID_PARAMS),
        other => panic!("expected -32602, got {other:?}"),
    }
    // The server keeps serving.
    let result = call(&client, "lookup_orders", json!({"customer_id": "C-0000"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    client.cancel().await.unwrap();
}
