//! The standard traits of an envelope: equality of what goes on the wire,
//! `Debug` of every field set, `Display` of its message, and
//! `std::error::Error` with the error it was made from as its source.

use std::error::Error as StdError;
use std::fmt;

use super::ErrorEnvelope;
use crate::json::millis::duration_to_ms;

/// Equality of what goes on the wire; the original error and the off-wire
/// hints are not compared.
impl PartialEq for ErrorEnvelope {
    fn eq(&self, other: &Self) -> bool {
        self.parts.category == other.parts.category
            && self.is_retryable() == other.is_retryable()
            && self.parts.message == other.parts.message
            && self.parts.attempted_query == other.parts.attempted_query
            && self.parts.partial_results == other.parts.partial_results
            && self.parts.alternatives == other.parts.alternatives
            && self.parts.reason == other.parts.reason
            && self.parts.retry_after.map(duration_to_ms)
                == other.parts.retry_after.map(duration_to_ms)
            && self.parts.violations == other.parts.violations
            && self.parts.tool == other.parts.tool
            && self.parts.escalated == other.parts.escalated
    }
}

impl fmt::Debug for ErrorEnvelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ErrorEnvelope");
        d.field("category", &self.parts.category)
            .field("retryable", &self.is_retryable())
            .field("message", &self.parts.message);
        if let Some(query) = &self.parts.attempted_query {
            d.field("attempted_query", query);
        }
        if let Some(partial) = &self.parts.partial_results {
            d.field("partial_results", partial);
        }
        if !self.parts.alternatives.is_empty() {
            d.field("alternatives", &self.parts.alternatives);
        }
        if let Some(reason) = &self.parts.reason {
            d.field("reason", reason);
        }
        if let Some(delay) = &self.parts.retry_after {
            d.field("retry_after", delay);
        }
        if !self.parts.violations.is_empty() {
            d.field("violations", &self.parts.violations);
        }
        if let Some(tool) = &self.parts.tool {
            d.field("tool", tool);
        }
        if let Some(escalated) = &self.parts.escalated {
            d.field("escalation", escalated);
        }
        if let Some(origin) = &self.parts.origin {
            d.field("source", &origin.0.as_error());
        }
        d.finish()
    }
}

/// The message, as a human would read it in a log line.
impl fmt::Display for ErrorEnvelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.parts.message)
    }
}

impl StdError for ErrorEnvelope {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.parts.origin.as_ref().map(|origin| origin.0.as_error())
    }
}
