//! An [`OAuth`] login at work: the session it keeps with rmcp's
//! authorization manager, the logins it counts, and the credentials it
//! keeps out of what comes back.

use std::sync::Arc;

use oauth2::TokenResponse as _;
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest,
    AuthorizationSession, ClientCredentialsConfig, OAuthState, WWWAuthenticateParams,
};
use tokio::sync::Mutex as AsyncMutex;

use super::refusals::failed;
use super::transport::Guarded;
use super::{Flow, OAuth, OAuthHttp, pinned};
use crate::envelope::ErrorEnvelope;
use crate::mcp::client::secrets::Sent;
use crate::mcp::client::token::TokenRequest;
use crate::reasons;

/// An [`OAuth`] login bound to the server it is for: the tokens it got,
/// and how many times it logged in.
pub(crate) struct OAuthProvider {
    url: Arc<str>,
    /// The login's HTTP client, its addresses checked.
    http: OAuthHttp,
    oauth: OAuth,
    /// Whether the client was let send credentials over plain HTTP to
    /// another machine, to a pinned issuer there as well.
    insecure: bool,
    /// The credentials the client sent: the refresh tokens go there too,
    /// sent to the authorization server, whose refusal may quote them.
    sent: Arc<Sent>,
    state: AsyncMutex<Session>,
}

#[derive(Default)]
struct Session {
    manager: Option<AuthorizationManager>,
    /// The access token last handed out: when another comes, the
    /// credentials were refreshed, and may hold a new refresh token.
    last_token: Option<String>,
    /// The logins in a row, each within [`GOOD_LOGIN`] of the one before.
    authorizations: u32,
    /// When the last login was.
    last_login: Option<tokio::time::Instant>,
}

/// The resource a login asks a token for (RFC 8707): the MCP server's URL
/// without its query or fragment. The query is the server's to read: an
/// API key in it (`/mcp?api_key=…`) would go to the authorization server,
/// another origin, in the token request.
fn resource(url: &str) -> String {
    let Ok(mut resource) = url::Url::parse(url) else {
        return url.to_owned();
    };
    resource.set_query(None);
    resource.set_fragment(None);
    // Never in the URL given (it goes as Basic authentication), but a
    // user and password are not the authorization server's either.
    let _ = resource.set_username("");
    let _ = resource.set_password(None);
    resource.into()
}

/// How long a login's token must have served before the next login starts
/// the count again: a server that refuses every token refuses it at once.
const GOOD_LOGIN: std::time::Duration = std::time::Duration::from_secs(60);

impl OAuthProvider {
    pub(crate) fn new(
        url: Arc<str>,
        http: OAuthHttp,
        oauth: OAuth,
        insecure: bool,
        sent: Arc<Sent>,
    ) -> Self {
        OAuthProvider {
            url,
            http,
            oauth,
            insecure,
            sent,
            state: AsyncMutex::default(),
        }
    }

    /// `error` as an envelope: its text with the credentials sent masked
    /// before it is cut to length, so that no part of one is left.
    /// What the address policy refused, if anything, is said: rmcp's
    /// error reads only "Request failed".
    fn failed(&self, error: &AuthError) -> ErrorEnvelope {
        let refused = (self.http.refused.lock())
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        failed(error, |text| {
            let text = match refused {
                Some(refused) => format!("{refused} ({text})"),
                None => text.to_owned(),
            };
            self.sent.hide_in(&text)
        })
    }

    /// Remembers the refresh token `manager` keeps as a credential sent:
    /// it goes to the authorization server with every refresh.
    async fn keep_out(&self, session: &mut Session, token: &str) {
        if session.last_token.as_deref() == Some(token) {
            return;
        }
        session.last_token = Some(token.to_owned());
        self.keep_out_refresh_token(session.manager.as_ref()).await;
    }

    async fn keep_out_refresh_token(&self, manager: Option<&AuthorizationManager>) {
        let Some(manager) = manager else {
            return;
        };
        if let Ok((_, Some(response))) = manager.get_credentials().await
            && let Some(refresh) = response.refresh_token()
            && !refresh.secret().is_empty()
        {
            self.sent.credential(&Arc::from(refresh.secret().as_str()));
        }
    }

