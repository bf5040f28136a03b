//! Event streams of calls made at once are resumed each on its own count.
//!
//! A proxy in front of a 2025-11-25 server ends every event stream open
//! through it at the same moment (a restart, an idle cut), while the tools
//! still run: each call's stream is resumed (`GET` with `Last-Event-ID`),
//! and its answer comes on the resumed stream once the tool is done. The
//! client bounds a stream's quiet resumptions (10 in a row with no
//! message) so that a server that keeps ending one cannot make it spin:
//! the bound is a stream's, not the client's — twelve calls whose streams
//! were cut at once are each resumed, and each answered. A stream ended
//! again and again, under a new id each time, is still bounded; one that
//! brings messages without ids is resumed while it does; and the server's
//! standalone stream, ended again and again, is opened again ever slower.
#![cfg(all(feature = "rmcp", feature = "client"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tool_envelope::mcp::client::{McpClient, Revision};

/// The calls made at once.
const CALLS: usize = 12;

/// What a 2025-11-25 server answers `body` with: `initialize` and
/// `tools/list` (one read-only tool, `report`) here, a notification
/// accepted, and a `tools/call` as `call` says, given the request's id.
fn answered(body: &Value, call: impl FnOnce(&Value) -> Response) -> Response {
    let Some(id) = body.get("id") else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match body["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "resumed", "version": "0"}
        }),
        "tools/list" => json!({"tools": [{
            "name": "report",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}
        }]}),
        "tools/call" => return call(id),
        _ => json!({}),
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// An event stream of `events`, then its end.
fn events(events: String) -> Response {
    ([(header::CONTENT_TYPE, "text/event-stream")], events).into_response()
}

/// A call's stream that ends before the answer: an event with an id
/// (`call-` and the request's id) and no message, then the end.
fn cut(id: &Value) -> Response {
    events(format!("id: call-{id}\nretry: 0\ndata: \n\n"))
}

/// The request id a resumption names (`Last-Event-ID: call-<id>`), if it
/// is one of a call's stream.
fn resumed_call(headers: &HeaderMap) -> Option<String> {
    let last = headers.get("last-event-id")?.to_str().ok()?;
    last.strip_prefix("call-").map(str::to_owned)
}

/// The answer of call `id`, as a JSON-RPC message.
fn result_of(id: &str, text: &str) -> Value {
    let id: Value = serde_json::from_str(id).unwrap();
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": text}]}})
}

/// `mcp` served on a loopback port: its URL.
async fn serve(mcp: axum::routing::MethodRouter) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/mcp", mcp);
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A client of `url` on 2025-11-25.
async fn client(url: String) -> McpClient {
    McpClient::connect(url)
        .revision(Revision::V2025_11_25)
        .timeout(Duration::from_secs(30))
        .await
        .unwrap()
}

