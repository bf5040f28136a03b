//! Hostile input over Streamable HTTP, the transport that can always answer:
//! the example's tools served by rmcp on a local port, fed raw HTTP requests.
//! A body that is not a JSON-RPC message — invalid UTF-8, JSON nested 10,000
//! deep, text that is not JSON — gets a clear HTTP error, a body over rmcp's
//! limit gets `413`, and the server keeps serving: the next `initialize`
//! succeeds and a `tools/call` on its session gets its envelope. `HttpOptions`
//! decide who is served: loopback `Host` names by default, the listed names
//! and origins otherwise, and bodies up to the limit set.
#![cfg(feature = "rmcp")]

#[path = "../examples/mcp_server/tools.rs"]
#[allow(dead_code)]
mod example;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_envelope::mcp::HttpOptions;

/// An HTTP answer: the status, the headers' text and the body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

/// Serves the example's tools on a free local port.
async fn serve() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(HttpOptions::new().serve(listener, example::tools()));
    address
}

/// How long any one exchange with the server may take: a hung server fails
/// the test instead of stalling it.
const EXCHANGE: Duration = Duration::from_secs(30);

async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(EXCHANGE, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {EXCHANGE:?}"))
}

/// One `POST /mcp` with `body`, on a connection of its own; reads the answer
/// until the server closes the connection, within [`EXCHANGE`].
async fn post(address: SocketAddr, body: &[u8], session: Option<&str>) -> Answer {
    let session = session.map_or(String::new(), |id| {
        format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n")
    });
    post_with(address, body, &format!("Host: localhost\r\n{session}")).await
}

/// One `POST /mcp` with `body` and the header lines `headers` (each ending
/// in CRLF, `Host` included).
async fn post_with(address: SocketAddr, body: &[u8], headers: &str) -> Answer {
    bounded("POST /mcp", post_unbounded(address, body, headers)).await
}

async fn post_unbounded(address: SocketAddr, body: &[u8], headers: &str) -> Answer {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\n{headers}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // A server may answer before it has read a body it refuses: a write it
    // stopped reading is not a failure of the test.
    let _ = stream.write_all(body).await;
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {head:?}"));
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// The JSON-RPC message in an answer, plain JSON or one SSE `data:` line.
fn message(answer: &Answer) -> Value {
    answer
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .find_map(|data| serde_json::from_str(data.trim()).ok())
        .or_else(|| serde_json::from_str(answer.body.trim()).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {:?}", answer.body))
}

/// A successful `initialize`, and the session it opened.
async fn initialize(address: SocketAddr) -> String {
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "hostile", "version": "0"}
        }
    });
    let answer = post(address, request.to_string().as_bytes(), None).await;
    assert_eq!(answer.status, 200, "{}\n{}", answer.head, answer.body);
    assert_eq!(
        message(&answer)["result"]["serverInfo"]["name"],
        "tool-envelope-example"
    );
    answer
        .head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("a session id")
}

#[tokio::test]
async fn unparsable_bodies_get_a_clear_http_error_and_the_server_keeps_serving() {
    let address = serve().await;
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"stock_level","arguments":{{"sku":{}1{}}}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let invalid_utf8 =
        b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"x\":\"\xff\xfe\"}".to_vec();
    let hostile: [(&str, Vec<u8>); 3] = [
        ("nested 10,000 deep", deep.into_bytes()),
        ("invalid UTF-8", invalid_utf8),
        ("not JSON", b"tools/call please".to_vec()),
    ];
    for (what, body) in hostile {
        let answer = post(address, &body, None).await;
        assert!(
            (400..500).contains(&answer.status),
            "{what}: {}\n{}",
            answer.head,
            answer.body
        );
        assert!(
            answer.body.contains("deserialize"),
            "{what}: the answer says why: {}",
            answer.body
        );
        // The server keeps serving.
        initialize(address).await;
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_and_the_next_call_gets_its_envelope() {
    let address = serve().await;
    let huge = json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "lookup_orders", "arguments": {"customer_id": "C".repeat(10 << 20)}}
    });
    let answer = post(address, huge.to_string().as_bytes(), None).await;
    assert_eq!(answer.status, 413, "{}\n{}", answer.head, answer.body);

    let session = initialize(address).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = post(address, initialized.to_string().as_bytes(), Some(&session)).await;
    assert_eq!(answer.status, 202, "{}\n{}", answer.head, answer.body);
    let call = json!({
        "jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "lookup_orders", "arguments": {"customer_id": "X-1"}}
    });
    let answer = post(address, call.to_string().as_bytes(), Some(&session)).await;
    assert_eq!(answer.status, 200, "{}\n{}", answer.head, answer.body);
    let result = &message(&answer)["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["errorCategory"], "validation");
}

