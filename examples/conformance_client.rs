//! A client the MCP conformance suite drives (`conformance client
//! --command …`): this crate's [`McpClient`], as an application would use
//! it. The suite starts a server for a scenario and runs this program with
//! the server's URL as its last argument, the scenario in
//! `MCP_CONFORMANCE_SCENARIO`, the revision in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` and, for some scenarios, the calls to
//! make in `MCP_CONFORMANCE_CONTEXT` (`{"toolCalls": [{"name", "arguments"}]}`).
//!
//! It lists the server's tools and calls them — the calls the context names,
//! or each listed tool — answering the server's questions through its
//! handlers: forms accepted with the defaults they offer, a fixed answer
//! from "the model", no roots. `scripts/test-conformance.sh` runs the
//! suite's client scenarios of 2026-07-28 against it.
//!
//! ```sh
//! cargo build --example conformance_client --features client
//! MCP_CONFORMANCE_SCENARIO=tools_call target/debug/examples/conformance_client http://localhost:3000/mcp
//! ```

#![allow(deprecated)] // Sampling and roots: deprecated by SEP-2577, defined by both revisions.

use std::process::ExitCode;

use rmcp::model::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction, Role,
    SamplingMessage,
};
use serde_json::{Map, Value, json};
use tool_envelope::mcp::client::{McpClient, Revision};

/// A form accepted with what it offers: each field's default, or a value of
/// its type.
fn accept(request: &ElicitRequestParams) -> ElicitResult {
    let request = serde_json::to_value(request).unwrap_or_default();
    let properties = request["requestedSchema"]["properties"].as_object();
    let mut content = Map::new();
    for (name, field) in properties.into_iter().flatten() {
        let value = match (field.get("default"), field["type"].as_str()) {
            (Some(default), _) => default.clone(),
            (None, Some("boolean")) => json!(true),
            (None, Some("integer" | "number")) => json!(1),
            (None, _) => json!("conformance"),
        };
        content.insert(name.clone(), value);
    }
    ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
}

/// The arguments to call a listed tool with, when the context names none.
fn arguments_for(tool: &str) -> Value {
    match tool {
        "add_numbers" => json!({"a": 2, "b": 3}),
        _ => json!({}),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client SERVER_URL (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let revision = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
        Ok("2026-07-28") => Revision::V2026_07_28,
        Ok("2025-11-25") => Revision::V2025_11_25,
        _ => Revision::Negotiate,
    };
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|context| serde_json::from_str(&context).ok())
        .unwrap_or_default();
    eprintln!("scenario {scenario}, {revision:?}, at {url}");

    let client = McpClient::connect(&url)
        .revision(revision)
        .on_elicitation(|request| {
            let answer = accept(&request);
            async move { answer }
        })
        .on_sampling(|_| async {
            Ok(CreateMessageResult::new(
                SamplingMessage::new(Role::Assistant, "conformance"),
                "conformance-model".to_owned(),
            ))
        })
        .on_roots(|| async { Vec::new() })
        .await;
    let client = match client {
        Ok(client) => client,
        Err(envelope) => {
            eprintln!("could not connect: {envelope:?}");
            return ExitCode::FAILURE;
        }
    };

    let calls: Vec<(String, Value)> = match context["toolCalls"].as_array() {
        Some(calls) => calls
            .iter()
            .map(|call| {
                let name = call["name"].as_str().unwrap_or_default().to_owned();
                (name, call["arguments"].clone())
            })
            .collect(),
        None => match client.tools().await {
            Ok(tools) => tools
                .into_iter()
                .map(|tool| {
                    let arguments = arguments_for(&tool.name);
                    (tool.name, arguments)
                })
                .collect(),
            Err(envelope) => {
                eprintln!("could not list the tools: {envelope:?}");
                return ExitCode::FAILURE;
            }
        },
    };
    for (name, arguments) in calls {
        match client.call(&name, arguments).await {
            Ok(value) => println!("{name}: {value}"),
            // A tool's failure is an answer too: the scenario judges it.
            Err(envelope) => println!("{name}: failed: {}", envelope.message()),
        }
    }
    ExitCode::SUCCESS
}
