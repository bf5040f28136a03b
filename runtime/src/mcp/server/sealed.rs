//! The `requestState` of a call's rounds on 2026-07-28 (SEP-2322): sealed
//! with the server's key for one call and one caller, opened by any
//! replica that holds the key, and — when it carries a person's approval —
//! opened once, and its yes counts only while it lasts: as long as the
//! state of the round it was given in, however many rounds follow.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use rmcp::ErrorData;
use rmcp::model::{ElicitRequestParams, InputRequest, RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Digest as _;

use super::held;
use super::redeemed::{Redeemed, Redemptions, nonce};
use crate::caller::Caller;
use crate::mcp::ask::{APPROVAL_KEY_PREFIX, Question};
use crate::store::{Store, now_ms};

/// How long a `requestState` stays valid by default: time for a person to
/// read a form and answer it.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// The key and lifetime `requestState` is sealed with, and the states of
/// approving rounds already used.
pub(crate) struct Seal {
    codec: RequestStateCodec,
    /// The key a state's scopes are digested with ([`scope_digest`]),
    /// derived from the seal's.
    scope_key: [u8; 32],
    ttl: Duration,
    redeemed: Redemptions,
}

impl Seal {
    /// A seal with `key` (32 bytes or more).
    pub(crate) fn new(key: &[u8], ttl: Duration) -> Result<Self, String> {
        let codec = RequestStateCodec::try_new(key.to_vec()).map_err(|error| error.to_string())?;
        let mut derive = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(key)
            .expect("HMAC takes a key of any length");
        derive.update(b"tool-envelope/requestState/scopes");
        Ok(Seal {
            codec,
            scope_key: derive.finalize().into_bytes().into(),
            ttl,
            redeemed: Redemptions::default(),
        })
    }

    /// The same seal, its approving states redeemed in `store`: shared by
    /// every replica that shares the store, so that a state opens once
    /// across them all.
    pub(crate) fn sharing(&self, store: Arc<dyn Store>) -> Self {
        Seal {
            codec: self.codec.clone(),
            scope_key: self.scope_key,
            ttl: self.ttl,
            redeemed: Redemptions::shared(store),
        }
    }

    /// A seal with a random key: states open only in this process.
    pub(crate) fn random() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system gives random bytes");
        Seal::new(&key, DEFAULT_REQUEST_STATE_TTL).expect("a 32-byte key")
    }
}

impl Default for Seal {
    fn default() -> Self {
        Seal::random()
    }
}

/// What a `requestState` carries: the keys the last round asked, the
/// answers of the rounds before it, and a nonce of its own: a state that
/// carries an approval opens once (`Redemptions`).
#[derive(Serialize, Deserialize, Default)]
pub(super) struct State {
    pub(super) asked: Vec<String>,
    pub(super) answers: BTreeMap<String, Value>,
    #[serde(default)]
    nonce: String,
    /// When it stops opening (ms since the epoch, by its sealer's clock).
    #[serde(default)]
    expires_ms: i64,
    /// When the approvals among its answers stop counting (ms since the
    /// epoch, by its sealer's clock): the end of the state of the round a
    /// person gave them in, carried unchanged through the rounds after —
    /// a round that asks again does not make a yes last longer; past it,
    /// the round that opens the state leaves them out. 0 when it carries
    /// none (or was sealed before this was kept: then its own end).
    #[serde(default)]
    approved_until_ms: i64,
    /// The ledger that may spend it: the seal's own (no store), or its
    /// store's ([`Store::ledger`]): the round that brings a yes opens only
    /// there. Empty in a state sealed with a store by a release before
    /// stores were named: no ledger takes its yes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    ledger: String,
    /// What each key asked, by a digest of its question ([`asked_as`]):
    /// an answer given under a key answers that question only — the key
    /// asked again in other words ("Purge 3,000 rows?" where it said 3)
    /// is asked afresh.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    asked_as: BTreeMap<String, String>,
    /// The question each answer carried answered, by the same digest.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    answered_as: BTreeMap<String, String>,
    /// The scopes the token it was sealed for granted, each as its keyed
    /// digest ([`scope_digest`]: the state is signed, not encrypted, and a
    /// validator's scopes may name what the client should not read): it
    /// opens only for a token of the same subject that grants each of them
    /// (another client of the same person, granted less, does not carry
    /// its answers on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    scopes: Vec<String>,
}

/// What begins the digest of a form made of its form's digest
/// ([`asked_as`]). A digest without it is of the whole request as sent, as
/// an earlier release made every one: a state it sealed still opens here,
/// and one sealed here asks a form afresh on it.
const OF_FORM: &str = "form:";

