//! Recover locally: the retry loop, sync and async.
//!
//! A transient fault is retried where it happened, with bounded attempts and
//! backoff, so that the caller never sees a blip; anything that cannot be
//! recovered ends the loop as an [`Escalation`] carrying its context.
//!
//! A [`RetryPolicy`] is built once and reused. The stop signal is the
//! envelope: a success returns at once, `isRetryable: false` stops at once
//! (the tool runs exactly once), a valid empty result is a success and is
//! never retried. The attempt cap (3 by default) is a backstop. Whatever
//! cannot be recovered ends as an [`Escalation`] — an envelope with an
//! `escalation` object: the reason, the attempts, the elapsed time —
//! carrying every partial result gathered across the attempts.
//!
//! ```
//! use std::time::Duration;
//! use tool_envelope::retry::{RetryBudget, RetryPolicy};
//! use tool_envelope::{tool, ErrorEnvelope, EscalationReason, Partial};
//!
//! /// Fetch ten sources; the provider gives out after six.
//! #[tool(read_only)]
//! async fn research(topic: String, sources: Partial<String>) -> Result<Vec<String>, ErrorEnvelope> {
//!     for i in sources.len()..10 {
//!         if i == 6 {
//!             return Err(ErrorEnvelope::transient("Provider rate-limited after 6 sources"));
//!         }
//!         sources.push(format!("{topic}: source {}", i + 1));
//!     }
//!     Ok(sources.to_vec())
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let budget = RetryBudget::new(100.0); // shared by every loop of the workflow
//! let policy = RetryPolicy::default()
//!     .max_attempts(3)
//!     .exponential(Duration::from_millis(100), Duration::from_secs(2))
//!     .deadline(Duration::from_secs(10))
//!     .budget(&budget);
//!
//! let sources = Partial::new(); // handed to every attempt: each resumes where the last stopped
//! let outcome = policy.retry(|| research("EU AI Act".into(), sources.clone())).await;
//!
//! let escalation = outcome.result.unwrap_err();
//! assert_eq!(escalation.reason, EscalationReason::RetriesExhausted);
//! assert_eq!(escalation.envelope.partial_count(), 6); // nothing gathered is lost
//! assert_eq!(outcome.stats.attempts, 3);
//! # }
//! ```
//!
//! - **Backoff**: exponential with full jitter by default, constant, or any
//!   `IntoIterator<Item = Duration>` ([`Backoff::from_iter`]). Jitter never
//!   pushes a delay past the maximum. A `retryAfterMs` hint replaces the
//!   delay, clamped to `max_retry_after`.
//! - **Deadline** spanning all attempts: a delay that would cross it is not
//!   slept, a retry whose wait ran past it (a late timer) is not started,
//!   and an async attempt still running at the deadline is dropped.
//! - **No progress**: `stop_after_no_progress(n)` ends the loop after `n`
//!   consecutive attempts that gathered nothing new.
//! - **Retry budget**: a token bucket shared by many loops (gRPC retry
//!   throttling): when a dependency is down, retries across the workflow
//!   stop. Non-retryable failures never drain it.
//! - **Statistics** on every outcome: attempts, time slept, and each failed
//!   attempt's category, message and chosen delay. `on_event` hooks every
//!   decision; the `tracing` feature emits an event per retry and per
//!   escalation.
//! - `retry` runs on tokio (its paused clock makes tests exact), `retry_with`
//!   takes any [`Sleeper`], and `retry_blocking` needs no runtime at all.
//! - Extreme settings saturate: a huge budget never runs out, a delay of
//!   `Duration::MAX` under a deadline escalates `deadline_exceeded`.
//!
//! Escalation reasons are objective: non-retryable error, retries exhausted,
//! deadline exceeded, no progress, retry budget exhausted, blocked by a
//! guard, explicit human request, policy gap. Nothing escalates on sentiment
//! or a self-reported confidence.

mod attempts;
mod backoff;
mod budget;
pub(crate) mod keep;
mod policy;
mod sleep;
mod within;

use std::future::Future;

pub use attempts::{AttemptRecord, RetryStats};
pub use backoff::{Backoff, Delays, Jitter};
pub use budget::RetryBudget;
pub use policy::{RetryAction, RetryEvent, RetryPolicy};
pub use sleep::Sleeper;
#[cfg(feature = "tokio")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "tokio")))]
pub use sleep::TokioSleeper;

use crate::classify::{ToolError, caught_envelope};
use crate::escalation::Escalation;
pub(crate) use attempts::RetryNotice;
use attempts::{Attempts, Next};
use sleep::{BlockingSleeper, ThreadSleeper};
use within::Within;

