//! The envelopes a login ends with: an authorization server this client
//! does not log in with, and rmcp's OAuth errors, each `permission`,
//! reason `AUTHORIZATION_FAILED`, saying what to do next.

use rmcp::transport::auth::AuthError;

use crate::envelope::ErrorEnvelope;
use crate::limits::text_for_wire;
use crate::reasons;

/// Refuses a login whose authorization server is not the one `pinned`
/// ([`OAuth::issuer`]): `found`, its metadata's issuer, compared as URLs.
pub(super) fn pinned_issuer(pinned: &str, found: Option<&str>) -> Result<(), ErrorEnvelope> {
    let same = |found: &str| match (url::Url::parse(pinned), url::Url::parse(found)) {
        (Ok(pinned), Ok(found)) => pinned == found,
        _ => pinned == found,
    };
    if found.is_some_and(same) {
        return Ok(());
    }
    let named = found.map_or_else(
        || "no issuer".to_owned(),
        |found| text_for_wire(found, 256).into_owned(),
    );
    Err(ErrorEnvelope::permission(format!(
        "the OAuth login for the MCP server was refused: its authorization server is {named}, not the one this client logs in with ({})",
        text_for_wire(pinned, 256)
    ))
    .with_reason(reasons::AUTHORIZATION_FAILED)
    .with_alternative(
        "Do not log in: the server points at an authorization server this client does not trust; tell its operator, or pin the right issuer (`OAuth::issuer`)",
    ))
}

/// An OAuth failure: `permission`, reason `AUTHORIZATION_FAILED`, saying
/// what to do next.
pub(super) fn failed(error: &AuthError) -> ErrorEnvelope {
    let what = text_for_wire(&error.to_string(), 512).into_owned();
    let next = match error {
        AuthError::InsufficientScope { .. } | AuthError::InvalidScope(_) => {
            "Ask the authorization server's operator to grant this client the scope the server needs"
        }
        AuthError::RegistrationFailed(_) | AuthError::NoAuthorizationSupport => {
            "Register this client with the authorization server, then give its ID (`OAuth::preregistered`)"
        }
        AuthError::AuthorizationServerMismatch { .. }
        | AuthError::AuthorizationServerMissingIssuer { .. }
        | AuthError::ProtectedResourceMetadataInvalid { .. } => {
            "Do not log in: the server's authorization metadata does not check out; tell its operator"
        }
        _ => "Log in again; if it keeps failing, check the client's OAuth registration",
    };
    ErrorEnvelope::permission(format!("the OAuth login for the MCP server failed: {what}"))
        .with_reason(reasons::AUTHORIZATION_FAILED)
        .with_alternative(next)
}
