//! Recover locally, escalate the rest: the retry loop as a caller sees it.
//! Time comes from tokio's paused clock, so every delay is exact.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use tool_envelope::{
    ErrorCategory, ErrorEnvelope, EscalationReason, Found, Partial, ToolError,
    retry::{Backoff, Jitter, RetryAction, RetryBudget, RetryPolicy, Sleeper},
    tool,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A constant, jitter-free policy: every delay is known in advance.
fn steady(delay_ms: u64) -> RetryPolicy {
    RetryPolicy::default().constant(ms(delay_ms))
}

#[derive(Debug, thiserror::Error, ToolError)]
enum InventoryError {
    #[error("Rate limit hit on inventory service")]
    #[tool_error(transient)]
    RateLimited,
    #[error("Inventory busy, retry in {0:?}")]
    #[tool_error(transient)]
    Busy(#[tool_error(retry_after)] Duration),
    #[error("Access denied to inventory admin")]
    #[tool_error(permission, alternatives("Request the inventory-admin role"))]
    Denied,
}

/// Reads stock, failing the first `fail` calls.
#[tool(read_only, skip(calls))]
async fn stock(sku: String, calls: Arc<AtomicU32>, fail: u32) -> Result<u32, InventoryError> {
    let n = calls.fetch_add(1, Ordering::SeqCst);
    if n < fail {
        return Err(InventoryError::RateLimited);
    }
    Ok(sku.len() as u32)
}

#[tokio::test(start_paused = true)]
async fn a_transient_fault_is_recovered_locally() {
    let calls = Arc::new(AtomicU32::new(0));
    let start = Instant::now();
    let outcome = steady(10)
        .retry(|| stock("A-1".into(), calls.clone(), 2))
        .await;
    assert_eq!(outcome.result.unwrap(), 3);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(outcome.stats.attempts, 3);
    assert_eq!(outcome.stats.delays(), [ms(10), ms(10)]);
    assert_eq!(outcome.stats.slept, ms(20));
    assert_eq!(start.elapsed(), ms(20));
    assert_eq!(outcome.stats.history.len(), 2);
    assert_eq!(outcome.stats.history[0].category, ErrorCategory::Transient);
    assert_eq!(
        outcome.stats.history[0].message,
        "Rate limit hit on inventory service"
    );
}

#[tokio::test(start_paused = true)]
async fn a_success_returns_at_once_with_its_statistics() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(10)
        .retry(|| stock("A-1".into(), calls.clone(), 0))
        .await;
    assert!(outcome.is_ok());
    assert_eq!(outcome.stats.attempts, 1);
    assert_eq!(outcome.stats.slept, Duration::ZERO);
    assert!(outcome.stats.history.is_empty());
}

/// Reads the admin view; always denied.
#[tool(read_only, skip(calls))]
async fn admin_view(calls: Arc<AtomicU32>) -> Result<u32, InventoryError> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(InventoryError::Denied)
}

#[tokio::test(start_paused = true)]
async fn a_permission_error_is_never_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = RetryPolicy::default()
        .max_attempts(10)
        .retry(|| admin_view(calls.clone()))
        .await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the tool runs exactly once"
    );
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::NonRetryable);
    assert_eq!(escalation.attempts, 1);
    assert_eq!(escalation.envelope.category(), ErrorCategory::Permission);
    assert_eq!(
        escalation.alternatives(),
        ["Request the inventory-admin role"]
    );
    assert_eq!(escalation.envelope.tool(), Some("admin_view"));
    assert_eq!(outcome.stats.slept, Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_fault_that_never_clears_stops_at_the_cap_with_exponential_delays() {
    let calls = Arc::new(AtomicU32::new(0));
    let policy = RetryPolicy::default()
        .max_attempts(4)
        .backoff(Backoff::exponential(ms(100), ms(300)).jitter(Jitter::None));
    let start = Instant::now();
    let outcome = policy
        .retry(|| stock("A-1".into(), calls.clone(), u32::MAX))
        .await;
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(outcome.stats.delays(), [ms(100), ms(200), ms(300)]);
    assert_eq!(start.elapsed(), ms(600));
    assert_eq!(outcome.stats.elapsed, ms(600));
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::RetriesExhausted);
    assert_eq!(escalation.attempts, 4);
    assert_eq!(escalation.elapsed, ms(600));
    assert_eq!(
        escalation.attempted_query(),
        Some(&json!({"sku": "A-1", "fail": u32::MAX}))
    );
}

/// Always busy, with the server's hint.
#[tool(idempotent, skip(calls))]
async fn busy(hint_ms: u64, calls: Arc<AtomicU32>) -> Result<(), InventoryError> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(InventoryError::Busy(ms(hint_ms)))
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_hint_is_honoured_and_clamped() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(10).retry(|| busy(2_000, calls.clone())).await;
    assert_eq!(outcome.stats.delays(), [ms(2_000), ms(2_000)]);

    let outcome = steady(10)
        .max_retry_after(ms(5_000))
        .retry(|| busy(60_000, calls.clone()))
        .await;
    assert_eq!(outcome.stats.delays(), [ms(5_000), ms(5_000)]);
    assert_eq!(
        outcome.result.unwrap_err().envelope.retry_after(),
        Some(ms(60_000))
    );
}

