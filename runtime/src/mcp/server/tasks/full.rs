//! Why a task is not started: the bounds on running tasks, and on tasks
//! kept — running, or finished as long as rmcp keeps them — checked as a
//! task starts, and the envelope of a call refused by them.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::{Owner, TASK_TTL};

/// How many tasks are kept — running, or finished within [`TASK_TTL`],
/// as long as rmcp keeps a finished task and its result — for each that
/// may run: of the server's, and of each caller's. Finished tasks hand
/// their slot back at once: without this bound a caller starting quick
/// tasks one after another would fill the memory, and slow every task
/// request, within a time to live.
const KEPT_PER_RUNNING: usize = 10;

/// Why a task was not started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// The server runs as many as it may.
    Server(usize),
    /// The caller runs as many as it may.
    Caller(usize),
    /// The server (`caller: false`) or the caller has as many tasks as are
    /// kept, `max`, running or finished within a time to live; the first
    /// finished is let go `after` from now.
    Kept {
        caller: bool,
        max: usize,
        after: Duration,
    },
}

impl Full {
    /// The envelope of a call refused as a task because of it: `transient`
    /// — nothing ran, and a place frees when a task ends or is let go.
    pub(crate) fn envelope(self) -> crate::ErrorEnvelope {
        let (whose, max) = match self {
            Full::Server(max) => ("this server runs", max),
            Full::Caller(max) => ("this caller runs", max),
            Full::Kept { caller, max, after } => {
                let whose = if caller { "this caller" } else { "this server" };
                // Whole seconds, rounded up: not sooner than it is let go.
                let after =
                    Duration::from_secs(after.as_secs() + u64::from(after.subsec_nanos() > 0));
                return crate::ErrorEnvelope::transient(format!(
                    "The call was not started: {whose} has {max} tasks running or finished in the last {} minutes, as many as the server keeps",
                    TASK_TTL.as_secs() / 60
                ))
                .with_reason(crate::reasons::TOO_MANY_TASKS)
                .with_not_applied(true)
                .with_retry_after(after)
                .with_alternative(format!(
                    "Call again in {} s, when the first finished task is let go",
                    after.as_secs()
                ));
            }
        };
        crate::ErrorEnvelope::transient(format!(
            "The call was not started: {whose} {max} tasks already, as many as it may at once"
        ))
        .with_reason(crate::reasons::TOO_MANY_TASKS)
        .with_not_applied(true)
        .with_retry_after(Duration::from_secs(1))
        .with_alternative("Wait for a running task to finish, or cancel one, then call again")
    }
}

/// `Ok` when another task of `subject`'s may start at `now` among
/// `owners`: at most `max` running and `max_per_caller` of one caller's,
/// and at most ten times as many kept.
///
/// # Errors
///
/// Which bound it would cross.
pub(super) fn room(
    owners: &HashMap<String, Owner>,
    subject: Option<&str>,
    (max, max_per_caller): (usize, usize),
    now: Instant,
) -> Result<(), Full> {
    // Running, and kept (running, or finished as long as rmcp keeps
    // it): of all, and of the caller's; when the first finished of
    // each is let go.
    let (mut all, mut theirs, mut kept, mut theirs_kept) = (0, 0, 0, 0);
    let (mut first, mut their_first) = (None::<Instant>, None::<Instant>);
    for owner in owners.values() {
        let mine = owner.subject.as_deref() == subject;
        match owner.finished.get() {
            None => {
                all += 1;
                theirs += usize::from(mine);
            }
            Some(&at) if now.duration_since(at) < TASK_TTL => {
                first = Some(first.map_or(at, |first| first.min(at)));
                if mine {
                    their_first = Some(their_first.map_or(at, |first| first.min(at)));
                }
            }
            Some(_) => continue,
        }
        kept += 1;
        theirs_kept += usize::from(mine);
    }
    if all >= max {
        return Err(Full::Server(max));
    }
    if theirs >= max_per_caller {
        return Err(Full::Caller(max_per_caller));
    }
    let let_go = |first: Option<Instant>| {
        first.map_or(TASK_TTL, |at| {
            TASK_TTL.saturating_sub(now.duration_since(at))
        })
    };
    let most = max.saturating_mul(KEPT_PER_RUNNING);
    if kept >= most {
        let after = let_go(first);
        return Err(Full::Kept {
            caller: false,
            max: most,
            after,
        });
    }
    let most = max_per_caller.saturating_mul(KEPT_PER_RUNNING);
    if theirs_kept >= most {
        let after = let_go(their_first);
        return Err(Full::Kept {
            caller: true,
            max: most,
            after,
        });
    }
    Ok(())
}
