//! An authorization server pinned by its issuer ([`OAuth::issuer`]):
//! whatever the MCP server's discovery names is checked against it, and
//! the endpoints a login uses are read from the issuer's own metadata,
//! never from a document the MCP server pointed at.
//!
//! [`OAuth::issuer`]: super::OAuth::issuer

use rmcp::transport::auth::AuthorizationMetadata;

use crate::envelope::ErrorEnvelope;
use crate::limits::text_for_wire;
use crate::reasons;

/// The most of a metadata document read.
const MOST_METADATA: usize = 256 * 1024;

/// The metadata of the authorization server `pinned` names, once
/// `discovered` — the issuer the MCP server's discovery led to — is it:
/// read from the issuer itself (RFC 8414's well-known address, then
/// OIDC discovery's), its `issuer` checked to be `pinned`. A document at
/// any other address may claim the issuer and name other endpoints.
/// `insecure`: the client was let send credentials over plain HTTP
/// ([`insecure_credentials`](crate::mcp::client::Connect::insecure_credentials)),
/// to an issuer on another machine as well.
pub(super) async fn metadata(
    http: &reqwest::Client,
    pinned: &str,
    discovered: Option<&str>,
    insecure: bool,
) -> Result<AuthorizationMetadata, ErrorEnvelope> {
    // An issuer is an https URL with no query, fragment or user (RFC
    // 8414); plain http only to this machine, as every credential, unless
    // the client was let send them over plain HTTP anywhere.
    let issuer = url::Url::parse(pinned)
        .ok()
        .filter(|issuer| {
            (crate::mcp::client::http::is_private_to_this_machine(pinned)
                || (insecure && issuer.scheme() == "http"))
                && issuer.query().is_none()
                && issuer.fragment().is_none()
                && issuer.username().is_empty()
                && issuer.password().is_none()
        })
        // Not quoted: a user and password may be in it.
        .ok_or_else(|| {
            unreadable(
                "the one given to `OAuth::issuer`",
                "an issuer is an https URL (http to this machine only, unless `insecure_credentials`) with no query, fragment or user",
            )
        })?;
    refused_unless_pinned(pinned, discovered)?;
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    let addresses = [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ];
    let mut last = "no metadata at its well-known addresses".to_owned();
    for address in addresses {
        let read = async {
            let request = http.get(&address).timeout(super::transport::LONGEST);
            let mut response = request.send().await.map_err(|error| {
                // A name the login's address policy refused says so.
                super::addresses::NotAllowed::in_error(&error)
                    .map_or_else(|| error.to_string(), ToString::to_string)
            })?;
            if !response.status().is_success() {
                return Err(format!("{address}: HTTP {}", response.status()));
            }
            let body = super::transport::bounded(&mut response, MOST_METADATA)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("{address}: over {MOST_METADATA} bytes"))?;
            serde_json::from_slice::<AuthorizationMetadata>(&body)
                .map_err(|e| format!("{address}: {e}"))
        };
        match read.await {
            Ok(metadata) => {
                refused_unless_pinned(pinned, metadata.issuer.as_deref())?;
                return Ok(metadata);
            }
            Err(why) => last = why,
        }
    }
    Err(unreadable(pinned, &last))
}

/// The login's end when the pinned issuer's own metadata cannot be read.
fn unreadable(pinned: &str, why: &str) -> ErrorEnvelope {
    ErrorEnvelope::permission(format!(
        "the OAuth login for the MCP server failed: the metadata of the authorization server this client logs in with ({}) could not be read: {}",
        text_for_wire(pinned, 256),
        text_for_wire(why, 256)
    ))
    .with_reason(reasons::AUTHORIZATION_FAILED)
    .with_alternative(
        "Check the issuer given to `OAuth::issuer`: an https URL (http with `insecure_credentials`) whose server publishes its metadata",
    )
}

/// Refuses a login whose authorization server is not the one `pinned`
/// ([`OAuth::issuer`](super::OAuth::issuer)): `found`, its metadata's issuer, compared as URLs.
fn refused_unless_pinned(pinned: &str, found: Option<&str>) -> Result<(), ErrorEnvelope> {
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
