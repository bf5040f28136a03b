//! How a remote failure becomes an envelope: a tool's `isError` result (the
//! server's own envelope, or the text of another SDK), a JSON-RPC error, a
//! refused handshake, a broken transport, an HTTP status, a TLS handshake,
//! a token provider that failed, a client that cannot be made.

use std::error::Error as StdError;
use std::time::SystemTime;

use rmcp::model::ErrorData;
use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use serde_json::Value;

use crate::category::ErrorCategory;
use crate::envelope::ErrorEnvelope;
use crate::limits::text_for_wire;
use crate::mcp::client::causes::{causes, never_written, unexpected_status};
use crate::mcp::client::credentials::TokenFailure;
use crate::mcp::retry_after::delay as retry_after_delay;
use crate::reasons;

/// The most bytes of a server's text kept in an envelope's message.
pub(crate) const MAX_MESSAGE_BYTES: usize = 4 * 1024;

/// `message`, bounded as every server text is.
fn text(message: String) -> String {
    text_for_wire(&message, MAX_MESSAGE_BYTES).into_owned()
}

/// A client set up with what cannot be used: `other`, not retryable.
pub(crate) fn misconfigured(message: String) -> ErrorEnvelope {
    ErrorEnvelope::other(format!("the MCP client cannot be made: {message}"))
        .with_reason(reasons::CLIENT_MISCONFIGURED)
}

/// A failure before anything was sent: repeating the call is safe.
pub(crate) fn not_sent(message: String) -> ErrorEnvelope {
    ErrorEnvelope::transient(text(message)).with_reason(reasons::NOT_APPLIED)
}

/// The envelope of a failure rmcp reports: a protocol error, a timeout, a
/// broken connection, an HTTP status. `before_sending` says whether the
/// request had not been sent yet.
pub(crate) fn classify_error(error: &ServiceError, before_sending: bool) -> ErrorEnvelope {
    match error {
        ServiceError::McpError(data) => json_rpc(data),
        ServiceError::Timeout { timeout } => ErrorEnvelope::transient(format!(
            "the MCP server did not answer within {} ms; the call was cancelled",
            timeout.as_millis()
        ))
        .with_reason(reasons::TIMEOUT),
        ServiceError::TransportSend(send) => transport(send, before_sending),
        ServiceError::TransportClosed if before_sending => {
            not_sent("the connection to the MCP server is closed".to_owned())
        }
        ServiceError::TransportClosed => {
            ErrorEnvelope::transient("the connection to the MCP server closed before it answered")
                .with_reason(reasons::CONNECTION_LOST)
        }
        other => ErrorEnvelope::other(text(format!("the MCP call failed: {other}")))
            .with_reason(reasons::UNEXPECTED_REPLY),
    }
}

/// Whether a server that refused the 2026-07-28 probe with `error` may
/// still speak a revision with a handshake: it said it supports one, or it
/// refused the probe as a 2025-11-25 server does (an unknown method, an
/// HTTP 400, a closed stream). Not when it refused the client's
/// credentials or certificate, which the handshake would meet the same, nor
/// when the probe never reached it (a connection refused, or that never
/// opened) — a server that heard nothing refused nothing.
pub(crate) fn may_speak_an_older_revision(
    error: &ClientInitializeError,
    envelope: &ErrorEnvelope,
) -> bool {
    fn has_handshake<'a>(mut versions: impl Iterator<Item = &'a str>) -> bool {
        let stateless = rmcp::model::ProtocolVersion::V_2026_07_28;
        versions.any(|version| version < stateless.as_str())
    }
    match error {
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => has_handshake(
            server_supported
                .iter()
                .map(rmcp::model::ProtocolVersion::as_str),
        ),
        ClientInitializeError::JsonRpcError(data) if data.code.0 == -32022 => {
            let supported = data.data.as_ref().and_then(|data| data.get("supported"));
            match supported {
                Some(Value::Array(versions)) => {
                    has_handshake(versions.iter().filter_map(Value::as_str))
                }
                Some(Value::String(version)) => has_handshake(std::iter::once(version.as_str())),
                _ => false,
            }
        }
        ClientInitializeError::TransportError { error, .. } if never_reached(error) => false,
        _ => envelope.category() != ErrorCategory::Permission,
    }
}

/// Whether `error` is an HTTP connection that never opened: refused, or
/// not open in its time. (A connection that opened and closed, a reply
/// that could not be read, may be a 2025-11-25 server's refusal.)
fn never_reached(error: &DynamicTransportError) -> bool {
    matches!(
        error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
        Some(StreamableHttpError::Client(client)) if client.is_connect()
    )
}