#[tokio::test(start_paused = true)]
async fn a_delay_that_would_cross_the_deadline_is_not_slept() {
    let calls = Arc::new(AtomicU32::new(0));
    let start = Instant::now();
    let outcome = steady(400)
        .max_attempts(10)
        .deadline(ms(1_000))
        .retry(|| stock("A-1".into(), calls.clone(), u32::MAX))
        .await;
    // Attempts at 0 and 400 ms; at 800 ms the next 400 ms would reach the deadline.
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(start.elapsed(), ms(800));
    assert_eq!(outcome.stats.elapsed, ms(800));
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::DeadlineExceeded);
    assert_eq!(escalation.elapsed, ms(800));
    assert!(
        escalation
            .detail
            .as_deref()
            .unwrap()
            .contains("would cross the 1000 ms deadline")
    );
}

/// Hangs far longer than anyone waits.
#[tool(read_only, skip(calls))]
async fn hang(calls: Arc<AtomicU32>) -> Result<(), InventoryError> {
    if calls.fetch_add(1, Ordering::SeqCst) == 0 {
        return Err(InventoryError::RateLimited);
    }
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_deadline_cuts_off_an_attempt_still_running() {
    let calls = Arc::new(AtomicU32::new(0));
    let start = Instant::now();
    let outcome = steady(100)
        .deadline(ms(1_000))
        .retry(|| hang(calls.clone()))
        .await;
    assert_eq!(start.elapsed(), ms(1_000));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::DeadlineExceeded);
    // The last envelope keeps its pillars: the tool and what was attempted.
    assert_eq!(escalation.envelope.tool(), Some("hang"));
    assert_eq!(escalation.attempted_query(), Some(&json!({})));
    assert_eq!(outcome.stats.history.len(), 2);
}

/// Refunds an order: the first attempt is refused before anything is
/// done (not applied), the next hangs past the deadline.
#[tool(destructive, skip(calls))]
async fn refund_then_hang(calls: Arc<AtomicU32>) -> Result<(), ErrorEnvelope> {
    if calls.fetch_add(1, Ordering::SeqCst) == 0 {
        return Err(ErrorEnvelope::transient("throttled: nothing charged").with_not_applied(true));
    }
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(())
}

/// The attempt the deadline cut off may have taken effect, whatever the one
/// before proved of itself: the escalation does not say `NOT_APPLIED`.
#[tokio::test(start_paused = true)]
async fn an_attempt_cut_off_at_the_deadline_is_not_said_not_applied() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(100)
        .deadline(ms(1_000))
        .retry(|| refund_then_hang(calls.clone()))
        .await;
    assert_eq!(calls.load(Ordering::SeqCst), 2, "retried once: not applied");
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::DeadlineExceeded);
    assert!(
        !escalation.envelope.not_applied(),
        "{:?}",
        escalation.envelope
    );
    assert_ne!(
        escalation.envelope.reason(),
        Some(tool_envelope::reasons::NOT_APPLIED)
    );
    let wire = serde_json::to_value(&escalation).unwrap();
    assert_eq!(wire["isRetryable"], false, "{wire}");
    assert_ne!(
        wire["reason"],
        tool_envelope::reasons::NOT_APPLIED,
        "{wire}"
    );
    // Nor is its envelope retryable in the process: an outer loop it
    // reaches does not refund again.
    assert!(
        !escalation.envelope.is_retryable(),
        "{:?}",
        escalation.envelope
    );
    assert_eq!(
        escalation.envelope.reason(),
        Some(tool_envelope::reasons::MAY_HAVE_TAKEN_EFFECT)
    );
    // The attempt's record says what its envelope says.
    let cut = outcome.stats.history.last().unwrap();
    assert_eq!(cut.retryable, escalation.envelope.is_retryable());
    let before = calls.load(Ordering::SeqCst);
    let outer = steady(100)
        .deadline(ms(10_000))
        .retry(|| {
            let calls = calls.clone();
            async move {
                let inner = steady(100).deadline(ms(1_000));
                let outcome = inner.retry(|| refund_then_hang(calls.clone())).await;
                outcome.result.map_err(|escalation| escalation.envelope)
            }
        })
        .await;
    assert!(outer.result.is_err());
    assert_eq!(
        calls.load(Ordering::SeqCst) - before,
        1,
        "the outer loop refunded again"
    );
}

