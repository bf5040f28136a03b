//! rmcp's HTTP client with the resumption of event streams bounded.
//!
//! An event stream that ends before it delivered the answer is resumed by
//! rmcp (a `GET` with `Last-Event-ID`). SEP-1699 lets a graceful end be
//! resumed without limit, at the pace the server's `retry:` field sets, so a
//! server that ends every stream at once, with `retry: 0`, makes a client
//! resume as fast as the network allows until the call times out — measured:
//! 2,700 requests in 5 s. This client spaces resumptions at least
//! [`MIN_INTERVAL`] apart and refuses the next one after [`MAX_QUIET`] in a
//! row that brought no message, so the call fails instead of spinning.
//!
//! On MCP 2026-07-28 a broken stream is not resumed at all: the call ends
//! as a lost connection, and the one retry decision says whether it is
//! sent again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::time::Instant;

use crate::mcp::client::credentials::Authorized;

/// The fewest time between two resumptions of event streams.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// How many resumptions in a row may bring no message before the next is
/// refused.
pub(crate) const MAX_QUIET: u32 = 10;

/// rmcp's reqwest client, with the client's credentials, resuming event
/// streams with care. Clones share their count.
#[derive(Clone)]
pub(crate) struct PacedClient {
    inner: Authorized,
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    /// Resumptions since a stream last delivered a message.
    quiet: AtomicU32,
    /// When the next resumption may go out.
    next: Mutex<Option<Instant>>,
    /// The connection speaks 2026-07-28: no stream is resumed.
    no_resumption: std::sync::atomic::AtomicBool,
    /// How many sessions were opened (`initialize` sent): rmcp opens
    /// another on the same connection when the server forgot the first (a
    /// restart: HTTP 404), and the server's tools may have changed since.
    sessions: std::sync::atomic::AtomicU64,
}

impl State {
    /// A stream delivered something: the resumptions before it were useful.
    fn heard(&self) {
        self.quiet.store(0, Ordering::Relaxed);
    }
}

impl PacedClient {
    /// `inner`, its event streams resumed with care.
    pub(crate) fn new(inner: Authorized) -> Self {
        PacedClient {
            inner,
            state: Arc::default(),
        }
    }
}

impl PacedClient {
    /// Resumes no event stream from now on: the connection speaks MCP
    /// 2026-07-28.
    pub(crate) fn refuse_resumption(&self) {
        self.state.no_resumption.store(true, Ordering::Relaxed);
    }

    /// How many sessions were opened through it so far.
    pub(crate) fn sessions(&self) -> u64 {
        self.state.sessions.load(Ordering::SeqCst)
    }
}

/// `stream`, noting each event that carries a message.
fn watched(
    stream: BoxStream<'static, Result<Sse, SseError>>,
    state: Arc<State>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    stream
        .inspect(move |event| {
            let message = event.as_ref().ok().and_then(|sse| sse.data.as_deref());
            if message.is_some_and(|data| !data.trim().is_empty()) {
                state.heard();
            }
        })
        .boxed()
}

impl StreamableHttpClient for PacedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
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
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
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
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        if let ClientJsonRpcMessage::Request(request) = &message
            && matches!(request.request, ClientRequest::InitializeRequest(_))
        {
            self.state.sessions.fetch_add(1, Ordering::SeqCst);
        }
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        Ok(match response {
            StreamableHttpPostResponse::Json(message, session) => {
                self.state.heard();
                StreamableHttpPostResponse::Json(message, session)
            }
            StreamableHttpPostResponse::Sse(stream, session) => {
                StreamableHttpPostResponse::Sse(watched(stream, Arc::clone(&self.state)), session)
            }
            other => other,
        })
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
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
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        if last_event_id.is_some() && self.state.no_resumption.load(Ordering::Relaxed) {
            return Err(StreamableHttpError::UnexpectedServerResponse(
                "the server ended its event stream before the answer, and on MCP 2026-07-28 \
                 a stream is not resumed"
                    .into(),
            ));
        }
        if last_event_id.is_some() {
            // A resumption: refused after too many quiet ones, paced otherwise.
            let quiet = self.state.quiet.fetch_add(1, Ordering::Relaxed) + 1;
            if quiet > MAX_QUIET {
                return Err(StreamableHttpError::UnexpectedServerResponse(
                    format!(
                        "the server ended its event stream {MAX_QUIET} times in a row without a message"
                    )
                    .into(),
                ));
            }
            let wait = {
                let mut next = self
                    .state
                    .next
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let now = Instant::now();
                let at = next.map_or(now, |next| next.max(now));
                *next = Some(at + MIN_INTERVAL);
                at - now
            };
            tokio::time::sleep(wait).await;
        }
        let stream = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(watched(stream, Arc::clone(&self.state)))
    }
}
