//! One attempt, cut off at the deadline if there is one.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// `attempt`, raced against `timer` when there is one: `Some` of the
    /// attempt's output, or `None` when the timer went off first. One
    /// future for both cases, so that a loop's state holds one attempt.
    pub(crate) struct Within<A, T> {
        #[pin]
        attempt: A,
        #[pin]
        timer: Option<T>,
    }
}

impl<A, T> Within<A, T> {
    pub(crate) fn new(attempt: A, timer: Option<T>) -> Self {
        Within { attempt, timer }
    }
}

impl<A: Future, T: Future<Output = ()>> Future for Within<A, T> {
    type Output = Option<A::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // The attempt first: one that is done when the timer goes off counts.
        if let Poll::Ready(output) = this.attempt.poll(cx) {
            return Poll::Ready(Some(output));
        }
        match this.timer.as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(None),
            _ => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Within;
    use std::future::{pending, ready};

    #[tokio::test]
    async fn the_attempt_wins_when_both_are_ready_and_the_timer_cuts_off_the_rest() {
        assert_eq!(Within::new(ready(1), Some(ready(()))).await, Some(1));
        assert_eq!(Within::new(pending::<u8>(), Some(ready(()))).await, None);
        assert_eq!(
            Within::new(ready(2), None::<std::future::Ready<()>>).await,
            Some(2)
        );
    }
}