/// The envelope of a handshake that failed. Nothing was called, so what a
/// broken transport did is safe to repeat; what the server refused — a
/// protocol version it does not speak, any other JSON-RPC error — repeating
/// does not change.
pub(crate) fn classify_initialize(error: &ClientInitializeError) -> ErrorEnvelope {
    match error {
        ClientInitializeError::JsonRpcError(data) => json_rpc(data),
        ClientInitializeError::NoCompatibleProtocolVersion {
            client_supported,
            server_supported,
        } => unsupported_version(
            &client_supported
                .iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>(),
            &server_supported
                .iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>(),
        ),
        ClientInitializeError::TransportError { error, .. } => transport(error, true),
        // The server refused the 2026-07-28 probe as a 2025-11-25 server
        // does, then the handshake: what the handshake said.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            classify_initialize(fallback)
        }
        ClientInitializeError::ConnectionClosed(_) => not_sent(format!(
            "the MCP server closed the connection before it initialized: {error}"
        )),
        other => ErrorEnvelope::other(text(format!("the MCP server did not initialize: {other}")))
            .with_reason(reasons::UNEXPECTED_REPLY),
    }
}

/// What rmcp answers a call with, in the server's name, when the server
/// forgot the call's session (HTTP 404 to another request) and rmcp opened a
/// new one before the call's answer came on the old one: the call was sent.
const RMCP_SESSION_RENEWED: &str =
    "streamable HTTP session was re-initialized before the response arrived";

/// The envelope of a JSON-RPC error: `-32602` (unknown tool, bad params)
/// is `validation`, `-32022` a protocol version the server does not speak,
/// `-32021` a capability the client did not declare (`business`), any
/// other `other`. None is retryable: the server answered, and the same
/// request gets the same answer — but for rmcp's own answer to a call
/// whose session the server forgot, which is a connection lost.
fn json_rpc(data: &ErrorData) -> ErrorEnvelope {
    let said = |key: &str| data.data.as_ref().and_then(|data| data.get(key)?.as_str());
    match data.code.0 {
        -32602 if said("reason") == Some(reasons::REQUEST_STATE_REFUSED) => refused_state(data),
        -32602 => ErrorEnvelope::validation(text(data.message.to_string()))
            .with_reason(reasons::INVALID_ARGUMENTS),
        -32022 => {
            let versions = |key: &str| -> Vec<String> {
                let listed = data.data.as_ref().and_then(|data| data.get(key));
                match listed {
                    Some(Value::Array(items)) => items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                    Some(Value::String(one)) => vec![one.clone()],
                    _ => Vec::new(),
                }
            };
            unsupported_version(&versions("requested"), &versions("supported"))
        }
        -32021 => missing_capability(data.data.as_ref()),
        -32603 if data.message == RMCP_SESSION_RENEWED => ErrorEnvelope::transient(
            "the MCP server forgot the session before it answered (HTTP 404); the call was \
             sent on it and may have run, and a new session was opened",
        )
        .with_reason(reasons::CONNECTION_LOST),
        code => ErrorEnvelope::other(text(format!(
            "the MCP server answered with error {code}: {}",
            data.message
        ))),
    }
}

/// A server that refused the `requestState` a round sent back: `other`,
/// not retryable — the same round gets the same answer, and the
/// arguments were fine — saying how to start the call over.
fn refused_state(data: &ErrorData) -> ErrorEnvelope {
    ErrorEnvelope::other(text(format!(
        "the MCP server refused the state of the call's last round: {}",
        data.message
    )))
    .with_reason(reasons::REQUEST_STATE_REFUSED)
    .with_alternative(
        "Call the tool again from its start, without the state; a person may be asked again",
    )
}

/// A server that needs the client to answer, or support, what it did not
/// declare (`-32021`, 2026-07-28): `business`, not retryable, naming what —
/// a capability by its name, an extension by its identifier — and the way
/// to declare it.
fn missing_capability(data: Option<&Value>) -> ErrorEnvelope {
    let required = data.and_then(|data| data.get("requiredCapabilities"));
    let bounded = |name: &str| crate::limits::text_for_wire(name, 64).into_owned();
    let mut names: Vec<String> = Vec::new();
    let mut ways: Vec<String> = Vec::new();
    if let Some(Value::Object(capabilities)) = required {
        for (name, value) in capabilities.iter().take(8) {
            match (name.as_str(), value) {
                ("extensions", Value::Object(extensions)) => {
                    for extension in extensions.keys().take(8) {
                        names.push(format!("the extension `{}`", bounded(extension)));
                        ways.push(match extension.as_str() {
                            rmcp::model::TASKS_EXTENSION_ID => {
                                "declare the tasks extension on the client (`Connect::tasks`)"
                                    .to_owned()
                            }
                            other => format!(
                                "use a client that supports the extension `{}`",
                                bounded(other)
                            ),
                        });
                    }
                }
                (capability, _) => {
                    names.push(bounded(capability));
                    ways.push(format!(
                        "register a handler for {} on the client (`Connect::on_{}`)",
                        bounded(capability),
                        match capability {
                            "elicitation" | "sampling" | "roots" => capability,
                            _ => "…",
                        }
                    ));
                }
            }
        }
    }
    if names.is_empty() {
        names.push("a capability it did not name".to_owned());
        ways.push("declare what the server needs on the client".to_owned());
    }
    let names = names.join(" and ");
    let mut way = ways.join(", and ");
    if let Some(first) = way.get(..1) {
        way = format!("{}{}", first.to_uppercase(), &way[1..]);
    }
    ErrorEnvelope::business(format!(
        "the MCP server needs this client to support {names}, which the client did not declare"
    ))
    .with_reason(reasons::CLIENT_CANNOT_ANSWER)
    .with_alternative(format!("{way}, then call again"))
}

