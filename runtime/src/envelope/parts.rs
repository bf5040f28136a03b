//! An envelope's fields, taken out and put back whole: the one way the few
//! places that remake an envelope — settling a failure, reading it from the
//! wire, trimming it to limits, marking how a call was refused — reach them
//! ([`ErrorEnvelope::into_parts`], [`ErrorEnvelope::from_parts`]). A reason
//! enters through [`Parts::set_reason`], which normalizes it.

use std::any::Any;
use std::borrow::Cow;
use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Attempted, ErrorEnvelope, Escalated, Violation};
use crate::category::ErrorCategory;

/// The fields of an envelope: those it sends, and what it knows of its call
/// that does not go on the wire.
#[derive(Clone)]
pub(crate) struct Parts {
    /// `errorCategory`: the failure type.
    pub(crate) category: ErrorCategory,
    /// `isRetryable` as set; [`ErrorEnvelope::is_retryable`] is what is read.
    pub(crate) retryable: bool,
    /// `message`: one human-readable sentence.
    pub(crate) message: String,
    /// `attempted_query`: the captured arguments (an object) or a query string.
    pub(crate) attempted_query: Option<Attempted>,
    /// `partial_results`: what was gathered before the failure.
    pub(crate) partial_results: Option<Value>,
    /// `alternatives`: concrete next moves.
    pub(crate) alternatives: Vec<String>,
    /// `reason`: a stable machine code, normalized ([`Parts::set_reason`]).
    pub(crate) reason: Option<Cow<'static, str>>,
    /// `retryAfterMs`: the server's hint for when to try again.
    pub(crate) retry_after: Option<Duration>,
    /// `violations`: field-level detail.
    pub(crate) violations: Vec<Violation>,
    /// `tool`: the name of the tool that failed.
    pub(crate) tool: Option<Cow<'static, str>>,
    /// `escalation`: the sender escalated this failure (read from the wire).
    pub(crate) escalated: Option<Box<Escalated>>,
    /// Off the wire: the original error.
    pub(crate) origin: Option<Origin>,
    /// Whether every tool the call passed through is idempotent; `None`
    /// until a call of this process settled it.
    pub(crate) idempotent: Option<bool>,
    /// The tool whose failure was made non-retryable because repeating it
    /// could apply it twice.
    pub(crate) withheld: Option<Cow<'static, str>>,
    /// The operation certainly was not applied.
    pub(crate) not_applied: bool,
    /// The message was written by a type this crate does not know — a
    /// standard library error, an `anyhow` chain, a panic — and may quote
    /// internals: masked by a tool set's `mask_internal_errors`.
    pub(crate) foreign: bool,
    /// Why the call was refused before the tool ran, if it was.
    pub(crate) refused: Option<Refusal>,
    /// A guard blocked the call, and a person may approve it: the block's
    /// key among the approvable blocks of the call.
    pub(crate) approval: Option<Box<str>>,
    /// Who may approve that block when it is not the client's user: the
    /// scope an approver's token must grant.
    pub(crate) approvers: Option<Box<str>>,
}

/// Why a call was refused before its tool ran.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Refusal {
    /// Its arguments could not be used.
    Unusable,
    /// A guard blocked it.
    Blocked,
    /// A person declined it.
    #[cfg_attr(not(any(feature = "rmcp", feature = "client")), allow(dead_code))]
    Declined,
}

impl Parts {
    /// The parts of an envelope of `category` saying `message`.
    pub(crate) fn new(category: ErrorCategory, message: String) -> Self {
        Parts {
            category,
            retryable: category.is_retryable_by_default(),
            message,
            attempted_query: None,
            partial_results: None,
            alternatives: Vec::new(),
            reason: None,
            retry_after: None,
            violations: Vec::new(),
            tool: None,
            escalated: None,
            origin: None,
            idempotent: None,
            withheld: None,
            not_applied: false,
            foreign: false,
            refused: None,
            approval: None,
            approvers: None,
        }
    }