/// The digest of a question that could not be written out: it matches no
/// question, so an answer to it is never taken (the question is asked
/// afresh).
const UNREADABLE: &str = "unreadable";

/// The digest a question is known by in a sealed state: of all it shows —
/// its kind, its words and its form. A form's is made of its words and
/// its form's digest, which a form kept for its type keeps: writing its
/// request out again cost as much as a call. Any other question's is of
/// its request as sent.
pub(super) fn asked_as(question: &Question) -> String {
    if let (InputRequest::Elicitation(request), Some(form)) =
        (question.request(), question.form_digest())
        && request.extensions.is_empty()
        // Every field named: one rmcp adds, which a person may be shown,
        // stops the build here rather than be left out of the digest.
        && let ElicitRequestParams::FormElicitationParams {
            meta,
            message,
            requested_schema: _,
        } = &request.params
    {
        let mut hash = sha2::Sha256::new();
        hash.update(b"tool-envelope question\0elicitation/create\0form\0");
        hash.update(form);
        hash.update(
            u64::try_from(message.len())
                .unwrap_or(u64::MAX)
                .to_be_bytes(),
        );
        hash.update(message.as_bytes());
        if let Some(meta) = meta {
            let Ok(meta) = serde_json::to_vec(meta) else {
                return UNREADABLE.to_owned();
            };
            hash.update(meta);
        }
        return format!("{OF_FORM}{}", hex::encode(&hash.finalize()[..16]));
    }
    as_sent(question.request()).unwrap_or_else(|| UNREADABLE.to_owned())
}

/// Whether `digest`, kept in a state for the key of `question`, is the
/// digest of `question`: the same question, asked in the same words.
pub(super) fn is_asked_as(question: &Question, digest: &str) -> bool {
    match digest.starts_with(OF_FORM) {
        true => digest == asked_as(question),
        false => as_sent(question.request()).is_some_and(|sent| sent == digest),
    }
}

/// The digest of a question's request, as sent; `None` if it cannot be
/// written out.
fn as_sent(request: &InputRequest) -> Option<String> {
    let bytes = serde_json::to_vec(request).ok()?;
    Some(hex::encode(&sha2::Sha256::digest(&bytes)[..16]))
}

impl State {
    /// A state that asks `asked`, carrying `answers`, whose approvals (if
    /// any) count until `approved_until_ms`.
    pub(super) fn new(
        asked: Vec<String>,
        answers: BTreeMap<String, Value>,
        approved_until_ms: i64,
    ) -> Self {
        State {
            asked,
            answers,
            nonce: String::new(),
            expires_ms: 0,
            approved_until_ms,
            ledger: String::new(),
            asked_as: BTreeMap::new(),
            answered_as: BTreeMap::new(),
            scopes: Vec::new(),
        }
    }

    /// The same state, knowing the question each key asked (`asked_as`)
    /// and each answer it carries answered (`answered_as`).
    pub(super) fn with_questions(
        mut self,
        asked_as: BTreeMap<String, String>,
        answered_as: BTreeMap<String, String>,
    ) -> Self {
        self.asked_as = asked_as;
        self.answered_as = answered_as;
        self
    }

    /// The question each answer [`take_answers`](Self::take_answers) gave
    /// answered, by its digest ([`asked_as`]); none for an answer carried
    /// in a state sealed before questions were known.
    pub(super) fn take_answered_as(&mut self) -> HashMap<String, String> {
        std::mem::take(&mut self.answered_as).into_iter().collect()
    }

    /// Until when the approvals among its answers count: 0 when it
    /// carries none.
    pub(super) fn approved_until_ms(&self) -> i64 {
        match (self.answers.iter()).any(|(key, answer)| approves_one(key, answer)) {
            false => 0,
            true if self.approved_until_ms > 0 => self.approved_until_ms,
            // Sealed before approvals had an end: its own end, or, not
            // known either, already past.
            true => self.expires_ms.max(1),
        }
    }

