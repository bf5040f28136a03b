//! The in-process store's own bookkeeping, which the store contract
//! (`tests/store.rs`) cannot see from outside.

use serde_json::json;

use super::{MemoryStore, Store};
use crate::store::{TaskRecord, TaskState, TaskUpdate};

const MINUTE: i64 = 60_000;

/// The ids of running tasks are kept while a task runs and let go of when
/// it finishes or is swept: the set never holds more than what runs.
#[tokio::test]
async fn the_running_set_holds_what_runs_and_nothing_else() {
    let store = MemoryStore::new();
    let now = crate::store::now_ms();
    let task = |n: u32| {
        TaskRecord::new("slow", json!({"n": n}), Some("alice".into()), MINUTE)
            .held_by("replica-a", now + MINUTE)
    };
    let (finished, swept, running) = (task(1), task(2), task(3));
    for kept in [&finished, &swept, &running] {
        assert!(store.create_task(kept, u64::MAX).await.unwrap());
    }
    assert_eq!(store.lock().running.len(), 3);

    let done = TaskUpdate::finish(TaskState::Completed, None);
    assert!(
        store
            .update_task(&finished.id, "replica-a", &done)
            .await
            .unwrap()
    );
    assert_eq!(
        store.lock().running.len(),
        2,
        "a finished task left in the set"
    );

    // Keeping a task again under its id, finished, lets go of it too.
    let mut ended = running.clone();
    ended.state = TaskState::Cancelled;
    assert!(store.create_task(&ended, u64::MAX).await.unwrap());
    assert_eq!(store.lock().running.len(), 1);

    // Past their time to live every task is swept, the one still running
    // with them, and its id goes with it.
    store.sweep(now + 2 * MINUTE).await.unwrap();
    let state = store.lock();
    assert!(state.tasks.is_empty());
    assert!(
        state.running.is_empty(),
        "a swept task's id left behind: {:?}",
        state.running
    );
}
