//! What the client sent that must never come back to its caller in a text:
//! its credentials — a bearer token, a provider's or an OAuth login's
//! tokens, the values of its headers — and, while calls run, the secret
//! values of their arguments. Envelopes are masked by them, and so are the
//! questions a server asks the caller's handlers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;
use tokio::sync::Notify;

use crate::envelope::ErrorEnvelope;
use crate::redact::values::{Masker, SecretValues};

/// The most tokens remembered: a provider's, or an OAuth login's, last.
/// Header values are kept apart, for good: new tokens never push them out.
/// A server that refuses each token it gets (every refusal makes a
/// minting provider hand out a new one) pushes the oldest out after this
/// many, and may then quote it: a bound on memory, documented
/// (SECURITY.md), set well above the tokens a client lives through.
const MAX_CREDENTIALS: usize = 64;

/// What a client sent that no text it returns may quote.
#[derive(Default)]
pub(crate) struct Sent {
    /// The tokens sent, the newest last.
    credentials: Mutex<Vec<Arc<str>>>,
    /// The values of the headers sent with every request.
    fixed: Mutex<Vec<Arc<str>>>,
    /// The calls in flight: their secret values, how many questions the
    /// server asked while each ran, and how each is told the server asked
    /// too many.
    calls: Mutex<HashMap<u64, Arc<InFlight>>>,
    next: AtomicU64,
    /// How many times a credential was remembered: what was made of the
    /// credentials is made again when it moved.
    generation: AtomicU64,
}

/// A call in flight, as the questions of 2025-11-25 see it.
pub(crate) struct InFlight {
    values: SecretValues,
    asked: AtomicU64,
    flooded: Notify,
}

impl InFlight {
    /// Completes once the server asked more questions during the call than
    /// the client answers.
    pub(crate) async fn flooded(&self) {
        self.flooded.notified().await;
    }
}

impl std::fmt::Debug for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sent").finish_non_exhaustive()
    }
}

impl Sent {
    /// Remembers the `Authorization` value `value` as sent with every
    /// request, for good, in each form a server may quote it in: whole, the
    /// credentials after its scheme (`Bearer t0ken` quoted as `t0ken`), and
    /// for `Basic`, the pair decoded and its password.
    pub(crate) fn fixed_authorization(&self, value: &str) {
        self.fixed_credential(&Arc::from(value));
        let Some((scheme, credentials)) = value.trim().split_once([' ', '\t']) else {
            return;
        };
        let credentials = credentials.trim();
        if credentials.is_empty() {
            return;
        }
        self.fixed_credential(&Arc::from(credentials));
        if !scheme.eq_ignore_ascii_case("basic") {
            return;
        }
        // Padded or not, in either alphabet: as servers read it.
        let indifferent =
            GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
        let decoded = [alphabet::STANDARD, alphabet::URL_SAFE]
            .iter()
            .find_map(|alphabet| {
                GeneralPurpose::new(alphabet, indifferent)
                    .decode(credentials)
                    .ok()
            });
        let Some(pair) = decoded.and_then(|pair| String::from_utf8(pair).ok()) else {
            return;
        };
        if let Some((_, password)) = pair.split_once(':')
            && !password.is_empty()
        {
            self.fixed_credential(&Arc::from(password));
        }
        self.fixed_credential(&Arc::from(pair));
    }