/// Serves the example's tools as `options` say, on a free local port.
async fn serve_with(options: HttpOptions) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(options.serve(listener, example::tools()));
    address
}

/// A `tools/call` of `lookup_orders` with no session: a stateless server
/// answers it with the tool's result.
fn call_body(customer_id: &str) -> Vec<u8> {
    json!({
        "jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "lookup_orders", "arguments": {"customer_id": customer_id}}
    })
    .to_string()
    .into_bytes()
}

const STATELESS: &str = "MCP-Protocol-Version: 2025-11-25\r\n";

#[tokio::test]
async fn the_http_options_decide_who_is_served_and_how_much() {
    // The default: loopback `Host` names only, against DNS rebinding.
    let address = serve().await;
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "0"}}
    })
    .to_string();
    let rebound = post_with(address, request.as_bytes(), "Host: attacker.example\r\n").await;
    assert_eq!(rebound.status, 403, "{}\n{}", rebound.head, rebound.body);
    let local = post_with(address, request.as_bytes(), "Host: 127.0.0.1\r\n").await;
    assert_eq!(local.status, 200, "{}\n{}", local.head, local.body);

    // Stateless, behind a proxy that reaches it as `tools.internal`, for one
    // browser origin, with a 4 KiB body limit.
    let address = serve_with(
        HttpOptions::new()
            .stateless()
            .allowed_hosts(["tools.internal"])
            .allowed_origins(["https://app.example.com"])
            .max_body_bytes(4096),
    )
    .await;
    let host = format!("Host: tools.internal\r\n{STATELESS}");
    // No session needed: any replica answers any request.
    let answer = post_with(address, &call_body("C-4821"), &host).await;
    assert_eq!(answer.status, 200, "{}\n{}", answer.head, answer.body);
    assert!(message(&answer)["result"]["structuredContent"].is_object());
    // A name not on the list is refused, loopback included now.
    for refused in ["Host: localhost\r\n", "Host: attacker.example\r\n"] {
        let answer = post_with(
            address,
            &call_body("C-4821"),
            &format!("{refused}{STATELESS}"),
        )
        .await;
        assert_eq!(
            answer.status, 403,
            "{refused}: {}\n{}",
            answer.head, answer.body
        );
    }
    // The listed origin passes, another is refused; a program sends none.
    let from_app = format!("{host}Origin: https://app.example.com\r\n");
    assert_eq!(
        post_with(address, &call_body("C-4821"), &from_app)
            .await
            .status,
        200
    );
    let from_elsewhere = format!("{host}Origin: https://attacker.example\r\n");
    let answer = post_with(address, &call_body("C-4821"), &from_elsewhere).await;
    assert_eq!(answer.status, 403, "{}\n{}", answer.head, answer.body);
    // A body over the limit is refused before it is read whole; one under it is served.
    let answer = post_with(address, &call_body(&"C".repeat(5000)), &host).await;
    assert_eq!(answer.status, 413, "{}\n{}", answer.head, answer.body);
    let answer = post_with(address, &call_body(&"C".repeat(3000)), &host).await;
    assert_eq!(answer.status, 200, "{}\n{}", answer.head, answer.body);
}

