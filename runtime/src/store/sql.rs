//! The SQL stores: SQLite (a file, nothing to install) and Postgres (for N
//! replicas), through sqlx with queries written once — the same text runs
//! on both (`$1`-style parameters, `ON CONFLICT DO NOTHING`, `RETURNING`,
//! a partial unique index), but for the one query of the texts in a JSON
//! array each backend words its own way (a list of scopes or ids bound as
//! one parameter) — and migrations embedded in the library, run when the
//! store is opened.
//!
//! Over 500 lines: one macro body holds every query once, for both
//! backends; splitting it would write each query twice.
//!
//! Every "decide once" is one conditional `UPDATE … WHERE state = …` (or an
//! `INSERT … ON CONFLICT DO NOTHING`): whichever replica's statement the
//! database applies first wins, and the others change nothing.

use std::borrow::Cow;

use serde_json::Value;
use sqlx::Row;
use sqlx::migrate::{Migration, MigrationType, Migrator};

use super::{
    ApprovalRecord, ApprovalState, AuditEntry, Decision, Escalate, EscalationRecord,
    EscalationState, Store, StoreError, StoreFuture, TaskRecord, TaskState, TaskUpdate,
};

/// The store's schema, as migrations. They only ever add (a column with a
/// default, a table, an index), so a replica of an earlier release opens a
/// store a later one migrated, rolling upgrades and rollbacks included:
/// the migrations it does not know of are left in place.
fn migrator() -> Migrator {
    let mut migrator = Migrator::with_migrations(vec![
        Migration::new(
            1,
            Cow::Borrowed("tool-envelope store"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0001_store.sql")),
            false,
        ),
        Migration::new(
            2,
            Cow::Borrowed("tool-envelope task scopes"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0002_task_scopes.sql")),
            false,
        ),
        Migration::new(
            3,
            Cow::Borrowed("tool-envelope counts by caller"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0003_counts_by_caller.sql")),
            false,
        ),
        Migration::new(
            4,
            Cow::Borrowed("tool-envelope resolved escalations by time"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0004_resolved_by_time.sql")),
            false,
        ),
        Migration::new(
            5,
            Cow::Borrowed("tool-envelope tasks by caller"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0005_tasks_by_caller.sql")),
            false,
        ),
        Migration::new(
            6,
            Cow::Borrowed("tool-envelope escalation approvers"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0006_escalation_approvers.sql")),
            false,
        ),
        Migration::new(
            7,
            Cow::Borrowed("tool-envelope services"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0007_services.sql")),
            false,
        ),
        Migration::new(
            8,
            Cow::Borrowed("tool-envelope approvals by digest"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0008_approvals_by_digest.sql")),
            false,
        ),
        Migration::new(
            9,
            Cow::Borrowed("tool-envelope approvals' waived blocks"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0009_approvals_waived.sql")),
            false,
        ),
        Migration::new(
            10,
            Cow::Borrowed("tool-envelope the ledger's name"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0010_ledger.sql")),
            false,
        ),
        Migration::new(
            11,
            Cow::Borrowed("tool-envelope approval notices"),
            MigrationType::Simple,
            sqlx::SqlStr::from_static(include_str!("migrations/0011_approval_notices.sql")),
            false,
        ),
    ]);
    migrator.set_ignore_missing(true);
    migrator
}

/// Runs the migrations on a connection of `pool` of their own. sqlx holds
/// the database's migration lock (Postgres: a session's advisory lock)
/// from its start and lets go of it only when they succeed: the
/// connection of migrations that failed is closed, and the lock goes with
/// it — back in the pool, it would hold the lock for as long as it lived,
/// and every other replica's migrations, and this one's next try on another
/// of the pool's connections, would wait on it for good. A connection not
/// had fails as sqlx's own `run` says it (`while executing migrations: …`).
async fn migrate<DB>(pool: &sqlx::Pool<DB>) -> Result<(), sqlx::migrate::MigrateError>
where
    DB: sqlx::Database,
    for<'c> &'c mut DB::Connection: sqlx::Acquire<'c>,
    for<'c> <<&'c mut DB::Connection as sqlx::Acquire<'c>>::Connection as std::ops::Deref>::Target:
        sqlx::migrate::Migrate,
{
    use sqlx::Connection;
    let mut connection = (pool.acquire().await).map_err(sqlx::migrate::MigrateError::Execute)?;
    let run = migrator().run(&mut *connection).await;
    if run.is_err() {
        // Its own error is not the store's: the migrations' is.
        let _ = connection.detach().close().await;
    }
    run
}

/// Whether a migration failed for good: a migration recorded as changed,
/// or left half applied, is not mended by trying again.
fn lasting(error: &sqlx::migrate::MigrateError) -> bool {
    use sqlx::migrate::MigrateError;
    matches!(
        error,
        MigrateError::VersionMismatch(_)
            | MigrateError::Dirty(_)
            | MigrateError::VersionMissing(_)
            | MigrateError::VersionTooOld(..)
            | MigrateError::VersionTooNew(..)
    )
}

/// A driver's error, as the store's: its text, and the database's code
/// for it when the database answered with one (a migration's too). The
/// database's own answer is kept as the database worded it, without
/// sqlx's decoration (which names SQLite's code in the text) — alone when
/// it is the error, inside what sqlx was doing when it is deeper (`while
/// executing migration 7: …`) — so that `StoreError` names the code once.
fn failed(error: impl std::error::Error + 'static) -> StoreError {
    fn database<'e>(
        error: &'e (dyn std::error::Error + 'static),
    ) -> Option<&'e dyn sqlx::error::DatabaseError> {
        (error.downcast_ref::<sqlx::Error>()).and_then(sqlx::Error::as_database_error)
    }
    let mut answer = None;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(error) = cause {
        if let Some(found) = database(error) {
            answer = Some(found);
            break;
        }
        cause = error.source();
    }
    let text = match answer {
        Some(answer) if database(&error).is_some() => answer.message().to_owned(),
        Some(answer) => (error.to_string()).replace(&answer.to_string(), answer.message()),
        None => error.to_string(),
    };
    let failure = StoreError::new(text);
    match answer.and_then(sqlx::error::DatabaseError::code) {
        Some(code) => failure.with_code(code.into_owned()),
        None => failure,
    }
}

/// JSON as it is kept: text.
fn text(value: &Value) -> String {
    value.to_string()
}

/// JSON kept as text, read back: text that is not JSON is an error of the
/// row, [unreadable](StoreError::unreadable).
fn json(text: Option<String>) -> Result<Option<Value>, StoreError> {
    text.map(|text| serde_json::from_str(&text).map_err(unreadable))
        .transpose()
}

/// A row's content that does not read back (its JSON, its state): an
/// error of that row alone.
fn unreadable(error: impl std::error::Error + 'static) -> StoreError {
    failed(error).unreadable()
}

/// How many due approvals one transaction of
/// [`expire_approvals`](Store::expire_approvals) ends: a backlog is ended
/// in batches, each taking the locks of its own callers only — Postgres's
/// lock table is shared by every session and sized for 64 locks a
/// transaction by default (`max_locks_per_transaction`).
const EXPIRED_AT_ONCE: i64 = 64;

/// How many times the migrations are run before a store gives up: replicas
/// started at once race for them. SQLite answers the loser at once
/// ("database is locked": a read transaction that cannot become a write
/// one does not wait), so each try after the first waits a moment, 10 to
/// 50 ms at random, so that the racers part: two seconds at most.
const MIGRATION_TRIES: u32 = 64;

/// The wait before another try at opening a store: 10 to 50 ms, at random.
async fn pause() {
    tokio::time::sleep(std::time::Duration::from_millis(fastrand::u64(10..=50))).await;
}

/// How many times an optimistic update is tried before it gives up.
const TRIES: usize = 16;

const TASK_COLUMNS: &str = "id, tool, arguments, caller, state, status_message, created_ms, updated_ms, ttl_ms, holder, lease_until_ms, safe_to_repeat, runs, input_requests, input_responses, cancel_requested, result, error, version, caller_scopes, service";

const APPROVAL_COLUMNS: &str = "id, digest, block, tool, arguments, shown, caller, caller_scopes, approvers, state, created_ms, expires_ms, decided_by, decided_ms, note, holder, lease_until_ms, safe_to_repeat, result, service, waived, client_answers, notice_due_ms";

const ESCALATION_COLUMNS: &str = "id, tool, caller, envelope, state, created_ms, resolved_by, resolved_ms, note, approvers, service";

/// `INSERT INTO table (columns)` of one row of `values` — unless `most` is
/// bounded and as many rows match `counted` already, counted in the same
/// statement (one round trip where a count and an insert were two); the
/// bound is the parameter `bound_parameter`, bound by [`bind_bound`]. When
/// the bound is reached it keeps nothing, and its rows affected say so:
/// none. Its callers run it, bounded, only in a transaction that holds the
/// caller's lock (`begin_counted`): under read committed, two such
/// statements at once would each count without the other's row.
fn bounded_insert(
    table: &str,
    columns: &str,
    values: &str,
    counted: &str,
    bound_parameter: &str,
    most: u64,
) -> String {
    if most == u64::MAX {
        format!("INSERT INTO {table} ({columns}) VALUES ({values})")
    } else {
        format!(
            "INSERT INTO {table} ({columns}) SELECT {values} \
             WHERE (SELECT COUNT(*) FROM {table} WHERE {counted}) < {bound_parameter}"
        )
    }
}

/// The rows of one caller, `parameter` holding the caller: `caller =
/// parameter` for a subject — an index on `caller` serves it, which
/// Postgres cannot use for `IS NOT DISTINCT FROM` — and `caller IS NULL`
/// for a caller without one (the parameter, then null, still named, so
/// that the statement takes the same arguments either way).
fn of_caller(parameter: &str, caller: Option<&str>) -> String {
    match caller {
        Some(_) => format!("caller = {parameter}"),
        None => format!("caller IS NULL AND {parameter} IS NULL"),
    }
}

/// The rows of one service, `parameter` holding it: as [`of_caller`], for
/// an escalation's service, which is none for a calling agent's.
fn of_service(parameter: &str, service: Option<&str>) -> String {
    match service {
        Some(_) => format!("service = {parameter}"),
        None => format!("service IS NULL AND {parameter} IS NULL"),
    }
}

/// Binds `most` to a [`bounded_insert`]'s bound, when it has one
/// (`u64::MAX` is none; above `i64::MAX`, no count reaches it either).
fn bind_bound<'q, DB: sqlx::Database>(
    query: sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments>,
    most: u64,
) -> sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments>
where
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    if most == u64::MAX {
        query
    } else {
        query.bind(i64::try_from(most).unwrap_or(i64::MAX))
    }
}

/// The store of one backend: `$name` over `$db`'s pool; `$json_texts`,
/// the backend's query of the texts in a JSON array bound as one
/// parameter (`{}`), which a list of scopes of any length is.
macro_rules! sql_store {
    ($(#[$doc:meta])* $name:ident, $db:ty, $pool:ty, $begin_writing:path, $lock_callers:path, $column:path, $json_texts:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            pool: $pool,
            /// Its [`Store::ledger`]: the database's.
            ledger: String,
        }

        impl $name {
            /// The store over `pool`, its schema migrated and its record of
            /// spent states named ([`Store::ledger`]).
            ///
            /// # Errors
            ///
            /// When the migrations cannot be run, or the database holds
            /// another application's (a migration not named
            /// `tool-envelope …`, whatever its number).
            pub async fn from_pool(pool: $pool) -> Result<Self, StoreError> {
                // A migration this release does not know of must be a
                // later release's of this store, not another
                // application's (whose database this is not).
                let applied = "SELECT version, description FROM _sqlx_migrations";
                if let Ok(applied) = sqlx::query_as::<$db, (i64, String)>(applied)
                    .fetch_all(&pool)
                    .await
                {
                    // Every migration of the store's, of any release, is
                    // named so (`every_migration_is_named_as_the_stores`):
                    // one numbered as the store's but named otherwise is
                    // another application's too.
                    if let Some((version, what)) = applied
                        .iter()
                        .find(|(_, what)| !what.starts_with("tool-envelope"))
                    {
                        return Err(StoreError::new(format!(
                            "the database holds another application's migration {version} \
                             ({what}): give the store a database of its own"
                        )));
                    }
                }
                // Replicas that start together race to migrate one
                // database: the one that loses finds the migration
                // recorded when it tries again.
                let mut tries = 0;
                while let Err(error) = migrate(&pool).await {
                    tries += 1;
                    if tries == MIGRATION_TRIES || lasting(&error) {
                        return Err(failed(error));
                    }
                    pause().await;
                }
                let ledger = Self::ledger_of(&pool).await?;
                Ok($name { pool, ledger })
            }

            /// The database's [ledger](Store::ledger) name: made by the
            /// first replica to open it, read by every one after (the
            /// others' made at the same moment are not kept). Tried again
            /// as the migrations are: replicas that start together on a
            /// new database may both write, and on a pool of your own at
            /// a stricter isolation, or with a short busy timeout, the
            /// one that loses fails where it would find the name written.
            async fn ledger_of(pool: &$pool) -> Result<String, StoreError> {
                let mut tries = 0;
                loop {
                    match Self::named_ledger(pool).await {
                        Ok(name) => return Ok(name),
                        Err(error) if tries + 1 >= MIGRATION_TRIES => return Err(error),
                        Err(_) => {
                            tries += 1;
                            pause().await;
                        }
                    }
                }
            }

            /// The ledger's name, read, or written first when there is none.
            async fn named_ledger(pool: &$pool) -> Result<String, StoreError> {
                let read = "SELECT id FROM te_ledger WHERE one = 1";
                let named = sqlx::query_scalar::<$db, String>(read)
                    .fetch_optional(pool)
                    .await
                    .map_err(failed)?;
                if let Some(name) = named {
                    return Ok(name);
                }
                sqlx::query("INSERT INTO te_ledger (one, id) VALUES (1, $1) ON CONFLICT (one) DO NOTHING")
                    .bind(super::new_id())
                    .execute(pool)
                    .await
                    .map_err(failed)?;
                sqlx::query_scalar::<$db, String>(read)
                    .fetch_one(pool)
                    .await
                    .map_err(failed)
            }

            /// A transaction in which the count of `caller`'s in `service`
            /// and what it bounds are one step, on every replica sharing
            /// the store.
            async fn begin_counted(
                &self,
                service: Option<&str>,
                caller: Option<&str>,
            ) -> Result<sqlx::Transaction<'static, $db>, StoreError> {
                let mut tx = $begin_writing(&self.pool).await?;
                $lock_callers(&mut tx, &[(service, caller)]).await?;
                Ok(tx)
            }

            /// The task of `row`; an error [unreadable](StoreError::unreadable)
            /// when what the row holds does not read back as a task's
            /// (its JSON, its state, and on SQLite a value of another type
            /// than its column's): an error of the row alone. On Postgres a
            /// column of another type is the schema's, every row's, and not
            /// marked (`$column`).
            fn task_of(row: &<$db as sqlx::Database>::Row) -> Result<TaskRecord, StoreError> {
                let state: String = row.try_get("state").map_err($column)?;
                Ok(TaskRecord {
                    id: row.try_get("id").map_err($column)?,
                    service: row.try_get("service").map_err($column)?,
                    tool: row.try_get("tool").map_err($column)?,
                    arguments: json(Some(row.try_get("arguments").map_err($column)?))?
                        .unwrap_or(Value::Null),
                    caller: row.try_get("caller").map_err($column)?,
                    caller_scopes: serde_json::from_str(
                        &row.try_get::<String, _>("caller_scopes").map_err($column)?,
                    )
                    .map_err(unreadable)?,
                    state: TaskState::parse(&state).ok_or_else(|| {
                        StoreError::new(format!("a task in the state `{state}`")).unreadable()
                    })?,
                    status_message: row.try_get("status_message").map_err($column)?,
                    created_ms: row.try_get("created_ms").map_err($column)?,
                    updated_ms: row.try_get("updated_ms").map_err($column)?,
                    ttl_ms: row.try_get("ttl_ms").map_err($column)?,
                    holder: row.try_get("holder").map_err($column)?,
                    lease_until_ms: row.try_get("lease_until_ms").map_err($column)?,
                    safe_to_repeat: row.try_get("safe_to_repeat").map_err($column)?,
                    runs: u32::try_from(row.try_get::<i64, _>("runs").map_err($column)?)
                        .unwrap_or(u32::MAX),
                    input_requests: json(row.try_get("input_requests").map_err($column)?)?,
                    input_responses: json(row.try_get("input_responses").map_err($column)?)?,
                    cancel_requested: row.try_get("cancel_requested").map_err($column)?,
                    result: json(row.try_get("result").map_err($column)?)?,
                    error: json(row.try_get("error").map_err($column)?)?,
                })
            }

            /// The approval of `row`; an error
            /// [unreadable](StoreError::unreadable) when what the row holds
            /// does not read back as an approval's (as in `task_of`).
            fn approval_of(
                row: &<$db as sqlx::Database>::Row,
            ) -> Result<ApprovalRecord, StoreError> {
                let state: String = row.try_get("state").map_err($column)?;
                Ok(ApprovalRecord {
                    id: row.try_get("id").map_err($column)?,
                    service: row.try_get("service").map_err($column)?,
                    digest: row.try_get("digest").map_err($column)?,
                    block: row.try_get("block").map_err($column)?,
                    waived: json(Some(row.try_get("waived").map_err($column)?))?
                        .map(serde_json::from_value)
                        .transpose()
                        .map_err(unreadable)?
                        .unwrap_or_default(),
                    client_answers: json(Some(row.try_get("client_answers").map_err($column)?))?
                        .map(serde_json::from_value)
                        .transpose()
                        .map_err(unreadable)?
                        .unwrap_or_default(),
                    tool: row.try_get("tool").map_err($column)?,
                    arguments: json(Some(row.try_get("arguments").map_err($column)?))?
                        .unwrap_or(Value::Null),
                    shown: json(Some(row.try_get("shown").map_err($column)?))?
                        .unwrap_or(Value::Null),
                    caller: row.try_get("caller").map_err($column)?,
                    caller_scopes: json(Some(row.try_get("caller_scopes").map_err($column)?))?
                        .and_then(|scopes| serde_json::from_value(scopes).ok())
                        .unwrap_or_default(),
                    approvers: row.try_get("approvers").map_err($column)?,
                    state: ApprovalState::parse(&state).ok_or_else(|| {
                        StoreError::new(format!("an approval in the state `{state}`")).unreadable()
                    })?,
                    created_ms: row.try_get("created_ms").map_err($column)?,
                    expires_ms: row.try_get("expires_ms").map_err($column)?,
                    decided_by: row.try_get("decided_by").map_err($column)?,
                    decided_ms: row.try_get("decided_ms").map_err($column)?,
                    note: row.try_get("note").map_err($column)?,
                    holder: row.try_get("holder").map_err($column)?,
                    lease_until_ms: row.try_get("lease_until_ms").map_err($column)?,
                    safe_to_repeat: row.try_get("safe_to_repeat").map_err($column)?,
                    result: json(row.try_get("result").map_err($column)?)?,
                    notice_due_ms: row.try_get("notice_due_ms").map_err($column)?,
                })
            }

            /// The escalation of `row`; an error
            /// [unreadable](StoreError::unreadable) when what the row holds
            /// does not read back as an escalation's (as in `task_of`).
            fn escalation_of(
                row: &<$db as sqlx::Database>::Row,
            ) -> Result<EscalationRecord, StoreError> {
                let state: String = row.try_get("state").map_err($column)?;
                Ok(EscalationRecord {
                    id: row.try_get("id").map_err($column)?,
                    tool: row.try_get("tool").map_err($column)?,
                    caller: row.try_get("caller").map_err($column)?,
                    envelope: json(Some(row.try_get("envelope").map_err($column)?))?
                        .unwrap_or(Value::Null),
                    state: match state.as_str() {
                        "resolved" => EscalationState::Resolved,
                        _ => EscalationState::Open,
                    },
                    created_ms: row.try_get("created_ms").map_err($column)?,
                    resolved_by: row.try_get("resolved_by").map_err($column)?,
                    resolved_ms: row.try_get("resolved_ms").map_err($column)?,
                    note: row.try_get("note").map_err($column)?,
                    approvers: row.try_get("approvers").map_err($column)?,
                    service: row.try_get("service").map_err($column)?,
                })
            }

            /// Writes `entry` into the audit, on `connection` (in its
            /// transaction, if it has one).
            async fn write_audit(
                connection: &mut <$db as sqlx::Database>::Connection,
                entry: &AuditEntry,
            ) -> Result<(), StoreError> {
                let sql = "INSERT INTO te_audit (id, at_ms, who, what, subject, note) \
                           VALUES ($1, $2, $3, $4, $5, $6)";
                sqlx::query(sql)
                    .bind(super::new_id())
                    .bind(entry.at_ms)
                    .bind(&entry.who)
                    .bind(&entry.what)
                    .bind(&entry.subject)
                    .bind(&entry.note)
                    .execute(connection)
                    .await
                    .map_err(failed)?;
                Ok(())
            }

            /// Keeps `task`, on `connection` (in its transaction, if it
            /// has one), unless its caller has `most_running` tasks
            /// running already, counted in the same statement (`bounded_insert`).
            /// Whether it was kept.
            async fn insert_task(
                connection: &mut <$db as sqlx::Database>::Connection,
                task: &TaskRecord,
                most_running: u64,
            ) -> Result<bool, StoreError> {
                let values = "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, 0, $19, $20";
                let sql = bounded_insert(
                    "te_tasks",
                    TASK_COLUMNS,
                    values,
                    &format!(
                        "{} AND service = $20 AND state IN ('working', 'input_required')",
                        of_caller("$4", task.caller.as_deref())
                    ),
                    "$21",
                    most_running,
                );
                let query = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&task.id)
                    .bind(&task.tool)
                    .bind(text(&task.arguments))
                    .bind(&task.caller)
                    .bind(task.state.as_str())
                    .bind(&task.status_message)
                    .bind(task.created_ms)
                    .bind(task.updated_ms)
                    .bind(task.ttl_ms)
                    .bind(&task.holder)
                    .bind(task.lease_until_ms)
                    .bind(task.safe_to_repeat)
                    .bind(i64::from(task.runs))
                    .bind(task.input_requests.as_ref().map(text))
                    .bind(task.input_responses.as_ref().map(text))
                    .bind(task.cancel_requested)
                    .bind(task.result.as_ref().map(text))
                    .bind(task.error.as_ref().map(text))
                    .bind(text(&serde_json::json!(task.caller_scopes)))
                    .bind(&task.service);
                let done = bind_bound(query, most_running)
                    .execute(connection)
                    .await
                    .map_err(failed)?;
                Ok(done.rows_affected() == 1)
            }

            /// How many tasks of `service` run, and how many of them are
            /// `caller`'s, on `connection` (in its transaction, if it has
            /// one).
            async fn count_running(
                connection: &mut <$db as sqlx::Database>::Connection,
                service: &str,
                caller: Option<&str>,
            ) -> Result<(u64, u64), StoreError> {
                let sql = "SELECT COUNT(*) AS all_tasks, \
                           SUM(CASE WHEN caller IS NOT DISTINCT FROM $1 THEN 1 ELSE 0 END) AS theirs \
                           FROM te_tasks WHERE service = $2 AND state IN ('working', 'input_required')";
                let row = sqlx::query(sql)
                    .bind(caller)
                    .bind(service)
                    .fetch_one(connection)
                    .await
                    .map_err(failed)?;
                let all: i64 = row.try_get("all_tasks").map_err(failed)?;
                let theirs: Option<i64> = row.try_get("theirs").map_err(failed)?;
                Ok((
                    u64::try_from(all).unwrap_or(0),
                    u64::try_from(theirs.unwrap_or(0)).unwrap_or(0),
                ))
            }

            /// How many approvals of `service` and `caller` wait for a
            /// decision at `now_ms` (withdrawn ones count until they
            /// expire), on `connection` (in its transaction, if it has
            /// one).
            async fn count_waiting(
                connection: &mut <$db as sqlx::Database>::Connection,
                service: &str,
                caller: Option<&str>,
                now_ms: i64,
            ) -> Result<u64, StoreError> {
                let sql = format!(
                    "SELECT COUNT(*) AS n FROM te_approvals WHERE {} AND service = $3 \
                     AND state IN ('pending', 'withdrawn') AND expires_ms > $2",
                    of_caller("$1", caller)
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(caller)
                    .bind(now_ms)
                    .bind(service)
                    .fetch_one(connection)
                    .await
                    .map_err(failed)?;
                let n: i64 = row.try_get("n").map_err(failed)?;
                Ok(u64::try_from(n).unwrap_or(0))
            }

            /// How many escalations of `service` (`None`, of calling
            /// agents) and `caller` are open, on `connection` (in its
            /// transaction, if it has one).
            async fn count_open(
                connection: &mut <$db as sqlx::Database>::Connection,
                service: Option<&str>,
                caller: Option<&str>,
            ) -> Result<u64, StoreError> {
                let sql = format!(
                    "SELECT COUNT(*) AS n FROM te_escalations WHERE {} AND {} AND state = 'open'",
                    of_caller("$1", caller),
                    of_service("$2", service)
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(caller)
                    .bind(service)
                    .fetch_one(connection)
                    .await
                    .map_err(failed)?;
                let n: i64 = row.try_get("n").map_err(failed)?;
                Ok(u64::try_from(n).unwrap_or(0))
            }

            /// Keeps `escalation`, on `connection` (in its transaction, if
            /// it has one), unless its caller has `most_open` escalations
            /// open already, counted in the same statement
            /// (`bounded_insert`). Whether it was kept.
            async fn write_escalation(
                connection: &mut <$db as sqlx::Database>::Connection,
                escalation: &EscalationRecord,
                most_open: u64,
            ) -> Result<bool, StoreError> {
                // An id kept already is not kept again (a keeper asks
                // again under it when the store's answer was lost).
                let sql = bounded_insert(
                    "te_escalations",
                    ESCALATION_COLUMNS,
                    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11",
                    &format!(
                        "{} AND {} AND state = 'open'",
                        of_caller("$3", escalation.caller.as_deref()),
                        of_service("$11", escalation.service.as_deref())
                    ),
                    "$12",
                    most_open,
                ) + " ON CONFLICT (id) DO NOTHING";
                let query = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&escalation.id)
                    .bind(&escalation.tool)
                    .bind(&escalation.caller)
                    .bind(text(&escalation.envelope))
                    .bind(escalation.state.as_str())
                    .bind(escalation.created_ms)
                    .bind(&escalation.resolved_by)
                    .bind(escalation.resolved_ms)
                    .bind(&escalation.note)
                    .bind(&escalation.approvers)
                    .bind(&escalation.service);
                let done = bind_bound(query, most_open)
                    .execute(&mut *connection)
                    .await
                    .map_err(failed)?;
                if done.rows_affected() == 1 {
                    return Ok(true);
                }
                // Not written: kept already under this id, or past the bound.
                let kept: Option<i32> =
                    sqlx::query_scalar("SELECT 1 FROM te_escalations WHERE id = $1")
                        .bind(&escalation.id)
                        .fetch_optional(&mut *connection)
                        .await
                        .map_err(failed)?;
                Ok(kept.is_some())
            }

            async fn task_row(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
                Ok(self.versioned_task(id).await?.map(|(task, _)| task))
            }

            /// The task `id` and its version, read in one row: what an
            /// optimistic update writes against.
            async fn versioned_task(
                &self,
                id: &str,
            ) -> Result<Option<(TaskRecord, i64)>, StoreError> {
                let sql = format!("SELECT {TASK_COLUMNS} FROM te_tasks WHERE id = $1");
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(failed)?;
                let Some(row) = row else {
                    return Ok(None);
                };
                let version: i64 = row.try_get("version").map_err(failed)?;
                Ok(Some((Self::task_of(&row)?, version)))
            }

            /// The approvals of `service` in `states` (with `approvers`,
            /// only theirs), by age in `order` (`ASC`, `DESC`: constants).
            async fn listed_approvals(
                &self,
                service: &str,
                approvers: Option<&[&str]>,
                states: &[ApprovalState],
                limit: u32,
                order: &'static str,
            ) -> Result<Vec<ApprovalRecord>, StoreError> {
                let names: Vec<String> =
                    states.iter().map(|state| format!("'{}'", state.as_str())).collect();
                if names.is_empty() || approvers.is_some_and(<[&str]>::is_empty) {
                    return Ok(Vec::new());
                }
                // The names are the store's own constants, never input;
                // the scopes are bound, as one JSON array however many.
                let scoped = match approvers {
                    Some(_) => format!(" AND approvers IN ({})", format!($json_texts, "$3")),
                    None => String::new(),
                };
                let sql = format!(
                    "SELECT {APPROVAL_COLUMNS} FROM te_approvals WHERE state IN ({}) \
                     AND service = $2{scoped} ORDER BY created_ms {order} LIMIT $1",
                    names.join(", ")
                );
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(i64::from(limit))
                    .bind(service);
                if let Some(scopes) = approvers {
                    query = query.bind(text(&serde_json::json!(scopes)));
                }
                query
                    .fetch_all(&self.pool)
                    .await
                    .map_err(failed)?
                    .iter()
                    .map(Self::approval_of)
                    .collect()
            }

            async fn live_approvals(
                &self,
                digest: &str,
                now_ms: i64,
            ) -> Result<Vec<ApprovalRecord>, StoreError> {
                let sql = format!(
                    "SELECT {APPROVAL_COLUMNS} FROM te_approvals WHERE digest = $1 \
                     AND (state IN ('pending', 'approved', 'running') \
                          OR (state IN ('done', 'declined', 'withdrawn') AND expires_ms > $2)) \
                     ORDER BY created_ms DESC"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(digest)
                    .bind(now_ms)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(failed)?
                    .iter()
                    .map(Self::approval_of)
                    .collect()
            }

            async fn live_approval(
                &self,
                digest: &str,
                block: &str,
                now_ms: i64,
            ) -> Result<Option<ApprovalRecord>, StoreError> {
                let sql = format!(
                    "SELECT {APPROVAL_COLUMNS} FROM te_approvals WHERE digest = $1 AND block = $2 \
                     AND (state IN ('pending', 'approved', 'running') \
                          OR (state IN ('done', 'declined', 'withdrawn') AND expires_ms > $3)) \
                     ORDER BY created_ms DESC LIMIT 1"
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(digest)
                    .bind(block)
                    .bind(now_ms)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(failed)?;
                row.as_ref().map(Self::approval_of).transpose()
            }
        }

        impl Store for $name {
            fn create_task<'a>(
                &'a self,
                task: &'a TaskRecord,
                most_running: u64,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let caller = task.caller.as_deref();
                    if most_running == u64::MAX {
                        let mut connection = self.pool.acquire().await.map_err(failed)?;
                        return Self::insert_task(&mut connection, task, most_running).await;
                    }
                    // Counted and kept in one transaction that no other
                    // of the caller's runs beside, on any replica.
                    let mut tx = self.begin_counted(Some(&task.service), caller).await?;
                    let kept = Self::insert_task(&mut tx, task, most_running).await?;
                    tx.commit().await.map_err(failed)?;
                    Ok(kept)
                })
            }

            fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
                Box::pin(self.task_row(id))
            }

            fn update_task<'a>(
                &'a self,
                id: &'a str,
                holder: &'a str,
                update: &'a TaskUpdate,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    for _ in 0..TRIES {
                        // The task and its version in one row: a change made
                        // after it was read fails the update below, which
                        // tries again, rather than writing back a task read
                        // before that change (a lease renewed over a task
                        // finished a moment before).
                        let Some((mut task, version)) = self.versioned_task(id).await? else {
                            return Ok(false);
                        };
                        if task.holder.as_deref() != Some(holder) || task.state.is_finished() {
                            return Ok(false);
                        }
                        update.apply_to(&mut task);
                        let sql = "UPDATE te_tasks SET state = $1, status_message = $2, \
                                   lease_until_ms = $3, input_requests = $4, result = $5, error = $6, \
                                   updated_ms = $7, version = version + 1 \
                                   WHERE id = $8 AND holder = $9 AND version = $10";
                        let done = sqlx::query(sql)
                            .bind(task.state.as_str())
                            .bind(&task.status_message)
                            .bind(task.lease_until_ms)
                            .bind(task.input_requests.as_ref().map(text))
                            .bind(task.result.as_ref().map(text))
                            .bind(task.error.as_ref().map(text))
                            .bind(task.updated_ms)
                            .bind(id)
                            .bind(holder)
                            .bind(version)
                            .execute(&self.pool)
                            .await
                            .map_err(failed)?;
                        if done.rows_affected() == 1 {
                            return Ok(true);
                        }
                    }
                    Err(StoreError::new("a task changed too often to be updated"))
                })
            }

            fn answer_task<'a>(
                &'a self,
                id: &'a str,
                responses: &'a Value,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    for _ in 0..TRIES {
                        let sql = "SELECT state, input_requests, input_responses, version \
                                   FROM te_tasks WHERE id = $1";
                        let Some(row) = sqlx::query(sql)
                            .bind(id)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(failed)?
                        else {
                            return Ok(false);
                        };
                        let state: String = row.try_get("state").map_err(failed)?;
                        if TaskState::parse(&state).is_none_or(TaskState::is_finished) {
                            return Ok(false);
                        }
                        let version: i64 = row.try_get("version").map_err(failed)?;
                        let asked = json(row.try_get("input_requests").map_err(failed)?)?;
                        let mut merged = match json(row.try_get("input_responses").map_err(failed)?)? {
                            Some(Value::Object(known)) => known,
                            _ => serde_json::Map::new(),
                        };
                        if !crate::store::answers::merge(&mut merged, asked.as_ref(), responses) {
                            return Ok(true);
                        }
                        let sql = "UPDATE te_tasks SET input_responses = $1, version = version + 1 \
                                   WHERE id = $2 AND version = $3";
                        let done = sqlx::query(sql)
                            .bind(text(&Value::Object(merged)))
                            .bind(id)
                            .bind(version)
                            .execute(&self.pool)
                            .await
                            .map_err(failed)?;
                        if done.rows_affected() == 1 {
                            return Ok(true);
                        }
                    }
                    Err(StoreError::new("a task changed too often to be answered"))
                })
            }

            fn cancel_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let sql = "UPDATE te_tasks SET cancel_requested = TRUE, version = version + 1 \
                               WHERE id = $1 AND state IN ('working', 'input_required')";
                    let done = sqlx::query(sql)
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map_err(failed)?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn running_tasks<'a>(
                &'a self,
                service: &'a str,
                caller: Option<&'a str>,
            ) -> StoreFuture<'a, (u64, u64)> {
                Box::pin(async move {
                    let mut connection = self.pool.acquire().await.map_err(failed)?;
                    Self::count_running(&mut connection, service, caller).await
                })
            }

            fn claim_abandoned_tasks<'a>(
                &'a self,
                service: &'a str,
                tools: Option<&'a [&'a str]>,
                holder: &'a str,
                now_ms: i64,
                lease_until_ms: i64,
                limit: u32,
            ) -> StoreFuture<'a, Vec<TaskRecord>> {
                Box::pin(async move {
                    // The tools are bound, as one JSON array however many;
                    // a task whose time to live ran out is any replica's
                    // to end (written as a difference: a sum could
                    // overflow, which Postgres refuses).
                    let of_tools = match tools {
                        Some(_) => format!(
                            " AND (tool IN ({}) OR ttl_ms <= $1 - created_ms)",
                            format!($json_texts, "$4")
                        ),
                        None => String::new(),
                    };
                    let sql = format!(
                        "SELECT id FROM te_tasks \
                         WHERE state IN ('working', 'input_required') AND lease_until_ms < $1 \
                         AND service = $3{of_tools} ORDER BY lease_until_ms LIMIT $2"
                    );
                    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(now_ms)
                        .bind(i64::from(limit))
                        .bind(service);
                    if let Some(tools) = tools {
                        query = query.bind(text(&serde_json::json!(tools)));
                    }
                    let ids: Vec<String> = query
                        .fetch_all(&self.pool)
                        .await
                        .map_err(failed)?
                        .iter()
                        .map(|row| row.try_get("id"))
                        .collect::<Result<_, _>>()
                        .map_err(failed)?;
                    let mut claimed = Vec::new();
                    for id in ids {
                        let sql = format!(
                            "UPDATE te_tasks SET holder = $1, lease_until_ms = $2, runs = runs + 1, \
                             version = version + 1 \
                             WHERE id = $3 AND state IN ('working', 'input_required') AND lease_until_ms < $4 \
                             AND service = $5 RETURNING {TASK_COLUMNS}"
                        );
                        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                            .bind(holder)
                            .bind(lease_until_ms)
                            .bind(&id)
                            .bind(now_ms)
                            .bind(service)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(failed)?;
                        // A task the store cannot read back (written by
                        // hand, say) can neither run again nor be answered:
                        // it ends failed, so that it is neither claimed on
                        // every pass nor counted among its caller's running
                        // tasks, and holds none after it back.
                        match row.as_ref().map(Self::task_of) {
                            Some(Ok(task)) => claimed.push(task),
                            Some(Err(error)) if error.is_unreadable() => {
                                #[cfg(feature = "tracing")]
                                tracing::warn!(%error, task = %id, "a stopped task could not be read: ended failed, not taken over");
                                let message = format!(
                                    "the task could not be read back from the store, so it could not be taken over: {error}"
                                );
                                let protocol_error = serde_json::json!({
                                    "code": -32603,
                                    "message": message,
                                });
                                let sql = "UPDATE te_tasks SET state = 'failed', status_message = $1, \
                                           error = $2, updated_ms = $3, version = version + 1 \
                                           WHERE id = $4 AND holder = $5 \
                                           AND state IN ('working', 'input_required')";
                                sqlx::query(sql)
                                    .bind(&message)
                                    .bind(text(&protocol_error))
                                    .bind(now_ms)
                                    .bind(&id)
                                    .bind(holder)
                                    .execute(&self.pool)
                                    .await
                                    .map_err(failed)?;
                            }
                            // The schema's, every row's: not the row's.
                            Some(Err(error)) => return Err(error),
                            None => {}
                        }
                    }
                    Ok(claimed)
                })
            }

            fn open_approval<'a>(
                &'a self,
                approval: &'a ApprovalRecord,
                most_waiting: u64,
            ) -> StoreFuture<'a, Option<ApprovalRecord>> {
                Box::pin(async move {
                    let now = approval.created_ms;
                    if let Some(live) = self.live_approval(&approval.digest, &approval.block, now).await? {
                        return Ok(Some(live));
                    }
                    let caller = approval.caller.as_deref();
                    // The count is the approval's own time's: one that
                    // expired by then waits no more.
                    let sql = bounded_insert(
                        "te_approvals",
                        APPROVAL_COLUMNS,
                        "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, NULL, NULL, NULL, 0, $13, NULL, $14, $15, $16, $17",
                        &format!(
                            "{} AND service = $14 AND state IN ('pending', 'withdrawn') AND expires_ms > $11",
                            of_caller("$7", caller)
                        ),
                        "$18",
                        most_waiting,
                    ) + " ON CONFLICT DO NOTHING";
                    let query = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(&approval.id)
                        .bind(&approval.digest)
                        .bind(&approval.block)
                        .bind(&approval.tool)
                        .bind(text(&approval.arguments))
                        .bind(text(&approval.shown))
                        .bind(caller)
                        .bind(text(&serde_json::json!(approval.caller_scopes)))
                        .bind(&approval.approvers)
                        .bind(approval.state.as_str())
                        .bind(approval.created_ms)
                        .bind(approval.expires_ms)
                        .bind(approval.safe_to_repeat)
                        .bind(&approval.service)
                        .bind(text(&serde_json::json!(approval.waived)))
                        .bind(text(&Value::Array(approval.client_answers.clone())))
                        .bind(approval.notice_due_ms);
                    let query = bind_bound(query, most_waiting);
                    let done = if most_waiting == u64::MAX {
                        // Nothing counted: no transaction, no lock to wait for.
                        query.execute(&self.pool).await.map_err(failed)?
                    } else {
                        // Counted and kept in one transaction that no other
                        // of the caller's runs beside, on any replica.
                        let mut tx = self.begin_counted(Some(&approval.service), caller).await?;
                        let done = query.execute(&mut *tx).await.map_err(failed)?;
                        tx.commit().await.map_err(failed)?;
                        done
                    };
                    if done.rows_affected() == 1 {
                        return Ok(Some(approval.clone()));
                    }
                    // Another replica opened the same call's meanwhile, or
                    // the caller has as many waiting as may.
                    self.live_approval(&approval.digest, &approval.block, now).await
                })
            }

            fn call_approvals<'a>(
                &'a self,
                digest: &'a str,
                now_ms: i64,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(self.live_approvals(digest, now_ms))
            }

            fn waiting_approvals<'a>(
                &'a self,
                service: &'a str,
                caller: Option<&'a str>,
                now_ms: i64,
            ) -> StoreFuture<'a, u64> {
                Box::pin(async move {
                    let mut connection = self.pool.acquire().await.map_err(failed)?;
                    Self::count_waiting(&mut connection, service, caller, now_ms).await
                })
            }

            fn approval<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<ApprovalRecord>> {
                Box::pin(async move {
                    let sql = format!("SELECT {APPROVAL_COLUMNS} FROM te_approvals WHERE id = $1");
                    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(failed)?;
                    row.as_ref().map(Self::approval_of).transpose()
                })
            }

            fn approvals<'a>(
                &'a self,
                service: &'a str,
                approvers: Option<&'a [&'a str]>,
                states: &'a [ApprovalState],
                limit: u32,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(self.listed_approvals(service, approvers, states, limit, "DESC"))
            }

            fn oldest_approvals<'a>(
                &'a self,
                service: &'a str,
                approvers: Option<&'a [&'a str]>,
                states: &'a [ApprovalState],
                limit: u32,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(self.listed_approvals(service, approvers, states, limit, "ASC"))
            }

            fn decide<'a>(&'a self, id: &'a str, decision: &'a Decision) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let state = decision.state();
                    // The outcome is given for one time to live after the
                    // decision (`ApprovalRecord::readable_until`); a
                    // withdrawal keeps the approval's own end. An approved
                    // call is withdrawn whatever its expiry: until it is
                    // expired (`expire_approvals`), it may still be claimed.
                    let sql = "UPDATE te_approvals SET state = $1, decided_by = $2, decided_ms = $3, note = $4, \
                               expires_ms = CASE WHEN $1 = 'withdrawn' THEN expires_ms \
                                   WHEN $3 > created_ms AND expires_ms <= 9223372036854775807 - (CASE WHEN $3 > created_ms THEN $3 - created_ms ELSE 0 END) \
                                   THEN expires_ms + ($3 - created_ms) ELSE expires_ms END \
                               WHERE id = $5 AND ((state = 'pending' AND expires_ms > $3) \
                                   OR ($1 = 'withdrawn' AND state = 'approved'))";
                    // The decision and its audit, both or neither.
                    let mut tx = self.pool.begin().await.map_err(failed)?;
                    let done = sqlx::query(sql)
                        .bind(state.as_str())
                        .bind(&decision.by)
                        .bind(decision.at_ms)
                        .bind(&decision.note)
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(failed)?;
                    if done.rows_affected() != 1 {
                        return Ok(false);
                    }
                    Self::write_audit(&mut tx, &decision.audit_entry(id)).await?;
                    tx.commit().await.map_err(failed)?;
                    Ok(true)
                })
            }

            fn claim_approval<'a>(
                &'a self,
                id: &'a str,
                holder: &'a str,
                now_ms: i64,
                lease_until_ms: i64,
            ) -> StoreFuture<'a, Option<ApprovalRecord>> {
                Box::pin(async move {
                    let sql = format!(
                        "UPDATE te_approvals SET state = 'running', holder = $1, lease_until_ms = $2 \
                         WHERE id = $3 AND (state = 'approved' OR (state = 'running' AND lease_until_ms < $4)) \
                         RETURNING {APPROVAL_COLUMNS}"
                    );
                    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(holder)
                        .bind(lease_until_ms)
                        .bind(id)
                        .bind(now_ms)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(failed)?;
                    row.as_ref().map(Self::approval_of).transpose()
                })
            }

            fn approvals_to_run<'a>(
                &'a self,
                service: &'a str,
                now_ms: i64,
                limit: u32,
            ) -> StoreFuture<'a, Vec<String>> {
                Box::pin(async move {
                    let sql = "SELECT id FROM te_approvals \
                               WHERE (state = 'approved' OR (state = 'running' AND lease_until_ms < $1)) \
                               AND service = $3 ORDER BY created_ms LIMIT $2";
                    sqlx::query(sql)
                        .bind(now_ms)
                        .bind(i64::from(limit))
                        .bind(service)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(failed)?
                        .iter()
                        .map(|row| row.try_get("id").map_err(failed))
                        .collect()
                })
            }

            fn renew_approval<'a>(
                &'a self,
                id: &'a str,
                holder: &'a str,
                lease_until_ms: i64,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let sql = "UPDATE te_approvals SET lease_until_ms = $1 \
                               WHERE id = $2 AND state = 'running' AND holder = $3";
                    let done = sqlx::query(sql)
                        .bind(lease_until_ms)
                        .bind(id)
                        .bind(holder)
                        .execute(&self.pool)
                        .await
                        .map_err(failed)?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn finish_approval<'a>(
                &'a self,
                id: &'a str,
                holder: &'a str,
                result: &'a Value,
                at_ms: i64,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    // The result is given for one time to live after the run
                    // (`ApprovalRecord::readable_until`): the time to live its
                    // decision set, counted from the decision.
                    let sql = "UPDATE te_approvals SET state = 'done', result = $1, \
                               expires_ms = CASE WHEN $4 > COALESCE(decided_ms, created_ms) AND expires_ms <= 9223372036854775807 - (CASE WHEN $4 > COALESCE(decided_ms, created_ms) THEN $4 - COALESCE(decided_ms, created_ms) ELSE 0 END) \
                                   THEN expires_ms + ($4 - COALESCE(decided_ms, created_ms)) ELSE expires_ms END \
                               WHERE id = $2 AND state = 'running' AND holder = $3";
                    let done = sqlx::query(sql)
                        .bind(text(result))
                        .bind(id)
                        .bind(holder)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(failed)?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn expire_approvals<'a>(
                &'a self,
                service: &'a str,
                now_ms: i64,
                escalate: &'a Escalate<'a>,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(async move {
                    let sql = format!(
                        "UPDATE te_approvals SET state = 'expired' WHERE id IN ({}) \
                         AND state IN ('pending', 'approved') AND expires_ms <= $1 RETURNING {APPROVAL_COLUMNS}",
                        format!($json_texts, "$2")
                    );
                    // In batches, each one transaction: expired, escalated
                    // and audited, all or none; the callers of the batch
                    // locked first, each in the approval's service, so that
                    // each escalation is counted as a call's would be. A
                    // backlog (a store that no runner swept for a while)
                    // takes a bounded number of locks at a time.
                    let mut all = Vec::new();
                    loop {
                        let mut tx = $begin_writing(&self.pool).await?;
                        let due: Vec<(String, String, Option<String>)> = sqlx::query_as(
                            "SELECT id, service, caller FROM te_approvals \
                             WHERE state IN ('pending', 'approved') AND expires_ms <= $1 AND service = $3 LIMIT $2",
                        )
                        .bind(now_ms)
                        .bind(EXPIRED_AT_ONCE)
                        .bind(service)
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(failed)?;
                        if due.is_empty() {
                            break;
                        }
                        let pairs: Vec<(Option<&str>, Option<&str>)> = (due.iter())
                            .map(|(_, service, caller)| (Some(service.as_str()), caller.as_deref()))
                            .collect();
                        $lock_callers(&mut tx, &pairs).await?;
                        let ids: Vec<&str> = due.iter().map(|(id, _, _)| id.as_str()).collect();
                        let rows = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                            .bind(now_ms)
                            .bind(text(&serde_json::json!(ids)))
                            .fetch_all(&mut *tx)
                            .await
                            .map_err(failed)?;
                        let mut expired = Vec::with_capacity(rows.len());
                        for row in &rows {
                            match Self::approval_of(row) {
                                Ok(approval) => expired.push(approval),
                                // A row the store cannot read back (written
                                // by hand, say) expires all the same, with
                                // its line of the audit, but no escalation
                                // can be made of it: it holds no other back.
                                Err(error) if error.is_unreadable() => {
                                    let id: String = row.try_get("id").map_err(failed)?;
                                    #[cfg(feature = "tracing")]
                                    tracing::warn!(%error, approval = %id, "an approval that expired could not be read: expired without an escalation");
                                    Self::write_audit(&mut tx, &AuditEntry::expired(&id, now_ms)).await?;
                                }
                                // The schema's, every row's: nothing of the
                                // batch expires (the transaction rolls back).
                                Err(error) => return Err(error),
                            }
                        }
                        for approval in &expired {
                            let (service, caller) = (Some(approval.service.as_str()), approval.caller.as_deref());
                            let open = Self::count_open(&mut tx, service, caller).await?;
                            if let Some(escalation) = escalate(approval, open) {
                                Self::write_escalation(&mut tx, &escalation, u64::MAX).await?;
                            }
                            Self::write_audit(&mut tx, &AuditEntry::expired(&approval.id, now_ms))
                                .await?;
                        }
                        tx.commit().await.map_err(failed)?;
                        all.extend(expired);
                        // A batch short of full was the last: what the
                        // next would read fell due since, for the next pass.
                        if due.len() < EXPIRED_AT_ONCE as usize {
                            break;
                        }
                    }
                    Ok(all)
                })
            }

            fn claim_due_notices<'a>(
                &'a self,
                service: &'a str,
                now_ms: i64,
                wait_ms: i64,
                limit: u32,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(async move {
                    let sql = "SELECT id FROM te_approvals WHERE service = $1 \
                               AND notice_due_ms IS NOT NULL AND notice_due_ms <= $2 \
                               AND state = 'pending' AND expires_ms > $2 \
                               ORDER BY notice_due_ms LIMIT $3";
                    let due = sqlx::query(sql)
                        .bind(service)
                        .bind(now_ms)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(failed)?;
                    // Never past the largest time: `now_ms` plus the wait
                    // at most (an age is never that long).
                    let wait = wait_ms.clamp(0, i64::MAX - now_ms.max(0));
                    let mut claimed = Vec::with_capacity(due.len());
                    for row in &due {
                        let id: String = row.try_get("id").map_err(failed)?;
                        // Claimed only if no other replica claimed it since,
                        // nor sent it, nor decided it; for `wait_ms` or its
                        // age, whichever is longer.
                        let sql = format!(
                            "UPDATE te_approvals SET notice_due_ms = $3 + \
                             CASE WHEN $3 - created_ms > $1 THEN $3 - created_ms ELSE $1 END \
                             WHERE id = $2 AND notice_due_ms IS NOT NULL AND notice_due_ms <= $3 \
                             AND state = 'pending' AND expires_ms > $3 RETURNING {APPROVAL_COLUMNS}"
                        );
                        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                            .bind(wait)
                            .bind(&id)
                            .bind(now_ms)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(failed)?;
                        let Some(row) = row else { continue };
                        match Self::approval_of(&row) {
                            Ok(approval) => claimed.push(approval),
                            // It cannot be told: no longer due, rather than
                            // claimed again and again.
                            Err(error) if error.is_unreadable() => self.notice_sent(&id).await?,
                            Err(error) => return Err(error),
                        }
                    }
                    Ok(claimed)
                })
            }

            fn notice_sent<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
                Box::pin(async move {
                    sqlx::query("UPDATE te_approvals SET notice_due_ms = NULL WHERE id = $1")
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map_err(failed)?;
                    Ok(())
                })
            }

            fn redeem<'a>(&'a self, nonce: &'a str, until_ms: i64) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let sql = "INSERT INTO te_redemptions (nonce, until_ms) VALUES ($1, $2) \
                               ON CONFLICT DO NOTHING";
                    let done = sqlx::query(sql)
                        .bind(nonce)
                        .bind(until_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(failed)?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn redeemed<'a>(&'a self, nonce: &'a str) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let sql = "SELECT COUNT(*) FROM te_redemptions WHERE nonce = $1";
                    let (found,): (i64,) = sqlx::query_as(sql)
                        .bind(nonce)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(failed)?;
                    Ok(found > 0)
                })
            }

            fn ledger(&self) -> &str {
                &self.ledger
            }

            fn record_escalation<'a>(
                &'a self,
                escalation: &'a EscalationRecord,
                most_open: u64,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    if most_open == u64::MAX {
                        let mut connection = self.pool.acquire().await.map_err(failed)?;
                        return Self::write_escalation(&mut connection, escalation, most_open).await;
                    }
                    // Counted and kept in one transaction that no other
                    // of the caller's runs beside, on any replica.
                    let caller = escalation.caller.as_deref();
                    let mut tx = self.begin_counted(escalation.service.as_deref(), caller).await?;
                    let kept = Self::write_escalation(&mut tx, escalation, most_open).await?;
                    tx.commit().await.map_err(failed)?;
                    Ok(kept)
                })
            }

            fn escalations<'a>(
                &'a self,
                service: &'a str,
                approvers: Option<&'a [&'a str]>,
                state: EscalationState,
                limit: u32,
            ) -> StoreFuture<'a, Vec<EscalationRecord>> {
                Box::pin(async move {
                    // The scopes are bound, as one JSON array however many.
                    let scoped = match approvers {
                        Some(_) => format!(
                            " AND (approvers IS NULL OR approvers IN ({}))",
                            format!($json_texts, "$4")
                        ),
                        None => String::new(),
                    };
                    let sql = format!(
                        "SELECT {ESCALATION_COLUMNS} FROM te_escalations WHERE state = $1 \
                         AND (service IS NULL OR service = $3){scoped} ORDER BY created_ms DESC LIMIT $2"
                    );
                    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(state.as_str())
                        .bind(i64::from(limit))
                        .bind(service);
                    if let Some(scopes) = approvers {
                        query = query.bind(text(&serde_json::json!(scopes)));
                    }
                    query
                        .fetch_all(&self.pool)
                        .await
                        .map_err(failed)?
                        .iter()
                        .map(Self::escalation_of)
                        .collect()
                })
            }

            fn escalation<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<EscalationRecord>> {
                Box::pin(async move {
                    let sql = format!("SELECT {ESCALATION_COLUMNS} FROM te_escalations WHERE id = $1");
                    sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(failed)?
                        .as_ref()
                        .map(Self::escalation_of)
                        .transpose()
                })
            }

            fn open_escalations<'a>(
                &'a self,
                service: Option<&'a str>,
                caller: Option<&'a str>,
            ) -> StoreFuture<'a, u64> {
                Box::pin(async move {
                    let mut connection = self.pool.acquire().await.map_err(failed)?;
                    Self::count_open(&mut connection, service, caller).await
                })
            }

            fn resolve_escalation<'a>(
                &'a self,
                id: &'a str,
                by: &'a str,
                note: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let sql = "UPDATE te_escalations SET state = 'resolved', resolved_by = $1, \
                               resolved_ms = $2, note = $3 WHERE id = $4 AND state = 'open'";
                    let mut tx = self.pool.begin().await.map_err(failed)?;
                    let done = sqlx::query(sql)
                        .bind(by)
                        .bind(at_ms)
                        .bind(note)
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(failed)?;
                    if done.rows_affected() != 1 {
                        return Ok(false);
                    }
                    Self::write_audit(&mut tx, &AuditEntry::resolved(by, id, note, at_ms)).await?;
                    tx.commit().await.map_err(failed)?;
                    Ok(true)
                })
            }

            fn forget_resolved_escalations<'a>(
                &'a self,
                service: &'a str,
                resolved_before_ms: i64,
            ) -> StoreFuture<'a, u64> {
                Box::pin(async move {
                    let sql = "DELETE FROM te_escalations WHERE state = 'resolved' \
                               AND resolved_ms < $1 AND (service IS NULL OR service = $2)";
                    let done = sqlx::query(sql)
                        .bind(resolved_before_ms)
                        .bind(service)
                        .execute(&self.pool)
                        .await
                        .map_err(failed)?;
                    Ok(done.rows_affected())
                })
            }

            fn audit<'a>(&'a self, entry: &'a AuditEntry) -> StoreFuture<'a, ()> {
                Box::pin(async move {
                    let mut connection = self.pool.acquire().await.map_err(failed)?;
                    Self::write_audit(&mut connection, entry).await
                })
            }

            fn audit_log<'a>(&'a self, limit: u32) -> StoreFuture<'a, Vec<AuditEntry>> {
                Box::pin(async move {
                    let sql = "SELECT at_ms, who, what, subject, note FROM te_audit \
                               ORDER BY at_ms DESC LIMIT $1";
                    sqlx::query(sql)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(failed)?
                        .iter()
                        .map(|row| {
                            Ok(AuditEntry {
                                at_ms: row.try_get("at_ms").map_err(failed)?,
                                who: row.try_get("who").map_err(failed)?,
                                what: row.try_get("what").map_err(failed)?,
                                subject: row.try_get("subject").map_err(failed)?,
                                note: row.try_get("note").map_err(failed)?,
                            })
                        })
                        .collect()
                })
            }

            fn sweep<'a>(&'a self, now_ms: i64) -> StoreFuture<'a, ()> {
                Box::pin(async move {
                    // A task cancelled and unfinished waits a week for its
                    // service to take it over (`$2 = now - kept`). Written
                    // `ttl <= now - updated`, which no time to live
                    // overflows (Postgres refuses a sum out of range, and
                    // the whole sweep with it).
                    let sql = "DELETE FROM te_tasks WHERE ttl_ms <= $1 - updated_ms \
                               AND (cancel_requested = FALSE \
                                    OR state NOT IN ('working', 'input_required') \
                                    OR ttl_ms <= $2 - updated_ms)";
                    let tasks = sqlx::query(sql)
                        .bind(now_ms)
                        .bind(now_ms.saturating_sub(super::KEEP_CANCELLED_TASK_MS))
                        .execute(&self.pool)
                        .await;
                    // Each kind swept whatever became of the one before.
                    let redemptions = sqlx::query("DELETE FROM te_redemptions WHERE until_ms <= $1")
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await;
                    // `expires_ms <= now - kept`, which no expiry overflows.
                    let sql = "DELETE FROM te_approvals WHERE state IN ('done', 'declined', 'withdrawn', 'expired') \
                               AND expires_ms <= $2 - $1";
                    let approvals = sqlx::query(sql)
                        .bind(super::KEEP_DECIDED_MS)
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await;
                    tasks.and(redemptions).and(approvals).map(drop).map_err(failed)
                })
            }
        }
    };
}

