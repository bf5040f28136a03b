//! Panics caught at the edge of a tool or a branch, so that one failure never
//! unwinds into its caller: how to catch one, and what it said. What a
//! panic becomes — its envelope — is classification's
//! ([`crate::classify`]).

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use futures_util::future::CatchUnwind;

/// Runs `future` to completion, turning a panic while polling it into `Err`.
///
/// futures' own `CatchUnwind`: the future is held once, in place (an
/// `async fn` here would hold it twice, as its argument and pinned, and
/// every served call's future would carry both).
pub(crate) fn catch_unwind_future<F: Future>(future: F) -> CatchUnwind<AssertUnwindSafe<F>> {
    AssertUnwindSafe(future).catch_unwind()
}

/// The text of a panic's payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string panic payload")
}
