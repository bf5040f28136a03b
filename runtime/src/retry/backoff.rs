//! Backoff schedules: how long to wait before each retry.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How much randomness spreads the delays of many callers apart.
///
/// Jitter only ever shortens a delay: a delay never exceeds the configured
/// maximum, whatever the draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Jitter {
    /// No randomness: exactly the computed delay. Good for tests.
    None,
    /// A uniform draw in `[0, delay]` (AWS's "full jitter"): the least contention.
    #[default]
    Full,
    /// A uniform draw in `[delay / 2, delay]`: never much shorter than computed.
    Equal,
}

impl Jitter {
    fn apply(self, delay: Duration, rng: &mut fastrand::Rng) -> Duration {
        let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        match self {
            Jitter::None => delay,
            Jitter::Full => Duration::from_nanos(rng.u64(0..=nanos)),
            Jitter::Equal => Duration::from_nanos(rng.u64(nanos / 2..=nanos)),
        }
    }
}

/// A schedule of delays between attempts, built once and reused: each retry
/// loop starts it afresh.
///
/// ```
/// use std::time::Duration;
/// use tool_envelope::retry::{Backoff, Jitter};
///
/// let backoff = Backoff::exponential(Duration::from_millis(100), Duration::from_secs(1)).jitter(Jitter::None);
/// let delays: Vec<_> = backoff.delays().take(5).collect();
/// assert_eq!(delays, [100, 200, 400, 800, 1000].map(Duration::from_millis));
///
/// // Any `IntoIterator<Item = Duration>` is a schedule: it ends when the iterator does.
/// let fixed = Backoff::from_iter([Duration::from_millis(10), Duration::from_millis(50)]);
/// assert_eq!(fixed.delays().count(), 2);
/// ```
#[derive(Clone)]
pub struct Backoff {
    kind: Kind,
    jitter: Jitter,
}

#[derive(Clone)]
enum Kind {
    Exponential {
        initial: Duration,
        factor: f64,
        max: Duration,
    },
    Constant(Duration),
    Schedule(Arc<dyn Fn() -> Box<dyn Iterator<Item = Duration> + Send> + Send + Sync>),
}

impl Backoff {
    /// Delays of `initial`, then twice as long each time, never above `max`
    /// (an `initial` above `max` starts at `max`). Full jitter by default.
    pub fn exponential(initial: Duration, max: Duration) -> Self {
        Backoff {
            kind: Kind::Exponential {
                initial: initial.min(max),
                factor: 2.0,
                max,
            },
            jitter: Jitter::default(),
        }
    }

    /// The same delay every time. No jitter by default.
    pub fn constant(delay: Duration) -> Self {
        Backoff {
            kind: Kind::Constant(delay),
            jitter: Jitter::None,
        }
    }

    /// Any schedule, such as one from another crate. It is cloned for each
    /// retry loop, and the loop stops retrying when it runs out. No jitter is
    /// added.
    #[allow(clippy::should_implement_trait)]
    pub fn from_iter<I>(schedule: I) -> Self
    where
        I: IntoIterator<Item = Duration> + Clone + Send + Sync + 'static,
        I::IntoIter: Send + 'static,
    {
        Backoff {
            kind: Kind::Schedule(Arc::new(move || Box::new(schedule.clone().into_iter()))),
            jitter: Jitter::None,
        }
    }

    /// Sets the growth factor of an exponential schedule (2 by default).
    ///
    /// # Panics
    ///
    /// If `factor` is below 1 or not finite.
    #[must_use]
    pub fn factor(mut self, factor: f64) -> Self {
        assert!(
            factor.is_finite() && factor >= 1.0,
            "a backoff factor must be finite and at least 1, not {factor}"
        );
        if let Kind::Exponential { factor: f, .. } = &mut self.kind {
            *f = factor;
        }
        self
    }

    /// Sets the jitter.
    #[must_use]
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// The largest delay this schedule can produce, if it is bounded.
    pub fn max_delay(&self) -> Option<Duration> {
        match &self.kind {
            Kind::Exponential { max, .. } => Some(*max),
            Kind::Constant(delay) => Some(*delay),
            Kind::Schedule(_) => None,
        }
    }

    /// The delays of one retry loop, jitter applied.
    pub fn delays(&self) -> Delays {
        let inner = match &self.kind {
            Kind::Exponential {
                initial,
                factor,
                max,
            } => Inner::Exponential {
                next: *initial,
                factor: *factor,
                max: *max,
            },
            Kind::Constant(delay) => Inner::Constant(*delay),
            Kind::Schedule(make) => Inner::Schedule(make()),
        };
        Delays {
            inner,
            jitter: self.jitter,
            rng: fastrand::Rng::new(),
        }
    }
}

impl Default for Backoff {
    /// Exponential from 100 ms to 5 s, with full jitter.
    fn default() -> Self {
        Backoff::exponential(Duration::from_millis(100), Duration::from_secs(5))
    }
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Exponential {
                initial,
                factor,
                max,
            } => f
                .debug_struct("Exponential")
                .field("initial", initial)
                .field("factor", factor)
                .field("max", max)
                .field("jitter", &self.jitter)
                .finish(),
            Kind::Constant(delay) => f
                .debug_struct("Constant")
                .field("delay", delay)
                .field("jitter", &self.jitter)
                .finish(),
            Kind::Schedule(_) => f.write_str("Schedule(..)"),
        }
    }
}

/// The delays of one retry loop.
pub struct Delays {
    inner: Inner,
    jitter: Jitter,
    rng: fastrand::Rng,
}

enum Inner {
    Exponential {
        next: Duration,
        factor: f64,
        max: Duration,
    },
    Constant(Duration),
    Schedule(Box<dyn Iterator<Item = Duration> + Send>),
}

