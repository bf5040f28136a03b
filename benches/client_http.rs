//! Figure 13 of BENCHMARKS.md (issue 27's first row): `McpClient` over
//! Streamable HTTP against a bare rmcp client over a pooled reqwest client
//! with `TCP_NODELAY`, against the same server (`benches/servers`'
//! tool-envelope server, release, stateless over HTTP), in one run,
//! alternating rounds: 2,000 sequential calls of `echo`, then 16 callers
//! making 250 each, per client per round; and the TCP connections the
//! machine opened per call (the kernel's `Tcp: ActiveOpens` counter).
//! `McpClient` runs twice: negotiating (2026-07-28) and pinned to
//! 2025-11-25, the revision the bare client speaks.
//!
//! `cargo bench --features rmcp,client --bench client_http`
//! (`-- ROUNDS` for more than 5 rounds; `TOOL_ENVELOPE_BENCH_ONLY=bare|2026|2025`
//! for one client alone; `TOOL_ENVELOPE_BENCH_URL` for a server already
//! running).

#[allow(dead_code)] // The other benches' helpers.
mod common;

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tool_envelope::mcp::client::{McpClient, Revision};

const SEQUENTIAL: usize = 2_000;
const CALLERS: usize = 16;
const PER_CALLER: usize = 250;

/// The kernel's count of TCP connections this machine opened.
fn active_opens() -> u64 {
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    let mut tcp = snmp.lines().filter(|line| line.starts_with("Tcp:"));
    let (Some(names), Some(values)) = (tcp.next(), tcp.next()) else {
        return 0;
    };
    let at = names
        .split_whitespace()
        .position(|name| name == "ActiveOpens");
    at.and_then(|at| values.split_whitespace().nth(at))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0)
}

/// One way to call `echo` over HTTP.
#[derive(Clone)]
enum Caller {
    Ours(Arc<McpClient>),
    Bare(Arc<RunningService<RoleClient, ()>>),
}

impl Caller {
    async fn echo(&self, text: &str) {
        match self {
            Caller::Ours(client) => {
                client
                    .call("echo", json!({"text": text}))
                    .await
                    .expect("echoed");
            }
            Caller::Bare(client) => {
                let arguments = json!({"text": text}).as_object().unwrap().clone();
                let result = client
                    .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
                    .await
                    .expect("echoed");
                assert_ne!(result.is_error, Some(true));
            }
        }
    }
}

/// Calls per second, and connections opened per call, for `SEQUENTIAL`
/// calls one after another, and for `CALLERS` callers at once.
async fn measure(caller: &Caller) -> ((f64, f64), (f64, f64)) {
    let opens = active_opens();
    let start = Instant::now();
    for _ in 0..SEQUENTIAL {
        caller.echo("C-4821").await;
    }
    let sequential = SEQUENTIAL as f64 / start.elapsed().as_secs_f64();
    let sequential_opens = (active_opens() - opens) as f64 / SEQUENTIAL as f64;

    let opens = active_opens();
    let start = Instant::now();
    let tasks: Vec<_> = (0..CALLERS)
        .map(|_| {
            let caller = caller.clone();
            tokio::spawn(async move {
                for _ in 0..PER_CALLER {
                    caller.echo("C-4821").await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let calls = (CALLERS * PER_CALLER) as f64;
    let concurrent = calls / start.elapsed().as_secs_f64();
    let concurrent_opens = (active_opens() - opens) as f64 / calls;
    (
        (sequential, sequential_opens),
        (concurrent, concurrent_opens),
    )
}

use common::median;

fn main() {
    let rounds = common::rounds(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // `TOOL_ENVELOPE_BENCH_URL` points at a server already running (one
    // under a profiler, say); else the bench starts its own.
    let given = std::env::var("TOOL_ENVELOPE_BENCH_URL").ok();
    let binary = common::bench_servers().join("tool_envelope_server");
    runtime.block_on(async {
        let mut server = None;
        let url = match given {
            Some(url) => url,
            None => {
                let mut child = tokio::process::Command::new(&binary)
                    .args(["--http", "127.0.0.1:0"])
                    .stderr(std::process::Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .expect("the bench server starts");
                let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
                let url = loop {
                    let line = lines.next_line().await.unwrap().expect("the server prints its address");
                    if let Some(at) = line.find("http://") {
                        break line[at..].split_whitespace().next().unwrap().to_owned();
                    }
                };
                tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                server = Some(child);
                url
            }
        };

        let pooled = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .unwrap();
        let transport = StreamableHttpClientTransport::with_client(
            pooled,
            StreamableHttpClientTransportConfig::with_uri(url.clone()),
        );
        let bare = Caller::Bare(Arc::new(().serve(transport).await.expect("the bare client connects")));
        let ours = Caller::Ours(Arc::new(McpClient::connect(url.clone()).into_future().await.unwrap()));
        let pinned = Caller::Ours(Arc::new(
            McpClient::connect(url.clone())
                .revision(Revision::V2025_11_25)
                .into_future()
                .await
                .unwrap(),
        ));
        // `TOOL_ENVELOPE_BENCH_ONLY=bare|2026|2025` runs one client alone
        // (to profile it, under callgrind say).
        let only = std::env::var("TOOL_ENVELOPE_BENCH_ONLY").ok();
        let callers = [("bare rmcp, pooled, nodelay", &bare), ("McpClient (2026-07-28)", &ours), ("McpClient pinned to 2025-11-25", &pinned)];
        let keys = ["bare", "2026", "2025"];
        let callers: Vec<(&str, &Caller)> = callers
            .into_iter()
            .zip(keys)
            .filter(|(_, key)| only.as_deref().is_none_or(|only| only == *key))
            .map(|(caller, _)| caller)
            .collect();
        // Warm up every path once.
        for (_, caller) in &callers {
            for _ in 0..200 {
                caller.echo("warm").await;
            }
        }
        let mut results: Vec<[Vec<f64>; 4]> = callers.iter().map(|_| Default::default()).collect();
        for round in 0..rounds {
            for (index, (name, caller)) in callers.iter().enumerate() {
                let ((sequential, sequential_opens), (concurrent, concurrent_opens)) = measure(caller).await;
                println!(
                    "round {round} {name:<32} sequential {sequential:>7.0} calls/s ({sequential_opens:.3} opens/call), {CALLERS} callers {concurrent:>7.0} calls/s ({concurrent_opens:.3} opens/call)"
                );
                let slot = &mut results[index];
                slot[0].push(sequential);
                slot[1].push(sequential_opens);
                slot[2].push(concurrent);
                slot[3].push(concurrent_opens);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let medians: Vec<[f64; 4]> = results
            .iter_mut()
            .map(|slot| [median(&mut slot[0]), median(&mut slot[1]), median(&mut slot[2]), median(&mut slot[3])])
            .collect();
        println!("\nmedians over {rounds} rounds:");
        for ((name, _), median) in callers.iter().zip(&medians) {
            println!(
                "{name:<32} sequential {:>7.0} calls/s ({:.3} opens/call) = {:.2}x bare; {CALLERS} callers {:>7.0} calls/s ({:.3} opens/call) = {:.2}x bare",
                median[0],
                median[1],
                median[0] / medians[0][0].max(f64::MIN_POSITIVE),
                median[2],
                median[3],
                median[2] / medians[0][2]
            );
        }
        if let Some(mut server) = server {
            drop(server.kill().await);
        }
    });
}