/// A cut-off attempt of a call that says nothing of itself (not a
/// `#[tool]`) is not retryable either, though the failure before it was:
/// only a call declared safe to repeat stays retryable once cut off.
#[tokio::test(start_paused = true)]
async fn a_cut_off_call_that_says_nothing_of_itself_is_not_retryable() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(100)
        .deadline(ms(1_000))
        .retry(|| {
            let calls = calls.clone();
            async move {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(ErrorEnvelope::transient("the gateway is busy"));
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            }
        })
        .await;
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::DeadlineExceeded);
    assert!(
        !escalation.envelope.is_retryable(),
        "{:?}",
        escalation.envelope
    );
}

/// tokio's clock, on a loaded machine: every sleep wakes twice as late as asked.
struct Late;

impl Sleeper for Late {
    fn now(&self) -> std::time::Instant {
        Instant::now().into_std()
    }

    fn sleep(&self, duration: Duration) -> impl std::future::Future<Output = ()> + Send {
        tokio::time::sleep(duration * 2)
    }
}

/// tokio's clock, and time a slow hook spent on top (in ms).
struct Hooked(Arc<std::sync::atomic::AtomicU64>);

impl Sleeper for Hooked {
    fn now(&self) -> std::time::Instant {
        Instant::now().into_std() + ms(self.0.load(Ordering::SeqCst))
    }

    fn sleep(&self, duration: Duration) -> impl std::future::Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }
}

/// A hook that took long (a slow sink) leaves too little time for the
/// wait it was told of: the wait is not slept, the call escalates at once
/// rather than past its deadline.
#[tokio::test(start_paused = true)]
async fn a_wait_a_slow_hook_pushed_past_the_deadline_is_not_slept() {
    let spent = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let hook = Arc::clone(&spent);
    let calls = Arc::new(AtomicU32::new(0));
    let start = Instant::now();
    let outcome = steady(500)
        .deadline(ms(1_000))
        .on_event(move |_| {
            hook.fetch_add(900, Ordering::SeqCst);
        })
        .retry_with(&Hooked(spent), || refund_then_hang(calls.clone()))
        .await;
    assert_eq!(start.elapsed(), ms(0), "a wait past the deadline was slept");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::DeadlineExceeded);
    // The history says no wait was chosen after the attempt: none was.
    assert_eq!(outcome.stats.history.len(), 1);
    assert_eq!(outcome.stats.history[0].delay, None);
    assert!(outcome.stats.delays().is_empty());
}

/// A retry whose wait ran past the deadline is not started: it would be cut
/// off as it began, after it may have sent the refund. The escalation keeps
/// the last attempt's envelope as it was — nothing ran since.
#[tokio::test(start_paused = true)]
async fn a_retry_whose_wait_ran_past_the_deadline_is_not_started() {
    let calls = Arc::new(AtomicU32::new(0));
    let start = Instant::now();
    // 600 ms asked, 1,200 slept: the second attempt would start past 1,000.
    let outcome = steady(600)
        .deadline(ms(1_000))
        .retry_with(&Late, || refund_then_hang(calls.clone()))
        .await;
    assert_eq!(start.elapsed(), ms(1_200));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no attempt began late");
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::DeadlineExceeded);
    assert_eq!(
        escalation.detail.as_deref(),
        Some("no time was left for attempt 2 within the 1000 ms deadline")
    );
    assert!(
        escalation.envelope.not_applied(),
        "{:?}",
        escalation.envelope
    );
    assert_eq!(escalation.attempts, 1);
    assert_eq!(outcome.stats.attempts, 1);
    assert_eq!(outcome.stats.elapsed, ms(1_200));
    assert_eq!(outcome.stats.delays(), [ms(600)]);
}

/// tokio's clock, with sleeps that start counting when first polled, as a
/// sleep written as an `async fn` does.
struct FromFirstPoll;

impl Sleeper for FromFirstPoll {
    fn now(&self) -> std::time::Instant {
        Instant::now().into_std()
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

#[tokio::test(start_paused = true)]
async fn the_deadline_counts_from_the_first_attempt_whatever_the_sleeper() {
    let calls = Arc::new(AtomicU32::new(0));
    let start = Instant::now();
    // The first attempt fails at once, the second hangs from 400 ms.
    let outcome = steady(400)
        .deadline(ms(1_000))
        .retry_with(&FromFirstPoll, || hang(calls.clone()))
        .await;
    assert_eq!(start.elapsed(), ms(1_000));
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::DeadlineExceeded
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// Finds nothing.
#[tool(read_only, skip(calls))]
async fn find_nothing(calls: Arc<AtomicU32>) -> Result<Found<u32>, InventoryError> {
    calls.fetch_add(1, Ordering::SeqCst);
    Ok(Found::none())
}

#[tokio::test(start_paused = true)]
async fn the_hook_sees_an_escalation_at_the_deadline() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(100)
        .deadline(ms(1_000))
        .on_event(move |event| {
            log.lock()
                .unwrap()
                .push((event.tool.map(str::to_owned), event.attempt, event.action));
        })
        .retry(|| hang(calls.clone()))
        .await;
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::DeadlineExceeded
    );
    let tool = Some("hang".to_owned());
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (tool.clone(), 1, RetryAction::Retry { delay: ms(100) }),
            (
                tool,
                2,
                RetryAction::Escalate {
                    reason: EscalationReason::DeadlineExceeded
                }
            ),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_valid_empty_result_is_a_success_and_never_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(10).retry(|| find_nothing(calls.clone())).await;
    assert!(outcome.result.unwrap().is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// Refunds an order; its upstream times out.
#[tool(destructive, skip(calls))]
async fn refund(order: String, calls: Arc<AtomicU32>) -> Result<(), std::io::Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    let _ = order;
    Err(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "payments API timed out",
    ))
}

/// Refunds an order; the connection is refused — which says nothing about
/// whether the refund was applied before it.
#[tool(destructive, skip(calls))]
async fn refund_refused(calls: Arc<AtomicU32>) -> Result<(), std::io::Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "connection refused",
    ))
}