#[cfg(feature = "sqlite")]
sql_store!(
    /// The store in a SQLite file ([`Store`]): the embedded default —
    /// nothing to install, and replicas on one host may share the file
    /// (write-ahead log, a busy timeout).
    SqliteStore,
    sqlx::Sqlite,
    sqlx::SqlitePool,
    begin_writing_sqlite,
    lock_callers_sqlite,
    column_sqlite,
    "SELECT value FROM json_each({})"
);

#[cfg(feature = "sqlite")]
impl SqliteStore {
    /// The store in the SQLite file at `path`, made if missing, its schema
    /// migrated.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened or migrated.
    pub async fn open(path: &str) -> Result<Self, StoreError> {
        use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
        use std::str::FromStr;
        let options = SqliteConnectOptions::from_str(&format!("sqlite:{path}"))
            .map_err(failed)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(std::time::Duration::from_secs(10));
        // A new file's first connection switches it to the write-ahead
        // log, which SQLite refuses at once while another replica does.
        let mut tries = 1;
        let pool = loop {
            let pool = SqlitePoolOptions::new().max_connections(4);
            match pool.connect_with(options.clone()).await {
                Ok(pool) => break pool,
                Err(error) if tries < MIGRATION_TRIES && busy(&error) => {
                    tries += 1;
                    pause().await;
                }
                Err(error) => return Err(failed(error)),
            }
        };
        Self::from_pool(pool).await
    }
}

