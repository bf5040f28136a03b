//! The retry loop's clock: deadlines met on a late clock, and a store
//! that hangs.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::{BlockingSleeper, RetryPolicy};
use crate::envelope::ErrorEnvelope;

/// A clock that moves only when slept on: `late` times as long as asked.
struct Fake {
    origin: Instant,
    slept: Cell<Duration>,
    late: u32,
}

impl BlockingSleeper for Fake {
    fn now(&self) -> Instant {
        self.origin + self.slept.get()
    }

    fn sleep(&self, duration: Duration) {
        self.slept.set(self.slept.get() + duration * self.late);
    }
}

/// A store that never keeps the escalation holds no caller past the
/// deadline: given what is left of it, or a second when it is spent,
/// then left behind, the escalation returned unkept. Without a
/// deadline, the store is waited for.
#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn a_store_that_hangs_holds_no_caller_past_the_deadline() {
    let store = crate::store::gated::Gated::new();
    store.hang_escalations();
    let kept = || std::sync::Arc::clone(&store) as std::sync::Arc<dyn crate::store::Store>;
    let refused = || async { Err::<(), _>(ErrorEnvelope::permission("Access denied")) };
    let transient = || async { Err::<(), _>(ErrorEnvelope::transient("Upstream busy")) };

    // Escalated at once, 5 s left: the store is given them.
    let policy = RetryPolicy::default()
        .deadline(Duration::from_secs(5))
        .keep_escalations(kept());
    let started = tokio::time::Instant::now();
    let escalation = within_an_hour(policy.retry(refused)).await;
    assert!(!escalation.kept);
    assert_eq!(started.elapsed(), Duration::from_secs(5));

    // A hook that took 3 s of the 5 (on a clock the hook moves): the
    // store is given the 2 left.
    let moved = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let hook = std::sync::Arc::clone(&moved);
    let policy = RetryPolicy::default()
        .deadline(Duration::from_secs(5))
        .keep_escalations(kept())
        .on_event(move |_| {
            hook.fetch_add(3_000, std::sync::atomic::Ordering::SeqCst);
        });
    let clock = Moved(moved);
    let started = tokio::time::Instant::now();
    let escalation = within_an_hour(policy.retry_with(&clock, refused)).await;
    assert!(!escalation.kept);
    assert_eq!(started.elapsed(), Duration::from_secs(2));

    // The deadline spent retrying: a second more.
    let policy = RetryPolicy::default()
        .constant(Duration::from_millis(10))
        .max_attempts(100)
        .deadline(Duration::from_millis(50))
        .keep_escalations(kept());
    let started = tokio::time::Instant::now();
    let escalation = within_an_hour(policy.retry(transient)).await;
    assert!(!escalation.kept);
    let past = started.elapsed();
    assert!(
        past >= Duration::from_secs(1) && past <= Duration::from_millis(1_060),
        "{past:?}"
    );

    // No deadline: the store is waited for, however long.
    let policy = RetryPolicy::default().keep_escalations(kept());
    let waited = tokio::time::timeout(Duration::from_secs(3_600), policy.retry(refused)).await;
    assert!(waited.is_err(), "returned while the store hung");
}

/// The escalation `retry` ends with, if it ends within an hour of the
/// paused clock; a loop that hangs fails the test.
#[cfg(feature = "tokio")]
async fn within_an_hour(
    retry: impl std::future::Future<Output = super::Outcome<()>>,
) -> crate::escalation::Escalation {
    let outcome = tokio::time::timeout(Duration::from_secs(3_600), retry).await;
    outcome.expect("ended within the hour").result.unwrap_err()
}

/// tokio's paused clock, moved on by as many milliseconds as the shared
/// count says besides: what a slow hook would take.
#[cfg(feature = "tokio")]
struct Moved(std::sync::Arc<std::sync::atomic::AtomicU64>);

