//! The coordinator: many branches, each recovering locally; one failed branch
//! never aborts the others, and partial data is never presented as complete.
//!
//! [`Coordinator`] runs branches concurrently. One failed branch — even a
//! panicking one — never aborts the others. The [`Report`] lists the
//! completed branches and the gaps, each gap with its attempted query,
//! partial results, category and alternatives; `is_complete()` is false
//! whenever a gap exists, and its `Display` names one gap per line.
//!
//! ```
//! use std::time::Duration;
//! use tool_envelope::coordinator::Coordinator;
//! use tool_envelope::retry::RetryPolicy;
//! use tool_envelope::{tool, ErrorEnvelope, Partial};
//!
//! /// Fetch ten sources on a topic; the provider allows `quota`.
//! #[tool(read_only)]
//! async fn research(topic: String, quota: usize, found: Partial<String>) -> Result<Vec<String>, ErrorEnvelope> {
//!     for i in found.len()..10 {
//!         if i == quota {
//!             return Err(ErrorEnvelope::transient(format!("Provider rate-limited after {i} sources"))
//!                 .with_alternative("Continue with the sources gathered, flagged as partial"));
//!         }
//!         found.push(format!("{topic} {i}"));
//!     }
//!     Ok(found.to_vec())
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let policy = RetryPolicy::default().constant(Duration::from_millis(20));
//! let (eu, us) = (Partial::new(), Partial::new());
//! let report = Coordinator::new()
//!     .branch("eu-ai-act", policy.retry(|| research("EU AI Act".into(), 6, eu.clone())))
//!     .branch("us-orders", policy.retry(|| research("US orders".into(), 100, us.clone())))
//!     .run()
//!     .await;
//!
//! assert!(!report.is_complete()); // partial data is never presented as complete
//! assert_eq!(report.completed[0].branch, "us-orders");
//! assert_eq!(report.gaps[0].envelope().partial_count(), 6);
//! assert_eq!(report.to_string(), "1 of 2 branches complete; 1 gap:\n\
//!     - gap `eu-ai-act`: Provider rate-limited after 6 sources [transient, retries_exhausted after 3 attempts]; \
//!     6 partial results kept; attempted {\"quota\":6,\"topic\":\"EU AI Act\"}; \
//!     next: Continue with the sources gathered, flagged as partial");
//! # }
//! ```
//!
//! The branches are futures polled together on the caller's task (as
//! `join_all` would), so a branch that blocks its thread holds up the
//! others: make blocking work `async` or move it to `spawn_blocking`.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::{Either, select};
use futures_util::stream::FuturesUnordered;
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeStruct, Serializer};

use crate::classify::panicked;
use crate::envelope::ErrorEnvelope;
use crate::escalation::{Escalation, EscalationReason};
use crate::panic::catch_unwind_future;
use crate::retry::keep::keep;
use crate::retry::{Outcome, RetryStats};
use crate::store::Store;

/// What a branch ends with: a value, or the escalation of its failure.
///
/// Implemented for a retry loop's [`Outcome`] (its statistics are kept), for
/// `Result<T, Escalation>`, and for `Result<T, ErrorEnvelope>` (a failure not
/// retried locally).
pub trait BranchResult: Send {
    /// The branch's value.
    type Value;
    /// The value or the escalation, and the branch's retry statistics if any.
    fn into_branch(self) -> (Result<Self::Value, Escalation>, Option<RetryStats>);
}

impl<T: Send> BranchResult for Outcome<T> {
    type Value = T;

    fn into_branch(self) -> (Result<T, Escalation>, Option<RetryStats>) {
        (self.result, Some(self.stats))
    }
}

impl<T: Send> BranchResult for Result<T, Escalation> {
    type Value = T;

    fn into_branch(self) -> (Result<T, Escalation>, Option<RetryStats>) {
        (self, None)
    }
}

impl<T: Send> BranchResult for Result<T, ErrorEnvelope> {
    type Value = T;

    fn into_branch(self) -> (Result<T, Escalation>, Option<RetryStats>) {
        (self.map_err(Escalation::from_envelope), None)
    }
}

type BranchFuture<'a, T> =
    Pin<Box<dyn Future<Output = (Result<T, Escalation>, Option<RetryStats>)> + Send + 'a>>;

