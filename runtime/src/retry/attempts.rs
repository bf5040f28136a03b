//! The retry loop's state and decisions, shared by the async and blocking drivers.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::category::ErrorCategory;
use crate::envelope::ErrorEnvelope;
use crate::escalation::{Escalation, EscalationReason};
use crate::json::millis::duration_to_ms;
use crate::partial::{count, held, merge};
use crate::retry::backoff::Delays;
use crate::retry::policy::{RetryAction, RetryEvent, RetryPolicy};

/// One failed attempt, as the loop saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// The attempt's number, from 1.
    pub attempt: u32,
    /// Its failure type.
    pub category: ErrorCategory,
    /// Whether its error was retryable.
    pub retryable: bool,
    /// Its message.
    pub message: String,
    /// How many partial results had been gathered after it, in all.
    pub gathered: usize,
    /// The delay chosen before the next attempt; `None` when the loop stopped.
    pub delay: Option<Duration>,
}

/// What one retry loop did, reported on success and on failure alike.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RetryStats {
    /// Attempts made, the successful one included.
    pub attempts: u32,
    /// Total time slept between attempts.
    pub slept: Duration,
    /// Time from the first attempt to the end.
    pub elapsed: Duration,
    /// Every failed attempt, in order.
    pub history: Vec<AttemptRecord>,
}

impl RetryStats {
    /// The delays chosen, in order.
    pub fn delays(&self) -> Vec<Duration> {
        self.history
            .iter()
            .filter_map(|record| record.delay)
            .collect()
    }
}

/// After a failed attempt: wait and retry, or stop.
pub(crate) enum Next {
    Retry(RetryNotice),
    Stop(Box<Escalation>),
}

/// A retry about to happen, as a caller waiting on the call is told of it:
/// what failed and how long until the next attempt; never the failure's
/// message, which may hold what a client must not see.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
pub(crate) struct RetryNotice {
    /// The attempt that failed, from 1.
    pub(crate) attempt: u32,
    /// The most attempts the policy makes.
    pub(crate) max_attempts: u32,
    /// Its failure type.
    pub(crate) category: ErrorCategory,
    /// Its reason code, if it had one.
    pub(crate) reason: Option<std::borrow::Cow<'static, str>>,
    /// The delay before the next attempt.
    pub(crate) delay: Duration,
}

/// The state of one retry loop: small, as every pending call carries it
/// (10,000 calls waiting on their timers are 10,000 of these); what only a
/// loop that failed needs is boxed, made at its first failure.
pub(crate) struct Attempts<'p> {
    policy: &'p RetryPolicy,
    started: Instant,
    /// Attempts begun.
    attempts: u32,
    failures: Option<Box<Failures>>,
}

/// What a retry loop keeps once an attempt failed.
struct Failures {
    delays: Delays,
    /// The stats but the attempts: history, time slept, time elapsed.
    stats: RetryStats,
    /// Consecutive failed attempts that gathered nothing new.
    stalled: u32,
    /// Every partial result gathered so far, across attempts.
    gathered: Option<Value>,
    /// The last envelope, to escalate with if an attempt is cut off.
    last: Option<ErrorEnvelope>,
}

impl<'p> Attempts<'p> {
    pub(crate) fn new(policy: &'p RetryPolicy, now: Instant) -> Self {
        Attempts {
            policy,
            started: now,
            attempts: 0,
            failures: None,
        }
    }

    /// What the loop keeps of its failures, made at the first.
    fn failures(&mut self) -> &mut Failures {
        let policy = self.policy;
        self.failures.get_or_insert_with(|| {
            let mut history = Vec::new();
            // One allocation for the history of a loop that fails again.
            history.reserve_exact(usize::try_from(policy.max_attempts.min(8)).unwrap_or(8));
            Box::new(Failures {
                delays: policy.backoff.delays(),
                stats: RetryStats {
                    history,
                    ..RetryStats::default()
                },
                stalled: 0,
                gathered: None,
                last: None,
            })
        })
    }

    /// Counts an attempt about to start.
    pub(crate) fn begin(&mut self) {
        self.attempts = self.attempts.saturating_add(1);
    }

    /// Attempts begun so far.
    pub(crate) fn made(&self) -> u32 {
        self.attempts
    }

    /// Time left before the deadline, if there is one: the clock, `now`,
    /// is read only then.
    pub(crate) fn remaining(&self, now: impl FnOnce() -> Instant) -> Option<Duration> {
        self.policy
            .deadline
            .map(|deadline| deadline.saturating_sub(now().saturating_duration_since(self.started)))
    }

    /// The loop stops where it would have waited the last record's delay:
    /// it chose none after all.
    pub(crate) fn not_slept(&mut self) {
        if let Some(record) = self.failures().stats.history.last_mut() {
            record.delay = None;
        }
    }

    pub(crate) fn slept(&mut self, delay: Duration) {
        let stats = &mut self.failures().stats;
        stats.slept = stats.slept.saturating_add(delay);
    }

    pub(crate) fn succeeded(self, now: Instant) -> RetryStats {
        if let Some(budget) = &self.policy.budget {
            budget.record_success();
        }
        let elapsed = now.saturating_duration_since(self.started);
        let mut stats = self.into_stats();
        stats.elapsed = elapsed;
        stats
    }

