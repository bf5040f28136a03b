//! The two revisions as the docs state them: on 2026-07-28 the methods it
//! removed are not found; a deployment serves only the revisions it names;
//! a negotiating client waits for a slow server's answer to the probe
//! rather than take it for an old one, and says why when it falls back.
#![cfg(all(feature = "rmcp", feature = "client"))]
#![allow(deprecated)] // logging/setLevel: deprecated by rmcp, as 2026-07-28 removed it.

mod common;

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ErrorCode, Implementation, LoggingLevel, ProtocolVersion,
    SetLevelRequestParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};
use tool_envelope::mcp::client::McpClient;
use tool_envelope::mcp::{HttpOptions, ToolSet};
use tool_envelope::{ErrorEnvelope, tool};

/// Say hello.
#[tool(read_only)]
fn hello() -> Result<String, ErrorEnvelope> {
    Ok("hello".into())
}

fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("revisions", "1"),
    )
}

async fn serve(tools: ToolSet) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { HttpOptions::new().stateless().serve(listener, tools).await });
    url
}

#[tokio::test]
#[allow(deprecated)] // logging/setLevel: deprecated by rmcp, as 2026-07-28 removed it.
async fn on_2026_07_28_the_removed_methods_are_not_found() {
    // logging/setLevel, sent by a client speaking 2026-07-28.
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = ToolSet::new()
            .tool::<hello>()
            .serve(server_io)
            .await
            .unwrap();
        let _ = running.waiting().await;
    });
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = client_info()
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .unwrap();
    let refused = client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(data) = refused else {
        panic!("expected a protocol error, got {refused}");
    };
    assert_eq!(data.code, ErrorCode::METHOD_NOT_FOUND);

    // initialize, sent as 2026-07-28 over HTTP (its version header says so).
    let url = serve(ToolSet::new().tool::<hello>()).await;
    let answer: Value = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2026-07-28", "capabilities": {},
            "clientInfo": {"name": "newcomer", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["error"]["code"], -32601, "{answer}");

    // A 2025-11-25 client that asks for the latest revision in its params is
    // negotiating, as rmcp's own does: it gets a handshake.
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = ToolSet::new()
            .tool::<hello>()
            .serve(server_io)
            .await
            .unwrap();
        let _ = running.waiting().await;
    });
    let legacy = client_info().serve(client_io).await.expect("the handshake");
    assert_eq!(
        legacy.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
}

#[tokio::test]
async fn a_deployment_serves_only_the_revisions_it_names() {
    // Only the stateless revision: a 2025-11-25 handshake is refused.
    let url = serve(
        ToolSet::new()
            .tool::<hello>()
            .protocol_versions(["2026-07-28"]),
    )
    .await;
    let modern = McpClient::connect(&url).await.unwrap();
    assert_eq!(modern.protocol_version().await.unwrap(), "2026-07-28");
    let pinned = McpClient::connect(&url)
        .revision(tool_envelope::mcp::client::Revision::V2025_11_25)
        .await
        .unwrap_err();
    assert_eq!(
        pinned.reason(),
        Some(tool_envelope::reasons::UNSUPPORTED_PROTOCOL_VERSION),
        "{pinned:?}"
    );

    // Only 2025-11-25: a negotiating client falls back, and says why.
    let url = serve(
        ToolSet::new()
            .tool::<hello>()
            .protocol_versions(["2025-11-25"]),
    )
    .await;
    let legacy = McpClient::connect(&url).await.unwrap();
    let negotiation = legacy.negotiation().await.unwrap();
    assert_eq!(negotiation.revision, "2025-11-25");
    let why = negotiation.fell_back.expect("a reason");
    assert!(why.contains("server/discover"), "{why}");
    assert_eq!(
        legacy.call("hello", json!({})).await.unwrap(),
        json!({"result": "hello"})
    );
}

#[tokio::test]
async fn a_slow_starting_server_is_not_taken_for_an_old_one() {
    // The example server, started 11 s late: rmcp's own probe gives up
    // after 10 s; this client waits as long as its timeout allows.
    let binary = common::server_binary().clone();
    let client = McpClient::spawn(move || {
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(format!("sleep 11; exec '{}'", binary.display()));
        command
    })
    .timeout(Duration::from_secs(40))
    .await
    .expect("the client connects");
    let negotiation = client.negotiation().await.unwrap();
    assert_eq!(negotiation.revision, "2026-07-28");
    assert_eq!(negotiation.fell_back, None);
}
