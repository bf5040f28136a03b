//! A notice for each new approval: a JSON `POST` (Slack-compatible: its
//! `text` is the message) to a webhook, so that the people who decide learn
//! that something waits for them. Sent by the replica that opened the
//! approval, once; retried a bounded number of times, by this crate's own
//! retry loop, when the receiver is down or busy.

use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};

use crate::envelope::ErrorEnvelope;
use crate::mcp::server::visible::visible;
use crate::retry::RetryPolicy;
use crate::store::{ApprovalRecord, Store};

/// Where notices of new approvals are posted
/// ([`ToolSet::approval_webhook`](crate::mcp::ToolSet::approval_webhook)).
///
/// Each notice is a JSON object whose `text` says what waits, for whom, and
/// where to decide it — a Slack incoming webhook shows it as it is, and
/// what the caller chose is escaped in it (`&`, `<`, `>`) so that it makes
/// no mention and no `<url|label>` link of its own (a bare address in it
/// stays text Slack may link; the notice's own link is the `Decide:` at its
/// end) — with
/// the approval's fields beside it (`ticket`, `tool`, `caller`,
/// `approvers`, `reason`, `expiresAtMs`, and `url` when the inbox's address
/// is given). A receiver that answers 5xx or 429, or cannot be reached, is
/// tried again, 4 times in all within about 2 seconds — or, when it says
/// when (`Retry-After`, a rate limit's), after that wait, if it is a minute
/// or less (a receiver that asks more is not posted to again now); any
/// other answer ends it, and the failure is logged without the webhook's
/// address. A notice not delivered stays due, kept with its approval in
/// the store, and is posted again [later](Self::resend_after) by any
/// replica that shares the store, until it is delivered or refused, or
/// its approval no longer waits for a decision. A retry
/// may repeat a notice the receiver took (a timeout, a 5xx after it): every
/// post of one notice carries the header `Idempotency-Key`, its ticket, to
/// drop repeats by. A notice never holds the call up: it is sent in the
/// background.
///
/// With a [signing secret](Self::signing_secret), each post is signed as
/// [Standard Webhooks](https://www.standardwebhooks.com) says, so that the
/// receiver can tell a notice of this set from one anyone who learned its
/// address could post; with two, during a rotation, by each.
///
/// ```no_run
/// use tool_envelope::mcp::Webhook;
///
/// # fn main() -> Result<(), std::env::VarError> {
/// let webhook = Webhook::new("https://hooks.example.com/approvals")
///     .inbox_url("https://tools.example.com/inbox")
///     // The secret the receiver was given, `whsec_…`: never in the code.
///     .signing_secret(&std::env::var("APPROVALS_WEBHOOK_SECRET")?);
/// # let _ = webhook;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Webhook {
    url: String,
    inbox: Option<String>,
    /// The keys each post is signed with, if any: more than one while a
    /// secret is rotated.
    signing: Vec<std::sync::Arc<[u8]>>,
    client: reqwest::Client,
    policy: RetryPolicy,
    /// How long a notice not delivered waits before it is posted again.
    resend_after: Duration,
    /// A permit for each notice this webhook may be posting at once.
    posting: std::sync::Arc<tokio::sync::Semaphore>,
}

impl Webhook {
    /// Notices posted to `url`.
    ///
    /// # Panics
    ///
    /// When the TLS backend cannot start, as `reqwest::Client::new` does
    /// (no other client, one that follows redirects or waits without end,
    /// is made in its place).
    pub fn new(url: impl Into<String>) -> Self {
        Webhook {
            url: url.into(),
            inbox: None,
            signing: Vec::new(),
            // A redirect is not followed: a receiver's answer does not send
            // the notice (the caller, the block) somewhere else.
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                // Never a client without those rules in its place.
                .expect("the HTTP client's TLS backend starts"),
            policy: RetryPolicy::default()
                .max_attempts(4)
                .exponential(Duration::from_millis(200), Duration::from_secs(2))
                .max_retry_after(MOST_RETRY_AFTER),
            resend_after: RESEND_AFTER,
            posting: std::sync::Arc::new(tokio::sync::Semaphore::new(MOST_POSTING)),
        }
    }