/// Runs branches concurrently and reports what completed and where the gaps are.
///
/// ```
/// use tool_envelope::{ErrorEnvelope, coordinator::Coordinator};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let report = Coordinator::new()
///     .branch("orders", async { Ok::<_, ErrorEnvelope>(3) })
///     .branch("refunds", async { Err::<u32, _>(ErrorEnvelope::permission("Access denied to refunds")) })
///     .run()
///     .await;
/// assert!(!report.is_complete());
/// assert_eq!(report.completed.len(), 1);
/// assert_eq!(report.gaps[0].branch, "refunds");
/// # }
/// ```
pub struct Coordinator<'a, T> {
    branches: Vec<(Cow<'static, str>, BranchFuture<'a, T>)>,
    /// Where the gaps' escalations are kept for a person.
    store: Option<Arc<dyn Store>>,
}

/// How a branch ended: its value and its loop's statistics, or a gap.
type End<T> = Result<(T, Option<RetryStats>), (Escalation, Option<RetryStats>)>;

impl<T> Default for Coordinator<'_, T> {
    fn default() -> Self {
        Coordinator {
            branches: Vec::new(),
            store: None,
        }
    }
}

impl<'a, T: Send + 'a> Coordinator<'a, T> {
    /// No branches yet.
    pub fn new() -> Self {
        Coordinator::default()
    }

    /// Adds a branch called `name`: any future that ends in a [`BranchResult`],
    /// typically a [`RetryPolicy::retry`](crate::retry::RetryPolicy::retry) loop.
    #[must_use]
    pub fn branch<F>(mut self, name: impl Into<Cow<'static, str>>, branch: F) -> Self
    where
        F: Future + Send + 'a,
        F::Output: BranchResult<Value = T>,
    {
        let name = name.into();
        self.branches
            .push((name, Box::pin(async move { branch.await.into_branch() })));
        self
    }

    /// Keeps the escalation of every gap in `store`, for a person to see
    /// and resolve, once: one that a branch's own retry loop kept already
    /// ([`RetryPolicy::keep_escalations`](crate::retry::RetryPolicy::keep_escalations))
    /// is not kept twice. The coordinator waits for its store as long as it
    /// takes: a store that hangs holds [`run`](Self::run) (a branch's loop
    /// under a deadline left its escalation unkept, and it is tried here).
    #[must_use]
    pub fn keep_escalations(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Runs every branch concurrently to its end. A branch that panics
    /// becomes a gap; it never takes the others down.
    pub async fn run(self) -> Report<T> {
        let count = self.branches.len();
        let mut names = Vec::with_capacity(count);
        let mut running = FuturesUnordered::new();
        for (index, (name, branch)) in self.branches.into_iter().enumerate() {
            names.push(name);
            running.push(async move { (index, catch_unwind_future(branch).await) });
        }
        let mut ends: Vec<Option<End<T>>> = (0..count).map(|_| None).collect();
        // Each gap kept as it comes, beside the branches still running (a
        // slow store holds none of them up): a branch that never ends, or
        // a run dropped (an outer timeout), loses none that ended before.
        let mut keeping = FuturesUnordered::new();
        while !running.is_empty() || !keeping.is_empty() {
            let ended = match (running.is_empty(), keeping.is_empty()) {
                (false, true) => Either::Left(running.next().await),
                (true, false) => Either::Right(keeping.next().await),
                _ => match select(running.next(), keeping.next()).await {
                    Either::Left((ended, _)) => Either::Left(ended),
                    Either::Right((kept, _)) => Either::Right(kept),
                },
            };
            match ended {
                Either::Left(Some((index, end))) => {
                    let end = match end {
                        Ok((Ok(value), stats)) => Ok((value, stats)),
                        Ok((Err(escalation), stats)) => Err((escalation, stats)),
                        Err(panic) => {
                            let branch = format!("branch `{}`", names[index]);
                            let panicked = panicked(&branch, panic.as_ref());
                            Err((Escalation::from_envelope(panicked), None))
                        }
                    };
                    match (end, &self.store) {
                        (Err((mut escalation, stats)), Some(store)) => {
                            let store = Arc::clone(store);
                            keeping.push(async move {
                                keep(store.as_ref(), &mut escalation, None).await;
                                (index, (escalation, stats))
                            });
                        }
                        (end, _) => ends[index] = Some(end),
                    }
                }
                Either::Right(Some((index, gap))) => ends[index] = Some(Err(gap)),
                Either::Left(None) | Either::Right(None) => {}
            }
        }

        let mut report = Report {
            completed: Vec::new(),
            gaps: Vec::new(),
        };
        for (name, end) in names.into_iter().zip(ends) {
            let branch = name.into_owned();
            match end.expect("every branch ran to its end") {
                Ok((value, stats)) => report.completed.push(Completed {
                    branch,
                    value,
                    stats,
                }),
                Err((escalation, stats)) => report.gaps.push(Gap {
                    branch,
                    escalation,
                    stats,
                }),
            }
        }
        report
    }
}

impl<T> fmt::Debug for Coordinator<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.branches.iter().map(|(name, _)| name))
            .finish()
    }
}

