//! rmcp's HTTP client with the resumption of event streams bounded.
//!
//! An event stream that ends before it delivered the answer is resumed by
//! rmcp (a `GET` with `Last-Event-ID`). SEP-1699 lets a graceful end be
//! resumed without limit, at the pace the server's `retry:` field sets, so a
//! server that ends every stream at once, with `retry: 0`, makes a client
//! resume as fast as the network allows until the call times out — measured:
//! 2,700 requests in 5 s. This client spaces resumptions at least
//! [`MIN_INTERVAL`] apart and refuses the next one of a stream after
//! [`MAX_QUIET`] in a row that brought it no message, so the call fails
//! instead of spinning. A stream is known by the id of the last event it
//! got, which its resumption names (`Last-Event-ID`): streams of calls made
//! at once are counted apart, so that many calls whose streams a proxy
//! ended at the same time are each resumed. A message is one rmcp reads: an
//! event of the default kind whose data is JSON.
//!
//! The server's standalone stream (the `GET` rmcp opens beside a session,
//! for the server's own messages), which no call waits on, is never
//! refused: opened again after it ended with no message, it waits twice as
//! long as the time before, from [`MIN_INTERVAL`] to
//! [`MAX_STANDALONE_WAIT`].
//!
//! On MCP 2026-07-28 a broken stream is not resumed at all: the call ends
//! as a lost connection, and the one retry decision says whether it is
//! sent again.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
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

/// How many resumptions of a stream in a row may bring no message before
/// the next is refused.
pub(crate) const MAX_QUIET: u32 = 10;

/// How many streams' counts of quiet resumptions are kept: the oldest is
/// let go first (a stream resumed since is the newest again).
const STREAMS_COUNTED: usize = 256;

/// The longest wait before the server's standalone stream (the `GET` rmcp
/// opens beside a session, for the server's own messages) is opened again
/// after it ended with no message: it doubles from [`MIN_INTERVAL`] with
/// each quiet end, and a message starts it over.
const MAX_STANDALONE_WAIT: Duration = Duration::from_secs(30);

/// rmcp's reqwest client, with the client's credentials, resuming event
/// streams with care. Clones share their count.
#[derive(Clone)]
pub(crate) struct PacedClient {
    inner: Authorized,
    state: Arc<State>,
}

/// Where a stream stands: how many times in a row it was resumed with no
/// message since, and whether it is the server's standalone stream — one
/// no call waits on, opened again however often it ends, at a pace that
/// slows while it brings nothing.
#[derive(Clone, Copy, Default)]
struct Chain {
    quiet: u32,
    standalone: bool,
}

#[derive(Default)]
struct State {
    /// The streams resumed, by a digest of the id of the last event each
    /// got (ids are the server's, of any length): a call's stream that
    /// delivered a message, or was never resumed, is not here.
    chains: Mutex<VecDeque<(u64, Chain)>>,
    /// The digest of event ids, keyed afresh for each client.
    ids: std::hash::RandomState,
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
    /// Where the stream whose last event was `id` stands, if it was seen;
    /// the standalone stream that had no event with an id, under `None`.
    fn chain(&self, id: Option<&str>) -> Option<Chain> {
        let key = self.key(id);
        let chains = self.chains.lock().unwrap_or_else(PoisonError::into_inner);
        let found = chains.iter().rev().find(|(last, _)| *last == key);
        found.map(|(_, chain)| *chain)
    }

    /// The stream whose last event is now `id` stands at `chain`.
    fn note(&self, id: Option<&str>, chain: Chain) {
        self.moved(None, id, chain);
    }

    /// The stream whose last event was `before` (if it had one) and is now
    /// `id` stands at `chain`: one entry a stream, however many ids it got.
    fn moved(&self, before: Option<Option<&str>>, id: Option<&str>, chain: Chain) {
        let key = self.key(id);
        let before = before.map(|before| self.key(before));
        let mut chains = self.chains.lock().unwrap_or_else(PoisonError::into_inner);
        chains.retain(|(last, _)| *last != key && Some(*last) != before);
        if chain.quiet > 0 || chain.standalone {
            if chains.len() == STREAMS_COUNTED {
                chains.pop_front();
            }
            chains.push_back((key, chain));
        }
    }

    fn key(&self, id: Option<&str>) -> u64 {
        use std::hash::BuildHasher;
        self.ids.hash_one(id)
    }

