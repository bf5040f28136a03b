//! Load through the server: 1,000 concurrent calls over one rmcp connection —
//! successes, failures, retries, guard blocks, partial results — every answer
//! matches its request, every partial result reaches its escalation, and
//! memory does not grow with the number of calls: a leak of 16 bytes a call
//! is caught, which a second test proves by injecting one.
#![cfg(feature = "rmcp")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use tool_envelope::mcp::ToolSet;
use tool_envelope::{
    ErrorEnvelope, Partial,
    guard::{Blocked, Guards, ToolCall},
    retry::RetryPolicy,
    tool,
};

/// Counts the bytes alive on the heap.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Echoes its request id.
#[tool(read_only)]
async fn echo(id: u64) -> Result<u64, ErrorEnvelope> {
    tokio::task::yield_now().await;
    Ok(id)
}

/// Always refuses, by a business rule.
#[tool(read_only)]
async fn refuse(id: u64) -> Result<u64, ErrorEnvelope> {
    Err(ErrorEnvelope::business(format!(
        "request {id} is against policy"
    )))
}

static FLAKES: AtomicU64 = AtomicU64::new(0);

/// Fails its first attempt with a transient error, then succeeds.
#[tool(read_only)]
async fn flaky(id: u64, attempts: Partial<u64>) -> Result<u64, ErrorEnvelope> {
    attempts.push(id);
    if attempts.len() == 1 {
        FLAKES.fetch_add(1, Ordering::Relaxed);
        return Err(ErrorEnvelope::transient("connection reset"));
    }
    Ok(id)
}

/// Gathers three items per attempt, then the provider gives out.
#[tool(read_only)]
async fn gather(id: u64, items: Partial<String>) -> Result<Vec<String>, ErrorEnvelope> {
    let start = items.len();
    for i in start..start + 3 {
        items.push(format!("{id}-{i}"));
    }
    Err(ErrorEnvelope::transient(format!(
        "provider gave out on {id}"
    )))
}

/// Blocked when `id` is odd.
#[tool]
async fn guarded(id: u64) -> Result<u64, ErrorEnvelope> {
    Ok(id)
}

/// Whether every call leaks 16 bytes: the injected leak the check must catch.
static LEAK: AtomicBool = AtomicBool::new(false);

fn tools() -> ToolSet {
    ToolSet::new()
        .tool::<echo>()
        .tool::<refuse>()
        .tool::<flaky>()
        .tool::<gather>()
        .tool::<guarded>()
        .guards(
            Guards::new()
                .for_all(|_: &ToolCall| {
                    if LEAK.load(Ordering::Relaxed) {
                        Box::leak(Box::new([0u8; 16]));
                    }
                    Ok(())
                })
                .for_tool("guarded", |call: &ToolCall| {
                    let id: u64 = call.require("id")?;
                    if id % 2 == 1 {
                        return Err(Blocked::new(format!("odd request {id} needs a human")));
                    }
                    Ok(())
                }),
        )
        .retry(
            RetryPolicy::default()
                .max_attempts(3)
                .constant(Duration::from_millis(5)),
        )
}

