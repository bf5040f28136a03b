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
//! Alternating rounds, as issue 27 asks of each pair: every round measures
//! the four (`McpClient` plain and TLS, the bare client plain and TLS), in
//! the opposite order every other round, and the bench prints each round's
//! TLS / plain ratios and their medians, which a neighbour's load moves far
//! less than two runs one after the other.
//!
//! `scripts/bench-tls.sh` starts the server and nginx, makes the CA, and
//! runs this bench with their addresses (`scripts/bench-tls.sh ROUNDS` for
//! more than 11 rounds); run alone, it says so and stops.

#[allow(dead_code)] // The other benches' helpers.
mod common;

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use serde_json::json;
use tool_envelope::mcp::client::McpClient;

use common::median;

/// Sequential calls per measurement.
const CALLS: u32 = 1_000;

/// One way of making the call, over one listener.
enum Caller {
    /// `McpClient`.
    Ours(McpClient),
    /// A bare pooled reqwest client posting the same `tools/call`.
    Bare {
        client: reqwest::Client,
        url: String,
        body: String,
    },
}

impl Caller {
    /// One call of `echo`, checked.
    async fn call(&self, arguments: &serde_json::Value) {
        match self {
            Caller::Ours(client) => {
                client
                    .call("echo", arguments.clone())
                    .await
                    .expect("echoed");
            }
            Caller::Bare { client, url, body } => {
                let reply = client
                    .post(url.as_str())
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .header("mcp-protocol-version", "2025-11-25")
                    .body(body.clone())
                    .send()
                    .await
                    .expect("sent");
                assert!(reply.status().is_success());
                let text = reply.text().await.expect("read");
                assert!(text.contains("C-4821"), "the bare POST is echoed");
            }
        }
    }

    /// `CALLS` sequential calls: calls a second.
    async fn measure(&self, arguments: &serde_json::Value) -> f64 {
        let start = Instant::now();
        for _ in 0..CALLS {
            self.call(arguments).await;
        }
        f64::from(CALLS) / start.elapsed().as_secs_f64()
    }
}

fn main() {
    let (Ok(plain), Ok(tls), Ok(ca)) = (
        std::env::var("TOOL_ENVELOPE_BENCH_PLAIN_URL"),
        std::env::var("TOOL_ENVELOPE_BENCH_TLS_URL"),
        std::env::var("TOOL_ENVELOPE_BENCH_CA"),
    ) else {
        eprintln!("the tls bench needs nginx: run scripts/bench-tls.sh");
        return;
    };
    let rounds = common::rounds(11);
    let ca = std::fs::read(ca).expect("the CA's PEM file");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let arguments = json!({"text": "C-4821"});
    runtime.block_on(async {
        let ours = |url: String| {
            let ca = ca.clone();
            async move {
                McpClient::connect(url)
                    .root_certificate_pem(&ca)
                    .into_future()
                    .await
                    .expect("the server answers through nginx")
            }
        };
        let bare_client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .add_root_certificate(
                reqwest::Certificate::from_pem(&ca).expect("the CA's certificate"),
            )
            .build()
            .expect("a reqwest client");
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": arguments},
        })
        .to_string();
        let bare = |url: &String| Caller::Bare {
            client: bare_client.clone(),
            url: url.clone(),
            body: body.clone(),
        };
        let callers = [
            ("ours-plain", "McpClient, plain HTTP", Caller::Ours(ours(plain.clone()).await)),
            ("ours-tls", "McpClient, TLS", Caller::Ours(ours(tls.clone()).await)),
            ("bare-plain", "bare reqwest, plain HTTP", bare(&plain)),
            ("bare-tls", "bare reqwest, TLS", bare(&tls)),
        ];
        // `TOOL_ENVELOPE_BENCH_ONLY=ours-plain|ours-tls|bare-plain|bare-tls`
        // runs one alone (to profile it, under perf or strace say).
        let only = std::env::var("TOOL_ENVELOPE_BENCH_ONLY").ok();
        let chosen: Vec<usize> = (0..callers.len())
            .filter(|index| only.as_deref().is_none_or(|only| only == callers[*index].0))
            .collect();
        assert!(
            !chosen.is_empty(),
            "TOOL_ENVELOPE_BENCH_ONLY is one of ours-plain, ours-tls, bare-plain, bare-tls"
        );
        // Warm up every path once: connections made, handshakes done.
        for index in &chosen {
            for _ in 0..200 {
                callers[*index].2.call(&arguments).await;
            }
        }
        let mut rates: [Vec<f64>; 4] = Default::default();
        let (mut ours_ratio, mut bare_ratio) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let mut order = chosen.clone();
            if round % 2 == 1 {
                order.reverse();
            }
            for index in order {
                let rate = callers[index].2.measure(&arguments).await;
                println!("round {round:>2} {:<26} {rate:>7.0} calls/s", callers[index].1);
                rates[index].push(rate);
            }
            if chosen.len() == callers.len() {
                let last = |index: usize| rates[index][round];
                ours_ratio.push(last(1) / last(0));
                bare_ratio.push(last(3) / last(2));
                println!(
                    "round {round:>2} TLS / plain: McpClient {:.3}x, bare reqwest {:.3}x",
                    last(1) / last(0),
                    last(3) / last(2)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        println!("\nmedians over {rounds} rounds:");
        for index in &chosen {
            println!("{:<26} {:>7.0} calls/s", callers[*index].1, median(&mut rates[*index]));
        }
        if chosen.len() < callers.len() {
            return;
        }
        let range = |ratios: &[f64]| {
            let (low, high) = ratios
                .iter()
                .fold((f64::MAX, f64::MIN), |(low, high), r| (low.min(*r), high.max(*r)));
            format!("{low:.2}-{high:.2}x")
        };
        let (ours_range, bare_range) = (range(&ours_ratio), range(&bare_ratio));
        println!(
            "TLS / plain, median of the per-round ratios: McpClient {:.3}x (rounds {ours_range}), bare reqwest {:.3}x (rounds {bare_range})",
            median(&mut ours_ratio),
            median(&mut bare_ratio)
        );
    });
}