    /// A token for the next request: the one kept (refreshed when it is
    /// about to expire), or, for a machine, a new one; `None` to let the
    /// server's 401 say where to log in.
    pub(crate) async fn current(&self) -> Result<Option<String>, ErrorEnvelope> {
        let mut session = self.state.lock().await;
        if let Some(manager) = &session.manager {
            match manager.get_access_token().await {
                Ok(token) => {
                    self.keep_out(&mut session, &token).await;
                    return Ok(Some(token));
                }
                Err(AuthError::AuthorizationRequired) => session.manager = None,
                Err(error) => return Err(self.failed(&error)),
            }
        }
        match &self.oauth.flow {
            Flow::ClientCredentials { .. } => self.authorize(&mut session, None).await.map(Some),
            Flow::AuthorizationCode { .. } => Ok(None),
        }
    }

    /// A token after the server refused a request.
    pub(crate) async fn refused(
        &self,
        request: TokenRequest,
    ) -> Result<Option<String>, ErrorEnvelope> {
        let TokenRequest::Refused {
            status,
            www_authenticate,
        } = request
        else {
            return self.current().await;
        };
        let mut session = self.state.lock().await;
        let wanted = www_authenticate.as_deref().and_then(|challenge| {
            let base = url::Url::parse(&self.url).ok()?;
            let params = WWWAuthenticateParams::parse(challenge, &base);
            params
                .is_insufficient_scope()
                .then_some(params.scope)
                .flatten()
        });
        if status == 403
            && let Some(scope) = wanted
            && session.manager.is_some()
            && matches!(self.oauth.flow, Flow::AuthorizationCode { .. })
        {
            return self.step_up(&mut session, &scope).await.map(Some);
        }
        session.manager = None;
        self.authorize(&mut session, www_authenticate.as_deref())
            .await
            .map(Some)
    }

    /// Counts one more login, or refuses it past the bound.
    fn count(&self, session: &mut Session) -> Result<(), ErrorEnvelope> {
        let now = tokio::time::Instant::now();
        if (session.last_login).is_some_and(|last| now.duration_since(last) >= GOOD_LOGIN) {
            session.authorizations = 0;
        }
        session.last_login = Some(now);
        session.authorizations += 1;
        if session.authorizations > self.oauth.max_authorizations {
            return Err(ErrorEnvelope::permission(format!(
                "the MCP server refused this client's tokens after {} authorizations",
                self.oauth.max_authorizations
            ))
            .with_reason(reasons::AUTHORIZATION_FAILED)
            .with_alternative("Ask the server's operator which scopes this client needs"));
        }
        Ok(())
    }

