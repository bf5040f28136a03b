//! Figure 11 of BENCHMARKS.md: the cost of a call through `McpClient` over
//! TLS against plain HTTP, through the same nginx to the same server
//! (`benches/servers`' tool-envelope server, stateless), in one run: 1,000
//! sequential calls of a tool that succeeds, on the connections the client
//! keeps.
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
    for (name, url) in [("plain_http", plain), ("tls", tls)] {
        let client = runtime
            .block_on(
                McpClient::connect(url)
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
    group.finish();
    criterion.final_summary();
}
