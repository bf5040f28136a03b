//! The `reason` codes this crate writes, and those that change what a
//! caller does: stable machine codes in `UPPER_SNAKE_CASE`, as AIP-193's
//! `ErrorInfo.reason`.
//!
//! A reason is one value however it is spelled: wherever one is set — by
//! [`ErrorEnvelope::with_reason`](crate::ErrorEnvelope::with_reason), a
//! `ToolError`, a guard, an envelope read from the wire — it is rewritten
//! into `UPPER_SNAKE_CASE` there, once (`"human requested"`, `"humanRequested"`,
//! `"human-requested "` → `"HUMAN_REQUESTED"`), and every rule reads that form.
//!
//! A tool raises [`HUMAN_REQUESTED`] or [`POLICY_GAP`] itself; whatever the
//! category, such a failure is sent with `isRetryable: false` and escalates
//! at once, never retried:
//!
//! ```
//! use tool_envelope::{reasons, retry::RetryPolicy, tool, ErrorEnvelope, EscalationReason};
//!
//! /// One turn of a support chat.
//! #[tool(read_only)]
//! fn chat_turn(message: String) -> Result<String, ErrorEnvelope> {
//!     if message.contains("human") {
//!         return Err(ErrorEnvelope::business("The customer asked for a human agent")
//!             .with_reason(reasons::HUMAN_REQUESTED)
//!             .with_alternative("Hand the conversation to the support queue"));
//!     }
//!     Err(ErrorEnvelope::business("No policy covers a refund for a gift card")
//!         .with_reason(reasons::POLICY_GAP))
//! }
//!
//! let policy = RetryPolicy::default();
//! let outcome = policy.retry_blocking(|| chat_turn("get me a human".into()));
//! assert_eq!(outcome.result.unwrap_err().reason, EscalationReason::HumanRequested);
//! assert_eq!(outcome.stats.attempts, 1);
//!
//! let outcome = policy.retry_blocking(|| chat_turn("refund my gift card".into()));
//! assert_eq!(outcome.result.unwrap_err().reason, EscalationReason::PolicyGap);
//! ```

use std::borrow::Cow;