    /// The answers of the call so far, at `now_ms` — those this state
    /// carries, and those `responses` gives to what it asked (the rest of
    /// `responses` is not taken) — and until when the approvals among them
    /// count (0: they hold none). A yes lasts as long as the state of the
    /// round it was given in: one carried from before, until that state's
    /// end — past it, it is left out, and the guard asks again; one given
    /// now, until this state's.
    pub(super) fn take_answers(
        &mut self,
        mut responses: BTreeMap<String, Value>,
        now_ms: i64,
    ) -> (HashMap<String, Value>, i64) {
        let mut carried = self.approved_until_ms();
        let mut answers: HashMap<String, Value> =
            std::mem::take(&mut self.answers).into_iter().collect();
        if carried > 0 && carried <= now_ms {
            answers.retain(|key, _| !key.starts_with(APPROVAL_KEY_PREFIX));
            carried = 0;
        }
        let mut given_now = false;
        for key in &self.asked {
            if let Some(answer) = responses.remove(key) {
                given_now |= approves_one(key, &answer);
                answers.insert(key.clone(), answer);
                match self.asked_as.get(key) {
                    Some(question) => self.answered_as.insert(key.clone(), question.clone()),
                    None => self.answered_as.remove(key),
                };
            }
        }
        self.answered_as.retain(|key, _| answers.contains_key(key));
        let until = match (carried, given_now) {
            (0, false) => 0,
            (0, true) => self.expires_ms.max(1),
            (carried, false) => carried,
            (carried, true) => carried.min(self.expires_ms.max(1)),
        };
        (answers, until)
    }
}

impl Seal {
    /// Opens `sealed` for the call of `service`'s `tool` with `arguments`
    /// by `caller` (an approving one is then spent: [`spend`](Self::spend)).
    ///
    /// # Errors
    ///
    /// [`refused_state`], whatever the reason: not this server's, not this
    /// call's or caller's (a token of the same subject that grants less
    /// than the one it was sealed for counts as another), expired, or an
    /// approving state used already.
    pub(super) fn open(
        &self,
        sealed: &str,
        (service, tool): (&str, &str),
        arguments: &Value,
        caller: Option<&Caller>,
    ) -> Result<State, ErrorData> {
        // The tool's name as sent, not yet known to be one.
        let named = || {
            tool.get(..tool.floor_char_boundary(128))
                .unwrap_or_default()
        };
        let subject = caller.map(Caller::subject);
        let call = (service, tool, arguments, subject);
        // Sealed with scopes, it is bound so: a replica of an earlier
        // release, which would not read them, does not open it. A caller
        // without scopes could not open such a state anyway: tried for
        // one with scopes alone (one check a round for the others).
        let scoped = caller.is_some_and(|caller| caller.scopes().next().is_some());
        let marked = scoped
            .then(|| (self.codec).open_json_with::<State>(sealed, &bound_to(call, true)))
            .and_then(Result::ok);
        let state = match marked {
            Some(state) => state,
            None => {
                let state: State = (self.codec)
                    .open_json_with(sealed, &bound_to(call, false))
                    .map_err(|error| {
                        tracing::debug!(tool = named(), %error, "requestState refused");
                        refused_state()
                    })?;
                if !state.scopes.is_empty() {
                    return Err(refused_state());
                }
                state
            }
        };
        if !state.scopes.is_empty() {
            let granted: std::collections::HashSet<String> = (caller.into_iter())
                .flat_map(Caller::scopes)
                .map(|scope| scope_digest(&self.scope_key, scope))
                .collect();
            if !state.scopes.iter().all(|scope| granted.contains(scope)) {
                tracing::debug!(
                    tool = named(),
                    "requestState refused: sealed for a token that granted more"
                );
                return Err(refused_state());
            }
        }
        Ok(state)
    }

    /// Spends `state` for `caller`: whether it had not been spent (then
    /// the call may go on). A state that carries or brings a yes
    /// (`approving`) is spent only by the ledger that sealed it, and only
    /// once recorded; any other — the answers of a tool not safe to repeat
    /// — is refused once known spent, by this tool set or the store, and
    /// let through where its use cannot be remembered (a ledger full of
    /// other callers' states must not stop everyone's rounds: only a yes
    /// is worth refusing them for).
    pub(super) async fn spend(&self, state: &State, caller: Option<&str>, approving: bool) -> bool {
        // Only the ledger that sealed the state knows whether it was spent:
        // without a store, its own; with one, the store's, named by the
        // store (the same for every replica sharing its database). A
        // restart, another replica, a tool set built apart with the same
        // key, a store of another database or a new in-memory one — or,
        // on a fleet adding a store, a replica with one — would open it
        // once more.
        if approving && state.ledger != self.redeemed.ledger() {
            tracing::warn!(
                "an approving round reached a tool set whose record of spent states did not seal it (a restart, another replica, a set built apart, another store, or a fleet adding a store) and was refused: a yes is taken only where it was asked, or by the store it was asked with (`ToolSet::store`)"
            );
            return false;
        }
        let redeemed = (self.redeemed)
            .redeem(&state.nonce, self.ttl, state.expires_ms, caller, approving)
            .await;
        match (redeemed, approving) {
            (Redeemed::First, _) => true,
            (Redeemed::Used | Redeemed::Unknown, _) | (Redeemed::Full, true) => false,
            (Redeemed::Full, false) => {
                self.redeemed.say_full();
                true
            }
        }
    }