/// A server that does not speak the protocol versions the client asked for:
/// `other`, not retryable, saying what the server supports.
fn unsupported_version(asked: &[String], supported: &[String]) -> ErrorEnvelope {
    let list = |versions: &[String]| match versions {
        [] => "none it named".to_owned(),
        versions => versions.join(", "),
    };
    let asked = match asked {
        [] => String::new(),
        asked => format!(" {}", list(asked)),
    };
    ErrorEnvelope::other(text(format!(
        "the MCP server does not speak the protocol version{asked} this client asked for; it supports {}",
        list(supported)
    )))
    .with_reason(reasons::UNSUPPORTED_PROTOCOL_VERSION)
    .with_alternative(
        "Call this server with a client that speaks one of the versions it supports",
    )
}

/// The envelope of a transport that failed: an HTTP status, a connection
/// refused (nothing sent), or broken while the request was on its way.
fn transport(error: &DynamicTransportError, before_sending: bool) -> ErrorEnvelope {
    let http = error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>();
    // What the client's own side ended: a token provider, a TLS handshake.
    let own = match http {
        Some(StreamableHttpError::Io(io)) => token_failure(io).cloned(),
        Some(StreamableHttpError::Client(client)) => tls_failure(client, client.is_connect()),
        _ => None,
    };
    if let Some(envelope) = own {
        return envelope;
    }
    match http {
        Some(StreamableHttpError::HttpStatus(status)) => {
            http_status(status.status, status.retry_after.as_deref())
        }
        Some(StreamableHttpError::AuthRequired(_)) => http_status(401, None),
        Some(StreamableHttpError::InsufficientScope(challenge)) => {
            insufficient_scope(challenge.required_scope.as_deref())
        }
        Some(StreamableHttpError::UnexpectedServerResponse(message)) => {
            match unexpected_status(message) {
                Some(status) => http_status(status, None),
                None => ErrorEnvelope::other(text(format!(
                    "the MCP server's reply could not be read: {message}"
                )))
                .with_reason(reasons::UNEXPECTED_REPLY),
            }
        }
        // The client's errors come without their URL (`credentials::
        // unlocated`): a key in its path is not quoted here either.
        Some(StreamableHttpError::Client(client)) if client.is_connect() => not_sent(format!(
            "could not reach the MCP server: {}",
            with_cause(client)
        )),
        Some(StreamableHttpError::Client(client)) if never_written(client) => not_sent(format!(
            "the connection to the MCP server closed before the request was written: {}",
            with_cause(client)
        )),
        _ if before_sending => not_sent(format!("could not send to the MCP server: {error}")),
        _ => ErrorEnvelope::transient(text(format!(
            "the connection to the MCP server broke: {error}"
        )))
        .with_reason(reasons::CONNECTION_LOST),
    }
}

/// `error`, and what caused it at the root when that is another error
/// (`Connection refused`): reqwest's own text names neither.
fn with_cause(error: &reqwest::Error) -> String {
    match causes(error).last() {
        Some(root) if !std::ptr::addr_eq(root, error) => format!("{error}: {root}"),
        _ => error.to_string(),
    }
}

/// The envelope a token provider failed with.
fn token_failure(io: &std::io::Error) -> Option<&ErrorEnvelope> {
    let failure = io.get_ref()?.downcast_ref::<TokenFailure>()?;
    Some(&failure.0)
}

/// A token without the scope the server wants: `permission`, not
/// retryable with the same token, naming the scope.
fn insufficient_scope(scope: Option<&str>) -> ErrorEnvelope {
    let scope = scope.map(|scope| text_for_wire(scope, 256).into_owned());
    let message = match &scope {
        Some(scope) => format!("the MCP server wants a token with the scope `{scope}`"),
        None => "the MCP server wants a token with more scope (HTTP 403)".to_owned(),
    };
    ErrorEnvelope::permission(message)
        .with_reason(reasons::INSUFFICIENT_SCOPE)
        .with_not_applied(true)
        .with_alternative(match scope {
            Some(scope) => format!("Ask for a token with the scope `{scope}`, then call again"),
            None => "Ask for a token with the scope the server names, then call again".to_owned(),
        })
}

