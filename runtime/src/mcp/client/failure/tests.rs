use super::{retry_after_delay, tls_failure};
use crate::reasons;
use std::time::{Duration, SystemTime};

fn wrapped(error: rustls::Error) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, error)
}

#[test]
fn a_tls_failure_past_connecting_is_the_certificates_only_when_it_ends_a_handshake() {
    let garbled = wrapped(rustls::Error::DecryptError);
    let refused = tls_failure(&garbled, true).expect("while connecting, the handshake's");
    assert_eq!(refused.reason(), Some(reasons::TLS_CERTIFICATE));
    assert!(refused.not_applied());
    // On a kept connection a request went out on: the server may have
    // read it.
    assert!(tls_failure(&garbled, false).is_none());
    // TLS 1.3: a refused client certificate is told after the client
    // finished its part of the handshake, and nothing was read.
    let wanted = wrapped(rustls::Error::AlertReceived(
        rustls::AlertDescription::CertificateRequired,
    ));
    let refused = tls_failure(&wanted, false).expect("a handshake's end");
    assert!(refused.not_applied());
}

#[test]
fn retry_after_is_read_in_seconds_or_as_a_date() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
    let after = |value| retry_after_delay(value, now);
    assert_eq!(after(" 120 "), Some(Duration::from_secs(120)));
    // 2015-10-21 07:28:00 UTC is `now`; the three forms RFC 9110 reads.
    for date in [
        "Wed, 21 Oct 2015 07:30:00 GMT",
        "Wednesday, 21-Oct-15 07:30:00 GMT",
        "Wed Oct 21 07:30:00 2015",
    ] {
        assert_eq!(after(date), Some(Duration::from_secs(120)), "{date}");
    }
    assert_eq!(
        after("Wed, 21 Oct 2015 07:00:00 GMT"),
        None,
        "a date passed: the policy's backoff"
    );
    for unreadable in ["-1", "1.5", "soon", ""] {
        assert_eq!(after(unreadable), None, "{unreadable:?}");
    }
}