/// One round: 1,000 concurrent calls, each checked against its request.
async fn round(client: &rmcp::service::RunningService<rmcp::RoleClient, ()>, base: u64) {
    let mut calls = FuturesUnordered::new();
    for id in base..base + 1_000 {
        let tool = ["echo", "refuse", "flaky", "gather", "guarded"][(id % 5) as usize];
        let request = CallToolRequestParams::new(tool)
            .with_arguments(json!({"id": id}).as_object().unwrap().clone());
        calls.push(async move { (tool, id, client.call_tool(request).await) });
    }
    let mut answered = 0;
    while let Some((tool, id, result)) = calls.next().await {
        let result = result.unwrap_or_else(|e| panic!("{tool} {id}: {e}"));
        let structured = result.structured_content.clone().unwrap();
        match tool {
            "echo" | "flaky" => assert_eq!(structured, json!({"result": id}), "{tool} {id}"),
            "refuse" => {
                assert_eq!(structured["errorCategory"], "business");
                assert_eq!(
                    structured["message"],
                    format!("request {id} is against policy")
                );
            }
            "gather" => {
                assert_eq!(structured["escalation"]["reason"], "retries_exhausted");
                let items: Vec<&str> = structured["partial_results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                let expected: Vec<String> = (0..9).map(|i| format!("{id}-{i}")).collect();
                assert_eq!(
                    items, expected,
                    "every partial result of {id} reached its escalation"
                );
            }
            "guarded" if id % 2 == 1 => {
                assert_eq!(structured["escalation"]["reason"], "blocked_by_guard");
                assert_eq!(structured["attempted_query"], json!({"id": id}));
            }
            "guarded" => assert_eq!(structured, json!({"result": id})),
            _ => unreachable!(),
        }
        answered += 1;
    }
    assert_eq!(answered, 1_000);
}

/// Rounds before the measurement starts: buffers and caches warm up.
const WARM_UP: usize = 4;
/// Rounds of 1,000 calls in all.
const ROUNDS: usize = 40;
/// The most the live heap may grow over the 35 measured rounds, by its trend.
/// Without a leak the trend is flat: round to round the heap moves by a few
/// KB either way. A leak of 16 bytes a call grows it 16,000 bytes every
/// round, 16 × 35,000 = 560,000 bytes in all.
const TOLERANCE: isize = 256 * 1024;
/// The most it may grow in all, one-off steps included: now and then a
/// table of rmcp's or tokio's doubles as the peak of concurrent calls
/// varies, a step of about 400 KB that happens once, not every round.
const STEPS: isize = 2 * 1024 * 1024;

const _: () = assert!(
    16 * ((ROUNDS - WARM_UP - 1) * 1_000) as isize > 2 * TOLERANCE,
    "a 16-byte-a-call leak must exceed the tolerance, with room to spare"
);

/// The tests share the counting allocator: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the rounds against a fresh server and returns the live heap after each.
async fn measure() -> Vec<isize> {
    FLAKES.store(0, Ordering::Relaxed);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = tokio::spawn(async move {
        let running = tools()
            .serve(server_io)
            .await
            .expect("the server initializes");
        let _ = running.waiting().await;
    });
    let client = ().serve(client_io).await.expect("the client initializes");
    let mut live = Vec::new();
    for r in 0..ROUNDS as u64 {
        round(&client, r * 1_000).await;
        live.push(LIVE.load(Ordering::Relaxed));
    }
    assert_eq!(
        FLAKES.load(Ordering::Relaxed),
        ROUNDS as u64 * 200,
        "every flaky call was retried locally once"
    );
    client.cancel().await.unwrap();
    server.abort();
    live
}

/// How much the live heap grew over the measured rounds, by its trend: the
/// mean round-to-round change, its 4 largest and 4 smallest left out, times
/// the rounds. A one-off step is one change among 35 and is left out; a
/// leak is in every change and counts in full.
fn drift(live: &[isize]) -> isize {
    const TRIM: usize = 4;
    let mut changes: Vec<isize> = live[WARM_UP..].windows(2).map(|w| w[1] - w[0]).collect();
    changes.sort_unstable();
    let kept = &changes[TRIM..changes.len() - TRIM];
    kept.iter().sum::<isize>() * changes.len() as isize / kept.len() as isize
}

/// How much it grew in all over the measured rounds.
fn total(live: &[isize]) -> isize {
    live[ROUNDS - 1] - live[WARM_UP]
}

/// The rounds on a runtime of their own, one test at a time.
fn measure_alone(leak: bool) -> Vec<isize> {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    LEAK.store(leak, Ordering::Relaxed);
    let live = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(measure());
    LEAK.store(false, Ordering::Relaxed);
    live
}

#[test]
fn a_thousand_concurrent_calls_round_after_round() {
    let live = measure_alone(false);
    eprintln!("live bytes after each round: {live:?}");
    assert!(
        drift(&live) <= TOLERANCE,
        "the live heap grew by {} bytes over {} rounds, by its trend: {live:?}",
        drift(&live),
        ROUNDS - WARM_UP - 1
    );
    assert!(
        total(&live) <= STEPS,
        "the live heap grew by {} bytes in all: {live:?}",
        total(&live)
    );
}

#[test]
fn the_leak_check_catches_sixteen_bytes_a_call() {
    let live = measure_alone(true);
    eprintln!("live bytes after each round, leaking: {live:?}");
    assert!(
        drift(&live) > TOLERANCE,
        "an injected leak of 16 bytes a call went unnoticed: {live:?}"
    );
}

#[test]
fn the_trend_ignores_a_one_off_step_and_sees_a_leak() {
    // The arithmetic of the check, on made-up rounds: a 400 KB step and
    // ±9 KB of noise without a leak; 16 bytes a call with one.
    let stepping: Vec<isize> = (0..ROUNDS)
        .map(|r| 1_000_000 + if r > 20 { 400_000 } else { 0 } + (r % 2) as isize * 9_000)
        .collect();
    assert!(drift(&stepping) <= TOLERANCE, "{}", drift(&stepping));
    let leaking: Vec<isize> = (0..ROUNDS)
        .map(|r| 1_000_000 + r as isize * 16 * 1_000 + (r % 2) as isize * 9_000)
        .collect();
    assert!(drift(&leaking) > TOLERANCE, "{}", drift(&leaking));
}
