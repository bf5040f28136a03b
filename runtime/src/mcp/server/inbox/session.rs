//! Who is signed in to the inbox: a session kept in a cookie signed with
//! HMAC-SHA256 (the token a person signed in with is never kept), and the
//! CSRF token every form carries, bound to that session. Signing out
//! redeems the session's id in the store ([`ended`]), so the same cookie,
//! replayed on any replica sharing the store, is a session no more; ending
//! every session of a person redeems the epoch their sessions were signed
//! in with ([`epoch`]).

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::caller::Caller;
use crate::store::now_ms;

/// The session cookie's name.
pub(super) const SESSION: &str = "tool_envelope_inbox";

/// The cookie that binds the sign-in form to the browser that got it.
pub(super) const SIGN_IN: &str = "tool_envelope_sign_in";

/// How long a session lasts.
pub(super) const SESSION_MS: i64 = 8 * 60 * 60 * 1000;

/// How long after its cookie runs out a signed-out session stays ended in
/// the store: the clocks of the replicas sharing it may differ by as much.
pub(super) const ENDED_MARGIN_MS: i64 = 10 * 60 * 1000;

/// The key sessions and forms are signed with, and the inbox they are
/// signed for ([`for_inbox`](Keys::for_inbox)).
#[derive(Clone)]
pub(super) struct Keys {
    key: Vec<u8>,
    /// The service and the scope of the inbox, and its store's ledger, in
    /// every signature: a session or a form of one inbox is nothing to
    /// another that shares the key, nor to one whose store never saw it
    /// signed out of.
    audience: Vec<u8>,
}

/// What a session cookie says: who, with which scopes, until when, the
/// session's own id, and the epoch of the person's sessions it began in
/// (a cookie from before epochs is of the first).
#[derive(Serialize, Deserialize)]
struct Claims {
    sub: String,
    scopes: Vec<String>,
    exp: i64,
    sid: String,
    #[serde(default)]
    epoch: u64,
}

/// A session read from its cookie.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Session {
    /// Who signed in, with the scopes they had then.
    pub(super) caller: Caller,
    /// Its id: random, one for each sign-in.
    pub(super) id: String,
    /// When it ends, in milliseconds since the epoch.
    pub(super) until_ms: i64,
    /// The epoch of its person's sessions it began in ([`epoch`]).
    pub(super) epoch: u64,
}

/// The single-use nonce ([`Store::redeem`](crate::store::Store::redeem))
/// that says the session `id` was signed out of.
pub(super) fn ended(id: &str) -> String {
    format!("inbox-session:{id}")
}

/// The single-use nonce that says every session `subject` signed in with
/// during their epoch `n` was ended ([`Inbox::end_sessions_of`]). Redeemed
/// for good, never swept: the redeemed epochs of a person are always
/// `0..n`, and a sign-in takes the first that is not.
///
/// [`Inbox::end_sessions_of`]: super::Inbox::end_sessions_of
pub(super) fn epoch(service: &str, subject: &str, n: u64) -> String {
    // The number first, digits only, then the pair as JSON: no two
    // (service, subject, n) give one nonce. A person of the same name in
    // another service sharing the store may be someone else.
    format!(
        "inbox-sessions:{n}:{}",
        serde_json::json!([service, subject])
    )
}

impl Keys {
    /// Keys made from `key` (32 bytes or more).
    pub(super) fn new(key: Vec<u8>) -> Self {
        Keys {
            key,
            audience: Vec::new(),
        }
    }

    /// The same key, signing for the inbox of `service` entered with
    /// `scope`, on the store whose ledger is `ledger`
    /// ([`Store::ledger`](crate::store::Store::ledger)): a cookie or form
    /// of another service's inbox, or of an inbox entered with another
    /// scope, does not hold here — nor one signed on another store, whose
    /// record of ended sessions this store has not (a process restarted on
    /// a new in-memory store would otherwise take back a cookie signed out
    /// of before).
    pub(super) fn for_inbox(mut self, service: &str, scope: &str, ledger: &str) -> Self {
        self.audience = serde_json::json!([service, scope, ledger])
            .to_string()
            .into_bytes();
        self
    }

