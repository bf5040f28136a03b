//! What a client's token provider is asked, and answers: the vocabulary
//! of a bearer token that a caller's code, or an OAuth login, supplies.

use std::future::Future;
use std::pin::Pin;

use crate::envelope::ErrorEnvelope;

/// Why a client asks its [`TokenProvider`] for a token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenRequest {
    /// Before the first request that needs one.
    First,
    /// The server refused the last token: a fresh one, or one with more
    /// scope. Asked once per refused request; the request is sent again
    /// with the answer, unless it is the token refused.
    Refused {
        /// The HTTP status: 401 (no valid token), or 403 (the token lacks
        /// a scope).
        status: u16,
        /// The server's `WWW-Authenticate` header, if it sent one: where
        /// its resource metadata is (`resource_metadata=`), the `scope` it
        /// wants, the `error`.
        www_authenticate: Option<String>,
    },
}

/// What a [`TokenProvider`] answers: a token to send, or `None` to send
/// the request without one (an OAuth client that waits for the server's
/// 401 to learn where to log in), or an envelope that ends the call.
pub type TokenAnswer = Result<Option<String>, ErrorEnvelope>;

/// Where an HTTP client gets its bearer token: a closure
/// (`|request: TokenRequest| async { Ok(Some(token)) }`) or a type of your
/// own — an OAuth client, a secret store.
///
/// An `Err` ends the call with that envelope: say what to do next (log in,
/// ask for a scope) in its alternatives.
pub trait TokenProvider: Send + Sync + 'static {
    /// A token for the next request, for the reason given.
    fn token(&self, request: TokenRequest) -> Pin<Box<dyn Future<Output = TokenAnswer> + Send>>;
}

impl<F, Fut> TokenProvider for F
where
    F: Fn(TokenRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = TokenAnswer> + Send + 'static,
{
    fn token(&self, request: TokenRequest) -> Pin<Box<dyn Future<Output = TokenAnswer> + Send>> {
        Box::pin(self(request))
    }
}
