//! `McpClient` over Streamable HTTP keeps its connections: the server counts
//! the TCP connections it accepts, and calls after the first reuse them —
//! sequential and 16 at once. A server that closes its idle connections
//! (shut down, then started again on the same port): a call that meets the
//! closed connection is sent again under the caller's `RetryPolicy`, and
//! the calls after it open a new connection and succeed. A request sent on
//! a kept connection that then breaks (a proxy drops it) is sent again only
//! when the one retry decision allows it: a read-only tool's, never a
//! destructive one's. A connection that never opens (a TLS handshake never
//! answered) fails the call as not sent, before the call's own timeout.
#![cfg(all(feature = "rmcp", feature = "client"))]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::serve::ListenerExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tool_envelope::mcp::client::McpClient;
use tool_envelope::mcp::{HttpOptions, ToolSet};
use tool_envelope::retry::RetryPolicy;
use tool_envelope::{ErrorEnvelope, tool};

/// Echo the text.
#[tool(read_only)]
fn echo(text: String) -> Result<String, ErrorEnvelope> {
    Ok(text)
}

/// The orders paid, in order.
static PAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn paid(order: &str) -> usize {
    PAID.lock()
        .unwrap()
        .iter()
        .filter(|paid| *paid == order)
        .count()
}

/// Pay: repeating it pays twice.
#[tool(destructive)]
fn pay(order: String) -> Result<String, ErrorEnvelope> {
    PAID.lock().unwrap().push(order.clone());
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

/// A TCP proxy in front of `upstream` that forwards both ways until `cut`
/// is set: then the next bytes a client sends, on whatever connection, are
/// dropped and that connection closed — a request sent and never answered.
/// `cut` clears once used.
async fn proxy(upstream: SocketAddr, cut: Arc<AtomicBool>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (client, _) = listener.accept().await.unwrap();
            let cut = Arc::clone(&cut);
            tokio::spawn(async move {
                let server = tokio::net::TcpStream::connect(upstream).await.unwrap();
                let (mut from_client, mut to_client) = client.into_split();
                let (mut from_server, mut to_server) = server.into_split();
                let down = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
                });
                let mut buffer = vec![0; 64 * 1024];
                loop {
                    let read = match from_client.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(read) => read,
                    };
                    if cut.swap(false, Ordering::SeqCst) {
                        // Both halves dropped: the client reads the end.
                        down.abort();
                        return;
                    }
                    if to_server.write_all(&buffer[..read]).await.is_err() {
                        break;
                    }
                }
                let _ = to_server.shutdown().await;
            });
        }
    });
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_sent_on_a_connection_that_then_breaks_is_sent_again_only_when_safe() {
    let upstream = free_address().await;
    let (_stop, stop) = tokio::sync::oneshot::channel();
    let _server = serve(upstream, Arc::default(), stop).await;
    let cut = Arc::new(AtomicBool::new(false));
    let address = proxy(upstream, Arc::clone(&cut)).await;
    let client = McpClient::connect(format!("http://{address}/mcp"))
        .await
        .unwrap();
    client.call("echo", json!({"text": "warm"})).await.unwrap();
    let policy = RetryPolicy::default()
        .max_attempts(3)
        .constant(std::time::Duration::from_millis(1));

    // A refund whose request was sent on the kept connection, which then
    // broke before any answer: it may have been applied, so it is never
    // sent again, and its envelope says so.
    cut.store(true, Ordering::SeqCst);
    let outcome = policy
        .retry(|| client.call("pay", json!({"order": "O-CUT"})))
        .await;
    let escalation = outcome.result.expect_err("the connection broke");
    assert!(
        !escalation.envelope.is_retryable(),
        "{:?}",
        escalation.envelope
    );
    assert_eq!(outcome.stats.attempts, 1, "never sent again");
    assert_eq!(paid("O-CUT"), 0, "the request never reached the server");

    // A read-only call, the same way: sent again, on a new connection.
    cut.store(true, Ordering::SeqCst);
    let outcome = policy
        .retry(|| client.call("echo", json!({"text": "again"})))
        .await;
    assert_eq!(outcome.result.unwrap(), json!({"result": "again"}));
    assert_eq!(outcome.stats.attempts, 2, "sent again once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_opens_fails_as_not_sent() {
    // A server that takes the TCP connection and never answers the TLS
    // handshake: the connection never opens, nothing is written on it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (held, mut accepted) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let _ = held.send(socket);
        }
    });
    let failed = McpClient::connect(format!("https://{address}/mcp"))
        .timeout(std::time::Duration::from_secs(7))
        .await
        .expect_err("the handshake is never answered");
    assert!(
        accepted.recv().await.is_some(),
        "the client reached the port"
    );
    // Not the call's own timeout (`TIMEOUT`, which cannot tell a request
    // never written from one unanswered): the connection's, before it.
    assert_eq!(failed.reason(), Some("NOT_APPLIED"), "{failed:?}");
    assert!(failed.is_retryable(), "{failed:?}");
}
