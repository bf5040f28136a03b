//! Time, for the retry loop: a clock and a way to wait.

use std::future::Future;
use std::time::{Duration, Instant};

/// The clock and the sleep of an async retry loop. Implement it to run the
/// loop on a runtime other than tokio, or on a simulated clock.
///
/// ```
/// use std::time::{Duration, Instant};
/// use tool_envelope::retry::Sleeper;
///
/// /// Sleeps by blocking the thread: fine for a `block_on` executor.
/// struct Blocking;
///
/// impl Sleeper for Blocking {
///     fn now(&self) -> Instant {
///         Instant::now()
///     }
///     fn sleep(&self, duration: Duration) -> impl std::future::Future<Output = ()> + Send {
///         std::thread::sleep(duration);
///         std::future::ready(())
///     }
/// }
/// ```
pub trait Sleeper: Send + Sync {
    /// The current instant on this sleeper's clock.
    fn now(&self) -> Instant;

    /// Completes after `duration` on this sleeper's clock.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send;
}

/// tokio's timer: honours a paused clock (`tokio::time::pause`), so tests
/// that use it are exact and instant.
#[cfg(feature = "tokio")]
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "tokio")))]
pub struct TokioSleeper;

#[cfg(feature = "tokio")]
impl Sleeper for TokioSleeper {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }
}

/// The clock and sleep of the blocking loop: `Instant::now` and
/// `std::thread::sleep`. No async runtime involved.
pub(crate) trait BlockingSleeper {
    fn now(&self) -> Instant;
    fn sleep(&self, duration: Duration);
}

/// The real thread clock.
pub(crate) struct ThreadSleeper;

impl BlockingSleeper for ThreadSleeper {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}
