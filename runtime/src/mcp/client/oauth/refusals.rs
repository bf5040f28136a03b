//! The envelope of rmcp's OAuth errors: `permission`, reason
//! `AUTHORIZATION_FAILED`, saying what to do next.

use rmcp::transport::auth::AuthError;

use crate::envelope::ErrorEnvelope;
use crate::limits::text_for_wire;
use crate::reasons;

/// An OAuth failure: `permission`, reason `AUTHORIZATION_FAILED`, saying
/// what to do next; its text passed through `hide` before it is cut to
/// length (a secret cut in two would no longer be found whole).
pub(super) fn failed(error: &AuthError, hide: impl FnOnce(&str) -> String) -> ErrorEnvelope {
    let what = text_for_wire(&hide(&error.to_string()), 512).into_owned();
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
