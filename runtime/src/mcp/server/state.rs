//! The state of one `tools/call` across its attempts.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::{Map, Value};

use crate::body::PartialHandle;
use crate::guard::Guards;
use crate::json::depth::dismantle;
use crate::mcp::checks::ArgumentChecks;
use crate::mcp::context::ToolContext;
use crate::partial::Partial;
use crate::query::Query;
use crate::redact::arguments::ArgumentMask;
use crate::scope::{Approved, Scope};

/// A boxed future, as served calls return them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What one `tools/call` carries across its attempts: the tool's argument
/// checks, the set's guards, and the `Partial` collector that every attempt
/// shares. Created by the tool set for each call.
pub struct CallState {
    partial: Mutex<Option<Collector>>,
    /// The blocks a person approved.
    approved: Approved,
    /// The ticket the runner runs it for, on an approver's yes: its blocks
    /// were approved before it began.
    for_approval: Option<Box<str>>,
    /// The record of every approval asked, for the result's `_meta`.
    audit: Mutex<Vec<Value>>,
    /// The values the call's `Secret`s were sent as.
    noted: OnceLock<Vec<Value>>,
    checks: Arc<ArgumentChecks>,
    guards: Option<Arc<Guards>>,
    context: ToolContext,
}

/// How a type-erased collector is read as JSON.
type ReadJson = Box<dyn Fn(&dyn Any) -> Option<Value> + Send>;

/// A call's `Partial` collector, type-erased, and how to read it as JSON.
struct Collector {
    partial: Box<dyn Any + Send>,
    json: ReadJson,
}

impl CallState {
    pub(crate) fn new(
        checks: &Arc<ArgumentChecks>,
        guards: &Arc<Guards>,
        context: ToolContext,
    ) -> Self {
        CallState {
            partial: Mutex::new(None),
            approved: Approved::default(),
            for_approval: None,
            audit: Mutex::default(),
            noted: OnceLock::new(),
            checks: Arc::clone(checks),
            guards: (!guards.is_empty()).then(|| Arc::clone(guards)),
            context,
        }
    }

    /// The call, approved before it began: `blocks` passed, those
    /// approvers decided and those its client's user approved (`waived`)
    /// before it waited for them, and run for an approver's yes to
    /// `ticket` (the runner's).
    pub(crate) fn approved_before(
        mut self,
        blocks: &[String],
        waived: &[String],
        ticket: Option<&str>,
    ) -> Self {
        for key in blocks {
            self.approved.approve(key, false);
        }
        for key in waived {
            self.approved.approve(key, true);
        }
        self.for_approval = ticket.filter(|_| !blocks.is_empty()).map(Box::from);
        self
    }

    /// The ticket the runner runs this call for, on an approver's yes.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn run_of(&self) -> Option<&str> {
        self.for_approval.as_deref()
    }

    /// Whether the runner runs this call for an approver's yes.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn is_for_approval(&self) -> bool {
        self.for_approval.is_some()
    }

    /// The request's context, for a tool that takes a `ToolContext`.
    pub fn context(&self) -> ToolContext {
        self.context.clone()
    }

    /// The request's context.
    pub(crate) fn context_ref(&self) -> &ToolContext {
        &self.context
    }

    /// The call's `Partial` collector: the same one for every attempt, so a
    /// retry resumes where the last attempt stopped. `source` is the
    /// function the tool's run reads its collector with, named here too, so
    /// that a collector of items that do not serialize is reported once.
    pub fn partial<T: Send + 'static>(
        &self,
        source: fn(&Partial<T>) -> PartialHandle<T>,
    ) -> Partial<T> {
        let mut slot = self.partial.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(partial) = slot
            .as_ref()
            .and_then(|collector| collector.partial.downcast_ref::<Partial<T>>())
        {
            return partial.clone();
        }
        let partial = Partial::new();
        let to_json = source(&partial).to_json();
        *slot = Some(Collector {
            partial: Box::new(partial.clone()),
            json: Box::new(move |any| any.downcast_ref::<Partial<T>>().map(to_json)),
        });
        partial
    }

    /// Everything the call's collector gathered, as JSON.
    pub(crate) fn gathered(&self) -> Option<Value> {
        let slot = self.partial.lock().unwrap_or_else(PoisonError::into_inner);
        let collector = slot.as_ref()?;
        (collector.json)(collector.partial.as_ref())
    }

    /// The query of an attempt: the arguments as received, to be shown with
    /// their secrets and unknown keys masked.
    pub fn query<'a>(&'a self, arguments: &'a Map<String, Value>) -> Query<'a> {
        Query::Arguments(arguments, self.scope())
    }

    /// The call's scope: how its arguments are masked, who made it, and
    /// the blocks a person approved for it.
    pub(crate) fn scope(&self) -> Scope<'_> {
        Scope {
            mask: self.mask(),
            caller: self.context.caller(),
            approved: Some(&self.approved),
        }
    }

    /// How the call's arguments are masked wherever they are shown: by the
    /// tool's schema, and by the values its `Secret`s were sent as.
    pub(crate) fn mask(&self) -> ArgumentMask<'_> {
        ArgumentMask::new(
            &self.checks.secrets,
            self.noted.get().map_or(&[], Vec::as_slice),
        )
    }

    /// The blocks a person approved for this call.
    pub(crate) fn approved(&self) -> &Approved {
        &self.approved
    }

    /// Keeps the records of the approvals asked, for the result's `_meta`.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn keep_audit(&self, records: Vec<Value>) {
        (self.audit.lock().unwrap_or_else(PoisonError::into_inner)).extend(records);
    }

    /// The records of the approvals asked so far, kept where they are.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn audit(&self) -> Vec<Value> {
        (self.audit.lock().unwrap_or_else(PoisonError::into_inner)).clone()
    }

    /// The records of the approvals asked, taken.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn take_audit(&self) -> Vec<Value> {
        std::mem::take(&mut *self.audit.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Keeps the values the call's `Secret`s were sent as, from its first
    /// decoding (every attempt decodes the same arguments).
    pub(crate) fn note_secrets(&self, noted: Vec<Value>) {
        if !noted.is_empty() {
            let _ = self.noted.set(noted);
        }
    }

    /// The tool's input schema, when the call comes through a tool set.
    pub(crate) fn input_schema(&self) -> Option<&Map<String, Value>> {
        Some(&self.checks.input_schema).filter(|schema| !schema.is_empty())
    }

    /// The tool set's guards, checked once the arguments have decoded.
    pub(crate) fn guards(&self) -> Option<&Guards> {
        self.guards.as_deref()
    }
}

/// A collector of `serde_json::Value`s may hold values nested deeper than a
/// recursive drop can take: they are taken apart level by level.
impl Drop for CallState {
    fn drop(&mut self) {
        let slot = self
            .partial
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(collector) = slot.take()
            && let Some(partial) = collector.partial.downcast_ref::<Partial<Value>>()
            && Arc::strong_count(partial.items()) == 1
        {
            for item in partial.take() {
                dismantle(item);
            }
        }
    }
}

impl fmt::Debug for CallState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallState").finish_non_exhaustive()
    }
}
