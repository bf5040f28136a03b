//! Figure 5 of BENCHMARKS.md: retries at scale.
//!
//! - 10,000 concurrent async calls, each failing twice with a transient error
//!   and then succeeding, 10 ms base backoff without jitter: the wall time
//!   against the ideal (the sum of the sleeps: 10 + 20 = 30 ms), and the peak
//!   heap per pending retry.
//!   Next to it, the floor: the same burst retried by a hand-written loop of
//!   `tokio::time::sleep` around a plain async function — what tokio itself
//!   costs on this machine.
//! - A total outage with a shared retry budget: the tool calls made, against
//!   the first attempts.
//!
//! `cargo bench --bench retry_scale`; with `TOOL_ENVELOPE_BENCH_ROUNDS=21`,
//! instead of criterion's two runs one after the other, 21 alternating
//! rounds of the two bursts (the order reversed every other round) and the
//! median of the per-round ratios, which a neighbour's load on a shared
//! machine moves far less.

#[allow(dead_code)] // The alternating benches' helpers.
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use tool_envelope::{
    ErrorEnvelope,
    retry::{Backoff, Jitter, RetryBudget, RetryPolicy},
    tool,
};

/// Tracks the live heap and its peak.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live =
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed) + layout.size() as isize;
        PEAK.fetch_max(live, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CALLS: usize = 10_000;

/// Fails its first two attempts, then succeeds.
#[tool(read_only, skip(attempts))]
async fn flaky(id: u64, attempts: Arc<AtomicU32>) -> Result<u64, ErrorEnvelope> {
    if attempts.fetch_add(1, Ordering::Relaxed) < 2 {
        return Err(ErrorEnvelope::transient(
            "Rate limit hit on inventory service",
        ));
    }
    Ok(id)
}

static OUTAGE_CALLS: AtomicU64 = AtomicU64::new(0);

/// The dependency is down.
#[tool(read_only)]
async fn down(id: u64) -> Result<u64, ErrorEnvelope> {
    OUTAGE_CALLS.fetch_add(1, Ordering::Relaxed);
    let _ = id;
    Err(ErrorEnvelope::transient("Orders service returned 503"))
}

/// The plain function, for the hand-written floor.
async fn plain(id: u64, attempts: &AtomicU32) -> Result<u64, std::io::Error> {
    if attempts.fetch_add(1, Ordering::Relaxed) < 2 {
        return Err(std::io::Error::other("Rate limit hit on inventory service"));
    }
    Ok(id)
}

/// 10,000 concurrent calls retried by hand: a loop of sleeps, nothing else.
async fn burst_by_hand() -> Duration {
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(CALLS);
    for id in 0..CALLS as u64 {
        tasks.push(tokio::spawn(async move {
            let attempts = AtomicU32::new(0);
            let mut delay = Duration::from_millis(10);
            loop {
                match plain(id, &attempts).await {
                    Ok(value) => break value,
                    Err(_) => {
                        tokio::time::sleep(delay).await;
                        delay *= 2;
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    start.elapsed()
}

fn policy() -> RetryPolicy {
    RetryPolicy::default().max_attempts(3).backoff(
        Backoff::exponential(Duration::from_millis(10), Duration::from_secs(1))
            .jitter(Jitter::None),
    )
}

/// 10,000 concurrent flaky calls; returns the wall time.
async fn burst(policy: &RetryPolicy) -> Duration {
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(CALLS);
    for id in 0..CALLS as u64 {
        let policy = policy.clone();
        tasks.push(tokio::spawn(async move {
            let attempts = Arc::new(AtomicU32::new(0));
            let outcome = policy.retry(|| flaky(id, attempts.clone())).await;
            assert_eq!(outcome.result.unwrap(), id);
            assert_eq!(outcome.stats.attempts, 3);
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    start.elapsed()
}

fn report(runtime: &tokio::runtime::Runtime) {
    let policy = policy();
    runtime.block_on(burst(&policy)); // warm up
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let wall = runtime.block_on(burst(&policy));
    let peak = PEAK.load(Ordering::Relaxed) - before;
    runtime.block_on(burst_by_hand()); // warm up
    let floor = runtime.block_on(burst_by_hand());
    println!(
        "\n10,000 concurrent calls, 2 transient failures each, 10 ms base backoff, no jitter:"
    );
    for (name, wall) in [
        ("RetryPolicy + #[tool]", wall),
        ("hand-written sleep loop", floor),
    ] {
        println!(
            "  {name:<24} {:.1} ms, ideal 30 ms: {:.2}x",
            wall.as_secs_f64() * 1e3,
            wall.as_secs_f64() / 0.030
        );
    }
    println!(
        "  peak heap {} KiB: {} bytes per pending retry",
        peak / 1024,
        peak / CALLS as isize
    );
    let attempts = Arc::new(AtomicU32::new(0));
    let call = || flaky(0, attempts.clone());
    println!(
        "  futures: #[tool] {} bytes, the retry loop's {} bytes; by hand {} bytes",
        std::mem::size_of_val(&call()),
        std::mem::size_of_val(&policy.retry(call)),
        std::mem::size_of_val(&plain(0, &attempts)),
    );

    let budget = RetryBudget::new(100.0);
    let outage = policy.clone().budget(&budget);
    OUTAGE_CALLS.store(0, Ordering::Relaxed);
    let reasons = runtime.block_on(async {
        let mut tasks = Vec::with_capacity(CALLS);
        for id in 0..CALLS as u64 {
            let outage = outage.clone();
            tasks.push(tokio::spawn(async move {
                outage.retry(|| down(id)).await.result.unwrap_err().reason
            }));
        }
        let mut reasons = std::collections::BTreeMap::new();
        for task in tasks {
            *reasons.entry(task.await.unwrap().as_str()).or_insert(0) += 1;
        }
        reasons
    });
    let calls = OUTAGE_CALLS.load(Ordering::Relaxed);
    println!("total outage, 10,000 concurrent calls sharing a 100-token retry budget:");
    println!(
        "  {calls} tool calls for {CALLS} first attempts: {:.3}x; escalations {reasons:?}\n",
        calls as f64 / CALLS as f64
    );
}

/// `rounds` alternating rounds of the two bursts: each round's wall times
/// and ratio, then the medians.
fn alternating(runtime: &tokio::runtime::Runtime, rounds: usize) {
    let policy = policy();
    runtime.block_on(burst(&policy));
    runtime.block_on(burst_by_hand());
    let (mut ours, mut by_hand, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (a, b) = if round % 2 == 0 {
            let a = runtime.block_on(burst(&policy));
            (a, runtime.block_on(burst_by_hand()))
        } else {
            let b = runtime.block_on(burst_by_hand());
            (runtime.block_on(burst(&policy)), b)
        };
        let (a, b) = (a.as_secs_f64() * 1e3, b.as_secs_f64() * 1e3);
        println!(
            "round {round:>2}: RetryPolicy + #[tool] {a:.1} ms, by hand {b:.1} ms: {:.2}x",
            a / b
        );
        ours.push(a);
        by_hand.push(b);
        ratios.push(a / b);
    }
    let low = ratios.iter().copied().fold(f64::MAX, f64::min);
    let high = ratios.iter().copied().fold(f64::MIN, f64::max);
    println!(
        "\nmedians over {rounds} rounds: RetryPolicy + #[tool] {:.1} ms, by hand {:.1} ms; \
         median of the per-round ratios {:.2}x (rounds {low:.2}-{high:.2}x)",
        common::median(&mut ours),
        common::median(&mut by_hand),
        common::median(&mut ratios)
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let rounds = std::env::var("TOOL_ENVELOPE_BENCH_ROUNDS").ok();
    if let Some(rounds) = rounds.and_then(|rounds| rounds.parse().ok()) {
        alternating(&runtime, rounds);
        return;
    }
    report(&runtime);
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("retry_scale");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.throughput(Throughput::Elements(CALLS as u64));
    let policy = policy();
    group.bench_function("retry_policy_and_tool", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| runtime.block_on(burst(&policy)))
                .sum()
        });
    });
    group.bench_function("hand_written_sleep_loop", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| runtime.block_on(burst_by_hand()))
                .sum()
        });
    });
    group.finish();
    criterion.final_summary();
}
