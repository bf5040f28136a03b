//! The tasks' bounds and ends, without a client: a start's slot, a kept
//! task rmcp aborts, a caller's starts counted one at a time.

use super::*;

#[tokio::test]
async fn a_task_dropped_unfinished_gives_its_slot_back() {
    let tasks = Tasks::new(|_| TaskSupport::Optional).bounded(1, 1);
    let (alive, dropped) = tokio::sync::oneshot::channel::<()>();
    tasks
        .start(Some(&Caller::new("alice", [""; 0])), None, move |_| {
            Box::pin(async move {
                let _alive = alive;
                std::future::pending().await
            })
        })
        .expect("the first task starts");
    let never = |_| -> TaskFuture { Box::pin(std::future::pending()) };
    assert_eq!(
        tasks
            .start(Some(&Caller::new("alice", [""; 0])), None, never)
            .err(),
        Some(Full::Server(1))
    );
    // rmcp aborts a task past its time to live the way it aborts every
    // task on shutdown: the future is dropped, its end never reached.
    tasks.manager.shutdown();
    let _ = dropped.await;
    assert!(
        tasks
            .start(Some(&Caller::new("alice", [""; 0])), None, never)
            .is_ok(),
        "the aborted task's slot is free again"
    );
}

#[tokio::test]
async fn a_kept_task_rmcp_aborts_ends_failed_in_the_store_and_is_never_taken_over() {
    use crate::store::{MemoryStore, TaskState, now_ms};
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tasks = Tasks::new(|_| TaskSupport::Optional);
    let record = held::record("refund", &serde_json::json!({}), None, "replica-a", true);
    let kept = Kept {
        store: Arc::clone(&store),
        record,
    };
    let never = |_| -> TaskFuture { Box::pin(std::future::pending()) };
    let task = tasks.spawn(None, Some(kept), never).await.expect("started");
    // Let the task start and wait, then abort it as rmcp does at its
    // time to live.
    tokio::task::yield_now().await;
    tasks.manager.shutdown();
    let mut ended = None;
    for _ in 0..1_000 {
        let record = store.task(&task.task_id).await.unwrap().expect("kept");
        if record.state == TaskState::Failed {
            ended = Some(record);
            break;
        }
        tokio::task::yield_now().await;
    }
    let ended = ended.expect("the record ends failed");
    assert!(ended.error.unwrap().to_string().contains("task expired"));
    // Its lease lapsing later changes nothing: no replica takes it over.
    let later = now_ms() + 10 * 60 * 1000;
    let taken = store
        .claim_abandoned_tasks("", None, "replica-b", later, later + 1000, 10)
        .await
        .unwrap();
    assert!(taken.iter().all(|t| t.id != task.task_id));
}

#[tokio::test]
async fn a_callers_kept_starts_are_counted_one_at_a_time_and_others_are_not_held() {
    use std::task::{Context, Poll, Waker};

    use crate::caller::Caller;
    use crate::store::gated::Gated;
    let store = Gated::new();
    let tasks = Tasks::new(|_| TaskSupport::Optional).bounded(100, 1);
    let start = |who: &'static str| {
        let caller = Caller::new(who, ["tasks"]);
        let record = held::record(
            "report",
            &serde_json::json!({}),
            Some(&caller),
            "replica-a",
            true,
        );
        let store: Arc<dyn Store> = store.clone();
        let never = |_| -> TaskFuture { Box::pin(std::future::pending()) };
        let tasks = tasks.clone();
        async move {
            tasks
                .spawn(
                    Some(&Caller::new(who, [""; 0])),
                    Some(Kept { store, record }),
                    never,
                )
                .await
        }
    };
    let mut first = std::pin::pin!(start("alice"));
    let mut second = std::pin::pin!(start("alice"));
    let mut bob = std::pin::pin!(start("bob"));
    // Each start goes as far as it can while the count is held.
    let mut context = Context::from_waker(Waker::noop());
    for future in [first.as_mut(), second.as_mut(), bob.as_mut()] {
        assert!(matches!(future.poll(&mut context), Poll::Pending));
    }
    assert_eq!(
        store.entered(),
        2,
        "alice's second start waits for her first; bob's is not held by hers"
    );
    store.open();
    assert!(first.await.is_ok());
    assert_eq!(
        second.await.err(),
        Some(Full::Caller(1)),
        "counted after the first was kept"
    );
    assert!(bob.await.is_ok());
}

