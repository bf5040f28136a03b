//! Figure 3 of BENCHMARKS.md: `tools/call` end to end over stdio, 10,000
//! sequential calls from one rmcp client, for the same trivial tool served by
//! rmcp's own macros and by tool-envelope's `ToolSet` on rmcp — for a tool
//! that succeeds and for one that fails; and, in rmcp's own server, a failing
//! tool that returns a `String` against one that returns an error envelope.
//!
//! `cargo bench --bench dispatch --features rmcp`
//! (builds `benches/servers` in release mode first).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::json;

const CALLS: u64 = 10_000;

/// Builds the two servers and returns their paths.
fn servers() -> [(&'static str, PathBuf); 2] {
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
    let release = exe.parent().unwrap().parent().unwrap();
    [
        ("rmcp_macros", release.join("rmcp_macros_server")),
        ("tool_envelope", release.join("tool_envelope_server")),
    ]
}

async fn connect(binary: &PathBuf) -> RunningService<RoleClient, ()> {
    let transport =
        TokioChildProcess::new(tokio::process::Command::new(binary)).expect("the server starts");
    ().serve(transport).await.expect("the server initializes")
}

/// `CALLS` sequential calls of `tool`; checks every answer's `isError`.
async fn calls(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    is_error: bool,
) -> Duration {
    let arguments = json!({"text": "C-4821"}).as_object().unwrap().clone();
    let start = Instant::now();
    for _ in 0..CALLS {
        let request = CallToolRequestParams::new(tool).with_arguments(arguments.clone());
        let result = client.call_tool(request).await.expect("a result");
        assert_eq!(result.is_error, Some(is_error));
    }
    start.elapsed()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let servers = servers();
    let mut criterion = Criterion::default().configure_from_args();
    for (tool, is_error) in [("echo", false), ("fail", true)] {
        let mut group = criterion.benchmark_group(format!("dispatch_{tool}"));
        group.sampling_mode(SamplingMode::Flat);
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(20));
        group.throughput(Throughput::Elements(CALLS));
        for (name, binary) in &servers {
            let client = runtime.block_on(connect(binary));
            group.bench_function(*name, |b| {
                b.iter_custom(|iterations| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        total += runtime.block_on(calls(&client, tool, is_error));
                    }
                    total
                })
            });
            runtime.block_on(client.cancel()).unwrap();
        }
        group.finish();
    }
    // One rmcp server, one failing tool written two ways: a `String` error
    // (rmcp's text result) and an error envelope (this crate's
    // `IntoCallToolResult`, with `admit_envelopes` on the router).
    let mut group = criterion.benchmark_group("dispatch_rmcp_native_fail");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(CALLS));
    let client = runtime.block_on(connect(&servers[0].1));
    for (name, tool) in [("string_error", "fail"), ("envelope", "fail_envelope")] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    total += runtime.block_on(calls(&client, tool, true));
                }
                total
            })
        });
    }
    runtime.block_on(client.cancel()).unwrap();
    group.finish();
    criterion.final_summary();
}
