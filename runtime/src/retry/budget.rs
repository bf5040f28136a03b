//! A retry budget shared by many retry loops, so that when a dependency is
//! down the retries of a whole workflow stop instead of multiplying its load.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Token units per token: the bucket counts in thousandths.
const SCALE: u64 = 1000;

/// A token bucket in the spirit of gRPC's retry throttling and the AWS SDK's
/// retry quota.
///
/// Each *retryable* failure takes one token; each success gives back a
/// fraction of one (`0.1` by default). Retries are allowed only while more
/// than half the tokens remain. Under a total outage, a workflow makes its
/// first attempts and about `max_tokens / 2` retries in all — then every loop
/// sharing the budget escalates with "retry budget exhausted". Non-retryable
/// failures never touch it.
///
/// Clones share the same bucket.
///
/// ```
/// use tool_envelope::retry::RetryBudget;
///
/// let budget = RetryBudget::new(10.0);
/// assert!(budget.allows_retry());
/// for _ in 0..5 {
///     budget.record_failure();
/// }
/// assert!(!budget.allows_retry(), "half the tokens are gone");
/// for _ in 0..10 {
///     budget.record_success();
/// }
/// assert!(budget.allows_retry());
/// ```
#[derive(Clone)]
pub struct RetryBudget {
    inner: Arc<Inner>,
}

struct Inner {
    tokens: AtomicU64,
    max: u64,
    refill: u64,
}

impl RetryBudget {
    /// A full bucket of `max_tokens` (gRPC's `maxTokens`), refilled by 0.1
    /// token per success.
    ///
    /// # Panics
    ///
    /// If `max_tokens` is not a positive finite number.
    pub fn new(max_tokens: f64) -> Self {
        RetryBudget::with_refill(max_tokens, 0.1)
    }

    /// A full bucket of `max_tokens`, refilled by `per_success` tokens per
    /// success (gRPC's `tokenRatio`).
    ///
    /// # Panics
    ///
    /// If either number is negative or not finite, or `max_tokens` is zero.
    pub fn with_refill(max_tokens: f64, per_success: f64) -> Self {
        assert!(
            max_tokens.is_finite() && max_tokens > 0.0,
            "a retry budget needs a positive number of tokens, not {max_tokens}"
        );
        assert!(
            per_success.is_finite() && per_success >= 0.0,
            "a retry budget's refill must be zero or more, not {per_success}"
        );
        // A float-to-integer cast saturates: a huge budget is `u64::MAX`
        // thousandths, and the arithmetic below saturates too. A budget too
        // small to count is one thousandth of a token: no retry.
        let max = (max_tokens * SCALE as f64) as u64;
        RetryBudget {
            inner: Arc::new(Inner {
                tokens: AtomicU64::new(max),
                max,
                refill: (per_success * SCALE as f64) as u64,
            }),
        }
    }

    /// Whether a retry may start: more than half the tokens remain.
    pub fn allows_retry(&self) -> bool {
        self.inner.tokens.load(Ordering::Acquire) > self.inner.max / 2
    }

    /// A retryable failure: takes one token.
    pub fn record_failure(&self) {
        let _ = self
            .inner
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_sub(SCALE))
            });
    }

    /// A success: gives back a fraction of a token.
    pub fn record_success(&self) {
        let (max, refill) = (self.inner.max, self.inner.refill);
        let _ = self
            .inner
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_add(refill).min(max))
            });
    }

    /// The tokens left.
    pub fn tokens(&self) -> f64 {
        self.inner.tokens.load(Ordering::Acquire) as f64 / SCALE as f64
    }

    /// Whether `other` shares this bucket.
    pub fn same_as(&self, other: &RetryBudget) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("tokens", &self.tokens())
            .field("max_tokens", &(self.inner.max as f64 / SCALE as f64))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_below_zero_nor_above_max() {
        let budget = RetryBudget::new(2.0);
        for _ in 0..10 {
            budget.record_failure();
        }
        assert_eq!(budget.tokens(), 0.0);
        for _ in 0..1000 {
            budget.record_success();
        }
        assert_eq!(budget.tokens(), 2.0);
    }

    #[test]
    fn clones_share_the_bucket() {
        let a = RetryBudget::new(4.0);
        let b = a.clone();
        b.record_failure();
        b.record_failure();
        assert!(!a.allows_retry());
        assert!(a.same_as(&b));
    }
}
