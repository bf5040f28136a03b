//! Recover locally: the retry loop, sync and async.
//!
//! A transient fault is retried where it happened, with bounded attempts and
//! backoff, so that the caller never sees a blip; anything that cannot be
//! recovered ends the loop as an [`Escalation`] carrying its context.

mod attempts;
mod backoff;
mod budget;
mod policy;
mod sleep;

use std::future::Future;
use std::pin::pin;

use futures_util::future::{Either, select};

pub use attempts::{AttemptRecord, RetryStats};
pub use backoff::{Backoff, Delays, Jitter};
pub use budget::RetryBudget;
pub use policy::{RetryAction, RetryEvent, RetryPolicy};
pub use sleep::Sleeper;
#[cfg(feature = "tokio")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "tokio")))]
pub use sleep::TokioSleeper;

use crate::classify::ToolError;
use crate::escalation::Escalation;
pub(crate) use attempts::RetryNotice;
use attempts::{Attempts, Next};
use sleep::{BlockingSleeper, ThreadSleeper};

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
    pub async fn retry<T, E, F, Fut>(&self, op: F) -> Outcome<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: ToolError,
    {
        self.retry_with(&TokioSleeper, op).await
    }

    /// [`retry`](Self::retry) on any clock: `sleeper` gives the time and the sleeps.
    pub async fn retry_with<S, T, E, F, Fut>(&self, sleeper: &S, op: F) -> Outcome<T>
    where
        S: Sleeper,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: ToolError,
    {
        self.retry_observed(sleeper, op, |_| std::future::ready(()))
            .await
    }

    /// [`retry_with`](Self::retry_with), awaiting `observe` before each
    /// retry's sleep: a tool set reports each retry to the client that way,
    /// in order, before the call's reply.
    pub(crate) async fn retry_observed<S, T, E, F, Fut, O, OFut>(
        &self,
        sleeper: &S,
        mut op: F,
        mut observe: O,
    ) -> Outcome<T>
    where
        S: Sleeper,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: ToolError,
        O: FnMut(RetryNotice) -> OFut,
        OFut: Future<Output = ()>,
    {
        let mut attempts = Attempts::new(self, sleeper.now());
        loop {
            attempts.begin();
            let result = match attempts.remaining(sleeper.now()) {
                None => op().await,
                Some(left) => {
                    let attempt = pin!(op());
                    let timer = pin!(sleeper.sleep(left));
                    match select(attempt, timer).await {
                        Either::Left((result, _)) => result,
                        Either::Right(((), _)) => {
                            let (escalation, stats) = attempts.cut_off(sleeper.now());
                            return Outcome {
                                result: Err(escalation),
                                stats,
                            };
                        }
                    }
                }
            };
            match result {
                Ok(value) => {
                    return Outcome {
                        result: Ok(value),
                        stats: attempts.succeeded(sleeper.now()),
                    };
                }
                Err(error) => match attempts.failed(error.into_envelope(), sleeper.now()) {
                    Next::Retry(notice) => {
                        let delay = notice.delay;
                        observe(notice).await;
                        sleeper.sleep(delay).await;
                        attempts.slept(delay);
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
            attempts.begin();
            match op() {
                Ok(value) => {
                    return Outcome {
                        result: Ok(value),
                        stats: attempts.succeeded(sleeper.now()),
                    };
                }
                Err(error) => match attempts.failed(error.into_envelope(), sleeper.now()) {
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
