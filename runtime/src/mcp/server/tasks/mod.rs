//! Calls run as tasks: MCP's tasks extension (`io.modelcontextprotocol/tasks`,
//! SEP-2663) on rmcp's `TaskManager`. A call the set runs as a task answers
//! at once with the task; the call — retries, guards, questions — runs in
//! the background, and `tasks/get` reads its state and, once done, its
//! result.
//!
//! A task is its caller's: on a protected server every task request is
//! checked against the subject that made the task, and the scopes its
//! token granted — another caller's task, or the task of a token with a
//! scope this one lacks (another client of the same person), is answered
//! as an unknown one. Running tasks are bounded, per
//! server and per caller. With a store, a task is kept there too
//! ([`held`]), and a task this process does not
//! run is read, answered and cancelled through the store.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use rmcp::ErrorData;
use rmcp::model::{DetailedTask, Task, TaskPayload};
use rmcp::task_manager::{DEFAULT_TASK_TTL_MS, TaskContext, TaskFuture, TaskManager, TaskOptions};
use serde_json::Value;

use crate::caller::Caller;
use crate::mcp::definition::ToolDefinition;
use crate::mcp::server::held;
use crate::mcp::server::turns::Turns;
use crate::store::{Store, TaskRecord};

pub(crate) use full::Full;
use full::room;

/// Whether a tool's calls run as tasks, for a client that declares MCP's
/// tasks extension ([`ToolSet::tasks`](crate::mcp::ToolSet::tasks)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never: the call is answered in the request.
    Never,
    /// As a task for a client that declares the extension, in the request
    /// for one that does not.
    Optional,
    /// Only as a task: a client that does not declare the extension gets
    /// the protocol's error, `-32021`, naming it.
    Required,
}

/// The most tasks a tool set runs at once by default, whoever made them.
pub const DEFAULT_MAX_TASKS: usize = 1_000;

/// The most tasks one caller runs at once by default.
pub const DEFAULT_MAX_TASKS_PER_CALLER: usize = 100;

/// Which tools run as tasks.
type Picks = Arc<dyn Fn(&ToolDefinition) -> TaskSupport + Send + Sync>;

/// Who made a task, when it finished, if it did, and the questions it
/// asked that are kept in the store already.
struct Owner {
    subject: Option<Arc<str>>,
    /// The scopes the token that made the task granted.
    scopes: Vec<String>,
    finished: Arc<OnceLock<Instant>>,
    kept: std::collections::BTreeSet<String>,
    /// Set when another replica took the task over: what this process's
    /// manager says of it (cancelled) is not the task's end, the store is.
    lost: Arc<std::sync::atomic::AtomicBool>,
}

/// A running task's place among the tasks counted against the bounds:
/// given back when the task's future ends or is dropped. It holds no lock:
/// a future may be dropped where the tasks' map is locked (tokio drops a
/// future spawned while the runtime shuts down at once).
struct Slot(Arc<OnceLock<Instant>>);

impl Drop for Slot {
    fn drop(&mut self) {
        let _ = self.0.set(Instant::now());
    }
}

/// A task's time to live, from its creation: rmcp's default, which rmcp
/// fails a task at if it still runs (a call that waits for an approver
/// ends before it: `toolset/tickets.rs`).
pub(crate) const TASK_TTL: Duration = Duration::from_millis(DEFAULT_TASK_TTL_MS);

/// How long a finished task is remembered: as long as rmcp keeps it (its
/// time to live, then as long again).
const REMEMBERED: Duration = TASK_TTL.saturating_mul(2);

/// How long a store may take to mark a task cancelled before the replica
/// running it cancels it all the same.
const CANCEL_KEPT_WITHIN: Duration = Duration::from_secs(10);

