//! The success path of a `#[tool]` call allocates nothing: the arguments are
//! captured into a reused buffer and kept inline, and nothing else is built
//! unless the call fails. Counted by an allocator that counts per thread, so
//! that the other tests of this binary cannot disturb the count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use serde::Serialize;
use tool_envelope::{ErrorEnvelope, Partial, tool};

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Counts the allocations of the current thread.
struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The allocations `f` makes on this thread.
fn allocations<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = ALLOCATIONS.with(Cell::get);
    let value = f();
    (value, ALLOCATIONS.with(Cell::get) - before)
}

#[derive(Debug, Clone, Copy, Serialize)]
enum Mode {
    Fast,
}

/// A look-up, as in the benchmarks.
#[tool(read_only, local)]
fn lookup(name: String, count: u64, mode: Mode) -> Result<u64, ErrorEnvelope> {
    Ok(name.len() as u64 + count + mode as u64)
}

/// The same, async, with a collector.
#[tool(read_only)]
async fn lookup_async(name: String, count: u64, found: Partial<u64>) -> Result<u64, ErrorEnvelope> {
    let _ = found;
    Ok(name.len() as u64 + count)
}

const NAME: &str = "customer-C-4821-orders-shipped-x";

#[test]
fn a_successful_call_allocates_nothing() {
    // The first call on a thread sets up its capture buffer.
    let _ = lookup(NAME.to_owned(), 7, Mode::Fast);
    for _ in 0..100 {
        let name = NAME.to_owned();
        let (result, count) = allocations(|| lookup(name, 7, Mode::Fast));
        assert_eq!(result.unwrap(), 39);
        assert_eq!(
            count, 0,
            "a successful #[tool] call allocated {count} times"
        );
    }
}

#[test]
fn a_successful_async_call_allocates_nothing() {
    let poll_once = |name: String, found: Partial<u64>| {
        let future = pin!(lookup_async(name, 7, found));
        match future.poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(result) => result,
            Poll::Pending => panic!("the tool does not wait"),
        }
    };
    let _ = poll_once(NAME.to_owned(), Partial::new());
    for _ in 0..100 {
        let (name, found) = (NAME.to_owned(), Partial::new());
        let (result, count) = allocations(|| poll_once(name, found));
        assert_eq!(result.unwrap(), 39);
        assert_eq!(
            count, 0,
            "a successful async #[tool] call allocated {count} times"
        );
    }
}

#[test]
fn the_counter_counts() {
    // A check of the check: an allocation on this thread is seen.
    let (_, count) = allocations(|| std::hint::black_box(Box::new(1u64)));
    assert_eq!(count, 1);
}

/// A served call's future is moved several times before it first runs —
/// rmcp wraps it in its own futures and spawns it — and each move copies
/// all of it. The rare ways of a call (a question to a person, a ticket, a
/// kept escalation) and the retry loop are boxed, so that every call does
/// not copy them: 7,952 bytes before (BENCHMARKS figure 10, 2026-12-03),
/// when they made half of a served call's instructions.
#[test]
fn a_tool_set_call_future_stays_small() {
    use tool_envelope::mcp::{ToolContext, ToolSet};
    let tools = ToolSet::new();
    let call = tools.call_with("echo", serde_json::json!({}), ToolContext::detached());
    let size = std::mem::size_of_val(&call);
    assert!(size <= 2048, "a call's future is {size} bytes");
}

/// Every pending call under a retry policy carries the loop's state, and
/// 10,000 of them waiting on their timers are all touched at each tick:
/// what only a loop that failed needs (its backoff, history, gathered
/// results) is made at the first failure, out of the loop's future
/// (it added 264 bytes in a test build before; in the bench's release
/// build, BENCHMARKS figure 5, the loop's future went 504 → 352 bytes).
#[test]
fn a_retry_loop_adds_little_to_its_attempts_future() {
    let policy = tool_envelope::retry::RetryPolicy::default();
    let attempt = || lookup_async(NAME.to_owned(), 7, Partial::new());
    let tool = std::mem::size_of_val(&attempt());
    let looped = std::mem::size_of_val(&policy.retry(attempt));
    assert!(
        looped - tool <= 160,
        "the retry loop adds {} bytes to a {tool}-byte attempt",
        looped - tool
    );
}

/// A retry loop's backoff is made at its first failure: a call that
/// succeeds at once clones no schedule and seeds no random source.
#[test]
fn a_call_that_succeeds_at_once_under_a_retry_policy_allocates_nothing() {
    use std::time::Duration;
    use tool_envelope::retry::{Backoff, RetryPolicy};
    let schedule = vec![Duration::from_millis(5), Duration::from_millis(50)];
    let policies = [
        RetryPolicy::default(),
        RetryPolicy::default().backoff(Backoff::from_iter(schedule)),
    ];
    let _ = lookup(NAME.to_owned(), 7, Mode::Fast);
    for policy in &policies {
        for _ in 0..100 {
            let name = NAME.to_owned();
            let (outcome, count) = allocations(|| {
                let mut name = Some(name);
                policy.retry_blocking(|| lookup(name.take().unwrap_or_default(), 7, Mode::Fast))
            });
            assert_eq!(outcome.result.unwrap(), 39);
            assert_eq!(outcome.stats.attempts, 1);
            assert_eq!(
                count, 0,
                "{policy:?}: a first-time success allocated {count} times"
            );
        }
    }
}