/// The envelope of an HTTP status: 5xx and 429 `transient` (with the server's
/// `Retry-After`), 401 and 403 `permission`, the rest `other`.
fn http_status(status: u16, retry_after: Option<&str>) -> ErrorEnvelope {
    let reason = format!("{}{status}", reasons::HTTP_STATUS_PREFIX);
    let message = format!("the MCP server answered HTTP {status}");
    let category = match status {
        429 | 500..=599 => ErrorCategory::Transient,
        401 | 403 => ErrorCategory::Permission,
        _ => ErrorCategory::Other,
    };
    let mut envelope = ErrorEnvelope::new(category, message).with_reason(reason);
    if let Some(delay) = retry_after.and_then(|value| retry_after_delay(value, SystemTime::now())) {
        envelope = envelope.with_retry_after(delay);
    }
    if status == 401 {
        // Refused before it ran.
        envelope = envelope.with_not_applied(true).with_alternative(
            "Give the client a valid token (`bearer`, or a token provider that can log in), then call again",
        );
    }
    if status == 429 {
        // Refused before it ran: safe to repeat once the server allows.
        envelope = envelope
            .with_not_applied(true)
            .with_alternative("Wait for the server's rate limit, then call again");
    }
    envelope
}

/// The envelope of a TLS handshake that failed, if `error` (or what caused
/// it) is one: `permission`, reason `TLS_CERTIFICATE`, not retryable —
/// the same certificate fails the same way — and nothing was sent.
fn tls_failure(error: &(dyn StdError + 'static), connecting: bool) -> Option<ErrorEnvelope> {
    let rustls_error = causes(error).find_map(|cause| cause.downcast_ref::<rustls::Error>())?;
    // Past connecting, only what ends a handshake is one (TLS 1.3 sends a
    // refused client certificate's alert after the client finished its
    // part): any other TLS failure on a connection a request went out on
    // says nothing of whether the server read it.
    if !connecting && !ends_a_handshake(rustls_error) {
        return None;
    }
    let (what, alternative) = match rustls_error {
        rustls::Error::InvalidCertificate(why) => (
            format!("the MCP server's TLS certificate was refused: {why}"),
            "Trust the CA that issued the server's certificate (`root_certificate_pem`, \
             or the agent's --ca-cert), or call the host name the certificate names",
        ),
        rustls::Error::NoCertificatesPresented => (
            "the MCP server presented no TLS certificate".to_owned(),
            "Check that the URL points at the server meant",
        ),
        rustls::Error::AlertReceived(alert) => (
            format!(
                "the MCP server ended the TLS handshake ({alert:?}): it may want a client certificate"
            ),
            "Give the client the certificate the server expects (`client_certificate_pem`)",
        ),
        other => (
            format!("the TLS handshake with the MCP server failed: {other}"),
            "Check the server's TLS settings and the client's roots",
        ),
    };
    Some(
        ErrorEnvelope::permission(what)
            .with_reason(reasons::TLS_CERTIFICATE)
            .with_not_applied(true)
            .with_alternative(alternative),
    )
}

/// Whether `error` is one only a TLS handshake ends with: a certificate
/// refused, or the peer's alert about one.
fn ends_a_handshake(error: &rustls::Error) -> bool {
    use rustls::AlertDescription as Alert;
    match error {
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => true,
        rustls::Error::AlertReceived(alert) => matches!(
            alert,
            Alert::CertificateRequired
                | Alert::BadCertificate
                | Alert::UnsupportedCertificate
                | Alert::CertificateRevoked
                | Alert::CertificateExpired
                | Alert::CertificateUnknown
                | Alert::UnknownCA
                | Alert::AccessDenied
                | Alert::HandshakeFailure
        ),
        _ => false,
    }
}

/// The envelope of a call whose server asked more questions than the
/// client answers — `most`, at once, or `in_all` over the call: `other`,
/// not retryable — the same call would be asked the same.
pub(crate) fn flooded(name: &str, most: usize, in_all: bool) -> ErrorEnvelope {
    let when = if in_all { "in all" } else { "at once" };
    ErrorEnvelope::other(format!(
        "the MCP server asked more than {most} questions {when} during the call of `{name}`, more than this client answers"
    ))
    .with_reason(reasons::TOO_MANY_QUESTIONS)
    .with_alternative("Call a server that asks fewer questions, or raise the client's max_questions")
}

#[cfg(test)]
mod tests;