/// The user explicitly asked for a human: escalate at once, don't try again.
pub const HUMAN_REQUESTED: &str = "HUMAN_REQUESTED";
/// No rule covers the case: escalate at once.
pub const POLICY_GAP: &str = "POLICY_GAP";
/// A person was asked to approve a blocked call, and declined (or dismissed
/// the question): escalate at once, don't try again.
pub const HUMAN_DECLINED: &str = "HUMAN_DECLINED";
/// A guard blocked the call until an approver the caller cannot stand in for
/// decides it; the call waits in the store, and the envelope's `escalation`
/// carries its ticket. Not retryable: calling again reads the outcome, it
/// does not hurry it.
pub const AWAITING_APPROVAL: &str = "AWAITING_APPROVAL";
/// The approval a call waited for expired unrun: nobody decided it in
/// time, or its approved call was not run within a time to live of the yes.
pub const APPROVAL_EXPIRED: &str = "APPROVAL_EXPIRED";
/// A guard blocked the call before it ran (unless the guard gave its own reason).
pub const BLOCKED_BY_GUARD: &str = "BLOCKED_BY_GUARD";
/// A guard could not read an argument it needs (missing, or not of the type
/// it expects), and blocked the call rather than let it through.
pub const UNREADABLE_ARGUMENT: &str = "UNREADABLE_ARGUMENT";
/// The failure looked transient, but the tool is not idempotent and the
/// error does not say the call was not applied: repeating it could apply it
/// twice, so it is sent with `isRetryable: false`.
pub const MAY_HAVE_TAKEN_EFFECT: &str = "MAY_HAVE_TAKEN_EFFECT";
/// The arguments could not be used: wrong types, missing or unknown keys.
pub const INVALID_ARGUMENTS: &str = "INVALID_ARGUMENTS";
/// The call failed before it had any effect, so repeating it is safe even
/// though the tool is not idempotent: a server sends it, in place of the
/// error's own reason, with a retryable failure of such a tool whose error
/// said so — it is what keeps that failure retryable — and a client that
/// reads it repeats the call. A client also gives it to a call it knows
/// never reached the server.
pub const NOT_APPLIED: &str = "NOT_APPLIED";
/// The connection to an MCP server broke while a call was on its way: the
/// call may or may not have reached the tool.
pub const CONNECTION_LOST: &str = "CONNECTION_LOST";
/// An MCP server does not speak the protocol version the client asked
/// for: repeating the call does not change that. The message says what the
/// server supports.
pub const UNSUPPORTED_PROTOCOL_VERSION: &str = "UNSUPPORTED_PROTOCOL_VERSION";
/// An MCP server's reply was not one MCP defines, or could not be read.
pub const UNEXPECTED_REPLY: &str = "UNEXPECTED_REPLY";
/// An MCP server answered with an HTTP status: the status follows, as in
/// `HTTP_503`, `HTTP_429`, `HTTP_401`.
pub const HTTP_STATUS_PREFIX: &str = "HTTP_";
/// An argument JSON cannot carry (a NaN, an infinity, a value whose
/// `Serialize` fails) reached a tool with a guard, which could not judge it.
pub const UNREPRESENTABLE_ARGUMENT: &str = "UNREPRESENTABLE_ARGUMENT";
/// The tool, or the description of its error, panicked.
pub const PANIC: &str = "PANIC";
/// The guard of the tool panicked; the call was blocked.
pub const GUARD_PANIC: &str = "GUARD_PANIC";
/// An async tool ran past its `timeout`.
pub const TIMEOUT: &str = "TIMEOUT";
/// A retry loop's deadline came while an attempt was running.
pub const DEADLINE_EXCEEDED: &str = "DEADLINE_EXCEEDED";
/// The tool's result could not be serialized.
pub const UNSERIALIZABLE_RESULT: &str = "UNSERIALIZABLE_RESULT";
/// The tool's result was larger than the server sends.
pub const RESULT_TOO_LARGE: &str = "RESULT_TOO_LARGE";
/// A tool asked the MCP client for something (a form for its user, a
/// completion from its model, its roots) that the client did not declare it
/// can answer, or was called without a client.
pub const CLIENT_CANNOT_ANSWER: &str = "CLIENT_CANNOT_ANSWER";
/// A tool asked the MCP client, and the client's answer failed.
pub const CLIENT_REQUEST_FAILED: &str = "CLIENT_REQUEST_FAILED";
/// The TLS handshake with an MCP server failed: its certificate was not
/// trusted (unknown issuer, expired, another host's), or it refused the
/// client's. Nothing was sent, and the same handshake fails the same way.
pub const TLS_CERTIFICATE: &str = "TLS_CERTIFICATE";
/// An MCP server wants a token with a scope the client's does not have
/// (HTTP 403 `insufficient_scope`), or a guard wants a scope the caller's
/// token does not carry.
pub const INSUFFICIENT_SCOPE: &str = "INSUFFICIENT_SCOPE";
/// A client's OAuth login failed: discovery, registration, the person's
/// login, the token exchange, or a server that kept refusing its tokens.
pub const AUTHORIZATION_FAILED: &str = "AUTHORIZATION_FAILED";
/// A client was set up with what cannot be used: a PEM text without a
/// certificate, a header that is not one, two sources of credentials.
pub const CLIENT_MISCONFIGURED: &str = "CLIENT_MISCONFIGURED";
/// A tool asked a question under a key this crate keeps for its own (a
/// guard's approval, `tool-envelope/…`).
pub const RESERVED_QUESTION_KEY: &str = "RESERVED_QUESTION_KEY";
/// An MCP server refused the `requestState` a round sent back: not one it
/// sealed for this call and caller, expired, or used already (an
/// approval's, or a round of a tool not safe to repeat). The same round fails the same way; the call can be made
/// again from its start, and a person asked again.
pub const REQUEST_STATE_REFUSED: &str = "REQUEST_STATE_REFUSED";
/// The client's answer to a question did not fit what was asked (a form's
/// types, bounds, choices or required fields).
pub const INVALID_ANSWER: &str = "INVALID_ANSWER";
/// A server refused to start another task: too many of the caller's, or of
/// the server's, are running — or are kept, running or finished within a
/// task's time to live (`retryAfterMs` says when one is let go). Nothing
/// ran.
pub const TOO_MANY_TASKS: &str = "TOO_MANY_TASKS";
/// A call a guard blocked until an approver decides opened no approval:
/// its caller has as many waiting as they may (those they withdrew count
/// until they expire). Nothing ran; the call made again once
/// some are decided opens one.
pub const TOO_MANY_APPROVALS: &str = "TOO_MANY_APPROVALS";
/// A call a guard blocked until an approver at the server decides was not
/// put to them: its arguments are longer than an approver is shown whole
/// (the tool set's `attempted_query` limit), and a part they cannot see
/// could be the part that matters. Nothing ran; the call made with shorter
/// arguments is put to them.
pub const TOO_LONG_TO_APPROVE: &str = "TOO_LONG_TO_APPROVE";
/// A blocked call was not put to a person (the client's user, or approvers
/// at the server): a part of its arguments the schema does not mark secret
/// equals, or quotes, a value one of the call's `Secret`s was sent as, and
/// would be shown to them `[redacted]` — a part they cannot see could be the
/// part that matters. Nothing ran. A tool whose `Secret` lost its schema's
/// `writeOnly` mark (`#[schemars(with = …)]`) meets it on every such call:
/// keep the mark.
pub const HIDDEN_FROM_APPROVERS: &str = "HIDDEN_FROM_APPROVERS";
/// A server asked more questions in one round (or at once) than the client
/// answers.
pub const TOO_MANY_QUESTIONS: &str = "TOO_MANY_QUESTIONS";

