//! Figure 11 of BENCHMARKS.md: the cost of a call through `McpClient` over
//! TLS against plain HTTP, through the same nginx to the same server
//! (`benches/servers`' tool-envelope server, stateless), in one run: 1,000
//! sequential calls of a tool that succeeds, on the connections the client
//! keeps.
//!
//! Next to it, the floor: the same request (a 2025-11-25 `tools/call`,
//! which the stateless server answers without a session) sent by a bare
//! pooled reqwest client with rustls and `TCP_NODELAY`, no MCP client at all —
//! what TLS through this nginx costs any Rust HTTP client.
//!
//! `scripts/bench-tls.sh` starts the server and nginx, makes the CA, and
//! runs this bench with their addresses; run alone, it says so and stops.

use std::future::IntoFuture;
use std::time::Instant;

use criterion::{Criterion, SamplingMode, Throughput};
use serde_json::json;
use tool_envelope::mcp::client::McpClient;

/// Sequential calls per sample.
const CALLS: u64 = 1_000;

fn main() {
    let (Ok(plain), Ok(tls), Ok(ca)) = (
        std::env::var("TOOL_ENVELOPE_BENCH_PLAIN_URL"),
        std::env::var("TOOL_ENVELOPE_BENCH_TLS_URL"),
        std::env::var("TOOL_ENVELOPE_BENCH_CA"),
    ) else {
        eprintln!("the tls bench needs nginx: run scripts/bench-tls.sh");
        return;
    };
    let ca = std::fs::read(ca).expect("the CA's PEM file");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let arguments = json!({"text": "C-4821"});
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("call_through_nginx");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .throughput(Throughput::Elements(CALLS));
    for (name, url) in [("plain_http", &plain), ("tls", &tls)] {
        let client = runtime
            .block_on(
                McpClient::connect(url.as_str())
                    .root_certificate_pem(&ca)
                    .into_future(),
            )
            .expect("the server answers through nginx");
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iterations * CALLS {
                        client
                            .call("echo", arguments.clone())
                            .await
                            .expect("echoed");
                    }
                    start.elapsed()
                })
            });
        });
    }
    let bare = reqwest::Client::builder()
        .tcp_nodelay(true)
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("the CA's certificate"))
        .build()
        .expect("a reqwest client");
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": arguments},
    })
    .to_string();
    for (name, url) in [
        ("bare_reqwest_plain_http", &plain),
        ("bare_reqwest_tls", &tls),
    ] {
        let post = || {
            bare.post(url.as_str())
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-protocol-version", "2025-11-25")
                .body(body.clone())
                .send()
        };
        let first = runtime.block_on(async { post().await?.text().await });
        assert!(
            first.expect("answered").contains("C-4821"),
            "the bare POST is echoed"
        );
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iterations * CALLS {
                        let reply = post().await.expect("sent");
                        assert!(reply.status().is_success());
                        reply.bytes().await.expect("read");
                    }
                    start.elapsed()
                })
            });
        });
    }
    group.finish();
    criterion.final_summary();
}