/// A column of a row read back, on SQLite, that does not decode as the
/// store's: SQLite keeps each value's own type, whatever the column's, so a
/// value of another type (written by hand, say) is an error of that row
/// alone, [unreadable](StoreError::unreadable). A column missing is the
/// schema's error.
#[cfg(feature = "sqlite")]
fn column_sqlite(error: sqlx::Error) -> StoreError {
    match error {
        sqlx::Error::ColumnDecode { .. } => failed(error).unreadable(),
        error => failed(error),
    }
}

/// A transaction that writes, on SQLite: it takes the file's write lock at
/// once (`BEGIN IMMEDIATE`), so that no other connection, of any replica,
/// writes between what it reads and what it writes (a deferred one would
/// read, then fail to become a writer when another wrote meanwhile).
#[cfg(feature = "sqlite")]
async fn begin_writing_sqlite(
    pool: &sqlx::SqlitePool,
) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
    pool.begin_with("BEGIN IMMEDIATE").await.map_err(failed)
}

/// SQLite's "database is locked" (`SQLITE_BUSY`) or "table is locked"
/// (`SQLITE_LOCKED`): another connection holds the file. sqlx gives the
/// extended result code (`SQLITE_BUSY_SNAPSHOT` is 517, say): its low
/// byte is the primary one.
#[cfg(feature = "sqlite")]
fn busy(error: &sqlx::Error) -> bool {
    let code = error
        .as_database_error()
        .and_then(sqlx::error::DatabaseError::code)
        .and_then(|code| code.parse::<u32>().ok());
    matches!(code.map(|code| code & 0xff), Some(5 | 6))
}

