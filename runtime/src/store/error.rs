//! A store's failure, and what it says of itself: the database's code,
//! and whether it is of one record the store cannot read back.

use std::fmt;

/// A store's failure: the backend's own error, as text (never a secret: the
/// SQL drivers do not quote parameters), and the database's own code for
/// it when it gave one ([`code`](Self::code)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    what: String,
    code: Option<String>,
    unreadable: bool,
}

impl StoreError {
    /// An error that says `what`.
    pub fn new(what: impl Into<String>) -> Self {
        StoreError {
            what: what.into(),
            code: None,
            unreadable: false,
        }
    }

    /// The same error, said of one record the store answered with and
    /// cannot read back (a row written by hand, say, its JSON not JSON):
    /// the store itself works, and asking again gives the same answer.
    /// Not for an error every record would meet (a column of another type
    /// than the store's): the runner ends such records unrun.
    #[must_use]
    pub fn unreadable(mut self) -> Self {
        self.unreadable = true;
        self
    }

    /// Whether the error is of one record the store cannot read back
    /// ([`unreadable`](Self::unreadable)), not of the store: the runner
    /// sets such an approved call aside, unrun, rather than let it hold
    /// the calls after it back.
    pub fn is_unreadable(&self) -> bool {
        self.unreadable
    }

    /// The same error, with the database's own code for it.
    #[must_use]
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// The database's own code for the failure, when it gave one: the
    /// SQLSTATE on Postgres (`55P03`, a lock not had in time; `40001`, a
    /// serialization failure), SQLite's extended result code (`5`, the
    /// file busy, or `517`, busy on a stale snapshot: the low byte of an
    /// extended code is the primary one). Unlike the text, it does not
    /// change with the server's language, so it is what to match on.
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the store failed: {}", self.what)?;
        match &self.code {
            Some(code) => write!(f, " (code {code})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for StoreError {}