    /// The attempt was still running when the deadline came: escalate with the
    /// last envelope, or one saying so.
    pub(crate) fn cut_off(&mut self, now: Instant) -> (Escalation, RetryStats) {
        let deadline = self.policy.deadline.unwrap_or_default();
        let attempt = self.attempts;
        let elapsed = now.saturating_duration_since(self.started);
        let message = format!(
            "attempt {attempt} was still running at the {} ms deadline",
            duration_to_ms(deadline)
        );
        let failures = self.failures();
        let mut envelope = match failures.last.take() {
            // The attempt cut off may have taken effect, whatever the one
            // before proved of itself: the one retry decision again, so
            // that a loop this escalation's envelope reaches (an outer
            // one) does not repeat a call that is not safe to repeat.
            // Only a call declared safe to repeat stays retryable: of one
            // that says nothing, nothing is known but that it was running.
            Some(last) => {
                let last = last.with_not_applied(false);
                let safe = last.idempotent() == Some(true);
                match crate::settle::leaves_retryable(last.is_retryable(), last.reason(), safe) {
                    false if last.is_retryable() => last
                        .with_retryable(false)
                        .with_reason(crate::reasons::MAY_HAVE_TAKEN_EFFECT),
                    _ => last,
                }
            }
            // Nothing known of the call but that it was running: it may
            // have taken effect.
            None => ErrorEnvelope::transient(message.clone())
                .with_reason(crate::reasons::DEADLINE_EXCEEDED)
                .with_retryable(false),
        };
        if let Some(gathered) = &failures.gathered {
            envelope = envelope.remade(|parts| parts.partial_results = Some(gathered.clone()));
        }
        failures.stats.history.push(AttemptRecord {
            attempt,
            category: ErrorCategory::Transient,
            // As the envelope it escalates with says: one that may have
            // taken effect is not retryable.
            retryable: envelope.is_retryable(),
            message: message.clone(),
            gathered: count(failures.gathered.as_ref()),
            delay: None,
        });
        self.at_deadline(envelope, ErrorCategory::Transient, message, elapsed)
    }

    /// The deadline passed while the loop waited to retry — the sleeper
    /// woke late, or telling the caller of the retry took that long: escalate
    /// with the last envelope as it is, without starting an attempt that
    /// would be cut off as it began (and might take effect first).
    pub(crate) fn out_of_time(&mut self, now: Instant) -> (Escalation, RetryStats) {
        let deadline = self.policy.deadline.unwrap_or_default();
        let next = self.attempts.saturating_add(1);
        let elapsed = now.saturating_duration_since(self.started);
        let message = format!(
            "no time was left for attempt {next} within the {} ms deadline",
            duration_to_ms(deadline)
        );
        let envelope = match self.failures().last.take() {
            Some(last) => last,
            None => ErrorEnvelope::transient(message.clone())
                .with_reason(crate::reasons::DEADLINE_EXCEEDED),
        };
        let category = envelope.category();
        self.at_deadline(envelope, category, message, elapsed)
    }

    /// Ends the loop at its deadline with `envelope`, `message` the detail.
    fn at_deadline(
        &mut self,
        envelope: ErrorEnvelope,
        category: ErrorCategory,
        message: String,
        elapsed: Duration,
    ) -> (Escalation, RetryStats) {
        let attempt = self.attempts;
        let failures = self.failures();
        failures.stats.elapsed = elapsed;
        let stats = std::mem::take(&mut failures.stats);
        self.policy.emit(&RetryEvent {
            tool: envelope.tool(),
            attempt,
            category,
            message: &message,
            reason: envelope.reason(),
            action: RetryAction::Escalate {
                reason: EscalationReason::DeadlineExceeded,
            },
        });
        let escalation = Escalation::new(
            EscalationReason::DeadlineExceeded,
            envelope,
            attempt,
            elapsed,
        )
        .with_detail(message);
        (
            escalation,
            RetryStats {
                attempts: attempt,
                ..stats
            },
        )
    }