    /// How long after its approval was opened a notice not delivered — the
    /// receiver down, busy or out of reach after its tries, the replica
    /// that opened the approval stopped, its store failed as it kept it —
    /// is posted again, by the runner of any replica with a webhook that
    /// shares the store (5 minutes by default). Then again, for as long as
    /// the approval waits for a decision, after waits that double with its
    /// age, never shorter than `wait` nor than 5 minutes (one replica's
    /// claim on a notice, held while its tries may still go on: about 40
    /// seconds with a receiver that never answers, 4 minutes with one that
    /// asks to wait a minute each time). A notice the receiver refused (a
    /// 4xx but 429, a redirect) is not posted again: it would be refused
    /// again.
    ///
    /// A `wait` shorter than the opener's own tries lets a runner post the
    /// notice beside them.
    #[must_use]
    pub fn resend_after(mut self, wait: Duration) -> Self {
        self.resend_after = wait;
        self
    }

    /// [`resend_after`](Self::resend_after), in milliseconds.
    pub(crate) fn resend_after_ms(&self) -> i64 {
        i64::try_from(self.resend_after.as_millis()).unwrap_or(i64::MAX)
    }

    /// The shortest wait a runner's claim on a notice holds, in
    /// milliseconds: `resend_after`, and never less than one notice's
    /// tries may take.
    pub(crate) fn claim_ms(&self) -> i64 {
        let wait = self.resend_after.max(LONGEST_POSTING);
        i64::try_from(wait.as_millis()).unwrap_or(i64::MAX)
    }

