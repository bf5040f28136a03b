//! Figure 3 of BENCHMARKS.md in alternating rounds (issue 27's "each pair
//! measured in one run, alternating rounds, medians"): the same stdio
//! `tools/call`s as `benches/dispatch.rs`, but every server is connected at
//! once and each round makes `CALLS_PER_ROUND` sequential calls on each in
//! turn (the order reversed every other round), so a neighbour's load on
//! this shared machine falls on all of them alike. The verdict is the median
//! of the per-round ratios, not a ratio of two runs taken minutes apart.
//!
//! Servers: rmcp's own macros (`echo`, and `fail` with a plain-text error),
//! tool-envelope's `ToolSet` on rmcp (the same two tools), and rmcp's own
//! macros returning this crate's envelope (`fail_envelope`): the envelope's
//! bytes without any of tool-envelope's serving code, the floor for `fail`.
//!
//! `cargo bench --features rmcp --bench dispatch_rounds` (`-- ROUNDS`,
//! default 11).

#[allow(dead_code)] // The criterion helpers of the other benches.
mod common;

use std::time::Instant;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;

/// Sequential calls a server makes in one round.
const CALLS_PER_ROUND: u32 = 2_000;

/// One measured row: which server, which tool, what the answer must say.
struct Row {
    name: &'static str,
    server: usize,
    tool: &'static str,
    is_error: bool,
}

const ROWS: [Row; 5] = [
    Row {
        name: "echo, rmcp's macros",
        server: 0,
        tool: "echo",
        is_error: false,
    },
    Row {
        name: "echo, tool-envelope",
        server: 1,
        tool: "echo",
        is_error: false,
    },
    Row {
        name: "fail, rmcp's macros (text)",
        server: 0,
        tool: "fail",
        is_error: true,
    },
    Row {
        name: "fail, tool-envelope",
        server: 1,
        tool: "fail",
        is_error: true,
    },
    Row {
        name: "fail, rmcp's macros (envelope)",
        server: 0,
        tool: "fail_envelope",
        is_error: true,
    },
];

/// Calls per second of `CALLS_PER_ROUND` sequential calls of `tool`.
async fn round(client: &RunningService<RoleClient, ()>, tool: &'static str, is_error: bool) -> f64 {
    let arguments = json!({"text": "C-4821"}).as_object().unwrap().clone();
    let start = Instant::now();
    for _ in 0..CALLS_PER_ROUND {
        let request = CallToolRequestParams::new(tool).with_arguments(arguments.clone());
        let result = client.call_tool(request).await.expect("a result");
        assert_eq!(result.is_error, Some(is_error), "{tool}");
    }
    f64::from(CALLS_PER_ROUND) / start.elapsed().as_secs_f64()
}

fn median(values: &[f64]) -> f64 {
    common::median(&mut values.to_vec())
}

fn main() {
    let rounds = common::rounds(11);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let release = common::bench_servers();
    runtime.block_on(async {
        let servers = [
            common::connect(&release.join("rmcp_macros_server")).await,
            common::connect(&release.join("tool_envelope_server")).await,
        ];
        for row in &ROWS {
            round(&servers[row.server], row.tool, row.is_error).await;
        }
        let mut rates: Vec<Vec<f64>> = ROWS.iter().map(|_| Vec::new()).collect();
        for number in 0..rounds {
            let order: Vec<usize> = if number % 2 == 0 {
                (0..ROWS.len()).collect()
            } else {
                (0..ROWS.len()).rev().collect()
            };
            let mut line = format!("round {number:>2}:");
            for index in order {
                let row = &ROWS[index];
                let rate = round(&servers[row.server], row.tool, row.is_error).await;
                rates[index].push(rate);
                line += &format!("  {} {rate:.0}", row.tool);
            }
            println!("{line}");
        }
        println!("\nmedians over {rounds} rounds of {CALLS_PER_ROUND} calls:");
        for (row, rates) in ROWS.iter().zip(&rates) {
            println!("  {:<32} {:>7.0} calls/s", row.name, median(rates));
        }
        let ratio = |ours: usize, theirs: usize| {
            let per_round: Vec<f64> = rates[ours]
                .iter()
                .zip(&rates[theirs])
                .map(|(a, b)| a / b)
                .collect();
            let (low, high) = per_round
                .iter()
                .fold((f64::MAX, f64::MIN), |(low, high), r| {
                    (low.min(*r), high.max(*r))
                });
            format!("{:.2}x (rounds {low:.2}-{high:.2}x)", median(&per_round))
        };
        println!("\nmedian of the per-round ratios:");
        println!(
            "  3a echo, tool-envelope / rmcp's macros:            {}",
            ratio(1, 0)
        );
        println!(
            "  3b fail, tool-envelope / rmcp's macros (text):     {}",
            ratio(3, 2)
        );
        println!(
            "  3b fail, tool-envelope / rmcp's macros (envelope): {}",
            ratio(3, 4)
        );
        println!(
            "  3c rmcp's macros, envelope / text:                 {}",
            ratio(4, 2)
        );
        for server in servers {
            server.cancel().await.unwrap();
        }
    });
}
