//! What caused a transport's error: the chain of its causes, whether it
//! says the request was never written, and the HTTP status of a reply
//! rmcp could not read.

use std::error::Error as StdError;

/// `error` and what caused it, looking inside I/O errors, whose `source`
/// skips the error they wrap.
pub(crate) fn causes<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    let mut next = Some(error);
    std::iter::from_fn(move || {
        let current = next?;
        let inner = current
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|inner| inner as &(dyn StdError + 'static));
        next = inner.or_else(|| current.source());
        Some(current)
    })
    .take(32)
}

/// Whether `error` says hyper never wrote the request: its connection
/// closed, or was found closed, before the request was taken to be written
/// (hyper's "canceled": the request handed back unsent). On a kept
/// connection hyper's pool sends such a request again on another; on a new
/// one it fails with this.
pub(crate) fn never_written(error: &(dyn StdError + 'static)) -> bool {
    causes(error).any(|cause| {
        cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_canceled)
    })
}

/// The HTTP status of a reply rmcp kept only as text: an error status it
/// has no variant for (a 401 without `WWW-Authenticate`, a 404) is
/// `"HTTP 401 Unauthorized: <body>"`. The status leads the text, before
/// anything of the server's.
pub(crate) fn unexpected_status(message: &str) -> Option<u16> {
    message
        .strip_prefix("HTTP ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::never_written;
    use hyper::body::Bytes;
    use tokio::io::AsyncReadExt;

    async fn sent_on(
        io: tokio::io::DuplexStream,
    ) -> Result<hyper::Response<hyper::body::Incoming>, hyper::Error> {
        let io = hyper_util::rt::TokioIo::new(io);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
        tokio::spawn(connection);
        let request = hyper::Request::post("/mcp")
            .header("host", "localhost")
            .body(http_body_util::Full::new(Bytes::from_static(b"{}")))
            .expect("a request");
        sender.send_request(request).await
    }

    #[tokio::test]
    async fn a_request_on_a_connection_closed_before_it_was_written_was_never_written() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        drop(theirs);
        let failed = sent_on(ours).await.expect_err("the connection is closed");
        assert!(never_written(&failed), "{failed:?}");
        // As reqwest and rmcp carry it: inside an I/O error.
        assert!(never_written(&std::io::Error::other(failed)));
    }

    #[tokio::test]
    async fn a_request_written_then_unanswered_may_have_been_read() {
        let (ours, mut theirs) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(async move {
            let mut read = vec![0u8; 1024];
            let n = theirs.read(&mut read).await.expect("the request");
            assert!(n > 0);
        });
        let failed = sent_on(ours).await.expect_err("closed without an answer");
        server.await.expect("the server read the request");
        assert!(!never_written(&failed), "{failed:?}");
    }
}
