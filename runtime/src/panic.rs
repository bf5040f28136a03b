//! Panics caught at the edge of a tool or a branch, so that one failure never
//! unwinds into its caller.

use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::task::Poll;

use crate::category::ErrorCategory;
use crate::envelope::ErrorEnvelope;
use crate::reasons;

/// Runs `future` to completion, turning a panic while polling it into `Err`.
pub(crate) async fn catch_unwind_future<F: Future>(
    future: F,
) -> Result<F::Output, Box<dyn Any + Send>> {
    let mut future = pin!(future);
    poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        },
    )
    .await
}

/// The text of a panic's payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string panic payload")
}

/// The envelope of a panic of `subject` (``"tool `refund`"``): `other`, not
/// retryable, reason `PANIC`, its message one this crate did not write.
pub(crate) fn panicked(subject: &str, payload: &(dyn Any + Send)) -> ErrorEnvelope {
    let mut envelope = ErrorEnvelope::new(
        ErrorCategory::Other,
        format!("{subject} panicked: {}", panic_message(payload)),
    )
    .with_reason(reasons::PANIC);
    envelope.set_foreign();
    envelope
}
