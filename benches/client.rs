//! Figure 8 of BENCHMARKS.md: the cost of a remote call through
//! `McpClient` against a bare rmcp client call, in one run, against the same
//! server (`benches/servers`' tool-envelope server, over stdio): 10,000
//! sequential calls of a tool that succeeds and of one that fails.
//!
//! `cargo bench --features rmcp,client --bench client`

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use tool_envelope::mcp::client::McpClient;

const CALLS: u64 = 10_000;

fn server() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "tool-envelope-bench-servers",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the bench servers failed");
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("tool_envelope_server")
}

async fn bare(binary: &PathBuf) -> RunningService<RoleClient, ()> {
    let transport =
        TokioChildProcess::new(tokio::process::Command::new(binary)).expect("the server starts");
    ().serve(transport).await.expect("the server initializes")
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let binary = server();
    let arguments = json!({"text": "C-4821"});
    let mut criterion = Criterion::default().configure_from_args();
    for (tool, fails) in [("echo", false), ("fail", true)] {
        let mut group = criterion.benchmark_group(format!("client_{tool}"));
        group.sampling_mode(SamplingMode::Flat);
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(20));
        group.throughput(Throughput::Elements(CALLS));

        let rmcp = runtime.block_on(bare(&binary));
        group.bench_function("bare_rmcp", |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iterations * CALLS {
                        let request = CallToolRequestParams::new(tool)
                            .with_arguments(arguments.as_object().unwrap().clone());
                        let result = rmcp.call_tool(request).await.expect("a result");
                        assert_eq!(result.is_error, Some(fails));
                    }
                    start.elapsed()
                })
            })
        });
        runtime.block_on(rmcp.cancel()).unwrap();

        let path = binary.clone();
        let client = runtime
            .block_on(McpClient::spawn(move || {
                tokio::process::Command::new(&path)
            }))
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
            })
        });
        group.finish();
    }
    criterion.final_summary();
}