#[cfg(feature = "postgres")]
sql_store!(
    /// The store in Postgres ([`Store`]): for N replicas, which share it.
    PostgresStore,
    sqlx::Postgres,
    sqlx::PgPool,
    begin_writing_postgres,
    lock_callers_postgres,
    failed,
    "SELECT jsonb_array_elements_text(CAST({} AS jsonb))"
);

/// A transaction that writes, on Postgres: read committed whatever the
/// database's default, so that each statement sees what was committed
/// before it began — a count made after a caller's lock was taken sees
/// the rows of whoever held it before.
///
/// `BEGIN` alone: the timeouts are set by a statement of their own once
/// the transaction is open ([`lock_callers_postgres`]). Sent in `BEGIN`'s
/// own message they would save a round trip, but should one of them fail
/// there, sqlx, which rolls back only a transaction it saw begin, would
/// put the connection back in the pool inside an aborted transaction.
#[cfg(feature = "postgres")]
async fn begin_writing_postgres(
    pool: &sqlx::PgPool,
) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
    (pool.begin_with("BEGIN ISOLATION LEVEL READ COMMITTED"))
        .await
        .map_err(failed)
}

/// Takes transaction-scoped advisory locks on `callers` (each a service —
/// none for calling agents' escalations — and a caller) in
/// `connection`'s transaction, which every replica's transaction for the
/// same caller in the same service waits for, so that two at once cannot
/// both count below a bound (other callers' do not wait, nor the same
/// subject's in another service, unless their keys collide: then
/// only a little longer); in one order every transaction takes them in (so
/// that two taking several cannot wait on each other), waiting 10 seconds
/// at most for them (as SQLite waits for its file), and ending the
/// transaction should it sit idle for a minute: a replica cut off while it
/// holds a caller's lock holds no one up for longer.
#[cfg(feature = "postgres")]
async fn lock_callers_postgres(
    connection: &mut sqlx::PgConnection,
    callers: &[(Option<&str>, Option<&str>)],
) -> Result<(), StoreError> {
    // The pair as a JSON array: a caller without a subject (null) is keyed
    // apart from every subject, a calling agent's service from every
    // service's, and no two pairs share a text.
    let keys: Vec<String> = (callers.iter())
        .map(|pair| format!("te-caller:{}", serde_json::json!(pair)))
        .collect();
    sqlx::query(
        "SELECT set_config('lock_timeout', '10s', true), \
         set_config('idle_in_transaction_session_timeout', '60s', true)",
    )
    .execute(&mut *connection)
    .await
    .map_err(failed)?;
    sqlx::query(
        "SELECT pg_advisory_xact_lock(h) FROM \
         (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest($1::text[]) AS k ORDER BY h) AS ordered",
    )
    .bind(keys)
    .execute(&mut *connection)
    .await
    .map_err(failed)?;
    Ok(())
}

