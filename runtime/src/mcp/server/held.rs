//! Tasks kept in the store: a task a tool set with a store runs is written
//! there as it goes (made, asking, finished), held under a lease its
//! replica renews, so that any replica answers `tasks/get`, passes on
//! `tasks/update` and `tasks/cancel`, and a restart or a dead replica loses
//! nothing: the task is taken over, and run again only when that is safe.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{Either, select};
use rmcp::model::{
    CallToolResult, DetailedTask, InputRequests, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::task_manager::{TaskExit, TaskFuture, TaskManager};
use serde_json::Value;

use crate::json::millis::iso8601;
use crate::store::{Store, TaskRecord, TaskState, TaskUpdate, now_ms};

/// How long a replica holds a task it runs before another may take it over.
pub(crate) const LEASE: Duration = Duration::from_secs(30);

/// How often the holder renews its lease, and looks for answers and a
/// cancellation another replica passed on.
const LOOK: Duration = Duration::from_secs(1);

/// How long between two renewals of the lease, by the clock: a third of
/// it, so that two renewals may fail, or the store be slow to answer the
/// looks between them, before another replica may take the task over.
pub(crate) const RENEW_EVERY: Duration = Duration::from_secs(10);

/// Runs `run` to its end, calling `renew` every `every` while it goes: how
/// a replica keeps the lease of a call it runs outside a task's own loop
/// (an approved call, a task taken over).
pub(crate) async fn renewing<T, R: std::future::Future<Output = ()>>(
    run: impl std::future::Future<Output = T>,
    every: Duration,
    renew: impl Fn() -> R,
) -> T {
    use futures_util::future::{Either, select};
    let mut run = pin!(run);
    loop {
        let tick = pin!(tokio::time::sleep(every));
        if let Either::Left((done, _)) = select(run.as_mut(), tick).await {
            return done;
        }
        // The run goes on while the lease is renewed: a store slow to
        // answer does not hold it up.
        let renewal = pin!(renew());
        if let Either::Left((done, _)) = select(run.as_mut(), renewal).await {
            return done;
        }
    }
}

/// Completes once the caller of the task `id` asked, in `store`, for it
/// to stop: looked for as often as the replica that made it looks.
pub(crate) async fn cancel_asked(store: &dyn Store, id: &str) {
    loop {
        tokio::time::sleep(LOOK).await;
        if let Ok(Some(record)) = store.task(id).await
            && record.cancel_requested
        {
            return;
        }
    }
}

/// Milliseconds of `duration`, as leases and expiries count them.
pub(crate) fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Runs `future`, the call of the task `id`, on this replica (`holder`),
/// once its record is in `store` (`created`), until another replica takes
/// it over (then `lost` is set, and the task stopped): every second it passes on the
/// answers and the cancellation other replicas kept, mirrors the task's
/// questions and status message, and renews its lease; at the end it keeps
/// the outcome.
pub(crate) async fn held(
    future: TaskFuture,
    id: String,
    store: Arc<dyn Store>,
    holder: String,
    manager: TaskManager,
    (created, lost): (
        tokio::sync::oneshot::Receiver<bool>,
        Arc<std::sync::atomic::AtomicBool>,
    ),
) -> Result<CallToolResult, TaskExit> {
    // rmcp ends a task past its time to live by dropping its future: the
    // record must end too, as rmcp ended it, or its lease would lapse and
    // another replica would take the task over and run it again.
    let mut unfinished = Unfinished {
        store: Some(Arc::clone(&store)),
        id: id.clone(),
        holder: holder.clone(),
    };
    match created.await {
        Ok(true) => {}
        // Not kept: its caller runs as many tasks as they may across the
        // replicas. Nothing ran, and there is no record to end.
        Ok(false) => {
            unfinished.store = None;
            return Err(TaskExit::Cancelled);
        }
        // Its start was dropped, before or after the record was kept:
        // nothing runs, and the guard ends the record if there is one, so
        // that it neither counts against its caller nor is taken over.
        Err(_) => return Err(TaskExit::Cancelled),
    }
    let mut future = pin!(future);
    let mut mirror = Mirrored {
        answered: serde_json::Map::new(),
        asked: None,
        said: None,
        renewed: tokio::time::Instant::now(),
    };
    let outcome = loop {
        let tick = pin!(tokio::time::sleep(LOOK));
        match select(future.as_mut(), tick).await {
            Either::Left((outcome, _)) => break outcome,
            Either::Right(((), _)) => {}
        }
        // The call goes on while the store is asked: a store slow to
        // answer, or out of reach until its bound, does not hold it up.
        let look = pin!(mirror.look(store.as_ref(), &id, &holder, &manager));
        match select(future.as_mut(), look).await {
            Either::Left((outcome, _)) => break outcome,
            Either::Right((Held::Here, _)) => {}
            Either::Right((Held::Elsewhere, _)) => {
                // Read from the store from now on, not as this replica ended it.
                lost.store(true, std::sync::atomic::Ordering::Release);
                unfinished.store = None;
                return Err(TaskExit::Cancelled);
            }
        }
    };
    unfinished.store = None;
    let finish = finish(&outcome);
    match store.update_task(&id, &holder, &finish).await {
        Ok(true) => {}
        // Another replica took the task over while its call ended here,
        // in a look slow to answer: the task is that replica's, and so is
        // its end; read from the store, not as it ended here.
        Ok(false) if taken_over(store.as_ref(), &id, &holder).await => {
            tracing::warn!(task = %id, "a task ended here after another replica took it over: its end is that replica's");
            lost.store(true, std::sync::atomic::Ordering::Release);
            return Err(TaskExit::Cancelled);
        }
        Ok(false) => {}
        Err(error) => tracing::warn!(%error, task = %id, "a task's outcome could not be kept"),
    }
    outcome
}

/// Whether a task is still this replica's to run after a look.
enum Held {
    Here,
    /// Another replica took it over: stopped here, its end that replica's.
    Elsewhere,
}

/// What a held task's looks have passed on and kept so far.
struct Mirrored {
    /// The answers passed on to the task.
    answered: serde_json::Map<String, Value>,
    /// The questions kept as the record's.
    asked: Option<Value>,
    /// The status message kept as the record's.
    said: Option<String>,
    /// When the lease was last renewed.
    renewed: tokio::time::Instant,
}

impl Mirrored {
    /// One look at the task `id` held by `holder`: passes on the answers
    /// and the cancellation other replicas kept, keeps the task's
    /// questions and status message when they changed, and renews the
    /// lease when they did or it is due.
    async fn look(
        &mut self,
        store: &dyn Store,
        id: &str,
        holder: &str,
        manager: &TaskManager,
    ) -> Held {
        if let Ok(Some(record)) = store.task(id).await {
            // Claimed since by a replica that took it for abandoned — this
            // one too, when its store was away past the lease, under the
            // same holder's name: run there, not here as well.
            if record.runs > 0 {
                tracing::warn!(task = %id, "a task was taken over while it ran here: stopped here");
                return Held::Elsewhere;
            }
            if record.cancel_requested {
                let _ = manager.cancel_task(id);
            }
            if let Some(Value::Object(responses)) = &record.input_responses {
                let new: Vec<(String, Value)> = responses
                    .iter()
                    .filter(|(key, _)| !self.answered.contains_key(*key))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                if !new.is_empty() {
                    self.answered.extend(new.iter().cloned());
                    let _ = manager.update_task(id, new);
                }
            }
        }
        let mut update = TaskUpdate::now();
        let current = manager.get_task(id).ok();
        let message = current
            .as_ref()
            .and_then(|task| task.task.status_message.clone());
        let questions = current.and_then(|task| match task.payload {
            TaskPayload::InputRequired { input_requests } => {
                serde_json::to_value(input_requests).ok()
            }
            _ => None,
        });
        let changed = questions != self.asked || message != self.said;
        if questions != self.asked {
            update.state = Some(match questions {
                Some(_) => TaskState::InputRequired,
                None => TaskState::Working,
            });
            update.input_requests = Some(questions.clone());
            self.asked = questions;
        }
        if message != self.said {
            update.status_message = Some(message.clone());
            self.said = message;
        }
        if !changed && self.renewed.elapsed() < RENEW_EVERY {
            return Held::Here;
        }
        self.renewed = tokio::time::Instant::now();
        update.lease_until_ms = Some(now_ms().saturating_add(ms(LEASE)));
        match store.update_task(id, holder, &update).await {
            Ok(true) => Held::Here,
            // Another replica holds it now (this one could not renew in
            // time): it ends it, or runs it again if that is safe. Stopped
            // here, at the call's next `.await`, rather than run twice at
            // once; its end is that replica's to keep. (A record the store
            // never kept — it failed as the task started — holds nothing:
            // the task runs on, as this replica's alone.)
            Ok(false) if taken_over(store, id, holder).await => {
                tracing::warn!(task = %id, "a task's lease was taken over by another replica: stopped here");
                Held::Elsewhere
            }
            Ok(false) => Held::Here,
            Err(error) => {
                tracing::warn!(%error, task = %id, "a task's lease could not be renewed");
                Held::Here
            }
        }
    }
}

/// Whether the task `id`'s record says another replica than `holder`
/// holds it, or it ended: not when the store has no such record, or
/// cannot say.
async fn taken_over(store: &dyn Store, id: &str, holder: &str) -> bool {
    match store.task(id).await {
        Ok(Some(record)) => record.holder.as_deref() != Some(holder) || record.state.is_finished(),
        _ => false,
    }
}

/// A held task whose future has not finished: dropped so (rmcp aborts a
/// task at its time to live), it ends the task's record `failed`, in the
/// background, as rmcp ends the task itself. A process that stops drops it
/// too, and then nothing is written: its tasks are taken over.
struct Unfinished {
    store: Option<Arc<dyn Store>>,
    id: String,
    holder: String,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        let Some(store) = self.store.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (id, holder) = (
            std::mem::take(&mut self.id),
            std::mem::take(&mut self.holder),
        );
        runtime.spawn(async move {
            if let Err(error) = store.update_task(&id, &holder, &expired()).await {
                tracing::warn!(%error, task = %id, "an expired task's end could not be kept");
            }
        });
    }
}