    /// A random key: sessions last as long as the process.
    pub(super) fn random() -> Self {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key).expect("the operating system gives random bytes");
        Keys::new(key)
    }

    fn mac(&self, purpose: &str, value: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any size");
        // The audience is JSON, which holds no NUL: it ends where it ends.
        mac.update(&self.audience);
        mac.update(&[0]);
        mac.update(purpose.as_bytes());
        mac.update(&[0]);
        mac.update(value.as_bytes());
        mac
    }

    fn sign(&self, purpose: &str, value: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(purpose, value).finalize().into_bytes())
    }

    fn verify(&self, purpose: &str, value: &str, signature: &str) -> bool {
        let Ok(signature) = URL_SAFE_NO_PAD.decode(signature) else {
            return false;
        };
        self.mac(purpose, value).verify_slice(&signature).is_ok()
    }

    /// The cookie value of a session of `caller`, from now until
    /// [`session_until`], in the
    /// `epoch` of their sessions.
    pub(super) fn session_of(&self, caller: &Caller, epoch: u64) -> String {
        let claims = Claims {
            sub: caller.subject().to_owned(),
            scopes: caller.scopes().map(str::to_owned).collect(),
            exp: session_until(caller),
            sid: crate::store::new_id(),
            epoch,
        };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap_or_default());
        let signature = self.sign("session", &payload);
        format!("{payload}.{signature}")
    }

    /// The session `cookie` holds, if it is one this key signed and its
    /// time has not run out (whether it was signed out of, the store says).
    pub(super) fn session(&self, cookie: &str) -> Option<Session> {
        let (payload, signature) = cookie.split_once('.')?;
        if !self.verify("session", payload, signature) {
            return None;
        }
        let claims: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
        (claims.exp > now_ms()).then(|| Session {
            caller: Caller::new(claims.sub, claims.scopes),
            id: claims.sid,
            until_ms: claims.exp,
            epoch: claims.epoch,
        })
    }

    /// The CSRF token of the forms shown to the session `cookie`.
    pub(super) fn csrf_of(&self, cookie: &str) -> String {
        self.sign("csrf", cookie)
    }

    /// Whether `token` is the CSRF token of the session `cookie`.
    pub(super) fn csrf_holds(&self, cookie: &str, token: &str) -> bool {
        self.verify("csrf", cookie, token)
    }

    /// The token of the sign-in form shown to the browser whose sign-in
    /// cookie is `nonce`: signed for its own purpose, so that a value sent
    /// as a sign-in cookie — a session's, say — gets no session's CSRF
    /// token signed.
    pub(super) fn sign_in_token_of(&self, nonce: &str) -> String {
        self.sign("sign-in", nonce)
    }

    /// Whether `token` is the sign-in form's token of `nonce`.
    pub(super) fn sign_in_token_holds(&self, nonce: &str, token: &str) -> bool {
        self.verify("sign-in", nonce, token)
    }
}

/// A fresh random value for the sign-in cookie.
pub(super) fn nonce() -> String {
    crate::store::new_id()
}

/// The value of the cookie `name` a request carries, in any of its
/// `Cookie` headers (HTTP/2 may send one header a cookie). None when it
/// carries two of that name that differ: a browser sends a cookie another
/// site planted (for a longer path, or the parent domain) beside its own,
/// and which one came first is the planter's choice.
pub(super) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .filter_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then_some(value)
        });
    let first = values.next()?;
    values.all(|value| value == first).then_some(first)
}

