//! `RetryPolicy`: built once, reused at every call site.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::category::ErrorCategory;
use crate::escalation::EscalationReason;
use crate::retry::backoff::{Backoff, Jitter};
use crate::retry::budget::RetryBudget;

/// What the retry loop reports as it goes, to a hook and (with the `tracing`
/// feature) as `tracing` events.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RetryEvent<'a> {
    /// The tool that failed, when the envelope names it.
    pub tool: Option<&'a str>,
    /// The attempt that just failed, from 1.
    pub attempt: u32,
    /// Its failure type.
    pub category: ErrorCategory,
    /// Its message.
    pub message: &'a str,
    /// Its reason code, if it had one.
    pub reason: Option<&'a str>,
    /// What the loop does next.
    pub action: RetryAction,
}

/// The loop's decision after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryAction {
    /// Sleep this long, then try again.
    Retry {
        /// The delay chosen.
        delay: Duration,
    },
    /// Stop and escalate.
    Escalate {
        /// Why.
        reason: EscalationReason,
    },
}

type Hook = Arc<dyn Fn(&RetryEvent<'_>) + Send + Sync>;

/// How a tool's transient failures are retried locally: a value built once
/// and shared by every call site.
///
/// The stop signal is the envelope: a success returns at once, an error with
/// `isRetryable: false` stops at once, and only retryable errors are retried
/// — the same rule as any caller reading the envelope. A `#[tool]` that is
/// not idempotent sends its transient failures with `isRetryable: false`
/// unless its error says the call was not applied, so it is not retried
/// here either. An explicit human request or a policy gap (their
/// [`reasons`](crate::reasons)) stops at once, whatever the category. The
/// attempt cap (3 by default) is a backstop for a fault that looks transient
/// but is permanent.
///
/// ```
/// use std::time::Duration;
/// use tool_envelope::retry::{Backoff, RetryBudget, RetryPolicy};
///
/// let budget = RetryBudget::new(100.0);
/// let policy = RetryPolicy::default()
///     .max_attempts(5)
///     .backoff(Backoff::exponential(Duration::from_millis(50), Duration::from_secs(2)))
///     .deadline(Duration::from_secs(10))
///     .budget(&budget)
///     .stop_after_no_progress(2);
/// # let _ = policy;
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) deadline: Option<Duration>,
    pub(crate) max_retry_after: Duration,
    pub(crate) budget: Option<RetryBudget>,
    pub(crate) no_progress: Option<u32>,
    pub(crate) hook: Option<Hook>,
    /// Where escalations are kept for a person.
    pub(crate) store: Option<std::sync::Arc<dyn crate::store::Store>>,
}

impl Default for RetryPolicy {
    /// 3 attempts, exponential backoff from 100 ms to 5 s with full jitter,
    /// `retryAfterMs` hints honoured up to 30 s, no deadline, no budget.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            backoff: Backoff::default(),
            deadline: None,
            max_retry_after: Duration::from_secs(30),
            budget: None,
            no_progress: None,
            hook: None,
            store: None,
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries: one attempt, then escalate.
    pub fn never() -> Self {
        RetryPolicy::default().max_attempts(1)
    }

    /// The most attempts in all, the first included (at least 1).
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The schedule of delays between attempts.
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Exponential backoff from `initial` to `max` with full jitter.
    #[must_use]
    pub fn exponential(self, initial: Duration, max: Duration) -> Self {
        self.backoff(Backoff::exponential(initial, max))
    }

    /// The same delay between every attempt.
    #[must_use]
    pub fn constant(self, delay: Duration) -> Self {
        self.backoff(Backoff::constant(delay))
    }

