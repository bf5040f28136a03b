//! Figure 6 of BENCHMARKS.md: the coordinator fanning out to 1,000 branches,
//! 10% of them failing, against joining the same futures by hand; the
//! report's content is checked on every run.
//!
//! `cargo bench --bench fan_out`

use std::time::Duration;

use criterion::{Criterion, Throughput};
use futures_util::future::join_all;
use tool_envelope::{ErrorEnvelope, coordinator::Coordinator, tool};

const BRANCHES: u64 = 1_000;

/// A branch's work: every tenth one fails, not retryably.
#[tool(read_only)]
async fn fetch(id: u64) -> Result<u64, ErrorEnvelope> {
    tokio::task::yield_now().await;
    if id.is_multiple_of(10) {
        return Err(ErrorEnvelope::permission(format!("source {id} is private")));
    }
    Ok(id)
}

async fn coordinated() -> usize {
    let mut coordinator = Coordinator::new();
    for id in 0..BRANCHES {
        coordinator = coordinator.branch(format!("source-{id}"), fetch(id));
    }
    let report = coordinator.run().await;
    assert_eq!(report.completed.len(), 900);
    assert_eq!(report.gaps.len(), 100);
    assert!(!report.is_complete());
    assert_eq!(report.gaps[0].branch, "source-0");
    assert_eq!(
        report.gaps[0].envelope().attempted_query(),
        Some(&serde_json::json!({"id": 0}))
    );
    report.completed.len()
}

async fn by_hand() -> usize {
    let results = join_all((0..BRANCHES).map(fetch)).await;
    results.iter().filter(|result| result.is_ok()).count()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut criterion = Criterion::default()
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut group = criterion.benchmark_group("fan_out_1000_branches_10pct_failing");
    group.throughput(Throughput::Elements(BRANCHES));
    group.bench_function("coordinator", |b| {
        b.iter(|| runtime.block_on(coordinated()));
    });
    group.bench_function("join_all_by_hand", |b| {
        b.iter(|| runtime.block_on(by_hand()));
    });
    group.finish();
    criterion.final_summary();
}