impl Iterator for Delays {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = match &mut self.inner {
            Inner::Exponential { next, factor, max } => {
                let delay = (*next).min(*max);
                *next = Duration::try_from_secs_f64(next.as_secs_f64() * *factor)
                    .map_or(*max, |grown| grown.min(*max));
                delay
            }
            Inner::Constant(delay) => *delay,
            Inner::Schedule(schedule) => schedule.next()?,
        };
        Some(self.jitter.apply(delay, &mut self.rng))
    }
}

impl fmt::Debug for Delays {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delays")
            .field("jitter", &self.jitter)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_doubles_up_to_the_cap() {
        let delays: Vec<_> =
            Backoff::exponential(Duration::from_millis(10), Duration::from_millis(70))
                .jitter(Jitter::None)
                .delays()
                .take(5)
                .collect();
        assert_eq!(delays, [10, 20, 40, 70, 70].map(Duration::from_millis));
    }

    #[test]
    fn a_first_delay_above_the_cap_starts_at_the_cap() {
        let delays: Vec<_> = Backoff::exponential(Duration::from_secs(10), Duration::from_secs(1))
            .jitter(Jitter::None)
            .delays()
            .take(3)
            .collect();
        assert_eq!(delays, [1, 1, 1].map(Duration::from_secs));
    }

    #[test]
    fn jitter_never_exceeds_the_maximum() {
        for jitter in [Jitter::Full, Jitter::Equal] {
            let max = Duration::from_millis(300);
            let backoff = Backoff::exponential(Duration::from_millis(50), max).jitter(jitter);
            for delay in backoff.delays().take(10_000) {
                assert!(delay <= max, "{jitter:?} gave {delay:?}");
            }
        }
    }

    /// Summary of `n` first delays of `backoff` in ms: (min, mean, max).
    fn spread(backoff: &Backoff, n: usize) -> (f64, f64, f64) {
        let draws: Vec<f64> = (0..n)
            .map(|_| backoff.delays().next().unwrap().as_secs_f64() * 1000.0)
            .collect();
        let min = draws.iter().copied().fold(f64::MAX, f64::min);
        let max = draws.iter().copied().fold(0.0, f64::max);
        (min, draws.iter().sum::<f64>() / n as f64, max)
    }

    #[test]
    fn full_jitter_is_the_default_and_spans_zero_to_the_delay() {
        let (min, mean, max) = spread(&Backoff::default(), 10_000);
        // Uniform on [0, 100 ms]: the mean's standard error is about 0.3 ms.
        assert!(min < 2.0 && max > 98.0 && max <= 100.0, "{min} {max}");
        assert!((47.0..53.0).contains(&mean), "{mean}");
    }

    #[test]
    fn equal_jitter_spans_half_to_the_whole_delay() {
        let backoff = Backoff::constant(Duration::from_millis(100)).jitter(Jitter::Equal);
        let (min, mean, max) = spread(&backoff, 10_000);
        assert!(
            (50.0..52.0).contains(&min) && max > 98.0 && max <= 100.0,
            "{min} {max}"
        );
        assert!((73.5..76.5).contains(&mean), "{mean}");
    }

    #[test]
    fn no_jitter_is_the_schedule_itself() {
        let backoff = Backoff::exponential(Duration::from_millis(100), Duration::from_secs(1))
            .jitter(Jitter::None);
        assert_eq!(spread(&backoff, 100), (100.0, 100.0, 100.0));
        let constant = Backoff::constant(Duration::from_millis(30));
        assert_eq!(spread(&constant, 100), (30.0, 30.0, 30.0));
    }

    #[test]
    fn equal_jitter_keeps_at_least_half() {
        let backoff = Backoff::constant(Duration::from_millis(100)).jitter(Jitter::Equal);
        assert!(
            backoff
                .delays()
                .take(1000)
                .all(|d| d >= Duration::from_millis(50))
        );
    }

    #[test]
    fn schedules_restart_for_each_loop() {
        let backoff = Backoff::from_iter(vec![Duration::from_millis(1), Duration::from_millis(2)]);
        assert_eq!(backoff.delays().count(), 2);
        assert_eq!(backoff.delays().count(), 2);
    }

    #[test]
    fn whole_and_fractional_factors_grow_as_multiplied() {
        let delays = |factor: f64, max: Duration| -> Vec<Duration> {
            Backoff::exponential(Duration::from_millis(10), max)
                .factor(factor)
                .jitter(Jitter::None)
                .delays()
                .take(4)
                .collect()
        };
        let ms = |list: [u64; 4]| list.map(Duration::from_millis);
        let cap = Duration::from_secs(60);
        assert_eq!(delays(3.0, cap), ms([10, 30, 90, 270]));
        assert_eq!(delays(1.0, cap), ms([10, 10, 10, 10]));
        assert_eq!(
            delays(1.5, cap),
            [10_000, 15_000, 22_500, 33_750].map(Duration::from_micros)
        );
        // Past what a `u32` multiplies by, and past what a `Duration` holds.
        let huge = [10, 60_000, 60_000, 60_000];
        assert_eq!(delays(1e12, cap), ms(huge));
        assert_eq!(
            delays(4e9, Duration::MAX)[..2],
            ms([10, 40_000_000_000, 0, 0])[..2]
        );
        assert_eq!(delays(4e9, Duration::MAX)[3], Duration::MAX);
    }

    #[test]
    fn huge_factors_saturate_at_the_cap() {
        let backoff = Backoff::exponential(Duration::from_secs(1), Duration::from_secs(60))
            .factor(1e9)
            .jitter(Jitter::None);
        assert!(
            backoff
                .delays()
                .take(100)
                .all(|d| d <= Duration::from_secs(60))
        );
    }
}