    /// Room to post up to `most` more notices now, beside those posted
    /// already: as many as are free, or `None` when none is.
    pub(crate) fn room(&self, most: usize) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let free = self.posting.available_permits().min(most);
        let free = u32::try_from(free).ok().filter(|free| *free > 0)?;
        std::sync::Arc::clone(&self.posting)
            .try_acquire_many_owned(free)
            .ok()
    }

    /// Posts the notice of `approval`, which its opener holds no claim on,
    /// if there is room to post it now, and keeps in `store` that it is no
    /// longer due, once it was delivered or refused for good; left due
    /// when it may be delivered later. With no room (as many posts under
    /// way as may be) within a second — a runner's claim holds its room
    /// for a moment — it is not posted here: it stays due, and a runner
    /// posts it under a claim, not late, here, beside the runner's.
    pub(crate) async fn deliver(&self, store: &dyn Store, approval: &ApprovalRecord) -> Delivery {
        let room = match self.room(1) {
            Some(room) => Some(room),
            None => {
                let waited = std::sync::Arc::clone(&self.posting).acquire_owned();
                tokio::time::timeout(OPENER_WAITS, waited)
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
        };
        match room {
            Some(room) => self.deliver_in(room, store, approval).await,
            None => Delivery::NotYet,
        }
    }

    /// [`deliver`](Self::deliver), in the `room` made for it.
    pub(crate) async fn deliver_in(
        &self,
        room: tokio::sync::OwnedSemaphorePermit,
        store: &dyn Store,
        approval: &ApprovalRecord,
    ) -> Delivery {
        let delivery = self.notify(approval).await;
        drop(room);
        if delivery != Delivery::NotYet
            && let Err(error) = store.notice_sent(&approval.id).await
        {
            tracing::warn!(%error, ticket = %approval.id, "that the approval's notice was posted could not be kept: it is posted again");
        }
        delivery
    }

    /// The inbox's address as people reach it (`https://…/inbox`): each
    /// notice links to its approval there.
    #[must_use]
    pub fn inbox_url(mut self, url: impl Into<String>) -> Self {
        self.inbox = Some(url.into().trim_end_matches('/').to_owned());
        self
    }

    /// Signs every post with `secret`, as [Standard
    /// Webhooks](https://www.standardwebhooks.com) says: the headers
    /// `webhook-id` (the ticket, the same on every post of one notice, as
    /// `Idempotency-Key`), `webhook-timestamp` (Unix seconds, at each post)
    /// and `webhook-signature` (`v1,` and the Base64 of the HMAC-SHA256, with
    /// the secret's bytes, of `{id}.{timestamp}.{body}`). The receiver
    /// checks it with the same secret — the Standard Webhooks libraries do,
    /// in most languages — and drops a post whose timestamp is too old.
    ///
    /// Called again, adds a secret: each post is then signed with each, the
    /// signatures side by side in `webhook-signature` (space-separated, as
    /// the specification has it for a rotation), and a receiver that holds
    /// any one of the secrets accepts it. Rotate by adding the new secret,
    /// giving it to the receiver, then dropping the old one.
    ///
    /// # Panics
    ///
    /// When `secret` is not the Base64 of at least 24 bytes, after `whsec_`
    /// (the form those libraries make and read, of 24 to 64 random bytes):
    /// a misconfigured server should not start.
    #[must_use]
    pub fn signing_secret(mut self, secret: &str) -> Self {
        use base64::Engine;
        // With its padding or without, as the Standard Webhooks libraries
        // read it.
        const WHSEC: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        // Read as those libraries read it: `whsec_` or not, padded or not
        // (and a line's end, from a file, left out).
        let secret = secret.trim();
        let key = WHSEC
            .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
            .ok()
            .filter(|key| key.len() >= 24)
            .expect("a webhook signing secret is the Base64 of 24 bytes or more, after `whsec_`");
        self.signing.push(key.into());
        self
    }

    /// The notice of `approval`.
    pub(crate) fn notice(&self, approval: &ApprovalRecord) -> Value {
        let shown = &approval.shown;
        let message = shown
            .get(crate::keys::MESSAGE)
            .and_then(Value::as_str)
            .unwrap_or("A call waits for an approver");
        let caller = approval.caller.as_deref().unwrap_or("an anonymous caller");
        let url = (self.inbox.as_ref()).map(|inbox| format!("{inbox}/approvals/{}", approval.id));
        // What the caller chose (the block's message quotes its arguments)
        // is a code span, escaped as Slack asks, so that it cannot make a
        // mention or a link — Slack's `<url|label>` or Markdown's
        // `[label](url)` in the chats that read it (a fake "Decide" hiding
        // another address) — nor close the span. Every character that does
        // not show itself is written out, so that none turns the direction
        // of the rest of the line.
        let said = |text: &str| code_span(&visible(text));
        let mut text = format!(
            "{} — {} by {} waits for an approver with {} (ticket {}).",
            said(message),
            said(&approval.tool),
            said(caller),
            said(&approval.approvers),
            approval.id
        );
        if let Some(url) = &url {
            text.push_str(&format!(" Decide: {url}"));
        }
        json!({
            "text": text,
            "ticket": approval.id,
            "tool": approval.tool,
            "caller": approval.caller,
            "approvers": approval.approvers,
            "reason": shown.get(crate::keys::REASON),
            "expiresAtMs": approval.expires_ms,
            "url": url,
        })
    }

    /// Posts the notice of `approval`, retried while the receiver is down
    /// or busy: what became of it.
    pub(crate) async fn notify(&self, approval: &ApprovalRecord) -> Delivery {
        // The bytes signed are the bytes sent.
        let body = serde_json::to_vec(&self.notice(approval)).unwrap_or_default();
        let outcome = self
            .policy
            .retry(|| async {
                // Posted again after a timeout or a 5xx it may have taken:
                // the ticket as the key a receiver drops a repeat by.
                let post = self
                    .client
                    .post(&self.url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .header("Idempotency-Key", &approval.id);
                let post = match self.signing.is_empty() {
                    false => {
                        let timestamp = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |since| since.as_secs());
                        let signatures = (self.signing.iter())
                            .map(|key| signature(key, &approval.id, timestamp, &body))
                            .collect::<Vec<_>>()
                            .join(" ");
                        post.header("webhook-id", &approval.id)
                            .header("webhook-timestamp", timestamp)
                            .header("webhook-signature", signatures)
                    }
                    true => post,
                };
                let sent = post.body(body.clone()).send().await;
                match sent {
                    Ok(response) if response.status().is_success() => Ok(()),
                    Ok(response) => {
                        let status = response.status();
                        let refused = format!("the webhook answered {status}");
                        Err(match status.is_server_error() || status.as_u16() == 429 {
                            // Tried again when the receiver says, if it
                            // does (a rate limit's `Retry-After`), up to
                            // the policy's ceiling.
                            true => match retry_after(&response) {
                                // Not posted again now: later, when the
                                // notice is due again.
                                Some(delay) if delay > MOST_RETRY_AFTER => {
                                    let secs = delay.as_secs();
                                    ErrorEnvelope::transient(format!(
                                        "{refused}, asking to wait {secs} s: longer than a notice waits"
                                    ))
                                    .with_retryable(false)
                                }
                                Some(delay) => {
                                    ErrorEnvelope::transient(refused).with_retry_after(delay)
                                }
                                None => ErrorEnvelope::transient(refused),
                            },
                            false => ErrorEnvelope::validation(refused),
                        })
                    }
                    Err(error) => Err(unreachable(error)),
                }
            })
            .await;
        match outcome.result {
            Ok(()) => Delivery::Delivered,
            Err(escalation) => {
                let delivery = match escalation.envelope.category() {
                    crate::category::ErrorCategory::Transient => Delivery::NotYet,
                    _ => Delivery::Refused,
                };
                tracing::warn!(
                    ticket = %approval.id,
                    attempts = escalation.attempts,
                    again = delivery == Delivery::NotYet,
                    "the approval's notice was not delivered: {}",
                    escalation.envelope.message()
                );
                delivery
            }
        }
    }
}

