//! A protected tool set: the bearer token of each HTTP request checked by
//! the user's validator before rmcp sees it, the 401 and 403 that tell a
//! client where to get one (RFC 6750, with MCP's `resource_metadata`), and
//! the protected resource metadata document (RFC 9728) they point at.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, Response, StatusCode, Uri, header};
use serde_json::{Value, json};

use crate::caller::Caller;

/// The longest subject a token may name (`OpenID Connect`'s `sub` is 255
/// ASCII characters at most).
const MAX_SUBJECT_BYTES: usize = 1024;

/// How long a validator may take by default: longer than a JWKS fetch or an
/// introspection call on a slow day, short enough that a dead authorization
/// server costs each request a bounded wait.
const VALIDATOR_TIMEOUT: Duration = Duration::from_secs(10);

/// What became of a token put to the validator.
pub(crate) enum Validated {
    /// Accepted: who called.
    Caller(Caller),
    /// Refused: unknown, expired, for another audience, or naming nobody.
    Refused,
    /// No answer within [`BearerAuth::validator_timeout`]: neither
    /// accepted nor refused.
    Unanswered,
}

/// What a validator answers: the caller, or `None` for a token it does not
/// accept (unknown, expired, for another audience).
type Validation = Pin<Box<dyn Future<Output = Option<Caller>> + Send>>;

/// The bearer tokens a served tool set accepts, checked by a validator you
/// give: a JWT library with your authorization server's keys, an
/// introspection call, a lookup. Set on [`HttpOptions::require_bearer`](crate::mcp::HttpOptions::require_bearer).
///
/// - A request without a token gets 401 with `WWW-Authenticate: Bearer
///   resource_metadata="…"` (and `scope="…"`, the required scopes): where
///   an MCP client learns which authorization server to log in at.
/// - A token the validator refuses gets the same 401, with
///   `error="invalid_token"`.
/// - A token without the [`required_scopes`](Self::required_scopes) gets
///   403 with `error="insufficient_scope"` and the scopes, so that the
///   client can ask for them (step-up).
/// - A token the validator does not judge within
///   [`validator_timeout`](Self::validator_timeout) (10 seconds unless
///   set: an authorization server down, a JWKS fetch hanging) gets 503
///   with `Retry-After: 1` and no challenge — nothing says the token is
///   bad, so a client does not throw it away or log in again; it retries
///   (`McpClient` reads it as `transient`).
/// - An accepted one's [`Caller`] reaches the tools
///   ([`ToolContext::caller`](crate::mcp::ToolContext::caller)) and the
///   guards ([`ToolCall::require_scope`](crate::guard::ToolCall::require_scope)).
///
/// The token itself reaches nothing but the validator: no tool, no
/// envelope, no log.
///
/// # Behind an existing authorization server
///
/// Keycloak, Auth0, Entra ID, Okta — any OAuth 2.1 server that issues
/// JWT access tokens for a resource:
///
/// 1. Register the MCP server as a resource (an API, an audience) whose
///    identifier is the URL clients reach it by — `resource` here — and
///    define its scopes (`refunds:write`).
/// 2. Name the server's issuer with
///    [`authorization_server`](Self::authorization_server): clients find
///    it through the metadata document, and its own metadata (RFC 8414 or
///    `OpenID` Connect discovery) from there. For clients to register by themselves,
///    turn on its dynamic client registration or client ID metadata
///    documents; otherwise register each client beforehand.
/// 3. Validate in `validator` as for any API: the JWT's signature with the
///    issuer's keys (its JWKS, cached; the `jsonwebtoken` crate), `iss`,
///    `exp`, and `aud` equal to `resource` — a token for another audience
///    must not pass — then answer
///    `Caller::new(claims.sub, claims.scope.split_whitespace())`. A server that
///    issues opaque tokens is asked instead (token introspection, RFC 7662).
/// 4. Serve behind TLS (a proxy that terminates it, as in
///    `scripts/test-tls.sh`), with [`HttpOptions::allowed_hosts`](crate::mcp::HttpOptions::allowed_hosts)
///    naming the public host.
///
/// ```
/// use tool_envelope::guard::Caller;
/// use tool_envelope::mcp::{BearerAuth, HttpOptions};
///
/// let auth = BearerAuth::new("https://tools.example.com/mcp", |token: String| async move {
///     // Validate for real: a JWT's signature, issuer, audience and expiry.
///     // A fixed token is compared in constant time, never with `==`.
///     let known = subtle::ConstantTimeEq::ct_eq(token.as_bytes(), b"let-me-in");
///     bool::from(known).then(|| Caller::new("ops", ["refunds:read", "refunds:write"]))
/// })
/// .authorization_server("https://auth.example.com")
/// .scopes_supported(["refunds:read", "refunds:write"]);
/// assert_eq!(
///     auth.metadata_url(),
///     "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
/// );
/// let options = HttpOptions::new().stateless().require_bearer(auth);
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct BearerAuth {
    inner: Arc<Inner>,
}

