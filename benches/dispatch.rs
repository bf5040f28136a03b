//! Figure 3 of BENCHMARKS.md: `tools/call` end to end over stdio, 10,000
//! sequential calls from one rmcp client, for the same trivial tool served by
//! rmcp's own macros and by tool-envelope's `ToolSet` on rmcp — for a tool
//! that succeeds and for one that fails; and, in rmcp's own server, a failing
//! tool that returns a `String` against one that returns an error envelope.
//!
//! `cargo bench --bench dispatch --features rmcp`
//! (builds `benches/servers` in release mode first).

#[allow(dead_code)] // The alternating benches' helpers.
mod common;

use std::time::Duration;

use common::{bench_servers, calls, connect, group};
use criterion::Criterion;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let release = bench_servers();
    let servers = [
        ("rmcp_macros", release.join("rmcp_macros_server")),
        ("tool_envelope", release.join("tool_envelope_server")),
    ];
    let mut criterion = Criterion::default().configure_from_args();
    for (tool, is_error) in [("echo", false), ("fail", true)] {
        let mut group = group(&mut criterion, &format!("dispatch_{tool}"));
        for (name, binary) in &servers {
            let client = runtime.block_on(connect(binary));
            group.bench_function(*name, |b| {
                b.iter_custom(|iterations| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        total += runtime.block_on(calls(&client, tool, is_error));
                    }
                    total
                });
            });
            runtime.block_on(client.cancel()).unwrap();
        }
        group.finish();
    }
    // One rmcp server, one failing tool written two ways: a `String` error
    // (rmcp's text result) and an error envelope (this crate's
    // `IntoCallToolResult`, with `admit_envelopes` on the router).
    let mut group = group(&mut criterion, "dispatch_rmcp_native_fail");
    let client = runtime.block_on(connect(&servers[0].1));
    for (name, tool) in [("string_error", "fail"), ("envelope", "fail_envelope")] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    total += runtime.block_on(calls(&client, tool, true));
                }
                total
            });
        });
    }
    runtime.block_on(client.cancel()).unwrap();
    group.finish();
    criterion.final_summary();
}