/// SQLite needs no lock on a caller: a counted transaction begins with
/// `BEGIN IMMEDIATE` ([`begin_writing_sqlite`]), which holds the whole
/// file's write lock from its start, before it counts.
#[cfg(feature = "sqlite")]
async fn lock_callers_sqlite(
    _connection: &mut sqlx::SqliteConnection,
    _callers: &[(Option<&str>, Option<&str>)],
) -> Result<(), StoreError> {
    Ok(())
}

#[cfg(feature = "postgres")]
impl PostgresStore {
    /// The store in the Postgres database at `url`
    /// (`postgres://user:password@host/database`), its schema migrated —
    /// once, whichever replica starts first (an advisory lock).
    ///
    /// Each of its connections reads committed data whatever the
    /// database's default isolation (under `repeatable read` or
    /// `serializable`, the loser of a race to decide or claim would fail
    /// where it should find the row taken), and ends a transaction left idle
    /// a minute (a replica cut off mid-decision holds no row lock for
    /// longer): set as each connection opens (`SET`, which a pooler in
    /// session mode keeps; not the startup `options`, which `PgBouncer`
    /// refuses). A pool of your own ([`from_pool`](Self::from_pool)) is
    /// used as it is.
    ///
    /// # Errors
    ///
    /// When the database cannot be reached or migrated, or holds another
    /// application's migrations.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(8)
            .after_connect(|connection, _| {
                Box::pin(async move {
                    for set in [
                        "SET default_transaction_isolation = 'read committed'",
                        "SET idle_in_transaction_session_timeout = '60s'",
                    ] {
                        sqlx::query(set).execute(&mut *connection).await?;
                    }
                    Ok(())
                })
            })
            .connect(url)
            .await
            .map_err(|error| StoreError::new(crate::redact::text::scrub(&error.to_string())))?;
        Self::from_pool(pool).await
    }
}

#[cfg(test)]
mod tests {
    /// An earlier release leaves a later one's migrations in place only
    /// when they are named as this store's: every one must be.
    #[test]
    fn every_migration_is_named_as_the_stores() {
        for migration in super::migrator().iter() {
            assert!(
                migration.description.starts_with("tool-envelope"),
                "migration {}: {}",
                migration.version,
                migration.description
            );
        }
    }
}
