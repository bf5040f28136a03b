//! The levels of the log messages a tool sends to the client, and the one
//! a session's client asked for.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// The severity of a log message sent to the client, as MCP's
/// `logging/setLevel` and `notifications/message` name them (RFC 5424's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level as MCP spells it: `"debug"`, `"info"`, … `"emergency"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    fn from_index(index: u8) -> LogLevel {
        LogLevel::ALL[usize::from(index).min(LogLevel::ALL.len() - 1)]
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The least severe level sent to a client that has not sent
/// `logging/setLevel`.
pub const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Info;

/// The least severe level a session's client asked for (`logging/setLevel`).
#[derive(Debug)]
pub(crate) struct LogThreshold(AtomicU8);

impl Default for LogThreshold {
    fn default() -> Self {
        LogThreshold(AtomicU8::new(DEFAULT_LOG_LEVEL as u8))
    }
}

impl LogThreshold {
    pub(crate) fn set(&self, level: LogLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> LogLevel {
        LogLevel::from_index(self.0.load(Ordering::Relaxed))
    }
}