/// Refunds an order; the payments API says it refused the request before
/// doing anything, and the author says so.
#[tool(destructive, skip(calls))]
async fn refund_rejected_upfront(calls: Arc<AtomicU32>) -> Result<(), ErrorEnvelope> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(
        ErrorEnvelope::transient("payments API is throttling: request rejected, nothing charged")
            .with_not_applied(true),
    )
}

/// Sets a flag; repeating it is harmless.
#[tool(idempotent, skip(calls))]
async fn set_flag(calls: Arc<AtomicU32>) -> Result<(), std::io::Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "flags API timed out",
    ))
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_tool_is_not_retried_after_a_transient_failure() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(10)
        .retry(|| refund("O-77".into(), calls.clone()))
        .await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::NonRetryable);
    // The envelope the tool returned already said so: every caller reads the same decision.
    assert!(!escalation.envelope.is_retryable());
    assert_eq!(
        escalation.envelope.category(),
        tool_envelope::ErrorCategory::Transient
    );
    assert_eq!(
        escalation.envelope.reason(),
        Some(tool_envelope::reasons::MAY_HAVE_TAKEN_EFFECT)
    );
    let detail = escalation.detail.unwrap();
    assert!(
        detail.contains("`refund` is not declared idempotent"),
        "{detail}"
    );

    // A refused connection proves nothing about what the tool did before it,
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(10).retry(|| refund_refused(calls.clone())).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::NonRetryable
    );

    // ...unless the author says the call was not applied,
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(10)
        .retry(|| refund_rejected_upfront(calls.clone()))
        .await;
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::RetriesExhausted
    );

    // ...or the tool is declared idempotent.
    let calls = Arc::new(AtomicU32::new(0));
    let _ = steady(10).retry(|| set_flag(calls.clone())).await;
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

/// Places an order after checking stock with a read-only tool: the order is
/// not safe to repeat, whatever the inner tool says.
#[tool(destructive, skip(calls))]
async fn place_order(sku: String, calls: Arc<AtomicU32>) -> Result<u32, ErrorEnvelope> {
    calls.fetch_add(1, Ordering::SeqCst);
    let inner_calls = Arc::new(AtomicU32::new(0));
    let available = stock(sku, inner_calls, 1).await?;
    Ok(available)
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_tool_passing_through_a_read_only_tools_failure_is_not_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(10)
        .retry(|| place_order("A-1".into(), calls.clone()))
        .await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the order was not placed twice"
    );
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::NonRetryable);
    // The inner tool's pillars pass through; the retry decision is the outer's.
    assert_eq!(escalation.envelope.tool(), Some("stock"));
    assert_eq!(escalation.envelope.idempotent(), Some(false));
    let detail = escalation.detail.unwrap();
    assert!(
        detail.contains("`place_order` is not declared idempotent"),
        "{detail}"
    );
}

/// A source the research tool gathers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
struct Source {
    id: u32,
}

/// Fetches 10 sources; each attempt gets `per_attempt` more before the provider gives out.
#[tool(read_only)]
async fn fetch_sources(
    per_attempt: u32,
    sources: Partial<Source>,
) -> Result<Vec<Source>, ErrorEnvelope> {
    let mut fetched_now = 0;
    for id in 1..=10 {
        // Resume: skip what an earlier attempt already gathered.
        if sources.contains(&Source { id }) {
            continue;
        }
        if fetched_now == per_attempt {
            return Err(ErrorEnvelope::transient(format!(
                "Provider rate-limited after {} sources",
                sources.len()
            )));
        }
        sources.push(Source { id });
        fetched_now += 1;
    }
    Ok(sources.to_vec())
}