    /// Logs in from the start: discovery (from `challenge` when there is
    /// one), registration, then the flow.
    async fn authorize(
        &self,
        session: &mut Session,
        challenge: Option<&str>,
    ) -> Result<String, ErrorEnvelope> {
        self.count(session)?;
        // Every request of the login through this client's own, its
        // addresses checked (`addresses`); a refusal before this login is
        // not its to say.
        self.http
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let guarded = Guarded {
            http: self.http.http.clone(),
            in_clear: self.http.in_clear.clone(),
            policy: Arc::clone(&self.http.policy),
            refused: Arc::clone(&self.http.refused),
            insecure: self.insecure,
        };
        // Named without its query: rmcp names the resource by this URL
        // where the server's metadata does not (an API key in the query
        // would go to the authorization server in every request of the
        // login); discovery reads the server's origin and path only.
        let resource = resource(&self.url);
        let mut manager =
            AuthorizationManager::new_with_oauth_http_client(&resource, Arc::new(guarded))
                .await
                .map_err(|error| self.failed(&error))?;
        if let Some(store) = &self.oauth.store {
            store(&mut manager);
        }
        // Discovered once, here, and checked: the login goes on with the
        // metadata checked (rmcp's own flows would discover again, and a
        // server could answer otherwise the second time).
        let resolution = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|error| self.failed(&error))?;
        let metadata = match &self.oauth.issuer {
            Some(pinned) => {
                let discovered = resolution.metadata.issuer.as_deref();
                // Read as every plain-HTTP request of the login is: past
                // the environment's proxy.
                let plain = url::Url::parse(pinned).is_ok_and(|url| url.scheme() == "http");
                let http = match plain {
                    true => &self.http.in_clear,
                    false => &self.http.http,
                };
                pinned::metadata(http, pinned, discovered, self.insecure).await?
            }
            None => resolution.metadata,
        };
        manager.set_metadata(metadata);
        let state = match &self.oauth.flow {
            Flow::ClientCredentials {
                client_id,
                client_secret,
            } => {
                let config = ClientCredentialsConfig::ClientSecret {
                    client_id: client_id.clone(),
                    client_secret: client_secret.clone(),
                    scopes: self.oauth.scopes.clone(),
                    resource: Some(resource.clone()),
                };
                manager
                    .validate_client_credentials_metadata(&config)
                    .map_err(|error| self.failed(&error))?;
                manager
                    .configure_client_credentials(&config)
                    .map_err(|error| self.failed(&error))?;
                manager
                    .exchange_client_credentials(&config)
                    .await
                    .map_err(|error| self.failed(&error))?;
                OAuthState::Authorized(manager)
            }
            Flow::AuthorizationCode {
                redirect_uri,
                login,
                preregistered,
            } => {
                let mut request = AuthorizationRequest::new(redirect_uri.clone());
                if let Some(name) = &self.oauth.client_name {
                    request = request.with_client_name(name.clone());
                }
                if let Some(url) = &self.oauth.client_metadata_url {
                    request = request.with_client_metadata_url(url.clone());
                }
                if let Some((id, secret)) = preregistered {
                    request = request.with_preregistered_client(id.clone());
                    if let Some(secret) = secret {
                        request = request.with_client_secret(secret.clone());
                    }
                }
                if !self.oauth.scopes.is_empty() {
                    request = request.with_scopes(self.oauth.scopes.clone());
                }
                let session = AuthorizationSession::new(manager, request)
                    .await
                    .map_err(|(_, error)| self.failed(&error))?;
                let mut state = OAuthState::Session(session);
                let url = state
                    .get_authorization_url()
                    .await
                    .map_err(|error| self.failed(&error))?;
                let redirected = login(url).await?;
                state
                    .handle_callback_url(&redirected)
                    .await
                    .map_err(|error| self.failed(&error))?;
                state
            }
        };
        let manager = state
            .into_authorization_manager()
            .ok_or_else(|| self.failed(&AuthError::AuthorizationRequired))?;
        // Before the first use, which may refresh it at once.
        self.keep_out_refresh_token(Some(&manager)).await;
        let token = manager
            .get_access_token()
            .await
            .map_err(|error| self.failed(&error))?;
        session.manager = Some(manager);
        self.keep_out(session, &token).await;
        Ok(token)
    }

    /// Asks for the scopes granted and `scope` too (step-up).
    async fn step_up(&self, session: &mut Session, scope: &str) -> Result<String, ErrorEnvelope> {
        self.count(session)?;
        let Flow::AuthorizationCode { login, .. } = &self.oauth.flow else {
            return Err(self.failed(&AuthError::AuthorizationRequired));
        };
        let Some(manager) = &session.manager else {
            return Err(self.failed(&AuthError::AuthorizationRequired));
        };
        let url = manager
            .request_scope_upgrade(scope)
            .await
            .map_err(|error| self.failed(&error))?;
        let redirected = login(url).await?;
        let callback = AuthorizationCallback::from_redirect_url(&redirected)
            .map_err(|error| self.failed(&error))?;
        manager
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|error| self.failed(&error))?;
        self.keep_out_refresh_token(Some(manager)).await;
        let token = manager
            .get_access_token()
            .await
            .map_err(|error| self.failed(&error))?;
        self.keep_out(session, &token).await;
        Ok(token)
    }
}

#[cfg(test)]
mod tests;