/// The tasks of a tool set, which of its tools run as tasks, who made
/// each, and how many may run at once.
#[derive(Clone)]
pub(crate) struct Tasks {
    manager: TaskManager,
    picks: Picks,
    owners: Arc<Mutex<HashMap<String, Owner>>>,
    max: usize,
    max_per_caller: usize,
    /// A caller's turn, held from counting their tasks in the store to
    /// keeping the new one there: one kept task of theirs starts at a time
    /// on this replica (the store's own count as it keeps the task is what
    /// holds the bound across replicas).
    starting: Arc<Turns>,
}

impl Tasks {
    pub(crate) fn new(
        picks: impl Fn(&ToolDefinition) -> TaskSupport + Send + Sync + 'static,
    ) -> Self {
        Tasks {
            manager: TaskManager::new(),
            picks: Arc::new(picks),
            owners: Arc::default(),
            max: DEFAULT_MAX_TASKS,
            max_per_caller: DEFAULT_MAX_TASKS_PER_CALLER,
            starting: Arc::default(),
        }
    }

    /// The same settings (which tools, how many), none of the tasks.
    pub(crate) fn renewed(&self) -> Self {
        Tasks {
            manager: TaskManager::new(),
            picks: Arc::clone(&self.picks),
            owners: Arc::default(),
            max: self.max,
            max_per_caller: self.max_per_caller,
            starting: Arc::default(),
        }
    }

    /// The same tasks, bounded: at most `max` running, `max_per_caller` of
    /// them one caller's (at least 1 each).
    pub(crate) fn bounded(mut self, max: usize, max_per_caller: usize) -> Self {
        self.max = max.max(1);
        self.max_per_caller = max_per_caller.clamp(1, self.max);
        self
    }

    /// Whether a call of the tool `definition` runs as a task.
    pub(crate) fn support(&self, definition: &ToolDefinition) -> TaskSupport {
        (self.picks)(definition)
    }

