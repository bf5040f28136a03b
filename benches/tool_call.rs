//! Figures 1 and 2 of BENCHMARKS.md: what `#[tool]` costs a call.
//!
//! 1. The success path of a tool with three arguments (a 32-byte `String`, a
//!    `u64`, a small enum), against the plain function and against the
//!    hand-written equivalent that captures the arguments with
//!    `serde_json::to_value` before the call and maps the error after it; with
//!    the heap allocations of each, counted by a global allocator.
//! 2. The error path: building and serializing the envelope of a failed call,
//!    against a hand-written `serde_json::json!` of the same envelope.
//!
//! `cargo bench --bench tool_call`
//!
//! Counted in instructions instead: `TOOL_ENVELOPE_BENCH_CALLS=<path>:<n>`
//! (`path` one of `success`, `success-hand`, `error`, `error-hand`) makes the
//! binary call that variant `n` times and exit, for `valgrind
//! --tool=callgrind`: the difference between two counts, `n` and `0`, divided
//! by `n`, is the variant's instructions a call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group};
use serde::Serialize;
use serde_json::{Value, json};
use tool_envelope::{ErrorEnvelope, ToolError, tool};

/// Counts every allocation of the process.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[derive(Debug, Clone, Copy, Serialize)]
enum Mode {
    Fast,
    Safe,
}

#[derive(Debug, thiserror::Error, ToolError)]
enum LookupError {
    #[error("Connection to orders DB timed out after {0}s")]
    #[tool_error(
        transient,
        reason = "DB_TIMEOUT",
        alternatives("Retry against the read replica")
    )]
    Timeout(u64),
}

/// The body every variant runs: cheap, so that the wrapping is what is measured.
fn body(name: &str, count: u64, mode: Mode) -> Result<u64, LookupError> {
    if count == 0 {
        return Err(LookupError::Timeout(5));
    }
    Ok(name.len() as u64 + count + mode as u64)
}

/// (a) The plain function.
#[inline(never)]
fn plain(name: String, count: u64, mode: Mode) -> Result<u64, LookupError> {
    body(&name, count, mode)
}

/// The same function as a tool.
#[inline(never)]
#[tool(read_only, local)]
fn tooled(name: String, count: u64, mode: Mode) -> Result<u64, LookupError> {
    body(&name, count, mode)
}

/// (b) What a user would write by hand: capture with `to_value` before the
/// call, map the error into an envelope after it.
#[inline(never)]
fn hand_written(name: String, count: u64, mode: Mode) -> Result<u64, Value> {
    let query = json!({
        "name": serde_json::to_value(&name).unwrap(),
        "count": serde_json::to_value(count).unwrap(),
        "mode": serde_json::to_value(mode).unwrap(),
    });
    body(&name, count, mode).map_err(|error| {
        json!({
            "isError": true,
            "errorCategory": "transient",
            "isRetryable": true,
            "message": error.to_string(),
            "attempted_query": query,
            "alternatives": ["Retry against the read replica"],
            "reason": "DB_TIMEOUT",
            "tool": "hand_written",
        })
    })
}

const NAME: &str = "customer-C-4821-orders-shipped-x"; // 32 bytes

