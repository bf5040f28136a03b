//! Tests of `classify`.

use super::*;

#[test]
fn io_errors_are_classified_by_kind() {
    let cases = [
        (io::ErrorKind::TimedOut, ErrorCategory::Transient),
        (io::ErrorKind::Interrupted, ErrorCategory::Transient),
        (io::ErrorKind::ConnectionReset, ErrorCategory::Transient),
        (io::ErrorKind::ConnectionRefused, ErrorCategory::Transient),
        (io::ErrorKind::ConnectionAborted, ErrorCategory::Transient),
        (io::ErrorKind::WouldBlock, ErrorCategory::Transient),
        (io::ErrorKind::PermissionDenied, ErrorCategory::Permission),
        (io::ErrorKind::InvalidInput, ErrorCategory::Validation),
        (io::ErrorKind::InvalidData, ErrorCategory::Validation),
        (io::ErrorKind::NotFound, ErrorCategory::Other),
        (io::ErrorKind::Other, ErrorCategory::Other),
    ];
    for (kind, category) in cases {
        let envelope = io::Error::new(kind, "boom").into_envelope();
        assert_eq!(envelope.category(), category, "{kind:?}");
        assert_eq!(
            envelope.is_retryable(),
            category == ErrorCategory::Transient,
            "{kind:?}"
        );
        assert_eq!(envelope.message(), "boom");
    }
}

#[test]
fn io_reason_is_upper_snake_kind() {
    let envelope = io::Error::from(io::ErrorKind::ConnectionRefused).into_envelope();
    assert_eq!(envelope.reason(), Some("CONNECTION_REFUSED"));
    assert!(
        !envelope.not_applied(),
        "a refused connection proves nothing about the call"
    );
    assert!(envelope.clone().into_parts().foreign);
    let envelope = io::Error::from(io::ErrorKind::TimedOut).into_envelope();
    assert!(!envelope.not_applied());
}

#[test]
fn parse_errors_are_validation() {
    let envelope = "x1".parse::<u32>().unwrap_err().into_envelope();
    assert_eq!(envelope.category(), ErrorCategory::Validation);
    assert_eq!(envelope.reason(), Some("INVALID_INTEGER"));
    let envelope = "x1".parse::<f64>().unwrap_err().into_envelope();
    assert_eq!(envelope.category(), ErrorCategory::Validation);
    let envelope = serde_json::from_str::<u32>("\"x\"")
        .unwrap_err()
        .into_envelope();
    assert_eq!(envelope.category(), ErrorCategory::Validation);
    assert_eq!(envelope.reason(), Some("JSON_DATA"));
    assert_eq!(envelope.violations().len(), 1);
}

#[test]
fn original_error_stays_reachable() {
    let envelope = io::Error::new(io::ErrorKind::TimedOut, "slow").into_envelope();
    let source = envelope.source().expect("source");
    assert_eq!(source.to_string(), "slow");
    assert!(source.downcast_ref::<io::Error>().is_some());
    assert!(envelope.downcast_ref::<io::Error>().is_some());
    assert!(envelope.downcast_ref::<std::num::ParseIntError>().is_none());
    // Cloning keeps it, serializing does not carry it.
    assert!(envelope.clone().has_origin());
    let json = serde_json::to_string(&envelope).unwrap();
    let back: ErrorEnvelope = serde_json::from_str(&json).unwrap();
    assert!(!back.has_origin());
    assert_eq!(back, envelope);
}

#[test]
fn envelope_passes_through_unchanged() {
    let inner = ErrorEnvelope::business("Refund blocked by policy threshold")
        .with_alternative("Offer store credit")
        .with_reason("REFUND_CAP");
    let outer = inner.clone().into_envelope();
    assert_eq!(outer, inner);
}

#[cfg(feature = "anyhow")]
#[test]
fn anyhow_passes_envelopes_through_and_calls_the_rest_other() {
    let inner = ErrorEnvelope::transient("rate limited").with_reason("RATE_LIMIT");
    let envelope = anyhow::Error::new(inner.clone()).into_envelope();
    assert_eq!(envelope, inner);

    let error =
        anyhow::Error::new(io::Error::from(io::ErrorKind::TimedOut)).context("loading orders");
    let envelope = error.into_envelope();
    assert_eq!(
        envelope.category(),
        ErrorCategory::Transient,
        "classified by the io::Error inside"
    );
    assert!(envelope.is_retryable());
    assert_eq!(envelope.reason(), Some("TIMED_OUT"));
    assert!(envelope.message().starts_with("loading orders: "));
    assert!(envelope.downcast_ref::<anyhow::Error>().is_some());

    let envelope = anyhow::anyhow!("the config is missing").into_envelope();
    assert_eq!(envelope.category(), ErrorCategory::Other);
    assert!(!envelope.is_retryable());
}
