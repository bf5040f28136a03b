//! The audit: one line for every decision, resolution and expiry, kept
//! with the change it records.

use serde::{Deserialize, Serialize};

/// One line of the audit: who did what to which record, when, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuditEntry {
    /// When (ms since the epoch).
    pub at_ms: i64,
    /// Who: the subject they signed in as; `tool-envelope` for an expiry;
    /// for `sessions_ended`, whoever asked.
    pub who: String,
    /// What: `approve`, `decline`, `resolve`, `expire`, `sign_in`,
    /// `sign_out`, `sessions_ended` (every session of the person named by
    /// `subject`).
    pub what: String,
    /// The id of the approval or escalation; `inbox` for a sign-in or out;
    /// the person, for `sessions_ended`.
    pub subject: String,
    /// Their note.
    pub note: String,
}

impl AuditEntry {
    /// An entry now.
    pub fn new(
        who: impl Into<String>,
        what: impl Into<String>,
        subject: impl Into<String>,
        note: impl Into<String>,
    ) -> Self {
        AuditEntry {
            at_ms: super::now_ms(),
            who: who.into(),
            what: what.into(),
            subject: subject.into(),
            note: note.into(),
        }
    }

    /// The line of the audit of the approval `approval` expiring at `at_ms`,
    /// undecided: by `tool-envelope`, no note.
    pub fn expired(approval: &str, at_ms: i64) -> Self {
        AuditEntry {
            at_ms,
            ..AuditEntry::new("tool-envelope", "expire", approval, "")
        }
    }

    /// The line of the audit of `by` resolving the escalation `escalation`
    /// at `at_ms`, with `note`.
    pub fn resolved(by: &str, escalation: &str, note: &str, at_ms: i64) -> Self {
        AuditEntry {
            at_ms,
            ..AuditEntry::new(by, "resolve", escalation, note)
        }
    }
}