/// Allocations per call of `f`, averaged over many calls.
fn allocations_per_call(mut f: impl FnMut()) -> f64 {
    const CALLS: u64 = 10_000;
    f();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..CALLS {
        f();
    }
    (ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / CALLS as f64
}

/// Prints the allocation counts that BENCHMARKS.md records.
fn report_allocations() {
    // The 32-byte name is allocated by the caller in every variant: count it out.
    let baseline = allocations_per_call(|| {
        black_box(NAME.to_owned());
    });
    let success = [
        (
            "plain",
            allocations_per_call(|| {
                black_box(plain(NAME.to_owned(), 7, Mode::Fast)).ok();
            }),
        ),
        (
            "#[tool]",
            allocations_per_call(|| {
                black_box(tooled(NAME.to_owned(), 7, Mode::Fast)).ok();
            }),
        ),
        (
            "hand-written",
            allocations_per_call(|| {
                black_box(hand_written(NAME.to_owned(), 7, Mode::Fast)).ok();
            }),
        ),
    ];
    println!("\nheap allocations per successful call (besides the caller's argument):");
    for (name, count) in success {
        println!("  {name:<14} {:.2}", count - baseline);
    }
    let failure = [
        (
            "#[tool]",
            allocations_per_call(|| {
                let envelope = tooled(NAME.to_owned(), 0, Mode::Safe).unwrap_err();
                black_box(serde_json::to_string(&envelope).unwrap());
            }),
        ),
        (
            "hand-written",
            allocations_per_call(|| {
                let envelope = hand_written(NAME.to_owned(), 0, Mode::Safe).unwrap_err();
                black_box(serde_json::to_string(&envelope).unwrap());
            }),
        ),
    ];
    println!("heap allocations per failed call, envelope serialized:");
    for (name, count) in failure {
        println!("  {name:<14} {:.2}", count - baseline);
    }
    println!();
}

fn success_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("success_path");
    group.bench_function("plain", |b| {
        b.iter(|| {
            plain(
                black_box(NAME.to_owned()),
                black_box(7),
                black_box(Mode::Fast),
            )
        });
    });
    group.bench_function("tool_macro", |b| {
        b.iter(|| {
            tooled(
                black_box(NAME.to_owned()),
                black_box(7),
                black_box(Mode::Fast),
            )
        });
    });
    group.bench_function("hand_written", |b| {
        b.iter(|| {
            hand_written(
                black_box(NAME.to_owned()),
                black_box(7),
                black_box(Mode::Fast),
            )
        });
    });
    group.finish();
}

fn error_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("error_path");
    group.bench_function("tool_macro", |b| {
        b.iter(|| {
            let envelope = tooled(
                black_box(NAME.to_owned()),
                black_box(0),
                black_box(Mode::Safe),
            )
            .unwrap_err();
            serde_json::to_string(&envelope).unwrap()
        });
    });
    group.bench_function("hand_written_json", |b| {
        b.iter(|| {
            let envelope = hand_written(
                black_box(NAME.to_owned()),
                black_box(0),
                black_box(Mode::Safe),
            )
            .unwrap_err();
            serde_json::to_string(&envelope).unwrap()
        });
    });
    group.finish();
}

criterion_group!(benches, success_path, error_path);

/// Calls one variant `n` times, for an instruction count under callgrind.
fn count(spec: &str) {
    let (path, n) = spec
        .split_once(':')
        .expect("TOOL_ENVELOPE_BENCH_CALLS=<path>:<n>");
    let n: u64 = n.parse().expect("a number of calls");
    for _ in 0..n {
        match path {
            "success" => {
                black_box(tooled(black_box(NAME.to_owned()), black_box(7), Mode::Fast)).ok();
            }
            "success-hand" => {
                black_box(hand_written(
                    black_box(NAME.to_owned()),
                    black_box(7),
                    Mode::Fast,
                ))
                .ok();
            }
            "error" => {
                let envelope = tooled(black_box(NAME.to_owned()), black_box(0), Mode::Safe);
                black_box(serde_json::to_string(&envelope.unwrap_err()).unwrap());
            }
            "error-hand" => {
                let envelope = hand_written(black_box(NAME.to_owned()), black_box(0), Mode::Safe);
                black_box(serde_json::to_string(&envelope.unwrap_err()).unwrap());
            }
            other => panic!("no variant {other:?}: success, success-hand, error, error-hand"),
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var("TOOL_ENVELOPE_BENCH_CALLS") {
        return count(&spec);
    }
    report_allocations();
    // The shape of the envelopes compared in the error path.
    let ours: Value =
        serde_json::to_value(tooled(NAME.to_owned(), 0, Mode::Safe).unwrap_err()).unwrap();
    let theirs = hand_written(NAME.to_owned(), 0, Mode::Safe).unwrap_err();
    let keys = |value: &Value| {
        value
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(keys(&ours), keys(&theirs), "{ours}\n{theirs}");
    let _ = ErrorEnvelope::json_schema;
    benches();
    Criterion::default().configure_from_args().final_summary();
}