    /// Decides what follows a failed attempt. The clock, `now`, is read
    /// only when the loop has a deadline or stops here: a retry without a
    /// deadline needs no time (the stats' `elapsed` is set at the end).
    pub(crate) fn failed(&mut self, envelope: ErrorEnvelope, now: impl Fn() -> Instant) -> Next {
        let attempt = self.attempts;
        let started = self.started;
        let elapsed = || now().saturating_duration_since(started);
        let by_deadline = self.policy.deadline.map(|_| elapsed());
        let failures = self.failures();

        // Only a tool that gathers partial results can make progress, or
        // stall: progress is more held than before, at any depth (an item
        // added, a key); a value that only changed is none.
        let mut parts = envelope.into_parts();
        let latest = parts.partial_results.take();
        let before = latest.is_some().then(|| held(failures.gathered.as_ref()));
        failures.gathered = merge(failures.gathered.take(), latest);
        parts.partial_results.clone_from(&failures.gathered);
        let envelope = ErrorEnvelope::from_parts(parts);
        let gathered = count(failures.gathered.as_ref());
        if let Some(before) = before {
            failures.stalled = if held(failures.gathered.as_ref()) > before {
                0
            } else {
                failures.stalled + 1
            };
        }

        let next = self.decide(&envelope, attempt, by_deadline);
        self.policy.emit(&RetryEvent {
            tool: envelope.tool(),
            attempt,
            category: envelope.category(),
            message: envelope.message(),
            reason: envelope.reason(),
            action: match &next {
                Ok(delay) => RetryAction::Retry { delay: *delay },
                Err((reason, _)) => RetryAction::Escalate { reason: *reason },
            },
        });
        let mut record = AttemptRecord {
            attempt,
            category: envelope.category(),
            retryable: envelope.is_retryable(),
            message: String::new(),
            gathered,
            delay: next.as_ref().ok().copied(),
        };
        match next {
            Ok(delay) => {
                let notice = RetryNotice {
                    attempt,
                    max_attempts: self.policy.max_attempts,
                    category: envelope.category(),
                    reason: envelope.reason_code(),
                    delay,
                };
                let keep_last = self.policy.deadline.is_some();
                let failures = self.failures();
                if keep_last {
                    // Kept, to escalate with if the next attempt is cut off.
                    record.message = envelope.message().to_owned();
                    failures.last = Some(envelope);
                } else {
                    // Nothing else needs this envelope: its message moves into the history.
                    record.message = envelope.into_parts().message;
                }
                failures.stats.history.push(record);
                Next::Retry(notice)
            }
            Err((reason, detail)) => {
                let elapsed = by_deadline.unwrap_or_else(elapsed);
                record.message = envelope.message().to_owned();
                let stats = &mut self.failures().stats;
                stats.history.push(record);
                stats.elapsed = elapsed;
                // A call refused before the tool ran — blocked by a guard, its
                // arguments unusable — does not count as a run.
                let ran = if envelope.was_refused() {
                    attempt - 1
                } else {
                    attempt
                };
                let mut escalation = Escalation::new(reason, envelope, ran, elapsed);
                escalation.detail = detail;
                Next::Stop(Box::new(escalation))
            }
        }
    }

    /// `elapsed`: the time since the first attempt, when the loop has a
    /// deadline.
    fn decide(
        &mut self,
        envelope: &ErrorEnvelope,
        attempt: u32,
        elapsed: Option<Duration>,
    ) -> Result<Duration, (EscalationReason, Option<String>)> {
        let policy = self.policy;
        let reason = EscalationReason::of_final(envelope);
        // A human request and a policy gap are never retryable: they go up
        // here, at once, whatever the category says.
        if !envelope.is_retryable() {
            let detail = envelope.withheld_by().map(|tool| {
                format!(
                    "not retried: `{tool}` is not declared idempotent and its error does not say that the \
                     call was not applied, so repeating it could apply it twice"
                )
            });
            return Err((reason, detail));
        }
        if let Some(budget) = &policy.budget {
            budget.record_failure();
        }
        if attempt >= policy.max_attempts {
            return Err((
                EscalationReason::RetriesExhausted,
                Some(format!("all {attempt} attempts failed")),
            ));
        }
        let stalled = self.failures().stalled;
        if let Some(limit) = policy.no_progress
            && stalled >= limit
        {
            return Err((
                EscalationReason::NoProgress,
                Some(format!(
                    "{stalled} consecutive attempts gathered nothing new"
                )),
            ));
        }
        if let Some(budget) = &policy.budget
            && !budget.allows_retry()
        {
            return Err((
                EscalationReason::RetryBudgetExhausted,
                Some("the shared retry budget is spent: the dependency looks down".to_owned()),
            ));
        }
        let Some(scheduled) = self.failures().delays.next() else {
            return Err((
                EscalationReason::RetriesExhausted,
                Some(format!(
                    "the backoff schedule ran out after {attempt} attempts"
                )),
            ));
        };
        let delay = match envelope.retry_after() {
            Some(hint) => hint.min(policy.max_retry_after),
            None => scheduled,
        };
        if let (Some(deadline), Some(elapsed)) = (policy.deadline, elapsed)
            && elapsed.saturating_add(delay) >= deadline
        {
            return Err((
                EscalationReason::DeadlineExceeded,
                Some(format!(
                    "the next attempt, in {} ms, would cross the {} ms deadline",
                    duration_to_ms(delay),
                    duration_to_ms(deadline)
                )),
            ));
        }
        Ok(delay)
    }

    /// The loop ends; the stats so far, taken (the loop reads only the
    /// time left after it).
    pub(crate) fn take_stats(&mut self) -> RetryStats {
        let stats = (self.failures.take())
            .map(|failures| failures.stats)
            .unwrap_or_default();
        RetryStats {
            attempts: self.attempts,
            ..stats
        }
    }

    /// The loop ends; the stats so far.
    pub(crate) fn into_stats(self) -> RetryStats {
        let stats = self
            .failures
            .map(|failures| failures.stats)
            .unwrap_or_default();
        RetryStats {
            attempts: self.attempts,
            ..stats
        }
    }
}
