//! No delayed-ACK stall on a kept connection. When one end holds back a
//! small write until the other acknowledges the previous one (Nagle) while
//! the other end delays its acknowledgement (up to 40 ms on Linux), every
//! such exchange waits ~40 ms: a connection kept for many calls would make
//! most calls take 40 ms instead of well under one. It shows most on a reply
//! streamed as server-sent events (the headers, each event and the end are
//! separate writes), so both kinds of reply are tried: JSON (stateless) and
//! event streams (sessions, with a log message sent before the result).
//!
//! Both ends set `TCP_NODELAY`: `McpClient`'s connections and the ones
//! `HttpOptions::serve` accepts. A stall is ≥ 40 ms on most calls, so the
//! test looks at the median of 60 sequential calls (a loaded machine's
//! occasional slow call does not move it), against 20 ms; the tests take
//! turns, and a median over 20 ms is measured again, up to three times: a
//! stall is in every one, a busy moment is not.
#![cfg(all(feature = "rmcp", feature = "client"))]

use std::time::{Duration, Instant};

use serde_json::json;
use tool_envelope::mcp::client::McpClient;
use tool_envelope::mcp::{HttpOptions, ToolContext, ToolSet};
use tool_envelope::{ErrorEnvelope, tool};

/// Says what it does, then echoes the text.
#[tool(read_only)]
async fn chatty(context: ToolContext, text: String) -> Result<String, ErrorEnvelope> {
    context.info(format!("echoing {} bytes", text.len())).await;
    Ok(text)
}

/// A stall makes most calls take ≥ 40 ms; without one they take well under 1.
const STALL_FREE_MEDIAN: Duration = Duration::from_millis(20);

/// One test measures at a time: the two would otherwise share 2 cores.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Fails unless the median of 60 sequential calls on `client` is under
/// [`STALL_FREE_MEDIAN`] in one of three tries.
async fn assert_stall_free(client: &McpClient, what: &str) {
    let mut medians = Vec::new();
    for _ in 0..3 {
        let median = median_call(client, 60).await;
        if median < STALL_FREE_MEDIAN {
            return;
        }
        medians.push(median);
    }
    panic!("{what}: the median call took {medians:?} in three tries: a delayed-ACK stall");
}

/// The median time of `calls` sequential calls on one client.
async fn median_call(client: &McpClient, calls: usize) -> Duration {
    let mut took = Vec::with_capacity(calls);
    for n in 0..calls {
        let text = format!("call {n}");
        let started = Instant::now();
        let echoed = client.call("chatty", json!({"text": text})).await.unwrap();
        took.push(started.elapsed());
        assert_eq!(echoed, json!({"result": text}));
    }
    took.sort();
    took[calls / 2]
}

async fn served(options: HttpOptions) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(options.serve(listener, ToolSet::new().tool::<chatty>()));
    format!("http://{address}/mcp")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_replies_on_a_kept_connection_never_wait_for_an_acknowledgement() {
    let _turn = TURN.lock().await;
    let url = served(HttpOptions::new().stateless()).await;
    let client = McpClient::connect(url).await.unwrap();
    assert_stall_free(&client, "JSON replies").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_stream_replies_on_a_kept_connection_never_wait_for_an_acknowledgement() {
    let _turn = TURN.lock().await;
    let url = served(HttpOptions::new()).await;
    for revision in [
        tool_envelope::mcp::client::Revision::V2025_11_25,
        tool_envelope::mcp::client::Revision::V2026_07_28,
    ] {
        let client = McpClient::connect(url.clone())
            .revision(revision)
            .await
            .unwrap();
        assert_stall_free(&client, &format!("{revision:?}")).await;
    }
}