/// Two replicas start a task of one caller's at the same moment, each
/// counting none running: the store keeps one and refuses the other,
/// whose work never runs and whose id is forgotten.
#[tokio::test]
async fn a_start_the_store_refuses_never_runs() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Waker};

    use crate::caller::Caller;
    use crate::store::gated::Gated;
    let store = Gated::new();
    let replicas = [
        Tasks::new(|_| TaskSupport::Optional).bounded(100, 1),
        Tasks::new(|_| TaskSupport::Optional).bounded(100, 1),
    ];
    let ran = Arc::new(AtomicUsize::new(0));
    let start = |on: &Tasks| {
        let caller = Caller::new("alice", ["tasks"]);
        let record = held::record("report", &serde_json::json!({}), Some(&caller), "r", true);
        let store: Arc<dyn Store> = store.clone();
        let ran = Arc::clone(&ran);
        let work = move |_| -> TaskFuture {
            Box::pin(async move {
                ran.fetch_add(1, Ordering::SeqCst);
                std::future::pending().await
            })
        };
        let on = on.clone();
        async move {
            on.spawn(
                Some(&Caller::new("alice", [""; 0])),
                Some(Kept { store, record }),
                work,
            )
            .await
        }
    };
    let mut one = std::pin::pin!(start(&replicas[0]));
    let mut two = std::pin::pin!(start(&replicas[1]));
    // Both count none running, then both wait to keep their task.
    let mut context = Context::from_waker(Waker::noop());
    store.open_counts();
    for future in [one.as_mut(), two.as_mut()] {
        assert!(matches!(future.poll(&mut context), Poll::Pending));
    }
    assert_eq!(store.entered(), 2);
    store.open();
    let (one, two) = (one.await, two.await);
    assert!(one.is_ok(), "the first kept runs");
    assert_eq!(
        two.err(),
        Some(Full::Caller(1)),
        "the store refused the second"
    );
    // The kept task's work begins; the refused one's would have by then.
    for _ in 0..1_000 {
        if ran.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(ran.load(Ordering::SeqCst), 1, "only the kept task ran");
    let owners = replicas[1].owners.lock().unwrap().len();
    assert_eq!(owners, 0, "the refused task's id is forgotten");
}

/// Tasks that end at once hand their slot back, but each is kept, its
/// result with it, for a time to live: a caller starting them one after
/// another is refused past ten times its running bound, the server past
/// ten times its own, each told when the first is let go — and starts
/// again then. Other callers start while one is refused.
#[tokio::test(start_paused = true)]
async fn finished_tasks_are_kept_within_a_bound_of_the_callers_and_the_servers() {
    let tasks = Tasks::new(|_| TaskSupport::Optional).bounded(2, 1);
    let quick =
        |_| -> TaskFuture { Box::pin(async { Err(rmcp::task_manager::TaskExit::Cancelled) }) };
    let ended = |id: &str| {
        let owners = tasks.owners.lock().unwrap();
        owners[id].finished.get().is_some()
    };
    let start = async |subject: &str| {
        let task = tasks.start(Some(&Caller::new(subject, [""; 0])), None, quick)?;
        while !ended(&task.task_id) {
            tokio::task::yield_now().await;
        }
        Ok::<_, Full>(task)
    };
    for _ in 0..10 {
        start("alice").await.expect("within alice's bound");
    }
    tokio::time::advance(Duration::from_secs(60)).await;
    let refused = start("alice").await.expect_err("past alice's bound");
    let Full::Kept {
        caller: true,
        max: 10,
        after,
    } = refused
    else {
        panic!("{refused:?}");
    };
    assert_eq!(after, TASK_TTL - Duration::from_secs(60));
    for _ in 0..10 {
        start("bob").await.expect("bob's own bound");
    }
    let refused = start("carol").await.expect_err("past the server's bound");
    assert!(
        matches!(
            refused,
            Full::Kept {
                caller: false,
                max: 20,
                ..
            }
        ),
        "{refused:?}"
    );
    tokio::time::advance(after).await;
    start("alice").await.expect("alice's first ones let go");
    start("carol").await.expect("and the server has room");
}