    /// Starts `work` as a task of `subject`'s, unless too many run: of
    /// this replica's, or of the caller's — counted in the store as well,
    /// when the task is `kept` there.
    ///
    /// # Errors
    ///
    /// Which bound the task would cross; nothing was started.
    pub(crate) async fn spawn(
        &self,
        caller: Option<&Caller>,
        kept: Option<Kept>,
        work: impl FnOnce(TaskContext) -> TaskFuture,
    ) -> Result<Task, Full> {
        // One caller's bound counts their tasks on every replica that
        // shares the store: read first, to refuse at once what is plainly
        // past it, then counted again as the task is kept, in one step
        // with keeping it, so that replicas starting one at the same
        // moment do not pass it together (a task refused then never
        // runs). One start of theirs at a time here spares the store the
        // caller's own crowd. The server's bound is this replica's own.
        let subject = caller.map(Caller::subject);
        let _turn = match &kept {
            Some(_) => Some(self.starting.take(subject).await),
            None => None,
        };
        if let Some(kept) = &kept {
            match kept
                .store
                .running_tasks(&kept.record.service, subject)
                .await
            {
                Ok((_, theirs))
                    if theirs >= u64::try_from(self.max_per_caller).unwrap_or(u64::MAX) =>
                {
                    return Err(Full::Caller(self.max_per_caller));
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "counting a caller's tasks in the store failed: this replica's count stands");
                }
            }
        }
        let (created, made) = tokio::sync::oneshot::channel::<bool>();
        let mirror = kept.as_ref().map(|kept| Mirror {
            store: Arc::clone(&kept.store),
            holder: kept.record.holder.clone().unwrap_or_default(),
            made,
            lost: Arc::default(),
        });
        let task = self.start(caller, mirror, work)?;
        if let Some(mut kept) = kept {
            kept.record.id.clone_from(&task.task_id);
            // Stamped as it is kept, after the caller's turn and the count,
            // which may have waited long on a slow store: a lease taken
            // when the call came could have run out by now, and another
            // replica would take over a task this one is about to run.
            let now = crate::store::now_ms();
            kept.record.created_ms = now;
            kept.record.updated_ms = now;
            kept.record.lease_until_ms = now.saturating_add(held::ms(held::LEASE));
            let most = u64::try_from(self.max_per_caller).unwrap_or(u64::MAX);
            match kept.store.create_task(&kept.record, most).await {
                Ok(true) => {}
                Ok(false) => {
                    // Never runs: its future ends before the work starts,
                    // and no one is told its id.
                    let _ = created.send(false);
                    (self.owners.lock().unwrap_or_else(PoisonError::into_inner))
                        .remove(&task.task_id);
                    return Err(Full::Caller(self.max_per_caller));
                }
                Err(error) => {
                    // Run all the same, as a task of this replica's alone.
                    tracing::warn!(%error, task = %task.task_id, "a task could not be kept in the store");
                }
            }
        }
        let _ = created.send(true);
        Ok(task)
    }

    /// Starts `work` as a task of `subject`'s, kept in the store as
    /// `mirror` says, unless too many run.
    fn start(
        &self,
        caller: Option<&Caller>,
        mirror: Option<Mirror>,
        work: impl FnOnce(TaskContext) -> TaskFuture,
    ) -> Result<Task, Full> {
        let manager = self.manager.clone();
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        owners.retain(|_, owner| {
            (owner.finished.get()).is_none_or(|at| now.duration_since(*at) < REMEMBERED)
        });
        let subject = caller.map(Caller::subject);
        room(&owners, subject, (self.max, self.max_per_caller), now)?;
        let finished = Arc::new(OnceLock::new());
        let slot = Slot(Arc::clone(&finished));
        let lost = mirror
            .as_ref()
            .map_or_else(Arc::default, |mirror| Arc::clone(&mirror.lost));
        let options = TaskOptions::new().with_ttl_ms(DEFAULT_TASK_TTL_MS);
        let task = self.manager.spawn(options, move |context| {
            let id = context.task_id().to_owned();
            let future = work(context);
            // Ends the task's slot however the task ends: finished, or
            // dropped unfinished, polled or not (rmcp aborts a task at its
            // time to live, and on shutdown).
            Box::pin(async move {
                let _slot = slot;
                match mirror {
                    Some(Mirror {
                        store,
                        holder,
                        made,
                        lost,
                    }) => held::held(future, id, store, holder, manager, (made, lost)).await,
                    None => future.await,
                }
            })
        });
        owners.insert(
            task.task_id.clone(),
            Owner {
                subject: subject.map(Arc::from),
                scopes: caller.map_or_else(Vec::new, |caller| {
                    caller.scopes().map(str::to_owned).collect()
                }),
                finished,
                kept: std::collections::BTreeSet::new(),
                lost,
            },
        );
        Ok(task)
    }

    /// `tasks/get`, for `subject`: from this process when it runs the task,
    /// else from `store`. A question the task asks is shown once it is
    /// kept in the store, where any replica takes its answer: until then,
    /// the task as the store has it.
    ///
    /// # Errors
    ///
    /// [`unknown_task`] for a task this set does not have, or another
    /// caller's.
    pub(crate) async fn get(
        &self,
        id: &str,
        caller: Option<&Caller>,
        store: Option<(&Arc<dyn Store>, &str)>,
    ) -> Result<DetailedTask, ErrorData> {
        if self.check(id, caller).is_ok()
            && let Ok(task) = self.manager.get_task(id)
        {
            if let (TaskPayload::InputRequired { input_requests }, Some((store, _))) =
                (&task.payload, store)
                && !self.known_kept(id, input_requests)
                && let Ok(Some(record)) = store.task(id).await
            {
                if !asks_all(&record, input_requests) {
                    return Ok(held::detailed(&record));
                }
                let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(owner) = owners.get_mut(id) {
                    owner.kept.extend(input_requests.keys().cloned());
                }
            }
            return Ok(task);
        }
        let record = kept(id, caller, store).await?;
        Ok(held::detailed(&record))
    }

    /// `tasks/update`, for `subject`: answered here when this process runs
    /// the task, else kept in `store` for the replica that does.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get).
    pub(crate) async fn update(
        &self,
        id: &str,
        caller: Option<&Caller>,
        responses: impl IntoIterator<Item = (String, Value)>,
        store: Option<(&Arc<dyn Store>, &str)>,
    ) -> Result<(), ErrorData> {
        if self.check(id, caller).is_ok() && self.manager.get_task(id).is_ok() {
            return self
                .manager
                .update_task(id, responses)
                .map_err(|_| unknown_task());
        }
        kept(id, caller, store).await?;
        let responses = Value::Object(responses.into_iter().collect());
        let (store, _) = store.ok_or_else(unknown_task)?;
        store
            .answer_task(id, &responses)
            .await
            .map_err(|error| store_failed(id, &error))?;
        Ok(())
    }

    /// `tasks/cancel`, for `subject`: here when this process runs the task,
    /// else asked of its replica through `store`.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get).
    pub(crate) async fn cancel(
        &self,
        id: &str,
        caller: Option<&Caller>,
        store: Option<(&Arc<dyn Store>, &str)>,
    ) -> Result<(), ErrorData> {
        if self.check(id, caller).is_ok()
            && let Ok(task) = self.manager.get_task(id)
        {
            // Kept in the store first, while the task runs: should this
            // replica stop before the task has withdrawn what it waits for,
            // the replica that takes it over reads it cancelled, and
            // withdraws it then. A store that does not answer in time does
            // not hold the cancel back.
            if let Some((store, _)) = store
                && !task.status().is_terminal()
            {
                let kept = tokio::time::timeout(CANCEL_KEPT_WITHIN, store.cancel_task(id)).await;
                if !matches!(kept, Ok(Ok(_))) {
                    tracing::warn!(task = %id, "a task's cancellation could not be kept in the store: cancelled here only");
                }
            }
            return self.manager.cancel_task(id).map_err(|_| unknown_task());
        }
        kept(id, caller, store).await?;
        let (store, _) = store.ok_or_else(unknown_task)?;
        (store.cancel_task(id).await).map_err(|error| store_failed(id, &error))?;
        Ok(())
    }

    /// Whether every one of `questions` of the task `id` was seen kept in
    /// the store already: its polls read the store no more.
    fn known_kept(&self, id: &str, questions: &rmcp::model::InputRequests) -> bool {
        let owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        owners
            .get(id)
            .is_some_and(|owner| questions.keys().all(|key| owner.kept.contains(key)))
    }

    /// `Ok` when `id` is a task `caller` may reach.
    fn check(&self, id: &str, caller: Option<&Caller>) -> Result<(), ErrorData> {
        let owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        match owners.get(id) {
            // Taken over by another replica: the store says where it is.
            Some(owner) if owner.lost.load(std::sync::atomic::Ordering::Acquire) => {
                Err(unknown_task())
            }
            Some(owner) if reaches(caller, owner.subject.as_deref(), &owner.scopes) => Ok(()),
            _ => Err(unknown_task()),
        }
    }
}

/// How a running task is kept in the store: where, by which holder, and
/// the signal that its record is there (or, `false`, that it was not kept
/// and must not run).
struct Mirror {
    store: Arc<dyn Store>,
    holder: String,
    made: tokio::sync::oneshot::Receiver<bool>,
    /// Set by [`held::held`] when another replica took the task over.
    lost: Arc<std::sync::atomic::AtomicBool>,
}

/// What a task is kept as in the store: its record, held by this replica.
pub(crate) struct Kept {
    /// The store.
    pub(crate) store: Arc<dyn Store>,
    /// The record, its id given when the task is made.
    pub(crate) record: TaskRecord,
}

impl fmt::Debug for Tasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tasks")
            .field("running", &self.manager.running_task_count())
            .field("max", &self.max)
            .field("max_per_caller", &self.max_per_caller)
            .finish_non_exhaustive()
    }
}

mod full;
mod reach;

pub(crate) use reach::unknown_task;
use reach::{asks_all, kept, reaches, store_failed};

#[cfg(test)]
mod tests;