    /// Sets the reason, normalized ([`crate::reasons`]): the one way a
    /// reason enters an envelope. [`NOT_APPLIED`](crate::reasons::NOT_APPLIED)
    /// says what [`ErrorEnvelope::with_not_applied`] says. `None` clears
    /// it, to `NOT_APPLIED` on a call proven not applied; a reason with no letter to make a code of is no reason and
    /// leaves the one there was.
    pub(crate) fn set_reason(&mut self, reason: Option<Cow<'static, str>>) {
        let Some(reason) = reason else {
            // A call proven not applied says so on the wire, where only the
            // reason says it: clearing the reason leaves that one.
            self.reason = self
                .not_applied
                .then_some(Cow::Borrowed(crate::reasons::NOT_APPLIED));
            return;
        };
        let Some(reason) = crate::reasons::normalize(reason) else {
            return;
        };
        if reason == crate::reasons::NOT_APPLIED {
            self.not_applied = true;
        }
        self.reason = Some(reason);
    }
}

impl Parts {
    /// Whether the failure is retryable as it would be read: never with a
    /// human request or a policy gap, nor once escalated
    /// ([`ErrorEnvelope::is_retryable`]).
    pub(crate) fn is_retryable(&self) -> bool {
        self.retryable
            && !crate::reasons::never_retried(self.reason.as_deref())
            && self.escalated.is_none()
    }

    /// Says whether the operation was applied
    /// ([`ErrorEnvelope::with_not_applied`]): `false` takes back a reason
    /// `NOT_APPLIED` too, so that the two never disagree.
    pub(crate) fn set_not_applied(&mut self, not_applied: bool) {
        self.not_applied = not_applied;
        if !not_applied && self.reason.as_deref() == Some(crate::reasons::NOT_APPLIED) {
            self.reason = None;
        }
        // Said on the wire, where only the reason says it.
        if not_applied && self.reason.is_none() {
            self.reason = Some(std::borrow::Cow::Borrowed(crate::reasons::NOT_APPLIED));
        }
    }
}

impl ErrorEnvelope {
    /// The envelope's fields, taken out whole, to remake it
    /// ([`from_parts`](Self::from_parts)). The box moves: nothing is copied.
    pub(crate) fn into_parts(self) -> Box<Parts> {
        self.parts
    }

    /// The envelope of `parts`.
    pub(crate) fn from_parts(parts: Box<Parts>) -> Self {
        ErrorEnvelope { parts }
    }

    /// `self`, remade by `change`.
    pub(crate) fn remade(mut self, change: impl FnOnce(&mut Parts)) -> Self {
        self.remake(change);
        self
    }

    /// Remakes the envelope in place with `change`.
    pub(crate) fn remake(&mut self, change: impl FnOnce(&mut Parts)) {
        change(&mut self.parts);
    }
}

/// The error an envelope was made from, shared so that envelopes stay cheap to clone.
#[derive(Clone)]
pub(crate) struct Origin(pub(crate) Arc<dyn ErasedOrigin>);

/// A type-erased original error: a typed view for downcasting and an
/// [`std::error::Error`] view for `source()` chains.
pub(crate) trait ErasedOrigin: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn as_error(&self) -> &(dyn StdError + 'static);
}

impl Origin {
    /// This error, its texts masked by `mask` (which answers a text it
    /// changed): itself when `mask` changes neither its `Debug` nor the
    /// `Display` of any error in its chain; otherwise a stand-in carrying
    /// them masked, which `downcast_ref` no longer finds.
    pub(crate) fn masked(self, mask: &dyn Fn(&str) -> Option<String>) -> Self {
        let error = self.0.as_error();
        let debug = format!("{error:?}");
        let mut quoted = mask(&debug).is_some();
        let mut chain = Some(error);
        while let (false, Some(each)) = (quoted, chain) {
            quoted = mask(&each.to_string()).is_some();
            chain = each.source();
        }
        if !quoted {
            return self;
        }
        let display = error.to_string();
        Origin(Arc::new(Masked {
            display: mask(&display).unwrap_or(display),
            debug: mask(&debug).unwrap_or(debug),
        }))
    }
}

/// What stands in for an original error that quoted a secret: its
/// `Display` and `Debug`, masked.
struct Masked {
    display: String,
    debug: String,
}

impl std::fmt::Display for Masked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

impl std::fmt::Debug for Masked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.debug)
    }
}

impl StdError for Masked {}

impl ErasedOrigin for Masked {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_error(&self) -> &(dyn StdError + 'static) {
        self
    }
}
