//! What the benches that drive `benches/servers` over stdio share.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::json;

/// Sequential calls per sample.
pub const CALLS: u64 = 10_000;

/// Builds `benches/servers` in release mode and returns the folder that
/// holds its binaries (`rmcp_macros_server`, `tool_envelope_server`).
pub fn bench_servers() -> PathBuf {
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
    // A bench runs from <target>/release/deps/.
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// A bare rmcp client of the server `binary`, over stdio.
pub async fn connect(binary: &Path) -> RunningService<RoleClient, ()> {
    let transport =
        TokioChildProcess::new(tokio::process::Command::new(binary)).expect("the server starts");
    ().serve(transport).await.expect("the server initializes")
}

/// `CALLS` sequential calls of `tool` through a bare rmcp client; checks
/// every answer's `isError`.
pub async fn calls(
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

/// The median of `values` (sorted in place): the middle value, or the
/// mean of the two middle ones of an even count.
pub fn median(values: &mut [f64]) -> f64 {
    assert!(!values.is_empty(), "the median of no values");
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    }
}

/// The rounds the bench's first numeric argument asks for, else `default`.
pub fn rounds(default: usize) -> usize {
    std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(default)
}

/// A group of `CALLS`-call samples: 10 of them, flat, over 20 s.
pub fn group<'a>(criterion: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = criterion.benchmark_group(name);
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(CALLS));
    group
}