/// rmcp refuses a 2026-07-28 request whose `Mcp-Name` header is not the
/// body's tool name (400), quoting the body's; a name of 1 MB is quoted
/// 256 bytes of it, as every error this crate writes quotes a request.
#[tokio::test]
async fn a_refusal_of_a_mismatched_header_quotes_the_body_briefly() {
    let address = serve_with(HttpOptions::new().stateless()).await;
    let name = "n".repeat(1 << 20);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "agent", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = "Host: localhost\r\nMCP-Protocol-Version: 2026-07-28\r\n\
                   Mcp-Method: tools/call\r\nMcp-Name: lookup_orders\r\n";
    let answer = post_with(address, call.to_string().as_bytes(), headers).await;
    assert_eq!(answer.status, 400, "{}", answer.head);
    assert!(answer.body.len() < 1024, "{} bytes", answer.body.len());
    let refusal = message(&answer);
    let said = refusal["error"]["message"].as_str().unwrap();
    assert!(said.contains("Mcp-Name"), "{said}");
}

/// An empty list of hosts or origins — a setting read from an empty
/// variable — accepts none: it never turns the check off.
#[tokio::test]
async fn an_empty_list_of_hosts_or_origins_accepts_none() {
    let empty: [&str; 0] = [];
    let address = serve_with(HttpOptions::new().stateless().allowed_hosts(empty)).await;
    for host in ["localhost", "127.0.0.1", "attacker.example"] {
        let headers = format!("Host: {host}\r\n{STATELESS}");
        let answer = post_with(address, &call_body("C-4821"), &headers).await;
        assert_eq!(
            answer.status, 403,
            "{host}: {}\n{}",
            answer.head, answer.body
        );
    }
    let address = serve_with(HttpOptions::new().stateless().allowed_origins(empty)).await;
    let host = format!("Host: localhost\r\n{STATELESS}");
    let from_a_page = format!("{host}Origin: http://attacker.example\r\n");
    let answer = post_with(address, &call_body("C-4821"), &from_a_page).await;
    assert_eq!(answer.status, 403, "{}\n{}", answer.head, answer.body);
    // A program, which sends no origin, is served.
    let answer = post_with(address, &call_body("C-4821"), &host).await;
    assert_eq!(answer.status, 200, "{}\n{}", answer.head, answer.body);
}

#[tokio::test]
async fn an_origin_is_its_scheme_host_and_port() {
    let address = serve_with(HttpOptions::new().stateless().allowed_origins([
        "https://app.example.com",
        "http://localhost",
        "http://127.0.0.1:*",
    ]))
    .await;
    let status = |origin: &'static str| async move {
        let headers = format!("Host: localhost\r\n{STATELESS}Origin: {origin}\r\n");
        post_with(address, &call_body("C-4821"), &headers)
            .await
            .status
    };
    // The port an entry leaves out is its scheme's own, written or not.
    for origin in [
        "https://app.example.com",
        "https://app.example.com:443",
        "http://localhost",
        "http://localhost:80",
    ] {
        assert_eq!(status(origin).await, 200, "{origin}");
    }
    // Another port is another origin; so is another scheme.
    for origin in [
        "https://app.example.com:8443",
        "http://app.example.com",
        "http://localhost:6666",
        "https://localhost",
    ] {
        assert_eq!(status(origin).await, 403, "{origin}");
    }
    // A port wildcard, written out, takes any port.
    for origin in ["http://127.0.0.1", "http://127.0.0.1:6666"] {
        assert_eq!(status(origin).await, 200, "{origin}");
    }
}

/// A connection that never finishes its request head — sent slowly, or not
/// at all — is closed once the head's time is up (75 s, on the paused
/// clock), and holds no socket of the server's beyond it; the server keeps
/// serving meanwhile.
#[tokio::test(start_paused = true)]
async fn a_connection_that_never_finishes_its_head_is_closed() {
    let address = serve().await;
    let mut silent = TcpStream::connect(address).await.unwrap();
    let mut slow = TcpStream::connect(address).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    // Another client is served meanwhile.
    assert!(!initialize(address).await.is_empty());
    for (what, stream) in [("silent", &mut silent), ("slow", &mut slow)] {
        let mut read = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(600), stream.read_to_end(&mut read)).await;
        assert!(closed.is_ok(), "{what}: still open after ten minutes");
    }
}