    /// Remembers `value` as sent with every request, for good: a header's.
    pub(crate) fn fixed_credential(&self, value: &Arc<str>) {
        let mut fixed = self.fixed.lock().unwrap_or_else(PoisonError::into_inner);
        if !fixed.iter().any(|known| known == value) {
            fixed.push(Arc::clone(value));
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Remembers `credential` as sent: a token (the 64 sent last are
    /// kept). One sent again is the newest again: a refresh token kept
    /// through many access tokens is not forgotten while it is used.
    pub(crate) fn credential(&self, credential: &Arc<str>) {
        let mut credentials = self
            .credentials
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = credentials.iter().position(|known| known == credential) {
            let known = credentials.remove(at);
            credentials.push(known);
            return;
        }
        if credentials.len() == MAX_CREDENTIALS {
            credentials.remove(0);
        }
        credentials.push(Arc::clone(credential));
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times a credential was remembered so far.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// The credentials sent, as values to mask.
    pub(crate) fn credentials(&self) -> Vec<Value> {
        let fixed = self.fixed.lock().unwrap_or_else(PoisonError::into_inner);
        let tokens = (self.credentials.lock()).unwrap_or_else(PoisonError::into_inner);
        (fixed.iter().chain(tokens.iter()))
            .map(|credential| Value::String(credential.to_string()))
            .collect()
    }

    /// `envelope`, quoting none of the credentials sent.
    pub(crate) fn hide_credentials(&self, mut envelope: ErrorEnvelope) -> ErrorEnvelope {
        if let Some(masker) = self.credentials_masker() {
            masker.envelope(&mut envelope);
        }
        envelope
    }

    /// `text`, quoting none of the credentials sent.
    #[cfg(feature = "oauth")]
    pub(crate) fn hide_in(&self, text: &str) -> String {
        match self.credentials_masker() {
            Some(masker) => masker.text(text).into_owned(),
            None => text.to_owned(),
        }
    }

    /// What masks the credentials sent so far, if any was.
    fn credentials_masker(&self) -> Option<Masker> {
        let mut values = SecretValues::default();
        for credential in self.credentials() {
            values.add(&credential);
        }
        values.masker()
    }

    /// Registers a call in flight with the secret `values` of its
    /// arguments, until the returned guard drops.
    pub(crate) fn running(&self, values: SecretValues) -> Running<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let call = Arc::new(InFlight {
            values,
            asked: AtomicU64::new(0),
            flooded: Notify::new(),
        });
        self.lock_calls().insert(id, Arc::clone(&call));
        Running {
            sent: self,
            id,
            call,
        }
    }

    /// Every secret value a question might quote: the credentials and the
    /// secret values of every call in flight.
    pub(crate) fn everything(&self) -> SecretValues {
        let mut values = SecretValues::default();
        for credential in self.credentials() {
            values.add(&credential);
        }
        for call in self.lock_calls().values() {
            values.merge(&call.values);
        }
        values
    }

    /// Counts a question the server asked (2025-11-25) against every call
    /// in flight; a call that has seen more than `most` is told it was
    /// flooded. Whether the question may still be answered: asked while no
    /// call is in flight, only when `outside_a_call` — nothing bounds those,
    /// and a server has no call of the client's to ask for.
    pub(crate) fn asked(&self, most: u64, outside_a_call: bool) -> bool {
        let calls = self.lock_calls();
        if calls.is_empty() {
            return outside_a_call;
        }
        let mut answerable = true;
        for call in calls.values() {
            if call.asked.fetch_add(1, Ordering::Relaxed) + 1 > most {
                call.flooded.notify_one();
                answerable = false;
            }
        }
        answerable
    }

    fn lock_calls(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<InFlight>>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A call in flight; it is forgotten when this drops.
pub(crate) struct Running<'a> {
    sent: &'a Sent,
    id: u64,
    call: Arc<InFlight>,
}

impl Running<'_> {
    /// The call, to watch for a flood of questions.
    pub(crate) fn call(&self) -> &InFlight {
        &self.call
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.sent.lock_calls().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A question asked while no call runs is answered only where it may
    /// be (a server listing the client's roots as it starts); one asked
    /// during a call is counted against it.
    #[test]
    fn a_question_outside_any_call_is_answered_only_where_it_may_be() {
        let sent = Sent::default();
        assert!(!sent.asked(16, false));
        assert!(sent.asked(16, true));
        let running = sent.running(SecretValues::default());
        assert!(sent.asked(1, false));
        assert!(!sent.asked(1, false), "past the call's bound");
        drop(running);
        assert!(!sent.asked(16, false));
    }

    /// However many tokens a provider mints (a server that refuses each,
    /// say), a header's value stays masked.
    #[test]
    fn new_tokens_never_push_a_headers_value_out() {
        let sent = Sent::default();
        sent.fixed_credential(&Arc::from("key-v4lue-77e1"));
        for n in 0..100 {
            sent.credential(&Arc::from(format!("token-{n}").as_str()));
        }
        let credentials = sent.credentials();
        assert!(credentials.contains(&Value::from("key-v4lue-77e1")));
        for n in 36..100 {
            let token = Value::from(format!("token-{n}"));
            assert!(credentials.contains(&token), "the last 64 stay: {n}");
        }
        assert!(
            !credentials.contains(&Value::from("token-35")),
            "the oldest tokens go"
        );
    }

    /// A refresh token noted at every renewal outlives the access tokens it
    /// brought: it is the newest again each time.
    #[test]
    fn a_credential_sent_again_is_kept_past_the_newer_ones() {
        let sent = Sent::default();
        let refresh: Arc<str> = Arc::from("refresh-77e1");
        // Each renewal: the refresh token noted, then the access token sent;
        // the next refresh, which may be refused quoting it, comes after.
        for n in 0..40 {
            sent.credential(&refresh);
            sent.credential(&Arc::from(format!("access-{n}").as_str()));
            let credentials = sent.credentials();
            assert!(credentials.contains(&Value::from("refresh-77e1")), "{n}");
            assert!(credentials.contains(&Value::from(format!("access-{n}"))));
        }
    }
}
