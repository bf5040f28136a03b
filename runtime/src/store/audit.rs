//! The audit: one line for every decision, resolution and expiry, kept
//! with the change it records; and the decisions that leave one.

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
    /// What: `approve`, `decline`, `withdraw` (the caller took their call
    /// back), `resolve`, `expire`, `sign_in`,
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

/// A person's decision on an approval: an approver's yes or no, or the
/// caller's own withdrawal of the call ([`withdrawn`](Self::withdrawn)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decision {
    /// Approve, or decline.
    pub approve: bool,
    /// The subject the approver signed in as; for a withdrawal, the
    /// caller's.
    pub by: String,
    /// Their note.
    pub note: String,
    /// When (ms since the epoch).
    pub at_ms: i64,
    /// The call's own caller took it back (their task was cancelled): the
    /// approval is [`Withdrawn`](super::ApprovalState::Withdrawn), not
    /// declined by a person — pending, or approved and not yet claimed to
    /// run. A store that does not know this field declines a pending one:
    /// the call never runs all the same.
    pub withdrawn: bool,
}

impl Decision {
    /// `by`'s decision, with `note`, now.
    pub fn new(approve: bool, by: impl Into<String>, note: impl Into<String>) -> Self {
        Decision {
            approve,
            by: by.into(),
            note: note.into(),
            at_ms: super::now_ms(),
            withdrawn: false,
        }
    }

    /// The caller `by` taking back their own call, with `note`, now:
    /// withdrawn.
    pub fn withdrawn(by: impl Into<String>, note: impl Into<String>) -> Self {
        Decision {
            withdrawn: true,
            ..Decision::new(false, by, note)
        }
    }

    /// The same decision, made at `at_ms` (ms since the epoch).
    #[must_use]
    pub fn at(mut self, at_ms: i64) -> Self {
        self.at_ms = at_ms;
        self
    }

    /// The line of the audit this decision leaves on the approval
    /// `approval`: `approve`, `decline` or `withdraw`, by whom, when, with
    /// the note.
    pub fn audit_entry(&self, approval: &str) -> AuditEntry {
        let what = match self.state() {
            super::ApprovalState::Approved => "approve",
            super::ApprovalState::Withdrawn => "withdraw",
            _ => "decline",
        };
        AuditEntry {
            at_ms: self.at_ms,
            ..AuditEntry::new(self.by.clone(), what, approval, self.note.clone())
        }
    }

    /// The state it leaves a pending approval in: approved, declined or
    /// withdrawn.
    pub fn state(&self) -> super::ApprovalState {
        match (self.approve, self.withdrawn) {
            (true, _) => super::ApprovalState::Approved,
            (false, false) => super::ApprovalState::Declined,
            (false, true) => super::ApprovalState::Withdrawn,
        }
    }
}
