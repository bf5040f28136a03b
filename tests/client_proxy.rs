//! A server on this machine is reached directly, whatever proxy the
//! environment names: a proxy would read the client's credentials, and
//! reach its own `localhost`. Alone in its binary, as it sets the process's
//! proxy variables.
#![cfg(all(feature = "rmcp", feature = "client"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tool_envelope::mcp::client::McpClient;
use tool_envelope::mcp::{HttpOptions, ToolSet};
use tool_envelope::{ErrorEnvelope, tool};

/// Echo the text.
#[tool(read_only)]
fn echo(text: String) -> Result<String, ErrorEnvelope> {
    Ok(text)
}

#[tokio::test]
async fn a_server_on_this_machine_is_reached_past_the_environments_proxy() {
    // The proxy counts the connections it is offered, and serves none.
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let offered = Arc::new(AtomicUsize::new(0));
    tokio::spawn({
        let offered = Arc::clone(&offered);
        async move {
            while let Ok((connection, _)) = proxy.accept().await {
                offered.fetch_add(1, Ordering::SeqCst);
                drop(connection);
            }
        }
    });
    // SAFETY: this binary's only test, on one thread; nothing reads the
    // environment while it is written.
    unsafe {
        for name in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
            std::env::set_var(name, &proxy_url);
        }
        for name in ["NO_PROXY", "no_proxy"] {
            std::env::remove_var(name);
        }
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        HttpOptions::new()
            .stateless()
            .serve(listener, ToolSet::new().tool::<echo>())
            .await
    });
    let client = McpClient::connect(format!("http://localhost:{port}/mcp"))
        .bearer("t0ken-for-this-machine")
        .await
        .unwrap();
    let echoed = client.call("echo", json!({"text": "here"})).await.unwrap();
    assert_eq!(echoed, json!({"result": "here"}));
    assert_eq!(
        offered.load(Ordering::SeqCst),
        0,
        "the proxy was offered a connection"
    );

    // Credentials in clear to a private network the user trusts
    // (`insecure_credentials`) go there directly too: a plain-HTTP request
    // through the environment's proxy is read whole by it. (192.0.2.10 is
    // no one's: the call fails, having offered the proxy nothing.)
    let in_clear = McpClient::connect("http://192.0.2.10/mcp")
        .bearer("t0ken-in-clear")
        .insecure_credentials()
        .timeout(std::time::Duration::from_secs(2))
        .await;
    assert!(in_clear.is_err());
    assert_eq!(
        offered.load(Ordering::SeqCst),
        0,
        "the proxy was offered credentials in clear"
    );
}