/// Partial results reported as an object, by region: a region both
/// attempts reported keeps what each gathered, and a region that grew is
/// progress, though no region was added.
#[tokio::test(start_paused = true)]
async fn partial_results_by_key_keep_what_every_attempt_gathered() {
    let attempt = AtomicU32::new(0);
    let outcome = steady(10)
        .max_attempts(3)
        .stop_after_no_progress(1)
        .retry(|| {
            let n = attempt.fetch_add(1, Ordering::SeqCst);
            async move {
                let gathered = match n {
                    0 => json!({"eu": [1, 2], "us": [7]}),
                    1 => json!({"eu": [3], "us": [7]}),
                    _ => json!({"eu": [4], "apac": [9]}),
                };
                Err::<(), _>(
                    ErrorEnvelope::transient("Provider rate-limited")
                        .with_partial_results(gathered),
                )
            }
        })
        .await;
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::RetriesExhausted);
    assert_eq!(
        escalation.partial_results(),
        Some(&json!({"eu": [1, 2, 3, 4], "us": [7], "apac": [9]}))
    );
}

#[tokio::test(start_paused = true)]
async fn each_attempt_resumes_and_the_escalation_carries_everything_gathered() {
    let sources = Partial::new();
    let outcome = steady(10)
        .max_attempts(3)
        .retry(|| fetch_sources(2, sources.clone()))
        .await;
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::RetriesExhausted);
    // 2 per attempt, 3 attempts: all 6, each once, in order.
    let ids: Vec<u64> = escalation
        .partial_results()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    assert_eq!(
        outcome
            .stats
            .history
            .iter()
            .map(|a| a.gathered)
            .collect::<Vec<_>>(),
        [2, 4, 6]
    );

    // Given enough attempts, the same collector finishes the job.
    let outcome = steady(10)
        .max_attempts(10)
        .retry(|| fetch_sources(2, sources.clone()))
        .await;
    assert_eq!(outcome.result.unwrap().len(), 10);
    assert_eq!(
        outcome.stats.attempts, 2,
        "6 were already there: 7 and 8, then 9 and 10"
    );
}

#[tokio::test(start_paused = true)]
async fn attempts_that_gather_nothing_new_end_the_loop() {
    let sources = Partial::new();
    let outcome = steady(10)
        .max_attempts(10)
        .stop_after_no_progress(2)
        .retry(|| fetch_sources(0, sources.clone()))
        .await;
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::NoProgress);
    assert_eq!(escalation.attempts, 2);

    // Progress resets the count.
    let sources = Partial::new();
    let outcome = steady(10)
        .max_attempts(4)
        .stop_after_no_progress(1)
        .retry(|| fetch_sources(1, sources.clone()))
        .await;
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::RetriesExhausted
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_without_a_collector_never_stalls_and_is_bound_by_the_cap() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = steady(10)
        .max_attempts(4)
        .stop_after_no_progress(1)
        .retry(|| stock("A-1".into(), calls.clone(), u32::MAX))
        .await;
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::RetriesExhausted
    );
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test(start_paused = true)]
async fn a_shared_budget_stops_a_retry_storm() {
    let budget = RetryBudget::new(10.0);
    let policy = steady(10).max_attempts(5).budget(&budget);
    let calls = Arc::new(AtomicU32::new(0));
    let mut reasons = Vec::new();
    for _ in 0..20 {
        let outcome = policy
            .retry(|| stock("A-1".into(), calls.clone(), u32::MAX))
            .await;
        reasons.push(outcome.result.unwrap_err().reason);
    }
    // Each failure takes a token; a retry needs more than half of the 10.
    // The first loop retries while it may: 10 → 9 → 8 → 7 → 6, then its fifth
    // attempt (5 left) hits the cap. Every later loop makes one attempt and
    // finds the budget spent: 5 + 19 calls in all, not 20 × 5.
    assert_eq!(calls.load(Ordering::SeqCst), 5 + 19);
    assert_eq!(reasons[0], EscalationReason::RetriesExhausted);
    assert!(
        reasons[1..]
            .iter()
            .all(|r| *r == EscalationReason::RetryBudgetExhausted),
        "{reasons:?}"
    );
    // Successes earn retries back, a tenth of a token each: from empty,
    // 51 of them bring it over half.
    assert_eq!(budget.tokens(), 0.0);
    for _ in 0..50 {
        budget.record_success();
    }
    assert!(!budget.allows_retry());
    budget.record_success();
    assert!(budget.allows_retry());
}

#[tokio::test(start_paused = true)]
async fn non_retryable_failures_do_not_drain_the_budget() {
    let budget = RetryBudget::new(4.0);
    let policy = steady(10).budget(&budget);
    let calls = Arc::new(AtomicU32::new(0));
    for _ in 0..50 {
        let _ = policy.retry(|| admin_view(calls.clone())).await;
    }
    assert_eq!(budget.tokens(), 4.0);
    assert!(budget.allows_retry());
}