    /// Seals `state` for the call of `service`'s `tool` with `arguments` by
    /// `caller`,
    /// to open for the seal's time to live. Its approvals keep their own
    /// end, which the round that opens it holds them to; those whose time
    /// is up already are left out, and the next round asks for them again.
    ///
    /// # Errors
    ///
    /// An internal error when the codec fails.
    pub(super) fn seal(
        &self,
        mut state: State,
        (service, tool): (&str, &str),
        arguments: &Value,
        caller: Option<&Caller>,
    ) -> Result<String, ErrorData> {
        state.scopes = (caller.into_iter())
            .flat_map(Caller::scopes)
            .map(|scope| scope_digest(&self.scope_key, scope))
            .collect();
        let scoped = !state.scopes.is_empty();
        let caller = caller.map(Caller::subject);
        let now = now_ms();
        let approved_until = state.approved_until_ms();
        if approved_until > 0 && approved_until <= now {
            state
                .answers
                .retain(|key, _| !key.starts_with(APPROVAL_KEY_PREFIX));
            state.approved_until_ms = 0;
        } else {
            state.approved_until_ms = approved_until;
        }
        state.nonce = nonce();
        state.ledger = self.redeemed.ledger().to_owned();
        state.expires_ms = now.saturating_add(held::ms(self.ttl));
        let bound = bound_to((service, tool, arguments, caller), scoped);
        let options = SealOptions::new().associated_data(&bound).ttl(self.ttl);
        self.codec
            .seal_json_with(&state, &options)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))
    }
}

/// The one error a `requestState` that does not open gets, whatever the
/// reason — changed, malformed, sealed for another call or caller,
/// expired, or an approving state already used: a client learns nothing
/// from the difference (the reason is logged at `debug`).
pub(super) fn refused_state() -> ErrorData {
    ErrorData::invalid_params(
        "requestState was refused; call the tool again without it",
        Some(serde_json::json!({"reason": crate::reasons::REQUEST_STATE_REFUSED})),
    )
}

/// Whether `answers` may hold a person's yes to one of the call's
/// approvals: any answer to an approval that is not plainly a no (an object
/// whose `action` is `decline` or `cancel`) counts, whatever its shape, so
/// that no spelling of a yes the decoder would take (an array, say) leaves
/// the state open for another use. What is not an answer at all is refused
/// later, when the question reads it.
pub(super) fn approves(answers: &HashMap<String, Value>) -> bool {
    answers
        .iter()
        .any(|(key, answer)| approves_one(key, answer))
}

/// Whether `answer`, under `key`, may be a person's yes to an approval.
pub(super) fn approves_one(key: &str, answer: &Value) -> bool {
    // Only an object has an `action` to read.
    let no = matches!(
        answer.get("action").and_then(Value::as_str),
        Some("decline" | "cancel")
    );
    key.starts_with(APPROVAL_KEY_PREFIX) && !no
}

/// The bytes a state is bound to: the method, the service, the tool, its
/// arguments and the authenticated caller, so that a state cannot be
/// replayed on another call, at another service (which may share the key,
/// or be a clone of the set under another name), nor by another caller —
/// and whether it carries its token's scopes (`scoped`), so that a replica
/// that would not check them does not open it.
fn bound_to(
    (service, tool, arguments, caller): (&str, &str, &Value, Option<&str>),
    scoped: bool,
) -> Vec<u8> {
    let mut bytes = match scoped {
        true => b"tools/call+scopes\0".to_vec(),
        false => b"tools/call\0".to_vec(),
    };
    // The service as JSON, which holds no NUL: it ends where it ends.
    bytes.extend_from_slice(&serde_json::to_vec(service).unwrap_or_default());
    bytes.push(0);
    bytes.extend_from_slice(tool.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(&serde_json::to_vec(arguments).unwrap_or_default());
    bytes.push(0);
    match caller {
        Some(subject) => {
            bytes.push(1);
            bytes.extend_from_slice(subject.as_bytes());
        }
        None => bytes.push(0),
    }
    bytes
}

/// A token's scope as a sealed state keeps it: the first 12 bytes of its
/// HMAC-SHA256 under `key`, in hex — the same scope always the same
/// digest, which tells the client nothing of the scope.
fn scope_digest(key: &[u8; 32], scope: &str) -> String {
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(key)
        .expect("HMAC takes a key of any length");
    mac.update(scope.as_bytes());
    hex::encode(&mac.finalize().into_bytes()[..12])
}

#[cfg(test)]
mod tests;
