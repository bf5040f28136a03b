//! A failed call, shaped to be sent: masked as the set says, within its
//! limits, and within `max_result_bytes` with its text copy.

use super::ToolSet;
use super::entry::Entry;

use serde_json::Value;

use crate::category::ErrorCategory;
use crate::envelope::{ErrorEnvelope, Parts};
use crate::escalation::Escalation;
use crate::limits::{EnvelopeLimits, LONGEST_ESCAPE, escaped_len};
use crate::mcp::reply::ToolReply;
use crate::redact::text::scrub_in_place;

impl ToolSet {
    /// The failed result: masked if the set says so, and sent within the
    /// set's limits and within `max_result_bytes`, its text copy included.
    pub(super) fn failure(&self, entry: &Entry, failure: Failure) -> ToolReply {
        self.shaped(&entry.definition.name, failure)
    }

    /// A block as its question puts it to the client's user: with the
    /// credentials in its texts masked when the set masks them in every
    /// failure it sends ([`ToolSet::mask_internal_errors`]) — the
    /// question, kept with its answer, reaches the reply's `_meta` and the
    /// approvers' inbox.
    #[cfg(feature = "rmcp")]
    pub(super) fn as_asked<'a>(
        &self,
        blocked: &'a ErrorEnvelope,
    ) -> std::borrow::Cow<'a, ErrorEnvelope> {
        match self.inner.mask_internal {
            Some(_) => {
                let mut shown = blocked.clone();
                shown.visit_texts(&mut scrub_in_place);
                std::borrow::Cow::Owned(shown)
            }
            None => std::borrow::Cow::Borrowed(blocked),
        }
    }

    /// [`failure`](Self::failure), of the tool called `tool`, which the set
    /// may no longer have (an approved call of a tool a release removed).
    pub(super) fn shaped(&self, tool: &str, failure: Failure) -> ToolReply {
        // Under a retry policy every failure is an escalation, even one that
        // never reached the tool; a call a guard blocked or a person
        // declined is one always — routed to a person, after 0 attempts —
        // so that every caller can tell it never ran.
        #[cfg(feature = "tokio")]
        let retried = self.inner.retry.is_some();
        #[cfg(not(feature = "tokio"))]
        let retried = false;
        let failure = match retried || failure.envelope().was_stopped_by_policy() {
            true => failure.escalated(),
            false => failure,
        };
        let failure = match &self.inner.mask_internal {
            Some(text) => failure.masked(tool, text),
            None => failure,
        };
        // The result carries the JSON twice: as structured content and as text.
        let cap = self.inner.max_result_bytes;
        let mut limits = self.inner.limits;
        let mut structured = failure.to_wire(&limits);
        let mut text = failure.to_wire_text(&limits);
        // The first round lowers each cap to the size of its part, so that
        // a large part under a generous cap shrinks too; each round then
        // shrinks the caps in proportion. At the floors an envelope is a few
        // KB, well within the smallest cap: they are the last resort.
        for round in 0..8 {
            let Some(size) = reply_over(&text, cap) else {
                return ToolReply::structured(structured, text, true);
            };
            if round == 0 {
                limits = limits.fitted_to(failure.envelope());
            }
            limits = limits.scaled(cap, size.saturating_add(size / 8));
            structured = failure.to_wire(&limits);
            text = failure.to_wire_text(&limits);
        }
        if reply_over(&text, cap).is_some() {
            structured = failure.to_wire(&EnvelopeLimits::floors());
            text = failure.to_wire_text(&EnvelopeLimits::floors());
        }
        ToolReply::structured(structured, text, true)
    }
}

/// `{"content":[{"type":"text","text":""}],"structuredContent":,"isError":false}` and room.
const AROUND: usize = 128;

/// The size of a result carrying `text` — the compact JSON of its structured
/// content — as sent, if it is over `cap`: the structured content, the text
/// copy, escaped inside its JSON string, and the keys around them. A text
/// that would fit even if each of its bytes took the longest escape is not
/// read (the usual case: a result is far under the default cap).
pub(super) fn reply_over(text: &str, cap: usize) -> Option<usize> {
    let longest = text
        .len()
        .saturating_mul(1 + LONGEST_ESCAPE)
        .saturating_add(AROUND);
    if longest <= cap {
        return None;
    }
    let size = text
        .len()
        .saturating_add(escaped_len(text))
        .saturating_add(AROUND);
    (size > cap).then_some(size)
}

/// How a call failed, kept typed until it is sent.
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
pub(super) enum Failure {
    Envelope(ErrorEnvelope),
    Escalated(Escalation),
}

impl Failure {
    /// As an escalation.
    fn escalated(self) -> Self {
        match self {
            Failure::Envelope(envelope) => Failure::Escalated(Escalation::from_envelope(envelope)),
            escalated @ Failure::Escalated(_) => escalated,
        }
    }

    pub(super) fn envelope(&self) -> &ErrorEnvelope {
        match self {
            Failure::Envelope(envelope) => envelope,
            Failure::Escalated(escalation) => &escalation.envelope,
        }
    }

    /// The failure, its envelope remade by `change`.
    fn remade(self, change: impl FnOnce(&mut Parts)) -> Self {
        match self {
            Failure::Envelope(envelope) => Failure::Envelope(envelope.remade(change)),
            Failure::Escalated(mut escalation) => {
                escalation.envelope = escalation.envelope.remade(change);
                Failure::Escalated(escalation)
            }
        }
    }

    /// With what an internal error may say masked; see
    /// [`ToolSet::mask_internal_errors`].
    fn masked(mut self, tool: &str, text: &str) -> Self {
        match &mut self {
            Failure::Escalated(escalation) => escalation.scrub_credentials(),
            Failure::Envelope(envelope) => envelope.visit_texts(&mut scrub_in_place),
        }
        self.remade(|parts| {
            if parts.category == ErrorCategory::Other || parts.foreign {
                #[cfg(feature = "tracing")]
                tracing::error!(
                    tool,
                    message = parts.message,
                    "internal tool error, masked in the result"
                );
                #[cfg(not(feature = "tracing"))]
                let _ = tool;
                text.clone_into(&mut parts.message);
            }
            if parts.foreign {
                // A foreign error's violations are its own text.
                for violation in &mut parts.violations {
                    text.clone_into(&mut violation.description);
                }
            }
        })
    }

    fn to_wire(&self, limits: &EnvelopeLimits) -> Value {
        match self {
            Failure::Envelope(envelope) => envelope.to_wire(limits),
            Failure::Escalated(escalation) => escalation.to_wire(limits),
        }
    }

    /// The JSON text of the failure, keys in the wire format's order.
    fn to_wire_text(&self, limits: &EnvelopeLimits) -> String {
        match self {
            Failure::Envelope(envelope) => envelope.to_wire_text(limits),
            Failure::Escalated(escalation) => escalation.to_wire_text(limits),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{AROUND, reply_over};
    use crate::limits::escaped_len;

    /// The shortcut never changes the answer: for texts of plain, quoted and
    /// control bytes, at every cap around both bounds.
    #[test]
    fn a_reply_over_its_cap_is_told_with_or_without_reading_it() {
        for text in ["", "plain", "\"q\"\\", "\u{1}\u{1f}\n", "{\"a\":\"\u{2}\"}"] {
            let text = text.repeat(7);
            let size = text.len() + escaped_len(&text) + AROUND;
            let longest = text.len() * 7 + AROUND;
            for cap in (0..=longest + 2).chain([usize::MAX]) {
                let exact = (size > cap).then_some(size);
                assert_eq!(reply_over(&text, cap), exact, "{text:?} under {cap}");
            }
        }
    }
}