#[tokio::test(start_paused = true)]
async fn the_hook_sees_every_retry_and_the_escalation() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let policy = steady(10).on_event(move |event| {
        log.lock().unwrap().push((
            event.tool.map(str::to_owned),
            event.attempt,
            event.category,
            event.action,
        ));
    });
    let calls = Arc::new(AtomicU32::new(0));
    let _ = policy
        .retry(|| stock("A-1".into(), calls.clone(), u32::MAX))
        .await;
    let seen = seen.lock().unwrap();
    let tool = Some("stock".to_owned());
    assert_eq!(
        *seen,
        [
            (
                tool.clone(),
                1,
                ErrorCategory::Transient,
                RetryAction::Retry { delay: ms(10) }
            ),
            (
                tool.clone(),
                2,
                ErrorCategory::Transient,
                RetryAction::Retry { delay: ms(10) }
            ),
            (
                tool,
                3,
                ErrorCategory::Transient,
                RetryAction::Escalate {
                    reason: EscalationReason::RetriesExhausted
                }
            ),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_schedule_from_an_iterator_plugs_in_and_ends_the_loop_when_it_runs_out() {
    let policy = RetryPolicy::default()
        .max_attempts(10)
        .backoff(Backoff::from_iter([ms(5), ms(50)]));
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = policy
        .retry(|| stock("A-1".into(), calls.clone(), u32::MAX))
        .await;
    assert_eq!(outcome.stats.delays(), [ms(5), ms(50)]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::RetriesExhausted
    );
}

/// A virtual clock: sleeping advances it, nothing waits.
#[derive(Default)]
struct VirtualClock {
    origin: Option<std::time::Instant>,
    offset: Mutex<Duration>,
    sleeps: Mutex<Vec<Duration>>,
}

impl Sleeper for VirtualClock {
    fn now(&self) -> std::time::Instant {
        self.origin.unwrap() + *self.offset.lock().unwrap()
    }

    fn sleep(&self, duration: Duration) -> impl std::future::Future<Output = ()> + Send {
        *self.offset.lock().unwrap() += duration;
        self.sleeps.lock().unwrap().push(duration);
        std::future::ready(())
    }
}

#[test]
fn any_runtime_can_supply_the_sleeper() {
    let clock = VirtualClock {
        origin: Some(std::time::Instant::now()),
        ..Default::default()
    };
    let calls = Arc::new(AtomicU32::new(0));
    let policy = steady(250).max_attempts(3);
    // A minimal executor: the futures here never wait on anything.
    let outcome = futures_executor_block_on(
        policy.retry_with(&clock, || stock("A-1".into(), calls.clone(), 2)),
    );
    assert_eq!(outcome.result.unwrap(), 3);
    assert_eq!(*clock.sleeps.lock().unwrap(), [ms(250), ms(250)]);
    assert_eq!(outcome.stats.elapsed, ms(500));
}

#[test]
fn the_time_a_loop_took_is_reported_when_it_stops_on_a_non_retryable_failure() {
    // Two transient failures, then one that is not retryable (a deadline's
    // stop: `a_delay_that_would_cross_the_deadline_is_not_slept`).
    let at = VirtualClock {
        origin: Some(std::time::Instant::now()),
        ..Default::default()
    };
    let calls = AtomicU32::new(0);
    let outcome = futures_executor_block_on(steady(250).max_attempts(5).retry_with(&at, || {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        async move {
            match n {
                0 | 1 => Err::<u32, _>(InventoryError::RateLimited),
                _ => Err(InventoryError::Denied),
            }
        }
    }));
    assert_eq!(outcome.stats.elapsed, ms(500));
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::NonRetryable);
    assert_eq!(escalation.elapsed, ms(500));
}

/// Polls a future that never waits to completion, without any runtime.
fn futures_executor_block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

/// A sync tool for the blocking loop.
#[tool(read_only, skip(calls))]
fn stock_sync(calls: Arc<AtomicU32>, fail: u32) -> Result<u32, InventoryError> {
    if calls.fetch_add(1, Ordering::SeqCst) < fail {
        return Err(InventoryError::RateLimited);
    }
    Ok(7)
}

#[test]
fn the_blocking_loop_needs_no_runtime() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = RetryPolicy::default()
        .constant(Duration::ZERO)
        .retry_blocking(|| stock_sync(calls.clone(), 2));
    assert_eq!(outcome.result.unwrap(), 7);
    assert_eq!(outcome.stats.attempts, 3);

    let calls = Arc::new(AtomicU32::new(0));
    let outcome = RetryPolicy::default()
        .constant(Duration::ZERO)
        .retry_blocking(|| stock_sync(calls.clone(), u32::MAX));
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::RetriesExhausted
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn jittered_delays_never_exceed_the_maximum() {
    let policy = RetryPolicy::default()
        .max_attempts(30)
        .backoff(Backoff::exponential(ms(100), ms(400)).jitter(Jitter::Full));
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = policy
        .retry(|| stock("A-1".into(), calls.clone(), u32::MAX))
        .await;
    let delays = outcome.stats.delays();
    assert_eq!(delays.len(), 29);
    assert!(delays.iter().all(|d| *d <= ms(400)), "{delays:?}");
    // ...and they are spread out, not the schedule itself.
    assert!(delays.iter().any(|d| *d < ms(200)), "{delays:?}");
}

#[tokio::test(start_paused = true)]
async fn the_default_policy_jitters_fully() {
    // The first delay of the default policy (100 ms before jitter), over many loops.
    let mut first = Vec::new();
    for _ in 0..400 {
        let calls = Arc::new(AtomicU32::new(0));
        let outcome = RetryPolicy::default()
            .max_attempts(2)
            .retry(|| stock("A-1".into(), calls.clone(), u32::MAX))
            .await;
        first.push(outcome.stats.delays()[0].as_secs_f64() * 1000.0);
    }
    let mean = first.iter().sum::<f64>() / first.len() as f64;
    let low = first.iter().filter(|d| **d < 25.0).count();
    let high = first.iter().filter(|d| **d > 75.0).count();
    assert!(
        first.iter().all(|d| *d <= 100.0),
        "never above the schedule"
    );
    // Uniform on [0, 100]: a mean near 50 and both ends well populated.
    // (Each bound is more than 6 standard deviations from what a uniform
    // draw gives, so the test does not flake.)
    assert!((35.0..65.0).contains(&mean), "mean {mean}");
    assert!(
        low > 50 && high > 50,
        "{low} below 25 ms, {high} above 75 ms"
    );
}

#[test]
fn escalation_json_is_an_envelope_with_an_escalation_object() {
    let calls = Arc::new(AtomicU32::new(0));
    let outcome = RetryPolicy::default()
        .constant(Duration::ZERO)
        .retry_blocking(|| stock_sync(calls.clone(), u32::MAX));
    let value = serde_json::to_value(outcome.result.unwrap_err()).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema/error-envelope.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&value), "{value}");
    assert_eq!(value["escalation"]["reason"], "retries_exhausted");
    assert_eq!(value["escalation"]["attempts"], 3);
    assert_eq!(value["errorCategory"], "transient");
    // The layer that escalated retried what it could: no caller runs its
    // loop again on top.
    assert_eq!(value["isRetryable"], false);
    let back: tool_envelope::Escalation = serde_json::from_value(value).unwrap();
    assert_eq!(back.reason, EscalationReason::RetriesExhausted);
}