/// The reasons of a call a guard stopped before its tool ran: a remote
/// failure that gives one was not run there.
pub(crate) const BLOCKED: [&str; 3] = [BLOCKED_BY_GUARD, GUARD_PANIC, UNREADABLE_ARGUMENT];

/// The reasons of a call whose arguments could not be used, so that its
/// tool never ran.
pub(crate) const UNUSABLE: [&str; 2] = [INVALID_ARGUMENTS, UNREPRESENTABLE_ARGUMENT];

/// Whether a failure with this reason is never retried, whatever its
/// category and `isRetryable` say: an explicit human request, a policy gap.
/// `reason` is a normalized one ([`normalize`]).
pub(crate) fn never_retried(reason: Option<&str>) -> bool {
    matches!(
        reason,
        Some(HUMAN_REQUESTED | POLICY_GAP | HUMAN_DECLINED | AWAITING_APPROVAL | APPROVAL_EXPIRED)
    )
}

/// `reason` in `UPPER_SNAKE_CASE`, the one form every rule reads: itself
/// when it already is (borrowed, as the constants here are), else
/// rewritten — `"rateLimited"`, `"rate-limited"`, `" rate limited! "` →
/// `"RATE_LIMITED"`, `"TimedOut"` → `"TIMED_OUT"`. Leading characters that
/// cannot start a code (digits, symbols) are dropped; `None` when no ASCII
/// letter is left to start one.
pub(crate) fn normalize(reason: Cow<'static, str>) -> Option<Cow<'static, str>> {
    if is_code(&reason) {
        return Some(reason);
    }
    let mut code = String::with_capacity(reason.len() + 4);
    let mut previous_lower = false;
    for c in reason.chars() {
        if c.is_ascii_alphanumeric() {
            if code.is_empty() && !c.is_ascii_alphabetic() {
                continue;
            }
            if c.is_ascii_uppercase() && previous_lower {
                code.push('_');
            }
            code.push(c.to_ascii_uppercase());
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !code.is_empty() && !code.ends_with('_') {
                code.push('_');
            }
            previous_lower = false;
        }
    }
    while code.ends_with('_') {
        code.pop();
    }
    (!code.is_empty()).then_some(Cow::Owned(code))
}

/// Whether `text` is a code already: `^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`.
pub(crate) fn is_code(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_uppercase)
        && !bytes.ends_with(b"_")
        && !text.contains("__")
        && bytes
            .iter()
            .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_become_upper_snake_case_once() {
        for (reason, code) in [
            ("RATE_LIMITED", Some("RATE_LIMITED")),
            ("rateLimited", Some("RATE_LIMITED")),
            ("rate-limited", Some("RATE_LIMITED")),
            ("  rate limited!! ", Some("RATE_LIMITED")),
            ("TimedOut", Some("TIMED_OUT")),
            ("human_requested", Some(HUMAN_REQUESTED)),
            ("human requested", Some(HUMAN_REQUESTED)),
            ("HUMAN_REQUESTED ", Some(HUMAN_REQUESTED)),
            ("policyGap", Some(POLICY_GAP)),
            ("HTTP429", Some("HTTP429")),
            ("429 too many", Some("TOO_MANY")),
            ("E__X_", Some("E_X")),
            ("", None),
            ("42", None),
            ("ошибка", None),
        ] {
            let normalized = normalize(Cow::Owned(reason.to_owned()));
            assert_eq!(normalized.as_deref(), code, "{reason:?}");
            if let Some(code) = code {
                assert!(is_code(code));
                assert_eq!(
                    normalize(Cow::Owned(code.to_owned())).as_deref(),
                    Some(code)
                );
            }
        }
        assert!(matches!(
            normalize(Cow::Borrowed(NOT_APPLIED)),
            Some(Cow::Borrowed(_))
        ));
    }
}
