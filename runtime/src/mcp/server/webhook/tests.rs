//! The webhook's notices: their text, their signature, where they go.

use super::*;

#[tokio::test]
async fn an_unreachable_webhook_is_reported_without_its_address() {
    // Nothing listens on port 1 of this machine.
    let secret = "http://127.0.0.1:1/services/T0/B0/SECRET-TOKEN";
    let error = reqwest::Client::new()
        .post(secret)
        .send()
        .await
        .expect_err("nothing listens there");
    assert!(
        error.to_string().contains("SECRET-TOKEN"),
        "reqwest shows it"
    );
    let envelope = unreachable(error);
    assert!(
        !envelope.message().contains("SECRET-TOKEN"),
        "{}",
        envelope.message()
    );
    assert!(envelope.not_applied());
}

/// A receiver that answers with a redirect: the notice is not sent
/// where the redirect points (plain HTTP, an internal host), and is not
/// delivered.
#[tokio::test]
async fn a_redirect_is_not_followed() {
    use axum::http::{StatusCode, header::LOCATION};
    use axum::routing::post;
    let (moved, mut elsewhere) = tokio::sync::mpsc::unbounded_channel::<()>();
    let app = axum::Router::new()
        .route(
            "/hook",
            post(|| async { (StatusCode::TEMPORARY_REDIRECT, [(LOCATION, "/elsewhere")]) }),
        )
        .route(
            "/elsewhere",
            post(move || {
                let _ = moved.send(());
                async { StatusCode::OK }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let approval = ApprovalRecord::new(
        "digest",
        "cap@0",
        "refund",
        json!({}),
        json!({"message": "Refund of $640 exceeds the $500 cap"}),
        Some("agent".to_owned()),
        "refunds:approve",
        0,
    );
    assert_eq!(Webhook::new(url).notify(&approval).await, Delivery::Refused);
    assert!(
        elsewhere.try_recv().is_err(),
        "sent where the redirect pointed"
    );
}

/// An approval of `refund` by `caller`, its block saying `message`.
fn approval_saying(message: &str, caller: &str) -> ApprovalRecord {
    let shown = json!({"message": message, "reason": "OVER_CAP"});
    let caller = Some(caller.to_owned());
    ApprovalRecord::new(
        "digest",
        "cap@0",
        "refund",
        json!({}),
        shown,
        caller,
        "refunds:approve",
        0,
    )
}

/// The example of the Standard Webhooks specification.
#[test]
fn a_signature_is_the_one_standard_webhooks_gives() {
    let webhook = Webhook::new("https://hooks.example.com/x")
        .signing_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    let key = webhook.signing.first().expect("signed");
    assert_eq!(
        signature(
            key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#
        ),
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    );
}

#[test]
fn a_secret_not_of_the_standard_form_is_refused() {
    // Unpadded, as padded: read.
    let _ = Webhook::new("https://h.example/x")
        .signing_secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8");
    // Without its prefix, with a line's end: read.
    let _ =
        Webhook::new("https://h.example/x").signing_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n");
    for secret in ["whsec_not base64", "whsec_c2hvcnQ=", "whsec_", ""] {
        let made =
            std::panic::catch_unwind(|| Webhook::new("https://h.example/x").signing_secret(secret));
        assert!(made.is_err(), "{secret}");
    }
}

/// A receiver that checks each post's signature as Standard Webhooks
/// says: the notice is delivered, signed, its id the ticket.
#[tokio::test]
async fn a_signed_notice_carries_a_signature_of_the_bytes_it_sends() {
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::post;
    let (got, mut received) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let _ = got.send((headers, body));
            async { StatusCode::NO_CONTENT }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let approval = approval_saying("Refund of $640 exceeds the $500 cap", "agent");
    assert_eq!(
        Webhook::new(&url)
            .signing_secret(secret)
            .notify(&approval)
            .await,
        Delivery::Delivered
    );
    let (headers, body) = received.recv().await.expect("posted");
    let header = |name: &str| headers[name].to_str().unwrap().to_owned();
    assert_eq!(header("webhook-id"), approval.id);
    let timestamp: u64 = header("webhook-timestamp").parse().unwrap();
    let expected = expected_signature(secret, &approval.id, timestamp, &body);
    assert_eq!(header("webhook-signature"), expected);
    let notice: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(notice["ticket"], approval.id);

    // During a rotation, signed with the old secret and the new: each
    // signature, side by side, holds for its own secret.
    let new = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    assert_eq!(
        Webhook::new(&url)
            .signing_secret(secret)
            .signing_secret(new)
            .notify(&approval)
            .await,
        Delivery::Delivered
    );
    let (headers, body) = received.recv().await.expect("posted");
    let header = |name: &str| headers[name].to_str().unwrap().to_owned();
    let timestamp: u64 = header("webhook-timestamp").parse().unwrap();
    let signatures = header("webhook-signature");
    let both: Vec<&str> = signatures.split(' ').collect();
    assert_eq!(
        both,
        [
            expected_signature(secret, &approval.id, timestamp, &body),
            expected_signature(new, &approval.id, timestamp, &body),
        ]
    );
}

/// The signature a receiver expects, from the specification: the key is
/// the secret's Base64 after `whsec_`; the message `{id}.{timestamp}.{body}`.
fn expected_signature(secret: &str, id: &str, timestamp: u64, body: &[u8]) -> String {
    use base64::Engine;
    use hmac::{Hmac, KeyInit, Mac};
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .unwrap();
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    let signed = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(signed)
    )
}

#[test]
fn what_the_caller_chose_cannot_make_links_or_mentions() {
    let approval = approval_saying(
        "Refund of <https://evil.example/inbox|Decide: https://tools.example.com/inbox> & more",
        "<!channel>",
    );
    let notice = Webhook::new("https://hooks.example.com/x")
        .inbox_url("https://tools.example.com/inbox")
        .notice(&approval);
    let text = notice["text"].as_str().unwrap();
    assert!(
        !text.contains("<!channel>") && !text.contains("<https://evil"),
        "{text}"
    );
    assert!(text.contains("&lt;!channel&gt;"), "{text}");
    assert!(text.contains("&amp; more"), "{text}");
    // The link to the real inbox is the notice's own.
    assert!(
        text.ends_with(&format!(
            "Decide: https://tools.example.com/inbox/approvals/{}",
            approval.id
        )),
        "{text}"
    );
    // The raw fields beside it are as they are.
    assert_eq!(notice["caller"], "<!channel>");
}

#[test]
fn what_the_caller_chose_cannot_turn_the_rest_of_the_line() {
    let approval = approval_saying(
        "Refund of order IN-\u{202e}0621 exceeds the cap",
        "agent\u{200b}",
    );
    let notice = Webhook::new("https://hooks.example.com/x").notice(&approval);
    let text = notice["text"].as_str().unwrap();
    assert!(
        !text.contains('\u{202e}') && !text.contains('\u{200b}'),
        "{text}"
    );
    assert!(
        text.contains("IN-\\u{202e}0621") && text.contains("agent\\u{200b}"),
        "{text}"
    );
}

#[test]
fn what_the_caller_chose_is_read_as_text_in_a_markdown_chat_too() {
    let approval = approval_saying(
        "Refund [Decide](https://evil.example/inbox) @channel `x`",
        "@all",
    );
    let notice = Webhook::new("https://hooks.example.com/x").notice(&approval);
    let text = notice["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "`Refund [Decide](https://evil.example/inbox) @channel \\u{0060}x\\u{0060}` — `refund` by `@all` waits"
        ),
        "{text}"
    );
}

/// A receiver that is rate-limited says when to come back (`Retry-After`,
/// as Slack's 429 does): the notice is posted again no sooner.
#[tokio::test]
async fn a_receivers_retry_after_is_waited_for() {
    use axum::http::{HeaderMap, StatusCode, header::RETRY_AFTER};
    use axum::routing::post;
    use std::sync::{Arc, Mutex};
    let posts: Arc<Mutex<Vec<std::time::Instant>>> = Arc::default();
    let seen = Arc::clone(&posts);
    let app = axum::Router::new().route(
        "/hook",
        post(move || {
            let mut posts = seen.lock().unwrap();
            posts.push(std::time::Instant::now());
            let mut headers = HeaderMap::new();
            let status = match posts.len() {
                1 => {
                    headers.insert(RETRY_AFTER, "1".parse().unwrap());
                    StatusCode::TOO_MANY_REQUESTS
                }
                _ => StatusCode::NO_CONTENT,
            };
            async move { (status, headers) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let approval = approval_saying("Refund of $640 exceeds the $500 cap", "agent");
    assert_eq!(
        Webhook::new(url).notify(&approval).await,
        Delivery::Delivered
    );
    let posts = posts.lock().unwrap();
    assert_eq!(posts.len(), 2);
    let waited = posts[1] - posts[0];
    assert!(waited >= Duration::from_secs(1), "{waited:?}");
}

/// A receiver that asks for a longer wait than a notice waits (a minute)
/// is not posted to again now: the notice is not delivered, at once, and
/// is posted again when it is due again.
#[tokio::test]
async fn a_receiver_that_asks_too_long_a_wait_is_not_posted_to_again() {
    use axum::http::{StatusCode, header::RETRY_AFTER};
    use axum::routing::post;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let posts = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&posts);
    let app = axum::Router::new().route(
        "/hook",
        post(move || {
            seen.fetch_add(1, Ordering::SeqCst);
            async { (StatusCode::TOO_MANY_REQUESTS, [(RETRY_AFTER, "120")]) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let approval = approval_saying("Refund of $640 exceeds the $500 cap", "agent");
    let webhook = Webhook::new(url);
    let sent = tokio::time::timeout(Duration::from_secs(30), webhook.notify(&approval)).await;
    assert_eq!(sent.expect("given up at once"), Delivery::NotYet);
    assert_eq!(posts.load(Ordering::SeqCst), 1);
}

/// A notice delivered, or refused for good, is no longer due; one the
/// receiver could not take yet stays due, to be posted again.
#[tokio::test]
async fn a_notice_stays_due_until_the_receiver_takes_or_refuses_it() {
    use crate::store::MemoryStore;
    use axum::http::StatusCode;
    use axum::routing::post;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU16, Ordering};
    let answer = Arc::new(AtomicU16::new(503));
    let answering = Arc::clone(&answer);
    let app = axum::Router::new().route(
        "/hook",
        post(move || {
            let status = StatusCode::from_u16(answering.load(Ordering::SeqCst)).unwrap();
            async move { status }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let store = MemoryStore::new();
    let webhook = Webhook::new(url);
    let due_after = |status: u16| {
        answer.store(status, Ordering::SeqCst);
        let (store, webhook) = (&store, &webhook);
        async move {
            let mut approval = approval_saying("Refund of $640 exceeds the $500 cap", "agent");
            approval.digest = format!("answered-{status}");
            approval.expires_ms = crate::store::now_ms() + 60_000;
            approval.notice_due_ms = Some(approval.created_ms + 300_000);
            store.open_approval(&approval, u64::MAX).await.unwrap();
            let delivery = webhook.deliver(store, &approval).await;
            let kept = store.approval(&approval.id).await.unwrap().unwrap();
            (delivery, kept.notice_due_ms)
        }
    };
    let (delivery, due) = due_after(503).await;
    assert_eq!(delivery, Delivery::NotYet);
    assert!(due.is_some(), "posted again when due");
    assert_eq!(due_after(404).await, (Delivery::Refused, None));
    assert_eq!(due_after(200).await, (Delivery::Delivered, None));
}

/// An opener that finds as many posts under way as may be, for a second,
/// does not wait on to post its notice late, beside a runner's: it leaves
/// it due.
#[tokio::test]
async fn an_opener_without_room_leaves_its_notice_due() {
    use crate::store::MemoryStore;
    use axum::routing::post;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let posts = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&posts);
    let app = axum::Router::new().route(
        "/hook",
        post(move || {
            seen.fetch_add(1, Ordering::SeqCst);
            async { axum::http::StatusCode::OK }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let store = Arc::new(MemoryStore::new());
    let mut approval = approval_saying("Refund of $640 exceeds the $500 cap", "agent");
    approval.expires_ms = crate::store::now_ms() + 60_000;
    approval.notice_due_ms = Some(approval.created_ms + 300_000);
    store.open_approval(&approval, u64::MAX).await.unwrap();
    let webhook = Webhook::new(url);
    let busy = webhook.room(MOST_POSTING).expect("room for all");
    assert!(webhook.room(1).is_none());
    // Given up after a while, not waited on for good.
    let given_up =
        tokio::time::timeout(Duration::from_secs(30), webhook.deliver(&*store, &approval));
    assert_eq!(given_up.await.expect("given up"), Delivery::NotYet);
    let kept = store.approval(&approval.id).await.unwrap().unwrap();
    assert_eq!(kept.notice_due_ms, approval.notice_due_ms, "still due");
    assert_eq!(posts.load(Ordering::SeqCst), 0);

    // Room made while it waits (a runner's claim answered): posted.
    use futures_util::FutureExt;
    let mut opener = std::pin::pin!(webhook.deliver(&*store, &approval));
    assert!((&mut opener).now_or_never().is_none(), "waits for room");
    drop(busy);
    assert_eq!(opener.await, Delivery::Delivered);
    assert_eq!(posts.load(Ordering::SeqCst), 1);
}