/// The least time a loop with a deadline gives its store to keep the
/// escalation, when the deadline is spent or nearly (the escalation of a
/// deadline is the one most worth keeping): a store answers in
/// milliseconds, and one that hangs holds the caller this much past it.
const KEEP_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Who keeps what a retry loop gives up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The loop, in its policy's store, if it has one.
    InStore,
    /// Its caller: a tool set keeps an escalation with the call's caller.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    ByCaller,
}

/// The end of a retry loop: the value or the escalation, and what the loop did.
#[derive(Debug)]
#[must_use = "an outcome holds either the value or an escalation to act on"]
pub struct Outcome<T> {
    /// The value, or why the loop gave up.
    pub result: Result<T, Escalation>,
    /// Attempts, time slept, and each failed attempt.
    pub stats: RetryStats,
}

impl<T> Outcome<T> {
    /// The value or the escalation, without the statistics.
    ///
    /// # Errors
    ///
    /// The escalation, when the loop gave up.
    pub fn into_result(self) -> Result<T, Escalation> {
        self.result
    }

    /// Whether the loop ended with a value.
    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }
}

impl RetryPolicy {
    /// Runs `op` until it succeeds or the policy says stop, sleeping on tokio's
    /// timer (which honours a paused clock).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::time::Duration;
    /// use tool_envelope::{ErrorEnvelope, retry::{Jitter, RetryPolicy}};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let calls = AtomicU32::new(0);
    /// let policy = RetryPolicy::default().constant(Duration::from_millis(10));
    /// let outcome = policy
    ///     .retry(|| async {
    ///         match calls.fetch_add(1, Ordering::SeqCst) {
    ///             0 => Err(ErrorEnvelope::transient("Rate limit hit on inventory service")),
    ///             _ => Ok(42),
    ///         }
    ///     })
    ///     .await;
    /// assert_eq!(outcome.result.unwrap(), 42);
    /// assert_eq!(outcome.stats.attempts, 2);
    /// assert_eq!(outcome.stats.slept, Duration::from_millis(10));
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "tokio")))]
    // Not an `async fn`: the loop's own future is returned as it is, where
    // one more layer would be one more copy of it into every spawned task.
    pub fn retry<T, E, F, Fut>(&self, op: F) -> impl Future<Output = Outcome<T>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: ToolError,
    {
        self.retry_with(&TokioSleeper, op)
    }

    /// [`retry`](Self::retry) on any clock: `sleeper` gives the time and the sleeps.
    pub fn retry_with<S, T, E, F, Fut>(
        &self,
        sleeper: &S,
        op: F,
    ) -> impl Future<Output = Outcome<T>>
    where
        S: Sleeper,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: ToolError,
    {
        self.retry_observed(sleeper, op, |_| std::future::ready(()), Keep::InStore)
    }

    /// [`retry_with`](Self::retry_with), awaiting `observe` before each
    /// retry's sleep: a tool set reports each retry to the client that way,
    /// in order, before the call's reply; it keeps its escalations itself
    /// ([`Keep::ByCaller`]).
    // Not an `async fn`: one holds each argument twice, as it was passed
    // and as moved into the body; the block holds it once, in a future
    // every retried call carries.
    #[allow(clippy::manual_async_fn, reason = "see above")]
    pub(crate) fn retry_observed<S, T, E, F, Fut, O, OFut>(
        &self,
        sleeper: &S,
        mut op: F,
        mut observe: O,
        keep: Keep,
    ) -> impl Future<Output = Outcome<T>>
    where
        S: Sleeper,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: ToolError,
        O: FnMut(RetryNotice) -> OFut,
        OFut: Future<Output = ()>,
    {
        async move {
            let mut attempts = Attempts::new(self, sleeper.now());
            // The deadline's timer, made again for each attempt with the time
            // left (a sleeper's may count from its first poll), in one box:
            // the loop's future holds a pointer where there is no deadline.
            let mut deadline = None;
            let (mut escalation, stats) = loop {
                let left = attempts.remaining(|| sleeper.now());
                // A retry whose wait ran past the deadline is not started.
                if left.is_some_and(|left| left.is_zero()) && attempts.made() > 0 {
                    break attempts.out_of_time(sleeper.now());
                }
                attempts.begin();
                if let Some(left) = left {
                    let timer = sleeper.sleep(left);
                    match &mut deadline {
                        None => deadline = Some(Box::pin(timer)),
                        Some(boxed) => boxed.as_mut().set(timer),
                    }
                }
                let error = match Within::new(op(), deadline.as_mut()).await {
                    Some(Ok(value)) => {
                        return Outcome {
                            result: Ok(value),
                            stats: attempts.succeeded(sleeper.now()),
                        };
                    }
                    Some(Err(error)) => error,
                    None => break attempts.cut_off(sleeper.now()),
                };
                // Decided before anything is awaited: only the notice is kept.
                let notice = match attempts.failed(caught_envelope(error), || sleeper.now()) {
                    Next::Retry(notice) => notice,
                    Next::Stop(escalation) => break (*escalation, attempts.take_stats()),
                };
                let delay = notice.delay;
                observe(notice).await;
                // The hook and the notice may have taken long (a slow sink, a
                // slow client): a delay that now crosses the deadline is not
                // slept.
                if attempts
                    .remaining(|| sleeper.now())
                    .is_some_and(|left| left <= delay)
                {
                    attempts.not_slept();
                    break attempts.out_of_time(sleeper.now());
                }
                sleeper.sleep(delay).await;
                attempts.slept(delay);
            };
            if let (Keep::InStore, Some(store)) = (keep, &self.store) {
                // Within the deadline, or a moment past it when it is (nearly)
                // spent: a store that hangs does not hold the caller past it.
                // What is left now, the hook's time included.
                let bound = (attempts.remaining(|| sleeper.now())).map(|left| left.max(KEEP_GRACE));
                let keeping = keep::keep(store.as_ref(), &mut escalation, None);
                let timer = bound.map(|bound| sleeper.sleep(bound));
                // Boxed: a store's write stays out of the loop's future, which
                // every call that never escalates carries as well.
                if Box::pin(Within::new(keeping, timer)).await.is_none() {
                    #[cfg(feature = "tracing")]
                    tracing::warn!(
                        "keeping an escalation: the store did not answer within the deadline (or a second past it); it is returned unkept"
                    );
                }
            }
            Outcome {
                result: Err(escalation),
                stats,
            }
        }
    }

    /// Runs `op` until it succeeds or the policy says stop, sleeping with
    /// `std::thread::sleep`: no async runtime needed. An attempt cannot be cut
    /// off, so the deadline is checked between attempts.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_envelope::{ErrorCategory, ErrorEnvelope, EscalationReason, retry::RetryPolicy};
    ///
    /// let policy = RetryPolicy::default().constant(Duration::from_millis(1));
    /// let mut calls = 0;
    /// let outcome = policy.retry_blocking(|| -> Result<(), ErrorEnvelope> {
    ///     calls += 1;
    ///     Err(ErrorEnvelope::permission("Access denied to payroll table"))
    /// });
    /// let escalation = outcome.result.unwrap_err();
    /// assert_eq!(escalation.reason, EscalationReason::NonRetryable);
    /// assert_eq!(calls, 1, "a permission error is never retried");
    /// ```
    pub fn retry_blocking<T, E, F>(&self, op: F) -> Outcome<T>
    where
        F: FnMut() -> Result<T, E>,
        E: ToolError,
    {
        self.retry_blocking_on(&ThreadSleeper, op)
    }

    fn retry_blocking_on<S, T, E, F>(&self, sleeper: &S, mut op: F) -> Outcome<T>
    where
        S: BlockingSleeper,
        F: FnMut() -> Result<T, E>,
        E: ToolError,
    {
        let mut attempts = Attempts::new(self, sleeper.now());
        loop {
            // A retry whose wait ran past the deadline (a thread woken
            // late on a loaded machine) is not started, as in the async loop.
            let left = attempts.remaining(|| sleeper.now());
            if left.is_some_and(|left| left.is_zero()) && attempts.made() > 0 {
                let (escalation, stats) = attempts.out_of_time(sleeper.now());
                return Outcome {
                    result: Err(escalation),
                    stats,
                };
            }
            attempts.begin();
            match op() {
                Ok(value) => {
                    return Outcome {
                        result: Ok(value),
                        stats: attempts.succeeded(sleeper.now()),
                    };
                }
                Err(error) => match attempts.failed(caught_envelope(error), || sleeper.now()) {
                    // The hook may have taken long: a delay that now
                    // crosses the deadline is not slept, as in the async loop.
                    Next::Retry(notice)
                        if attempts
                            .remaining(|| sleeper.now())
                            .is_some_and(|left| left <= notice.delay) =>
                    {
                        attempts.not_slept();
                        let (escalation, stats) = attempts.out_of_time(sleeper.now());
                        return Outcome {
                            result: Err(escalation),
                            stats,
                        };
                    }
                    Next::Retry(notice) => {
                        sleeper.sleep(notice.delay);
                        attempts.slept(notice.delay);
                    }
                    Next::Stop(escalation) => {
                        return Outcome {
                            result: Err(*escalation),
                            stats: attempts.into_stats(),
                        };
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests;