struct Inner {
    resource: String,
    metadata_url: String,
    metadata_path: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required_scopes: Vec<String>,
    validator_timeout: Duration,
    validator: Box<dyn Fn(String) -> Validation + Send + Sync>,
}

impl fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerAuth")
            .field("resource", &self.inner.resource)
            .field("authorization_servers", &self.inner.authorization_servers)
            .field("required_scopes", &self.inner.required_scopes)
            .finish_non_exhaustive()
    }
}

impl BearerAuth {
    /// Tokens for the MCP server at `resource` (its canonical URL, as
    /// clients reach it: `https://tools.example.com/mcp`), checked by
    /// `validator`, which gets each request's token and answers who called
    /// — or `None` to refuse it. A caller with an empty subject is refused
    /// too, as an invalid token: every caller a check admits is someone.
    ///
    /// The subject is who owns what a call starts — its sessions, tasks,
    /// approving states and approvals — and nothing else of the token is
    /// compared: it must name one person or agent across every issuer the
    /// validator accepts. A JWT's `sub` is unique only within its issuer:
    /// with more than one ([`authorization_server`](Self::authorization_server)
    /// named twice), give the subject as both (`format!("{iss}|{sub}")`).
    ///
    /// # Panics
    ///
    /// If `resource` is not an absolute `http` or `https` URL, or carries
    /// a fragment (RFC 9728 allows none) or a character a challenge cannot
    /// quote (`"`, `\`).
    pub fn new<F, Fut>(resource: impl Into<String>, validator: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Caller>> + Send + 'static,
    {
        let resource = resource.into();
        let uri: Uri = resource
            .parse()
            .ok()
            .filter(|uri: &Uri| matches!(uri.scheme_str(), Some("http" | "https")))
            .filter(|uri| uri.authority().is_some())
            .filter(|_| !resource.contains(['#', '"', '\\']))
            .unwrap_or_else(|| {
                panic!(
                    "BearerAuth::new: the resource `{resource}` is not an absolute http(s) URL \
                     without a fragment, `\"` or `\\`"
                )
            });
        let path = uri.path().trim_end_matches('/');
        let metadata_path = format!("/.well-known/oauth-protected-resource{path}");
        let authority = uri.authority().map_or("", |authority| authority.as_str());
        let scheme = uri.scheme_str().unwrap_or("https");
        // The resource's query stays after the path (RFC 9728 §3.1): a
        // resource told apart by it has a document of its own.
        let query = uri
            .query()
            .map_or_else(String::new, |query| format!("?{query}"));
        BearerAuth {
            inner: Arc::new(Inner {
                metadata_url: format!("{scheme}://{authority}{metadata_path}{query}"),
                metadata_path,
                resource,
                authorization_servers: Vec::new(),
                scopes_supported: Vec::new(),
                required_scopes: Vec::new(),
                validator_timeout: VALIDATOR_TIMEOUT,
                validator: Box::new(move |token| Box::pin(validator(token))),
            }),
        }
    }

    /// Names an authorization server (its issuer URL) that issues tokens
    /// for this resource, in the metadata document.
    #[must_use]
    pub fn authorization_server(self, issuer: impl Into<String>) -> Self {
        self.change(|inner| inner.authorization_servers.push(issuer.into()))
    }

    /// The scopes this resource knows, in the metadata document: what a
    /// client asks for when the challenge names none.
    ///
    /// # Panics
    ///
    /// If one is not a scope token (RFC 6749 §3.3: no space, `"` or `\`).
    #[must_use]
    pub fn scopes_supported(self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let scopes = scope_tokens(scopes, "scopes_supported");
        self.change(|inner| inner.scopes_supported = scopes)
    }

    /// Scopes every request's token must grant: a token without one gets
    /// 403 `insufficient_scope`. Scopes for one tool belong in its guard
    /// ([`ToolCall::require_scope`](crate::guard::ToolCall::require_scope)).
    ///
    /// # Panics
    ///
    /// If one is not a scope token (RFC 6749 §3.3), which the challenge
    /// naming it could not quote.
    #[must_use]
    pub fn required_scopes(self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let scopes = scope_tokens(scopes, "required_scopes");
        self.change(|inner| inner.required_scopes = scopes)
    }

    /// How long the validator may take over one token: past it, the
    /// request is answered 503 with `Retry-After: 1` (a sign-in to the
    /// inbox, its page saying to try again; a sign-in asks the validator
    /// twice, so it may wait twice as long), and the validator's future is
    /// dropped. A future that blocks its thread, or work the validator does
    /// before it returns its future, is not cut short: keep both
    /// asynchronous. 10 seconds unless set.
    ///
    /// # Panics
    ///
    /// If `timeout` is zero: a validator that waits on anything would
    /// never be given the time to answer.
    #[must_use]
    pub fn validator_timeout(self, timeout: Duration) -> Self {
        assert!(
            !timeout.is_zero(),
            "BearerAuth::validator_timeout: zero leaves a validator no time to answer"
        );
        self.change(|inner| inner.validator_timeout = timeout)
    }

    /// Where the protected resource metadata document is served: the
    /// resource's origin, `/.well-known/oauth-protected-resource`, then the
    /// resource's path and query (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The path of [`metadata_url`](Self::metadata_url), to route it on a
    /// server of your own (without the resource's query, which routing
    /// does not read).
    pub fn metadata_path(&self) -> &str {
        &self.inner.metadata_path
    }

    /// The protected resource metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        let inner = &self.inner;
        let mut document = json!({
            "resource": inner.resource,
            "authorization_servers": inner.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !inner.scopes_supported.is_empty() {
            document["scopes_supported"] = json!(inner.scopes_supported);
        }
        document
    }

    fn change(mut self, change: impl FnOnce(&mut Inner)) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => change(inner),
            None => unreachable!("a BearerAuth is configured before it is shared"),
        }
        self
    }

