//! Credentials in the HTTP client: a bearer token, fixed or from a provider
//! the caller gives. A token the server refuses (HTTP 401, or 403 with
//! `insufficient_scope`) is asked for again once, and the request sent
//! again with the new one: a refused request ran nothing, so repeating it is
//! safe. The token goes to the one origin the client was made for — no
//! redirect is followed — and never into a log or an envelope.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::sync::Mutex as AsyncMutex;

use crate::envelope::ErrorEnvelope;
use crate::mcp::client::causes::unexpected_status;
use crate::mcp::client::secrets::Sent;
use crate::mcp::client::token::{TokenProvider, TokenRequest};

/// Where a client's bearer token comes from.
#[derive(Clone, Default)]
pub(crate) enum Credentials {
    /// No `Authorization` header.
    #[default]
    None,
    /// The same token on every request.
    Fixed(Arc<str>),
    /// A provider's, asked again when the server refuses it.
    Provider(Arc<dyn TokenProvider>),
    /// An OAuth login's, asked before every request (it refreshes a token
    /// about to expire) and when the server refuses one.
    #[cfg(feature = "oauth")]
    OAuth(crate::mcp::client::oauth::OAuth),
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Credentials::None => "none",
            Credentials::Fixed(_) => "a bearer token",
            Credentials::Provider(_) => "a token provider",
            #[cfg(feature = "oauth")]
            Credentials::OAuth(_) => "an OAuth login",
        })
    }
}

/// A token provider's failure, carried through rmcp's transport to the
/// call it ended.
#[derive(Debug)]
pub(crate) struct TokenFailure(pub(crate) ErrorEnvelope);

impl fmt::Display for TokenFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the token provider failed: {}", self.0.message())
    }
}

impl std::error::Error for TokenFailure {}

/// Where an HTTP client's token comes from, bound to its server.
#[derive(Clone)]
enum Source {
    None,
    Fixed(Arc<str>),
    /// The provider, and its last answer (`None` before it was asked).
    Provider(
        Arc<dyn TokenProvider>,
        Arc<AsyncMutex<Option<Option<Arc<str>>>>>,
    ),
    #[cfg(feature = "oauth")]
    OAuth(Arc<crate::mcp::client::oauth::OAuthProvider>),
}

impl Source {
    /// Whether a refused request can get another token, and so may be
    /// sent again.
    fn refreshes(&self) -> bool {
        !matches!(self, Source::None | Source::Fixed(_))
    }
}

/// reqwest's client, sending the client's credentials.
#[derive(Clone)]
pub(crate) struct Authorized {
    inner: reqwest::Client,
    source: Source,
    /// Every token sent is remembered here, to be kept out of what comes back.
    sent: Arc<Sent>,
}

type HttpError = StreamableHttpError<reqwest::Error>;

impl Authorized {
    /// `inner`, sending `credentials` to the server at `url`; `insecure`,
    /// over plain HTTP to another machine as well (an OAuth login's to its
    /// pinned issuer: the server's own was checked when the client was made).
    ///
    /// `builder` makes a client like `inner`: an OAuth login's own is made
    /// from it, its addresses checked; the error, when it cannot be.
    pub(crate) fn new(
        inner: reqwest::Client,
        credentials: Credentials,
        url: &Arc<str>,
        sent: Arc<Sent>,
        insecure: bool,
        builder: impl Fn() -> reqwest::ClientBuilder,
    ) -> Result<Self, reqwest::Error> {
        let source = match credentials {
            Credentials::None => Source::None,
            Credentials::Fixed(token) => {
                // Sent with every request: masked for good.
                sent.fixed_credential(&token);
                Source::Fixed(token)
            }
            Credentials::Provider(provider) => Source::Provider(provider, Arc::default()),
            #[cfg(feature = "oauth")]
            Credentials::OAuth(oauth) => {
                // Sent to the authorization server, whose refusal may quote it.
                if let Some(secret) = oauth.client_secret().filter(|secret| !secret.is_empty()) {
                    sent.fixed_credential(&Arc::from(secret));
                }
                let http = crate::mcp::client::oauth::OAuthHttp::new(url, &oauth, &builder)?;
                Source::OAuth(Arc::new(crate::mcp::client::oauth::OAuthProvider::new(
                    Arc::clone(url),
                    http,
                    oauth,
                    insecure,
                    Arc::clone(&sent),
                )))
            }
        };
        #[cfg(not(feature = "oauth"))]
        let _ = (url, insecure, builder);
        Ok(Authorized {
            inner,
            source,
            sent,
        })
    }

    /// The token to send: the fixed one, the provider's last, or the OAuth
    /// login's (refreshed when it is about to expire) — remembered as sent.
    async fn current(&self) -> Result<Option<Arc<str>>, HttpError> {
        let token = self.token().await?;
        if let Some(token) = &token {
            self.sent.credential(token);
        }
        Ok(token)
    }

    async fn token(&self) -> Result<Option<Arc<str>>, HttpError> {
        match &self.source {
            Source::None => Ok(None),
            Source::Fixed(token) => Ok(Some(Arc::clone(token))),
            Source::Provider(provider, last) => {
                let mut slot = last.lock().await;
                if let Some(token) = slot.as_ref() {
                    return Ok(token.clone());
                }
                let token = ask(provider.as_ref(), TokenRequest::First).await?;
                *slot = Some(token.clone());
                Ok(token)
            }
            #[cfg(feature = "oauth")]
            Source::OAuth(oauth) => oauth
                .current()
                .await
                .map(|token| token.map(Arc::from))
                .map_err(carried),
        }
    }