/// Refunds an order; the payments API refused it before doing anything, and
/// the author says so, with a reason of their own.
#[tool(destructive, skip(calls))]
async fn refund_throttled(calls: Arc<AtomicU32>) -> Result<(), ErrorEnvelope> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(
        ErrorEnvelope::transient("payments API throttled the request")
            .with_reason("RATE_LIMITED")
            .with_not_applied(true),
    )
}

#[tokio::test(start_paused = true)]
async fn not_applied_goes_on_the_wire_as_the_reason_callers_decide_by() {
    let calls = Arc::new(AtomicU32::new(0));
    let envelope = refund_throttled(calls.clone()).await.unwrap_err();
    // A caller elsewhere reads only the wire: the reason that makes this
    // failure of a tool that is not idempotent safe to repeat is sent.
    let wire = serde_json::to_value(&envelope).unwrap();
    assert_eq!(wire["isRetryable"], json!(true));
    assert_eq!(wire["reason"], json!(tool_envelope::reasons::NOT_APPLIED));
    let outcome = steady(10).retry(|| refund_throttled(calls.clone())).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1 + 3);
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::RetriesExhausted
    );
}

/// A chat turn whose CRM timed out just as the customer asked for a human.
#[tool(read_only, skip(calls))]
async fn chat_turn(
    message: String,
    calls: Arc<AtomicU32>,
    reason: &'static str,
) -> Result<String, ErrorEnvelope> {
    calls.fetch_add(1, Ordering::SeqCst);
    let _ = message;
    Err(ErrorEnvelope::transient("CRM timed out").with_reason(reason))
}