    /// Who `token` is of, as the validator says, if it grants the scopes
    /// every request needs: a person signing in to the inbox with it.
    #[cfg(feature = "inbox")]
    pub(crate) async fn caller_of(&self, token: &str) -> Validated {
        if !is_token(token) {
            return Validated::Refused;
        }
        match self.validated(token).await {
            Validated::Caller(caller) => {
                let required = &self.inner.required_scopes;
                match required.iter().all(|scope| caller.has_scope(scope)) {
                    true => Validated::Caller(caller),
                    false => Validated::Refused,
                }
            }
            other => other,
        }
    }

    /// Who sent a request with `headers`, or the response that refuses it.
    pub(crate) async fn check<B: Default>(
        &self,
        headers: &HeaderMap,
    ) -> Result<Arc<Caller>, Response<B>> {
        // Two credentials are none (RFC 6750 §2): a proxy in front may have
        // read the other one.
        if headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .nth(1)
            .is_some()
        {
            return Err(self.refusal(StatusCode::BAD_REQUEST, Some("invalid_request")));
        }
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| {
                let (scheme, token) = value.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .filter(|token| !token.is_empty());
        let Some(token) = token else {
            return Err(self.refusal(StatusCode::UNAUTHORIZED, None));
        };
        // Not a token's shape (`Bearer a, Bearer b`, a space, a quote):
        // refused before the validator reads it.
        if !is_token(token) {
            return Err(self.refusal(StatusCode::BAD_REQUEST, Some("invalid_request")));
        }
        let caller = match self.validated(token).await {
            Validated::Caller(caller) => caller,
            Validated::Refused => {
                return Err(self.refusal(StatusCode::UNAUTHORIZED, Some("invalid_token")));
            }
            Validated::Unanswered => return Err(unanswered()),
        };
        if !self
            .inner
            .required_scopes
            .iter()
            .all(|scope| caller.has_scope(scope))
        {
            return Err(self.refusal(StatusCode::FORBIDDEN, Some("insufficient_scope")));
        }
        Ok(Arc::new(caller))
    }

    /// Who `token` is of, as the validator says — unless it names nobody:
    /// a caller without a subject would share the tasks, approvals and
    /// states bound to the absence of one (a server without a bearer
    /// check's callers), so a token the validator gives an empty subject
    /// is refused as invalid. So is one whose subject holds a control
    /// character or is over [`MAX_SUBJECT_BYTES`]: a store cannot keep or
    /// index it as it is (Postgres refuses a NUL, and index entries past
    /// ~2.7 KB), and the caller's bounds would then be counted by none.
    /// A validator that does not answer within its timeout is
    /// [`Validated::Unanswered`].
    async fn validated(&self, token: &str) -> Validated {
        let validation = (self.inner.validator)(token.to_owned());
        let caller = match tokio::time::timeout(self.inner.validator_timeout, validation).await {
            Ok(Some(caller)) => caller,
            Ok(None) => return Validated::Refused,
            Err(_) => {
                tracing::warn!(
                    timeout_ms = self.inner.validator_timeout.as_millis(),
                    "the bearer token validator did not answer in time: the request gets 503"
                );
                return Validated::Unanswered;
            }
        };
        let subject = caller.subject();
        let kept = !subject.is_empty()
            && subject.len() <= MAX_SUBJECT_BYTES
            && !subject.chars().any(char::is_control);
        if !kept && !subject.is_empty() {
            tracing::warn!(
                bytes = subject.len(),
                "a token's subject was refused: over 1 KiB, or a control character in it"
            );
        }
        match kept {
            true => Validated::Caller(caller),
            false => Validated::Refused,
        }
    }

    /// A refusal with `status`, its challenge naming the metadata document,
    /// the required scopes, and the `error`, if any.
    fn refusal<B: Default>(&self, status: StatusCode, error: Option<&str>) -> Response<B> {
        let inner = &self.inner;
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", inner.metadata_url);
        if !inner.required_scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{}\"", inner.required_scopes.join(" ")));
        }
        if let Some(error) = error {
            challenge.push_str(&format!(", error=\"{error}\""));
        }
        let mut response = Response::new(B::default());
        *response.status_mut() = status;
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// The answer to a request whose token the validator did not judge in
/// time: 503, try again in a second — no challenge, for nothing says the
/// token is bad.
fn unanswered<B: Default>() -> Response<B> {
    let mut response = Response::new(B::default());
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// `scopes`, each a scope token (RFC 6749 §3.3: `!`, `#`–`[`, `]`–`~`):
/// what a challenge quotes and a client asks for as it is.
///
/// # Panics
///
/// If one is not, naming `what` was given it.
fn scope_tokens(scopes: impl IntoIterator<Item = impl Into<String>>, what: &str) -> Vec<String> {
    let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
    for scope in &scopes {
        let token = !scope.is_empty()
            && scope
                .bytes()
                .all(|byte| matches!(byte, 0x21 | 0x23..=0x5B | 0x5D..=0x7E));
        assert!(
            token,
            "BearerAuth::{what}: {scope:?} is not a scope (RFC 6749 §3.3: no space, quote or backslash)"
        );
    }
    scopes
}

/// Whether `token` has a bearer token's shape (RFC 6750 §2.1, `b64token`):
/// letters, digits, `-._~+/`, then `=` padding only.
fn is_token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-._~+/".contains(&byte))
}

#[cfg(test)]
mod tests;