    /// Sets the jitter of the current backoff.
    #[must_use]
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.backoff = self.backoff.jitter(jitter);
        self
    }

    /// An overall deadline spanning every attempt and every sleep. A delay
    /// that would cross it is not slept: the loop escalates instead. An async
    /// attempt still running at the deadline is dropped.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The ceiling on an error's `retryAfterMs` hint (30 s by default). A hint
    /// replaces the backoff's delay, clamped to this.
    #[must_use]
    pub fn max_retry_after(mut self, ceiling: Duration) -> Self {
        self.max_retry_after = ceiling;
        self
    }

    /// A retry budget shared with other loops.
    #[must_use]
    pub fn budget(mut self, budget: &RetryBudget) -> Self {
        self.budget = Some(budget.clone());
        self
    }

    /// Escalates with "no progress" after `attempts` consecutive failed
    /// attempts that added nothing to `partial_results`, at any depth (no
    /// item of a list, no key; a value that only changed, a cursor or a
    /// time, is no progress). Only a tool that
    /// gathers partial results (a `Partial` collector, or an error that
    /// carries them) can stall; the others are bound by the attempt cap.
    #[must_use]
    pub fn stop_after_no_progress(mut self, attempts: u32) -> Self {
        self.no_progress = Some(attempts.max(1));
        self
    }

    /// Keeps every escalation of [`retry`](Self::retry) and
    /// [`retry_with`](Self::retry_with) in `store`, with its whole envelope,
    /// for a person to see and resolve (the inbox page lists them): a local
    /// agent's escalations — an [`McpClient`](crate::mcp::client::McpClient)
    /// call under this policy, a [`Coordinator`](crate::coordinator::Coordinator)'s
    /// branch — land where a served tool set's do. Each is kept once on
    /// its way up. [`retry_blocking`](Self::retry_blocking), which runs no
    /// async code, keeps none.
    ///
    /// Under a [`deadline`](Self::deadline), the store is given what is
    /// left of it (the [`on_event`](Self::on_event) hook's time counted), or
    /// a second when less is left: one that has not kept the escalation by
    /// then (a database out of reach, a lock held) is left behind, and the
    /// escalation is returned unkept, as when the store fails — nothing
    /// returned is lost, and the store holds the caller at most a second
    /// past the deadline. Without a deadline, the store takes as long as it takes;
    /// so does a [`Coordinator`](crate::coordinator::Coordinator)'s keeping
    /// of a gap the loop left unkept, which has no deadline of its own. (A
    /// served tool set keeps its calls' escalations itself, and waits 10
    /// seconds at most.)
    #[must_use]
    pub fn keep_escalations(mut self, store: std::sync::Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Where escalations are kept, if they are.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn escalation_store(&self) -> Option<&std::sync::Arc<dyn crate::store::Store>> {
        self.store.as_ref()
    }

    /// Calls `hook` after every failed attempt with the loop's decision —
    /// and once more, [`Escalate`](RetryAction::Escalate) with
    /// `deadline_exceeded` for the same attempt, when a retry it announced
    /// finds no time left before the deadline (its wait, or the retry's
    /// notice, ran past it). A panic in `hook` is caught: the loop goes on.
    #[must_use]
    pub fn on_event(mut self, hook: impl Fn(&RetryEvent<'_>) + Send + Sync + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    pub(crate) fn emit(&self, event: &RetryEvent<'_>) {
        #[cfg(feature = "tracing")]
        match event.action {
            RetryAction::Retry { delay } => tracing::warn!(
                tool = event.tool.unwrap_or("unnamed"),
                attempt = event.attempt,
                category = event.category.as_str(),
                delay_ms = crate::json::millis::duration_to_ms(delay),
                "tool failed, retrying"
            ),
            RetryAction::Escalate { reason } => tracing::error!(
                tool = event.tool.unwrap_or("unnamed"),
                attempt = event.attempt,
                category = event.category.as_str(),
                reason = reason.as_str(),
                "tool failed, escalating"
            ),
        }
        // A hook that panics loses neither the call's outcome nor what it
        // gathered: its panic is caught, and the loop goes on.
        if let Some(hook) = &self.hook
            && let Err(_panic) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(event)))
        {
            #[cfg(feature = "tracing")]
            tracing::warn!(
                panic = crate::panic::panic_message(_panic.as_ref()),
                "a retry policy's on_event hook panicked"
            );
        }
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("backoff", &self.backoff)
            .field("deadline", &self.deadline)
            .field("max_retry_after", &self.max_retry_after)
            .field("budget", &self.budget)
            .field("no_progress", &self.no_progress)
            .field("hook", &self.hook.is_some())
            .field("keeps_escalations", &self.store.is_some())
            .finish()
    }
}