/// When a session of `caller` opened now ends: [`SESSION_MS`] from now, or
/// when its token expires ([`Caller::until`]) if that is sooner.
pub(super) fn session_until(caller: &Caller) -> i64 {
    let most = now_ms().saturating_add(SESSION_MS);
    let token = (caller.expires())
        .map(|at| match at.duration_since(std::time::UNIX_EPOCH) {
            Ok(since) => i64::try_from(since.as_millis()).unwrap_or(i64::MAX),
            Err(_) => 0,
        })
        .unwrap_or(i64::MAX);
    most.min(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_read_back_only_as_signed_and_only_with_its_key() {
        let keys = Keys::random();
        let carol = Caller::new("carol", ["refunds:approve"]);
        let cookie = keys.session_of(&carol, 3);
        let session = keys.session(&cookie).unwrap();
        assert_eq!(session.caller, carol);
        assert_eq!(session.epoch, 3);
        let again = keys.session(&keys.session_of(&carol, 0)).unwrap();
        assert_ne!(session.id, again.id, "each sign-in its own session");
        assert_eq!(Keys::random().session(&cookie), None, "another key");
        // A payload that grants itself a scope, with the old signature.
        let (_, signature) = cookie.split_once('.').unwrap();
        let forged = Claims {
            sub: "mallory".into(),
            scopes: vec!["refunds:approve".into()],
            exp: i64::MAX,
            sid: session.id,
            epoch: 0,
        };
        let forged = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        assert_eq!(keys.session(&format!("{forged}.{signature}")), None);
        assert_eq!(keys.session("garbage"), None);
    }

    #[test]
    fn a_session_and_its_forms_hold_only_at_the_inbox_they_were_signed_for() {
        let key = vec![3u8; 32];
        let inbox =
            |service: &str, scope: &str| Keys::new(key.clone()).for_inbox(service, scope, "ledger");
        let carol = Caller::new("carol", ["refunds:approve"]);
        let cookie = inbox("refunds", "refunds:approve").session_of(&carol, 0);
        let token = inbox("refunds", "refunds:approve").csrf_of(&cookie);
        assert!(
            inbox("refunds", "refunds:approve")
                .session(&cookie)
                .is_some()
        );
        for (service, scope) in [("shop", "refunds:approve"), ("refunds", "hr:approve")] {
            let elsewhere = inbox(service, scope);
            assert_eq!(elsewhere.session(&cookie), None, "{service} {scope}");
            assert!(!elsewhere.csrf_holds(&cookie, &token), "{service} {scope}");
        }
        // Nor on another store's record of ended sessions.
        let restarted = Keys::new(key.clone()).for_inbox("refunds", "refunds:approve", "another");
        assert_eq!(restarted.session(&cookie), None);
        assert!(!restarted.csrf_holds(&cookie, &token));
        // No two audiences sign alike, however the names are cut.
        let one = inbox("a\",\"b", "c").session_of(&carol, 0);
        assert_eq!(inbox("a", "b\",\"c").session(&one), None);
    }

    #[test]
    fn a_csrf_token_holds_for_its_session_only() {
        let keys = Keys::random();
        let one = keys.session_of(&Caller::new("carol", ["a"]), 0);
        let two = keys.session_of(&Caller::new("dave", ["a"]), 0);
        let token = keys.csrf_of(&one);
        assert!(keys.csrf_holds(&one, &token));
        assert!(!keys.csrf_holds(&two, &token));
        assert!(!keys.csrf_holds(&one, ""));
    }

    #[test]
    fn a_cookie_signed_before_epochs_is_of_the_first() {
        let keys = Keys::random();
        let old = serde_json::json!({
            "sub": "carol", "scopes": ["a"], "exp": i64::MAX, "sid": "s1",
        });
        let payload = URL_SAFE_NO_PAD.encode(old.to_string());
        let cookie = format!("{payload}.{}", keys.sign("session", &payload));
        assert_eq!(keys.session(&cookie).unwrap().epoch, 0);
    }

    #[test]
    fn cookies_are_read_by_name_from_every_cookie_header() {
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, "a=1; b=2".parse().unwrap());
        headers.append(header::COOKIE, "tool_envelope_inbox=x.y".parse().unwrap());
        assert_eq!(cookie(&headers, SESSION), Some("x.y"));
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, "c"), None);
        assert_eq!(cookie(&HeaderMap::new(), SESSION), None);
        // A second of the same name, planted: neither is taken.
        headers.append(header::COOKIE, "tool_envelope_inbox=m.n".parse().unwrap());
        assert_eq!(cookie(&headers, SESSION), None);
        let mut twice = HeaderMap::new();
        twice.append(header::COOKIE, "b=2; b=2".parse().unwrap());
        assert_eq!(
            cookie(&twice, "b"),
            Some("2"),
            "the same value twice is one"
        );
    }
}