/// What became of a notice's posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The receiver took it.
    Delivered,
    /// The receiver refused it (a 4xx but 429, a redirect): posted again,
    /// it would be refused again.
    Refused,
    /// The receiver was down, busy or out of reach: posted again later.
    NotYet,
}

/// How long a notice not delivered waits before it is posted again, by
/// default ([`Webhook::resend_after`]).
const RESEND_AFTER: Duration = Duration::from_secs(5 * 60);

/// Longer than one notice's tries may take (4 posts of up to 10 seconds,
/// and up to a minute's wait between two): the shortest claim a runner
/// holds on a notice, so that no other posts it beside those tries.
const LONGEST_POSTING: Duration = Duration::from_secs(5 * 60);

/// How long the replica that opened an approval waits for room to post its
/// notice, when as many are under way as may be (a runner holds the room
/// of what it claims while the store answers).
const OPENER_WAITS: Duration = Duration::from_secs(1);

/// How many notices one webhook posts at once: a receiver that hangs, or a
/// backlog after an outage, holds no more connections than this, and a
/// runner claims no more than are free.
const MOST_POSTING: usize = 16;

/// The longest wait a receiver's `Retry-After` may ask before the notice
/// is posted again.
const MOST_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The delay a receiver's `Retry-After` asks for, if it asks one: none for
/// `0` (the backoff's own delay then, not a post at once).
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?;
    let value = value.to_str().ok()?;
    crate::mcp::retry_after::delay(value, std::time::SystemTime::now())
        .filter(|delay| !delay.is_zero())
}

/// Standard Webhooks' signature of `body`, the post `id` at `timestamp`,
/// with `key`: `v1,` and the Base64 of its HMAC-SHA256.
fn signature(key: &[u8], id: &str, timestamp: u64, body: &[u8]) -> String {
    use base64::Engine;
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(key)
        .expect("HMAC takes a key of any length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    let signed = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(signed)
    )
}

/// `text` as a code span: `&`, `<` and `>` escaped, as Slack's message
/// formatting asks of text that must stay text, and a backtick written out
/// (`\u{0060}`), so that nothing in it is read as a link, a mention or
/// emphasis, in Slack or in a chat that reads Markdown.
fn code_span(text: &str) -> String {
    let escaped = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "\\u{0060}");
    format!("`{escaped}`")
}

/// The failure of a notice that did not reach the webhook: `error` without
/// the webhook's address, which often is its secret (Slack's are), and
/// which reqwest's errors print.
fn unreachable(error: reqwest::Error) -> ErrorEnvelope {
    let connect = error.is_connect();
    let error = error.without_url();
    ErrorEnvelope::transient(format!("the webhook could not be reached: {error}"))
        .with_not_applied(connect)
}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A webhook's address often is its secret (Slack's are): the host only.
        let host = reqwest::Url::parse(&self.url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned));
        f.debug_struct("Webhook")
            .field("host", &host)
            .field("inbox", &self.inbox)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