/// A branch that ended with a value.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Completed<T> {
    /// The branch's name.
    pub branch: String,
    /// Its value.
    pub value: T,
    /// Its retry statistics, when it ran under a retry loop.
    pub stats: Option<RetryStats>,
}

/// A branch that could not complete: its escalation, with the attempted
/// query, the partial results, the category and the alternatives.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Gap {
    /// The branch's name.
    pub branch: String,
    /// Why it stopped, with everything it gathered.
    pub escalation: Escalation,
    /// Its retry statistics, when it ran under a retry loop: each failed
    /// attempt, its category and the delay chosen after it.
    pub stats: Option<RetryStats>,
}

impl Gap {
    /// The envelope of the branch's last failure.
    pub fn envelope(&self) -> &ErrorEnvelope {
        &self.escalation.envelope
    }
}

/// The end of a coordinated run: what completed and the gaps. `complete` is
/// false whenever a gap exists.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Report<T> {
    /// Branches that ended with a value, in the order they were added.
    pub completed: Vec<Completed<T>>,
    /// Branches that did not, in the order they were added.
    pub gaps: Vec<Gap>,
}

impl<T> Report<T> {
    /// Whether every branch completed. Partial data is never complete.
    pub fn is_complete(&self) -> bool {
        self.gaps.is_empty()
    }

    /// The values of the completed branches.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.completed.iter().map(|completed| &completed.value)
    }
}

/// Text on one line, so that each gap stays one line of the report: line
/// breaks — `\n`, `\r`, and the Unicode ones a terminal also breaks on —
/// become spaces.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    const BREAKS: [char; 7] = [
        '\n', '\r', '\u{0b}', '\u{0c}', '\u{85}', '\u{2028}', '\u{2029}',
    ];
    if text.contains(BREAKS) {
        std::borrow::Cow::Owned(text.replace(BREAKS, " "))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

impl<T> fmt::Display for Report<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.completed.len() + self.gaps.len();
        write!(f, "{} of {total} branches complete", self.completed.len())?;
        if self.gaps.is_empty() {
            return f.write_str(".");
        }
        write!(
            f,
            "; {} gap{}:",
            self.gaps.len(),
            if self.gaps.len() == 1 { "" } else { "s" }
        )?;
        for gap in &self.gaps {
            let envelope = gap.envelope();
            write!(
                f,
                "\n- gap `{}`: {} [{}, {}",
                one_line(&gap.branch),
                one_line(envelope.message()),
                envelope.category(),
                gap.escalation.reason
            )?;
            if gap.escalation.reason != EscalationReason::BlockedByGuard {
                write!(
                    f,
                    " after {} attempt{}",
                    gap.escalation.attempts,
                    if gap.escalation.attempts == 1 {
                        ""
                    } else {
                        "s"
                    }
                )?;
            }
            f.write_str("]")?;
            if envelope.partial_results().is_some() {
                write!(f, "; {} partial results kept", envelope.partial_count())?;
            }
            if let Some(query) = envelope.attempted_query() {
                // JSON escapes no line break above U+001F.
                write!(f, "; attempted {}", one_line(&query.to_string()))?;
            }
            if !envelope.alternatives().is_empty() {
                let next: Vec<_> = envelope
                    .alternatives()
                    .iter()
                    .map(|a| one_line(a))
                    .collect();
                write!(f, "; next: {}", next.join(" | "))?;
            }
        }
        Ok(())
    }
}

impl<T: Serialize> Serialize for Report<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut report = serializer.serialize_struct("Report", 3)?;
        report.serialize_field("complete", &self.is_complete())?;
        report.serialize_field(
            "completed",
            &self.completed.iter().map(CompletedWire).collect::<Vec<_>>(),
        )?;
        report.serialize_field("gaps", &self.gaps)?;
        report.end()
    }
}

struct CompletedWire<'a, T>(&'a Completed<T>);

impl<T: Serialize> Serialize for CompletedWire<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("branch", &self.0.branch)?;
        map.serialize_entry("value", &self.0.value)?;
        map.end()
    }
}

/// A gap is its escalation — an envelope with an `escalation` object — with
/// the branch's name added.
impl Serialize for Gap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let escalation =
            serde_json::to_value(&self.escalation).map_err(serde::ser::Error::custom)?;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("branch", &self.branch)?;
        if let serde_json::Value::Object(fields) = escalation {
            for (key, value) in fields {
                map.serialize_entry(&key, &value)?;
            }
        }
        map.end()
    }
}