    /// How long to wait before the next resumption may go out: at least
    /// [`MIN_INTERVAL`] after the one before.
    fn turn(&self) -> Duration {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let at = next.map_or(now, |next| next.max(now));
        *next = Some(at + MIN_INTERVAL);
        at - now
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

/// `stream`, the one whose last event was `last`, standing at `chain`:
/// the count follows the id of each event it gets, and a message (a
/// JSON-RPC one, as rmcp reads them) ends it.
fn watched(
    stream: BoxStream<'static, Result<Sse, SseError>>,
    state: Arc<State>,
    mut last: Option<Box<str>>,
    mut chain: Chain,
) -> BoxStream<'static, Result<Sse, SseError>> {
    stream
        .inspect(move |event| {
            let Ok(sse) = event else {
                return;
            };
            // Read only where there is a count to end: a reply's own
            // stream is not parsed twice.
            let quiet_before = chain.quiet;
            let heard = quiet_before > 0 && is_message(sse);
            if heard {
                chain.quiet = 0;
            }
            match sse.id.as_deref() {
                // Noted under its new id, even with none to count: an id
                // seen before (a server that numbers each stream's events
                // from 1) starts afresh.
                Some(id) => {
                    // The entry under the id before is this stream's, but
                    // for a call's first stream (`None` is the standalone
                    // stream's).
                    let before = (last.is_some() || chain.standalone).then_some(last.as_deref());
                    state.moved(before, Some(id), chain);
                    last = Some(id.into());
                }
                // A message with no id: resumed, the stream names the id
                // before it, which now counts none.
                None if heard && quiet_before > 0 => state.note(last.as_deref(), chain),
                None => {}
            }
        })
        .boxed()
}

/// Whether `sse` carries a message, as rmcp reads them: an event of the
/// default kind whose data is a JSON object (rmcp drops anything else; an
/// object that is no JSON-RPC message counts here, as a real notification
/// would).
fn is_message(sse: &Sse) -> bool {
    let kind = sse.event.as_deref().unwrap_or("message");
    (kind.is_empty() || kind == "message")
        && sse.data.as_deref().is_some_and(|data| {
            data.trim_start().starts_with('{')
                && serde_json::from_str::<serde::de::IgnoredAny>(data).is_ok()
        })
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
            StreamableHttpPostResponse::Sse(stream, session) => StreamableHttpPostResponse::Sse(
                watched(stream, Arc::clone(&self.state), None, Chain::default()),
                session,
            ),
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
        // A resumption of a call's stream: refused after too many quiet
        // ones in a row, paced otherwise. The server's standalone stream
        // (opened with no id, and every stream that follows from it): never
        // refused, opened again at a pace that slows while it brings
        // nothing.
        let last = last_event_id.as_deref();
        // Seen before, or a resumption (`Last-Event-ID`): opened again.
        let chain = match self.state.chain(last) {
            Some(before) => Chain {
                quiet: before.quiet.saturating_add(1),
                ..before
            },
            None => Chain {
                quiet: u32::from(last.is_some()),
                standalone: last.is_none(),
            },
        };
        if chain.standalone {
            let wait = match chain.quiet {
                0 => Duration::ZERO,
                // Its own slower pace, on top of the turn it takes among
                // resumptions: it holds up no call's.
                quiet => {
                    let slower = MIN_INTERVAL.saturating_mul(1 << (quiet - 1).min(10));
                    self.state.turn().max(slower.min(MAX_STANDALONE_WAIT))
                }
            };
            self.state.note(last, chain);
            tokio::time::sleep(wait).await;
        } else if let Some(last) = last {
            if chain.quiet > MAX_QUIET {
                return Err(StreamableHttpError::UnexpectedServerResponse(
                    format!(
                        "the server ended its event stream {MAX_QUIET} times in a row without a message"
                    )
                    .into(),
                ));
            }
            let wait = self.state.turn();
            // Counted now: a resumption that ends with no event at all
            // names the same last event next time.
            self.state.note(Some(last), chain);
            tokio::time::sleep(wait).await;
        }
        let resumed_from = last_event_id.as_deref().map(Box::from);
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
        Ok(watched(
            stream,
            Arc::clone(&self.state),
            resumed_from,
            chain,
        ))
    }
}