#[tokio::test(start_paused = true)]
async fn a_human_request_or_a_policy_gap_escalates_at_once_whatever_the_category() {
    use tool_envelope::reasons::{HUMAN_REQUESTED, POLICY_GAP};
    // A reason is one value however it is spelled: normalized where it is set.
    for (reason, expected) in [
        (HUMAN_REQUESTED, EscalationReason::HumanRequested),
        ("human_requested", EscalationReason::HumanRequested),
        ("human requested", EscalationReason::HumanRequested),
        ("humanRequested", EscalationReason::HumanRequested),
        ("HUMAN_REQUESTED ", EscalationReason::HumanRequested),
        (POLICY_GAP, EscalationReason::PolicyGap),
        ("policyGap", EscalationReason::PolicyGap),
        ("policy-gap", EscalationReason::PolicyGap),
    ] {
        let normalized = match expected {
            EscalationReason::HumanRequested => HUMAN_REQUESTED,
            _ => POLICY_GAP,
        };
        let calls = Arc::new(AtomicU32::new(0));
        let outcome = steady(10)
            .retry(|| chat_turn("get me a human".into(), calls.clone(), reason))
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{reason}");
        let escalation = outcome.result.unwrap_err();
        assert_eq!(escalation.reason, expected);
        assert_eq!(escalation.attempts, 1);
        assert!(!escalation.envelope.is_retryable());

        // Built by hand, outside any `#[tool]`: never retryable either,
        // whatever `with_retryable` said, and sent so.
        let by_hand = ErrorEnvelope::transient("CRM timed out")
            .with_retryable(true)
            .with_reason(reason);
        assert!(!by_hand.is_retryable(), "{reason}");
        assert_eq!(by_hand.reason(), Some(normalized), "{reason}");
        let read_back: ErrorEnvelope =
            serde_json::from_value(serde_json::to_value(&by_hand).unwrap()).unwrap();
        assert_eq!(read_back, by_hand, "what is read back is what was sent");
        assert_eq!(
            serde_json::to_value(&by_hand).unwrap()["isRetryable"],
            json!(false)
        );
        let calls = AtomicU32::new(0);
        let outcome = steady(10)
            .retry(|| {
                calls.fetch_add(1, Ordering::SeqCst);
                let envelope = by_hand.clone();
                async move { Err::<(), _>(envelope) }
            })
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(outcome.result.unwrap_err().reason, expected);
    }
}

/// Fails with an error whose description panics.
#[derive(Debug, thiserror::Error, ToolError)]
#[error("{}", describe_panics())]
#[tool_error(transient)]
struct Unspeakable;

fn describe_panics() -> &'static str {
    panic!("the error's own Display panicked")
}

/// A panic in an `on_event` hook, or in describing an error the loop was
/// handed (not a `#[tool]`'s), stays in the loop: the outcome is an
/// escalation with everything gathered, not a panic in the caller's face.
#[tokio::test(start_paused = true)]
async fn a_panicking_hook_or_error_description_loses_nothing_gathered() {
    let sources = Partial::new();
    let outcome = steady(10)
        .max_attempts(3)
        .on_event(|_| panic!("the hook panicked"))
        .retry(|| fetch_sources(2, sources.clone()))
        .await;
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::RetriesExhausted);
    let gathered = escalation
        .partial_results()
        .unwrap()
        .as_array()
        .unwrap()
        .len();
    assert_eq!(gathered, 6);
    assert_eq!(outcome.stats.attempts, 3);

    let outcome = steady(10)
        .max_attempts(2)
        .retry(|| async { Err::<u32, _>(Unspeakable) })
        .await;
    let escalation = outcome.result.unwrap_err();
    assert_eq!(
        escalation.envelope.reason(),
        Some("PANIC"),
        "{escalation:?}"
    );
}

/// A loop that escalates ends the loop around it too, once its escalation
/// is returned as an envelope (`?`, or `ErrorEnvelope::from`): the
/// envelope carries the escalation, is not retryable, and the outer loop
/// escalates with the inner one's reason — three calls to a dependency
/// that is down, not three times three.
#[tokio::test(start_paused = true)]
async fn an_escalation_returned_as_an_envelope_is_not_run_again_by_the_loop_around_it() {
    let calls = Arc::new(AtomicU32::new(0));
    let inner = |calls: Arc<AtomicU32>| async move {
        let outcome = steady(10)
            .retry(|| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Err::<(), _>(ErrorEnvelope::transient("inventory service down")) }
            })
            .await;
        outcome.into_result()?;
        Ok::<(), ErrorEnvelope>(())
    };
    let outer = steady(10).retry(|| inner(calls.clone())).await;
    assert_eq!(calls.load(Ordering::SeqCst), 3, "the inner loop ran once");
    let escalation = outer.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::RetriesExhausted);
    let wire = serde_json::to_value(&escalation).unwrap();
    assert_eq!(wire["isRetryable"], false);
    assert_eq!(wire["escalation"]["reason"], "retries_exhausted");
    let carried = escalation
        .envelope
        .escalation()
        .expect("the inner escalation");
    assert_eq!(carried.attempts, 3);
    assert_eq!(
        escalation.attempts, 1,
        "the outer loop ran its attempt once"
    );
}

/// An envelope made from an escalation a loop kept equals its own copy
/// read back from the wire: where it was kept is neither sent nor
/// compared.
#[tokio::test(start_paused = true)]
async fn an_envelope_made_from_a_kept_escalation_equals_its_copy_from_the_wire() {
    let store = Arc::new(tool_envelope::store::MemoryStore::new());
    let outcome = RetryPolicy::default()
        .max_attempts(1)
        .keep_escalations(store)
        .retry(|| async { Err::<(), _>(ErrorEnvelope::transient("inventory down")) })
        .await;
    let sent = ErrorEnvelope::from(outcome.result.unwrap_err());
    let wire = serde_json::to_value(&sent).unwrap();
    let read: ErrorEnvelope = serde_json::from_value(wire).unwrap();
    assert_eq!(sent, read);
}
