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
//! In the `auth/*` scenarios it logs in with [`OAuth`]: a person's login
//! (authorization code with PKCE) whose browser is played by a GET of the
//! authorization URL — the suite's authorization server redirects at once,
//! and the `Location` it answers with is the redirect the person would
//! bring back — or, where the context gives a client secret for the client
//! credentials grant, a machine's. It offers a client ID metadata document
//! (the suite's), and uses the pre-registered client the context names.
//!
//! ```sh
//! cargo build --example conformance_client --features oauth
//! MCP_CONFORMANCE_SCENARIO=tools_call target/debug/examples/conformance_client http://localhost:3000/mcp
//! ```

#![allow(deprecated)] // Sampling and roots: deprecated by SEP-2577, defined by both revisions.

use std::process::ExitCode;

use rmcp::model::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction, Role,
    SamplingMessage,
};
use serde_json::{Map, Value, json};
use tool_envelope::ErrorEnvelope;
use tool_envelope::mcp::client::{McpClient, OAuth, Revision};

/// Where the suite's authorization server sends the person back to.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The client ID metadata document the suite's authorization server knows.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The person at the browser: opens the authorization URL and comes back
/// with where the authorization server redirected them.
async fn browse(url: String) -> Result<String, ErrorEnvelope> {
    let refused =
        |why: String| ErrorEnvelope::permission(format!("the login did not come back: {why}"));
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| refused(error.to_string()))?;
    let answer = browser
        .get(&url)
        .send()
        .await
        .map_err(|error| refused(error.to_string()))?;
    let location = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|location| location.to_str().ok())
        .ok_or_else(|| refused(format!("HTTP {} without a redirect", answer.status())))?;
    Ok(location.to_owned())
}

/// How the client logs in for an `auth/*` scenario, from its context.
fn login(scenario: &str, context: &Value) -> OAuth {
    let text = |key: &str| context[key].as_str().map(str::to_owned);
    if scenario.starts_with("auth/client-credentials")
        && let (Some(id), Some(secret)) = (text("client_id"), text("client_secret"))
    {
        return OAuth::client_credentials(id, secret);
    }
    let mut oauth = OAuth::authorization_code(REDIRECT_URI, browse)
        .client_name("tool-envelope conformance client")
        .client_metadata_url(CLIENT_METADATA_URL);
    if let Some(id) = text("client_id") {
        oauth = oauth.preregistered(id, text("client_secret"));
    }
    oauth
}

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

    let mut connect = McpClient::connect(&url);
    if scenario.starts_with("auth/") {
        // Within the suite's 30 s for a client, whatever the logins take.
        connect = connect
            .oauth(login(&scenario, &context))
            .timeout(std::time::Duration::from_secs(20));
    }
    let client = connect
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
