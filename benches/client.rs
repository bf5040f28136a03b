//! Figure 8 of BENCHMARKS.md: the cost of a remote call through
//! `McpClient` against a bare rmcp client call, in one run, against the same
//! server (`benches/servers`' tool-envelope server, over stdio): 10,000
//! sequential calls of a tool that succeeds and of one that fails.
//!
//! `cargo bench --features rmcp,client --bench client`

#[allow(dead_code)] // The alternating benches' helpers.
mod common;

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use common::{CALLS, bench_servers, calls, connect, group};
use criterion::Criterion;
use serde_json::json;
use tool_envelope::mcp::client::McpClient;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let binary = bench_servers().join("tool_envelope_server");
    let arguments = json!({"text": "C-4821"});
    let mut criterion = Criterion::default().configure_from_args();
    for (tool, fails) in [("echo", false), ("fail", true)] {
        let mut group = group(&mut criterion, &format!("client_{tool}"));

        let rmcp = runtime.block_on(connect(&binary));
        group.bench_function("bare_rmcp", |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    total += runtime.block_on(calls(&rmcp, tool, fails));
                }
                total
            });
        });
        runtime.block_on(rmcp.cancel()).unwrap();

        let path = binary.clone();
        let client = runtime
            .block_on(McpClient::spawn(move || tokio::process::Command::new(&path)).into_future())
            .expect("the server starts");
        group.bench_function("mcp_client", |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iterations * CALLS {
                        let result = client.call(tool, arguments.clone()).await;
                        assert_eq!(result.is_err(), fails);
                    }
                    start.elapsed()
                })
            });
        });
        group.finish();
    }
    criterion.final_summary();
}
