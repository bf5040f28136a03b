//! `McpClient` over Streamable HTTP keeps its connections: the server counts
//! the TCP connections it accepts, and calls after the first reuse them —
//! sequential and 16 at once. A server that closes its idle connections
//! (shut down, then started again on the same port): a call that meets the
//! closed connection is sent again only when the one retry decision allows
//! it — a read-only tool's, under the caller's `RetryPolicy`; a
//! destructive tool's never — and the calls after it open a new
//! connection and succeed.
#![cfg(all(feature = "rmcp", feature = "client"))]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::serve::ListenerExt;
use serde_json::json;
use tool_envelope::mcp::client::McpClient;
use tool_envelope::mcp::{HttpOptions, ToolSet};
use tool_envelope::retry::RetryPolicy;
use tool_envelope::{ErrorEnvelope, tool};

/// Echo the text.
#[tool(read_only)]
fn echo(text: String) -> Result<String, ErrorEnvelope> {
    Ok(text)
}

/// Pay: repeating it pays twice.
#[tool(destructive)]
fn pay(order: String) -> Result<String, ErrorEnvelope> {
    Ok(format!("paid {order}"))
}

/// A stateless server on `address` that counts the connections it accepts
/// in `accepted`, until `stop` fires (then it closes its idle connections).
async fn serve(
    address: SocketAddr,
    accepted: Arc<AtomicUsize>,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<()> {
    let listener = tokio::net::TcpListener::bind(address).await.unwrap();
    let listener = listener.tap_io(move |_| {
        accepted.fetch_add(1, Ordering::SeqCst);
    });
    let router = HttpOptions::new()
        .stateless()
        .router(ToolSet::new().tool::<echo>().tool::<pay>());
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stop.await;
            })
            .await
            .unwrap();
    })
}

async fn free_address() -> SocketAddr {
    let probe = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    probe.local_addr().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_after_the_first_reuse_the_connection() {
    let address = free_address().await;
    let accepted = Arc::new(AtomicUsize::new(0));
    let (_stop, stop) = tokio::sync::oneshot::channel();
    let _server = serve(address, Arc::clone(&accepted), stop).await;
    let client = McpClient::connect(format!("http://{address}/mcp"))
        .await
        .unwrap();
    let warmed = accepted.load(Ordering::SeqCst);
    for n in 0..200 {
        let text = format!("call {n}");
        assert_eq!(
            client.call("echo", json!({"text": text})).await.unwrap(),
            json!({"result": text})
        );
    }
    let opened = accepted.load(Ordering::SeqCst) - warmed;
    assert!(
        opened <= 1,
        "200 sequential calls opened {opened} connections"
    );

    // 16 callers at once: at most one connection each.
    let before = accepted.load(Ordering::SeqCst);
    let client = Arc::new(client);
    let callers = (0..16).map(|caller| {
        let client = Arc::clone(&client);
        tokio::spawn(async move {
            for n in 0..25 {
                let text = format!("{caller}-{n}");
                let echoed = client.call("echo", json!({"text": text})).await.unwrap();
                assert_eq!(echoed, json!({"result": text}));
            }
        })
    });
    for caller in callers {
        caller.await.unwrap();
    }
    let opened = accepted.load(Ordering::SeqCst) - before;
    assert!(
        opened <= 16,
        "16 callers, 400 calls, opened {opened} connections"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_closed_its_idle_connections_costs_nothing() {
    let address = free_address().await;
    let accepted = Arc::new(AtomicUsize::new(0));
    let (stop_first, stop) = tokio::sync::oneshot::channel();
    let first = serve(address, Arc::clone(&accepted), stop).await;
    let client = McpClient::connect(format!("http://{address}/mcp"))
        .await
        .unwrap();
    assert_eq!(
        client.call("echo", json!({"text": "a"})).await.unwrap(),
        json!({"result": "a"})
    );
    // The server goes away, closing the idle connection the client keeps,
    // and comes back on the same port.
    stop_first.send(()).unwrap();
    first.await.unwrap();
    let (_stop, stop) = tokio::sync::oneshot::channel();
    let before = accepted.load(Ordering::SeqCst);
    let _second = serve(address, Arc::clone(&accepted), stop).await;
    // The first call may meet the connection the server closed: a read-only
    // one is sent again under the caller's policy, as any transient fault.
    let policy = RetryPolicy::default()
        .max_attempts(3)
        .constant(std::time::Duration::from_millis(1));
    let outcome = policy
        .retry(|| client.call("echo", json!({"text": "after"})))
        .await;
    assert_eq!(outcome.result.unwrap(), json!({"result": "after"}));
    assert!(outcome.stats.attempts <= 2, "{:?}", outcome.stats);
    for n in 0..10 {
        let text = format!("after {n}");
        let echoed = client.call("echo", json!({"text": text})).await;
        assert_eq!(
            echoed.unwrap(),
            json!({"result": text}),
            "call {n} after the server came back"
        );
    }
    let opened = accepted.load(Ordering::SeqCst) - before;
    assert!(
        (1..=2).contains(&opened),
        "opened {opened} connections after the restart"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_call_that_meets_a_closed_connection_is_never_sent_again() {
    for round in 0..5 {
        let address = free_address().await;
        let accepted = Arc::new(AtomicUsize::new(0));
        let (stop_first, stop) = tokio::sync::oneshot::channel();
        let first = serve(address, Arc::clone(&accepted), stop).await;
        let client = McpClient::connect(format!("http://{address}/mcp"))
            .await
            .unwrap();
        client.call("echo", json!({"text": "warm"})).await.unwrap();
        stop_first.send(()).unwrap();
        first.await.unwrap();
        let (_stop, stop) = tokio::sync::oneshot::channel();
        let _second = serve(address, Arc::clone(&accepted), stop).await;
        let policy = RetryPolicy::default()
            .max_attempts(3)
            .constant(std::time::Duration::from_millis(1));
        let outcome = policy
            .retry(|| client.call("pay", json!({"order": format!("O-{round}")})))
            .await;
        match outcome.result {
            Ok(paid) => assert_eq!(paid, json!({"result": format!("paid O-{round}")})),
            Err(escalation) => {
                assert!(
                    !escalation.envelope.is_retryable(),
                    "{:?}",
                    escalation.envelope
                );
                assert_eq!(outcome.stats.attempts, 1, "never sent again");
            }
        }
    }
}