/// A held task's call goes on while its store does not answer the
/// replica's looks (a database out of reach): it ends when its work does,
/// not when the store answers.
#[tokio::test(start_paused = true)]
async fn a_held_task_runs_on_while_its_store_does_not_answer() {
    use crate::store::gated::Gated;
    use tokio::time::Instant;
    let store = Gated::new();
    store.open();
    let tasks = Tasks::new(|_| TaskSupport::Optional);
    let record = held::record("report", &serde_json::json!({}), None, "replica-a", true);
    let shared: Arc<dyn Store> = store.clone();
    let kept = Kept {
        store: shared,
        record,
    };
    let work = |_| -> TaskFuture {
        Box::pin(async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(rmcp::model::CallToolResult::success(Vec::new()))
        })
    };
    let started = Instant::now();
    let task = tasks.spawn(None, Some(kept), work).await.expect("started");
    store.hang_task_reads();
    // Its status as rmcp keeps it, read on the paused clock.
    while !(tasks.manager.get_task(&task.task_id))
        .expect("known")
        .status()
        .is_terminal()
    {
        assert!(started.elapsed() < Duration::from_secs(3600), "never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(6), "ended after {took:?}");
}

/// An approved call, or a task taken over, runs on while its lease is
/// renewed: a renewal that does not end holds it up no more than one
/// that does.
#[tokio::test(start_paused = true)]
async fn a_run_goes_on_while_its_lease_is_renewed() {
    let run = tokio::time::sleep(Duration::from_secs(120));
    let never_renewed = || std::future::pending::<()>();
    let renewing = held::renewing(run, Duration::from_secs(60), never_renewed);
    let ended = tokio::time::timeout(Duration::from_secs(3600), renewing).await;
    assert!(ended.is_ok(), "the run ended while a renewal hung");
}

/// A task another replica took over while its call ended here, in a look
/// the store was slow to answer: its end is that replica's, and this one
/// reads the task from the store, not as it ended here.
#[tokio::test(start_paused = true)]
async fn a_task_that_ends_here_after_another_replica_took_it_over_is_that_replicas() {
    use crate::store::gated::Gated;
    use crate::store::now_ms;
    let store = Gated::new();
    store.open();
    let tasks = Tasks::new(|_| TaskSupport::Optional);
    let record = held::record("report", &serde_json::json!({}), None, "replica-a", true);
    let shared: Arc<dyn Store> = store.clone();
    let kept = Kept {
        store: Arc::clone(&shared),
        record,
    };
    let (end, ended) = tokio::sync::oneshot::channel::<()>();
    let work = move |_| -> TaskFuture {
        Box::pin(async move {
            let _ = ended.await;
            Ok(rmcp::model::CallToolResult::success(Vec::new()))
        })
    };
    let task = tasks.spawn(None, Some(kept), work).await.expect("started");
    let id = task.task_id;
    store.hang_task_reads();
    // The first look, a second in, waits for the store.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    // Meanwhile another replica takes the task for abandoned.
    let later = now_ms() + 10 * 60 * 1000;
    let taken = (store.inner())
        .claim_abandoned_tasks("", None, "replica-b", later, later + 30_000, 10)
        .await
        .unwrap();
    assert_eq!(taken.len(), 1, "taken over");
    // The call ends here while the look waits; then the store answers.
    end.send(()).unwrap();
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    store.release_task_reads();
    while !tasks
        .manager
        .get_task(&id)
        .expect("known")
        .status()
        .is_terminal()
    {
        tokio::task::yield_now().await;
    }
    let read = tasks.get(&id, None, Some((&shared, ""))).await.unwrap();
    assert!(
        !matches!(read.payload, TaskPayload::Completed { .. }),
        "read as it ended here: {read:?}"
    );
    let kept = shared.task(&id).await.unwrap().unwrap();
    assert_eq!(kept.holder.as_deref(), Some("replica-b"));
}