    /// A token to send again with, after the server refused the request
    /// sent with `refused` (or with none): `None` when there is no other to
    /// try.
    async fn after_refusal(
        &self,
        refused: Option<&Arc<str>>,
        error: &HttpError,
    ) -> Result<Option<Arc<str>>, HttpError> {
        let request = match error {
            StreamableHttpError::AuthRequired(challenge) => TokenRequest::Refused {
                status: 401,
                www_authenticate: Some(challenge.www_authenticate_header.clone()),
            },
            StreamableHttpError::InsufficientScope(challenge) => TokenRequest::Refused {
                status: 403,
                www_authenticate: Some(challenge.www_authenticate_header.clone()),
            },
            StreamableHttpError::HttpStatus(status) if status.status == 401 => {
                TokenRequest::Refused {
                    status: 401,
                    www_authenticate: None,
                }
            }
            // A 401 without a challenge, which rmcp keeps as text.
            StreamableHttpError::UnexpectedServerResponse(message)
                if unexpected_status(message) == Some(401) =>
            {
                TokenRequest::Refused {
                    status: 401,
                    www_authenticate: None,
                }
            }
            _ => return Ok(None),
        };
        let token = match &self.source {
            Source::None | Source::Fixed(_) => return Ok(None),
            Source::Provider(provider, last) => {
                let mut slot = last.lock().await;
                if let Some(Some(current)) = slot.as_ref()
                    && Some(current) != refused
                {
                    // Another request has had it replaced already.
                    return Ok(Some(Arc::clone(current)));
                }
                let token = ask(provider.as_ref(), request).await?;
                *slot = Some(token.clone());
                token
            }
            #[cfg(feature = "oauth")]
            Source::OAuth(oauth) => oauth
                .refused(request)
                .await
                .map_err(carried)?
                .map(Arc::from),
        };
        let token = token.filter(|token| Some(token) != refused);
        if let Some(token) = &token {
            self.sent.credential(token);
        }
        Ok(token)
    }
}

/// The provider's answer to `request`, its failure carried as an I/O error.
async fn ask(
    provider: &dyn TokenProvider,
    request: TokenRequest,
) -> Result<Option<Arc<str>>, HttpError> {
    provider
        .token(request)
        .await
        .map(|token| token.map(Arc::from))
        .map_err(carried)
}

/// A token provider's envelope, carried through rmcp as an I/O error.
fn carried(envelope: ErrorEnvelope) -> HttpError {
    StreamableHttpError::Io(std::io::Error::other(TokenFailure(envelope)))
}

impl StreamableHttpClient for Authorized {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let token = self.current().await?;
        let auth = token.as_deref().map(str::to_owned);
        if !self.source.refreshes() {
            // Nothing to send again with: the message is not kept.
            return self
                .inner
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth,
                    custom_headers,
                    limits,
                )
                .await
                .map_err(unlocated);
        }
        let first = self
            .inner
            .post_message_with_response_limits(
                Arc::clone(&uri),
                message.clone(),
                session_id.clone(),
                auth,
                custom_headers.clone(),
                limits,
            )
            .await
            .map_err(unlocated);
        let error = match first {
            Err(error) => error,
            answered => return answered,
        };
        let Some(fresh) = self.after_refusal(token.as_ref(), &error).await? else {
            return Err(error);
        };
        self.inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                Some(fresh.to_string()),
                custom_headers,
                limits,
            )
            .await
            .map_err(unlocated)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let token = self.current().await?;
        self.inner
            .delete_session(
                uri,
                session_id,
                token.as_deref().map(str::to_owned),
                custom_headers,
            )
            .await
            .map_err(unlocated)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let token = self.current().await?;
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                token.as_deref().map(str::to_owned),
                custom_headers,
                max_sse_event_size,
            )
            .await
            .map_err(unlocated)
    }
}

/// `error` without the URL reqwest keeps in it: rmcp logs its transport's
/// errors (`fail to get common stream: …`), and the URL may carry a key in
/// its query or path. What failed, and why, is kept.
fn unlocated(error: HttpError) -> HttpError {
    match error {
        StreamableHttpError::Client(client) => StreamableHttpError::Client(client.without_url()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::{HttpError, unlocated};
    use rmcp::transport::streamable_http_client::StreamableHttpError;

    /// What rmcp logs of a failed request names no part of its URL, a key
    /// in its query or path; what failed is kept.
    #[tokio::test]
    async fn a_transport_error_is_passed_up_without_its_url() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        let url = format!("http://{address}/s/path-k3y-0a1b/mcp?api_key=query-k3y-2c3d");
        let refused = reqwest::Client::new().get(&url).send().await.unwrap_err();
        assert!(refused.to_string().contains("path-k3y-0a1b"), "{refused}");
        let error: HttpError = unlocated(StreamableHttpError::Client(refused));
        let logged = format!("{error} {error:?}");
        assert!(!logged.contains("k3y"), "{logged}");
        let StreamableHttpError::Client(client) = error else {
            panic!("still the client's error: {logged}")
        };
        assert!(client.is_connect(), "{logged}");
    }
}