/// A server whose every call's event stream ends before the answer, and
/// whose resumptions answer once all [`CALLS`] were resumed (the tools
/// finish together): none answers unless every stream was resumed.
async fn cut_streams() -> String {
    let all_resumed = Arc::new(tokio::sync::Barrier::new(CALLS));
    let post = |body: axum::Json<Value>| async move { answered(&body, cut) };
    let get = move |headers: HeaderMap| {
        let all_resumed = Arc::clone(&all_resumed);
        async move {
            let Some(call) = resumed_call(&headers) else {
                return StatusCode::METHOD_NOT_ALLOWED.into_response();
            };
            all_resumed.wait().await;
            let answer = result_of(&call, &format!("report {call}"));
            events(format!("id: done-{call}\ndata: {answer}\n\n"))
        }
    };
    serve(axum::routing::post(post).get(get)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_cut_at_once_are_each_resumed_and_answered() {
    let client = client(cut_streams().await).await;
    let calls = (0..CALLS).map(|_| client.call("report", json!({})));
    let answers = futures_util::future::join_all(calls).await;
    for answer in answers {
        let answer = answer.expect("every stream resumed, every call answered");
        assert!(
            answer.to_string().contains("report "),
            "the answer of the resumed stream: {answer}"
        );
    }
}

/// How many times the server of [`ever_new_ids`] was resumed.
static RESUMED: AtomicUsize = AtomicUsize::new(0);

/// A server that ends every stream at once, each time with an event of a
/// new id and no message.
async fn ever_new_ids() -> String {
    let post = |body: axum::Json<Value>| async move {
        answered(&body, |_| events("id: first\nretry: 0\ndata: \n\n".into()))
    };
    let get = || async {
        let n = RESUMED.fetch_add(1, Ordering::SeqCst);
        events(format!("id: new-{n}\nretry: 0\ndata: \n\n"))
    };
    serve(axum::routing::post(post).get(get)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_ended_again_and_again_under_new_ids_is_still_bounded() {
    let client = client(ever_new_ids().await).await;
    let ended = client.call("report", json!({})).await.unwrap_err();
    assert_eq!(
        ended.reason(),
        Some(tool_envelope::reasons::CONNECTION_LOST),
        "{ended:?}"
    );
    // Each resumption counted against the stream, whatever id it got.
    assert_eq!(RESUMED.load(Ordering::SeqCst), 10);
}

/// The resumptions the server of [`still_working`] got.
static KEPT_UP: AtomicUsize = AtomicUsize::new(0);

/// A server that ends a call's stream again and again, each time after a
/// message with no id (a log line: the tool still works), and answers on
/// the 13th resumption. Its only id is on the priming event (SEP-1699).
async fn still_working() -> String {
    let post = |body: axum::Json<Value>| async move { answered(&body, cut) };
    let get = |headers: HeaderMap| async move {
        let Some(call) = resumed_call(&headers) else {
            return StatusCode::METHOD_NOT_ALLOWED.into_response();
        };
        match KEPT_UP.fetch_add(1, Ordering::SeqCst) + 1 {
            resumed @ ..=12 => {
                let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": format!("still working ({resumed})")}});
                events(format!("retry: 0\ndata: {log}\n\n"))
            }
            _ => events(format!("data: {}\n\n", result_of(&call, "done"))),
        }
    };
    serve(axum::routing::post(post).get(get)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_brings_messages_without_ids_is_resumed_while_it_does() {
    let client = client(still_working().await).await;
    let answer = client
        .call("report", json!({}))
        .await
        .expect("each resumption brought a message: none was quiet");
    assert!(answer.to_string().contains("done"), "{answer}");
    assert_eq!(KEPT_UP.load(Ordering::SeqCst), 13);
}

/// A server with sessions whose standalone stream (the `GET` with no
/// `Last-Event-ID` that rmcp opens beside a session) ends at once, with
/// `retry: 0`, every time: the time of each opening is sent to `opened`.
async fn ending_standalone(
    opened: tokio::sync::mpsc::UnboundedSender<std::time::Instant>,
) -> String {
    let post = |body: axum::Json<Value>| async move {
        let session = [(
            header::HeaderName::from_static("mcp-session-id"),
            "session-1",
        )];
        (session, answered(&body, cut)).into_response()
    };
    let get = move |headers: HeaderMap| {
        let opened = opened.clone();
        async move {
            if headers.get("last-event-id").is_none() {
                let _ = opened.send(std::time::Instant::now());
            }
            events("retry: 0\n\n".into())
        }
    };
    serve(axum::routing::post(post).get(get)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_stream_that_keeps_ending_is_opened_again_ever_slower() {
    let (opened, mut openings) = tokio::sync::mpsc::unbounded_channel();
    let _client = client(ending_standalone(opened).await).await;
    // The first opening, then four more: 100, 200, 400 and 800 ms after
    // the one before, at the least (unpaced, rmcp reopened it as fast as
    // the network allowed, for the session's whole life).
    let first = openings
        .recv()
        .await
        .expect("the standalone stream is opened");
    let mut last = first;
    for _ in 0..4 {
        last = openings.recv().await.expect("opened again");
    }
    let took = last - first;
    assert!(
        took >= Duration::from_millis(1_400),
        "four reopenings in {took:?}"
    );
}