#[cfg(feature = "tokio")]
impl super::Sleeper for Moved {
    fn now(&self) -> Instant {
        let moved = self.0.load(std::sync::atomic::Ordering::SeqCst);
        tokio::time::Instant::now().into_std() + Duration::from_millis(moved)
    }

    fn sleep(&self, duration: Duration) -> impl std::future::Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }
}

/// A thread woken late (twice as late as asked, on a loaded machine)
/// past the deadline starts no retry: as in the async loop.
#[test]
fn a_blocking_retry_whose_wait_ran_past_the_deadline_is_not_started() {
    let policy = RetryPolicy::default()
        .max_attempts(5)
        .constant(Duration::from_millis(600))
        .deadline(Duration::from_millis(1_000));
    let late = Fake {
        origin: Instant::now(),
        slept: Cell::new(Duration::ZERO),
        late: 2,
    };
    let mut calls = 0;
    let outcome = policy.retry_blocking_on(&late, || {
        calls += 1;
        Err::<(), _>(ErrorEnvelope::transient("Inventory busy"))
    });
    assert_eq!(calls, 1, "a retry started past the deadline");
    let escalation = outcome.result.unwrap_err();
    assert_eq!(
        escalation.reason,
        crate::escalation::EscalationReason::DeadlineExceeded
    );
}

/// A clock moved by sleeping and by whatever else advances `busy`.
struct Busy {
    origin: Instant,
    busy: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl BlockingSleeper for Busy {
    fn now(&self) -> Instant {
        let busy = self.busy.load(std::sync::atomic::Ordering::SeqCst);
        self.origin + Duration::from_millis(busy)
    }

    fn sleep(&self, duration: Duration) {
        let ms = u64::try_from(duration.as_millis()).unwrap();
        self.busy.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A hook that took long (900 ms of a 1 s deadline) leaves no time for
/// a 500 ms wait: the loop escalates then, as the async loop does,
/// not after sleeping past its deadline.
#[test]
fn a_blocking_retry_after_a_slow_hook_does_not_sleep_past_the_deadline() {
    let busy = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let hook = busy.clone();
    let policy = RetryPolicy::default()
        .max_attempts(5)
        .constant(Duration::from_millis(500))
        .deadline(Duration::from_millis(1_000))
        .on_event(move |_| {
            hook.fetch_add(900, std::sync::atomic::Ordering::SeqCst);
        });
    let clock = Busy {
        origin: Instant::now(),
        busy,
    };
    let outcome = policy.retry_blocking_on(&clock, || {
        Err::<(), _>(ErrorEnvelope::transient("Inventory busy"))
    });
    let escalation = outcome.result.unwrap_err();
    assert_eq!(
        escalation.reason,
        crate::escalation::EscalationReason::DeadlineExceeded
    );
    assert_eq!(outcome.stats.slept, Duration::ZERO);
    assert!(outcome.stats.elapsed < Duration::from_millis(1_000));
    assert_eq!(outcome.stats.history[0].delay, None);
}

#[test]
fn the_blocking_loop_reports_the_time_it_took_however_it_ends() {
    let policy = RetryPolicy::default()
        .max_attempts(3)
        .constant(Duration::from_millis(250));
    let fake = || Fake {
        origin: Instant::now(),
        slept: Cell::new(Duration::ZERO),
        late: 1,
    };
    let mut calls = 0;
    let outcome = policy.retry_blocking_on(&fake(), || {
        calls += 1;
        match calls {
            3 => Ok(calls),
            _ => Err(ErrorEnvelope::transient("Inventory busy")),
        }
    });
    assert_eq!(outcome.stats.elapsed, Duration::from_millis(500));
    assert_eq!(outcome.result.unwrap(), 3);

    let outcome = policy.retry_blocking_on(&fake(), || {
        Err::<(), _>(ErrorEnvelope::transient("Inventory busy"))
    });
    assert_eq!(outcome.stats.elapsed, Duration::from_millis(500));
    assert_eq!(
        outcome.result.unwrap_err().elapsed,
        Duration::from_millis(500)
    );
}
