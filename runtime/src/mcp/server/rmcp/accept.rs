//! Serving a router on a listener, each connection under bounds of its
//! own: `TCP_NODELAY`, and a request head read within [`HEAD_TIMEOUT`] —
//! a client that opens a connection and sends its head slowly, or nothing
//! at all, holds no socket for longer (axum's `serve` sets no timer, and
//! hyper then sets no such bound).

use std::io;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;

/// How long a connection has to send a request's head, from the moment
/// the server waits for it — on a kept connection, from the end of the
/// last reply: then it is closed. Longer than the keep-alive of common
/// proxies toward their upstreams (nginx's 60 s), so that they let go of an
/// idle connection first.
pub(super) const HEAD_TIMEOUT: Duration = Duration::from_secs(75);

/// Serves `router` on `listener` until accepting fails for good.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
) -> io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // One connection's failure, before it was accepted.
            Err(error) if is_connection_error(&error) => continue,
            // Out of file descriptors, or memory: as axum does, wait, and
            // accept again.
            Err(error) => {
                tracing::error!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        // A connection that cannot take the option still serves.
        let _ = stream.set_nodelay(true);
        let connection = http
            .serve_connection(
                TokioIo::new(stream),
                TowerToHyperService::new(router.clone()),
            )
            .with_upgrades();
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}

/// Whether `error` is one connection's, not the listener's.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