/// The change that ends a task whose time to live ran out before it
/// finished: `failed`, as rmcp ends such a task.
pub(crate) fn expired() -> TaskUpdate {
    let expired =
        rmcp::ErrorData::internal_error("task expired: TTL elapsed before completion", None);
    finish(&Err(TaskExit::Error(expired)))
}

/// The change that keeps `outcome` as the end of a task.
fn finish(outcome: &Result<CallToolResult, TaskExit>) -> TaskUpdate {
    match outcome {
        Ok(result) => TaskUpdate::finish(TaskState::Completed, serde_json::to_value(result).ok()),
        Err(TaskExit::Cancelled) => TaskUpdate::finish(TaskState::Cancelled, None),
        Err(TaskExit::Error(error)) => {
            TaskUpdate::finish(TaskState::Failed, serde_json::to_value(error).ok())
        }
    }
}

/// A new record of a task of `tool`, called with `arguments` by `caller`
/// (with its scopes), held by `holder`; its id is the task's, given when
/// the task is made.
pub(crate) fn record(
    tool: &str,
    arguments: &Value,
    caller: Option<&crate::caller::Caller>,
    holder: &str,
    safe_to_repeat: bool,
) -> TaskRecord {
    let ttl = i64::try_from(rmcp::task_manager::DEFAULT_TASK_TTL_MS).unwrap_or(i64::MAX);
    let mut record = TaskRecord::new(
        tool,
        arguments.clone(),
        caller.map(|caller| caller.subject().to_owned()),
        ttl,
    )
    .held_by(holder, now_ms().saturating_add(ms(LEASE)))
    .safe_to_repeat(safe_to_repeat);
    record.caller_scopes = caller
        .map(|caller| caller.scopes().map(str::to_owned).collect())
        .unwrap_or_default();
    record
}

/// The task of `record` as `tasks/get` answers.
pub(crate) fn detailed(record: &TaskRecord) -> DetailedTask {
    let object = |value: &Option<Value>| -> JsonObject {
        match value {
            Some(Value::Object(object)) => object.clone(),
            _ => JsonObject::new(),
        }
    };
    let payload = match record.state {
        TaskState::Working => TaskPayload::Working,
        TaskState::InputRequired => {
            match record
                .input_requests
                .clone()
                .and_then(|questions| serde_json::from_value::<InputRequests>(questions).ok())
            {
                Some(input_requests) => TaskPayload::InputRequired { input_requests },
                None => TaskPayload::Working,
            }
        }
        TaskState::Completed => TaskPayload::Completed {
            result: object(&record.result),
        },
        TaskState::Failed => TaskPayload::Failed {
            error: object(&record.error),
        },
        TaskState::Cancelled => TaskPayload::Cancelled,
    };
    let mut task = Task::new(
        record.id.clone(),
        TaskStatus::Working,
        iso8601(record.created_ms),
        iso8601(record.updated_ms),
    );
    task.ttl_ms = u64::try_from(record.ttl_ms).ok();
    task.status_message.clone_from(&record.status_message);
    DetailedTask::new(task, payload)
}
