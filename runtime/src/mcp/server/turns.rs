//! One at a time for each caller: a caller's turn, held by a replica from
//! counting what the caller has in the store to writing the new one (a
//! kept task started, an approval opened, an escalation kept), so that one
//! caller's crowd of calls at the same moment waits here, not in the store
//! — and no caller waits behind another's. The store's own count, made in
//! one step with the write, is what holds the bound across replicas.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// The callers' turns on this replica. A caller's lock lives while a turn
/// of theirs is held or waited for; the map forgets it after that.
#[derive(Default)]
pub(crate) struct Turns {
    callers: Mutex<Callers>,
}

#[derive(Default)]
struct Callers {
    locks: HashMap<Option<String>, Weak<tokio::sync::Mutex<()>>>,
    /// The map's size after it last forgot the callers whose turns ended:
    /// it forgets again once it has doubled, so that each turn costs, on
    /// average, a constant share of a pass over it.
    kept: usize,
}

/// A caller's turn: theirs until it is dropped.
pub(crate) struct Turn {
    _held: tokio::sync::OwnedMutexGuard<()>,
}

impl Turns {
    /// Waits for `caller`'s turn (`None`: the calls that name no caller,
    /// together).
    pub(crate) async fn take(&self, caller: Option<&str>) -> Turn {
        let lock = {
            let mut callers = self.callers.lock().unwrap_or_else(PoisonError::into_inner);
            let key = caller.map(str::to_owned);
            match callers.locks.get(&key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    callers.locks.insert(key, Arc::downgrade(&lock));
                    if callers.locks.len() >= (2 * callers.kept).max(64) {
                        callers.locks.retain(|_, lock| lock.strong_count() > 0);
                        callers.kept = callers.locks.len();
                    }
                    lock
                }
            }
        };
        Turn {
            _held: lock.lock_owned().await,
        }
    }

    /// How many callers the map holds a lock for.
    #[cfg(test)]
    fn len(&self) -> usize {
        (self
            .callers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .locks)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Waker};

    use super::Turns;

    #[tokio::test]
    async fn one_callers_turn_keeps_them_waiting_and_no_one_else() {
        let turns = Turns::default();
        let carol = turns.take(Some("carol")).await;
        // Dave, and the calls that name no caller, take theirs at once.
        let dave = turns.take(Some("dave")).await;
        let nobody = turns.take(None).await;
        let mut again = Box::pin(turns.take(Some("carol")));
        let mut context = Context::from_waker(Waker::noop());
        assert!(again.as_mut().poll(&mut context).is_pending());
        drop((dave, nobody));
        assert!(again.as_mut().poll(&mut context).is_pending());
        drop(carol);
        assert!(again.as_mut().poll(&mut context).is_ready());
    }

    #[tokio::test]
    async fn the_turns_of_callers_gone_are_forgotten() {
        let turns = Turns::default();
        for n in 0..10_000 {
            drop(turns.take(Some(&format!("caller-{n}"))).await);
        }
        assert!(turns.len() <= 64, "{} locks kept", turns.len());
    }
}
