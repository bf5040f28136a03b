//! How a served call asks its client, on the revision the request speaks:
//! a request to the client on 2025-11-25, rounds of `InputRequiredResult`
//! on 2026-07-28 (SEP-2322, multi round-trip requests).
//!
//! On 2026-07-28 a question that has no answer yet stops the call: the
//! tool's future is dropped, and the call answers with the questions and a
//! sealed `requestState` that carries the answers so far. The next round
//! opens the state (any replica with the same key can), takes the answers
//! to the questions it asked, and runs the tool again.

// Sampling and roots are deprecated by SEP-2577 in rmcp; both revisions a
// server meets today still define them, and the clients in use answer them.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ProtocolVersion, RequestStateCodec, SealOptions,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::TaskContext;
use rmcp::{ErrorData, Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::client::ClientSide;
use super::held;
use super::redeemed::{Redemptions, nonce};
use crate::envelope::ErrorEnvelope;
use crate::mcp::ask::{self, APPROVAL_KEY_PREFIX, Kind, Question};
use crate::store::Store;

/// How long a `requestState` stays valid by default: time for a person to
/// read a form and answer it.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// The key and lifetime `requestState` is sealed with, and the states of
/// approving rounds already used.
pub(crate) struct Seal {
    codec: RequestStateCodec,
    ttl: Duration,
    redeemed: Redemptions,
}

impl Seal {
    /// A seal with `key` (32 bytes or more).
    pub(crate) fn new(key: &[u8], ttl: Duration) -> Result<Self, String> {
        let codec = RequestStateCodec::try_new(key.to_vec()).map_err(|error| error.to_string())?;
        Ok(Seal {
            codec,
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
struct State {
    asked: Vec<String>,
    answers: BTreeMap<String, Value>,
    #[serde(default)]
    nonce: String,
    /// When it stops opening (ms since the epoch, by its sealer's clock).
    #[serde(default)]
    expires_ms: i64,
}

/// The one error a `requestState` that does not open gets, whatever the
/// reason — changed, malformed, sealed for another call or caller,
/// expired, or an approving state already used: a client learns nothing
/// from the difference (the reason is logged at `debug`).
fn refused_state() -> ErrorData {
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
fn approves(answers: &HashMap<String, Value>) -> bool {
    answers.iter().any(|(key, answer)| {
        // Only an object has an `action` to read.
        let no = matches!(
            answer.get("action").and_then(Value::as_str),
            Some("decline" | "cancel")
        );
        key.starts_with(APPROVAL_KEY_PREFIX) && !no
    })
}

/// Why a call stopped before its tool finished.
enum Stop {
    /// Questions without answers yet: the next round's.
    Input(InputRequests),
    /// Questions the client did not declare it can answer.
    Missing(Vec<Kind>),
    /// An answer that is not one of the kind asked.
    Invalid(String),
}

/// How a request asks its client.
enum Mode {
    /// 2025-11-25 and before: requests to the client.
    Requests,
    /// 2026-07-28: rounds of `InputRequiredResult`.
    Rounds,
    /// A call run as a task: the task's `inputRequests`, answered by
    /// `tasks/update`; the answers so far, by key (a key is asked once in a
    /// task's life, and a retry asks again); when its time to live ends.
    Task(TaskContext, Mutex<HashMap<String, Value>>, Instant),
}

/// The asking side of one request.
pub(crate) struct Asking {
    mode: Mode,
    /// What the request says of its client.
    client: ClientSide,
    answers: HashMap<String, Value>,
    stop: Mutex<Option<Stop>>,
    stopped: Notify,
}

/// Whether `context`'s request speaks a revision with rounds (2026-07-28 or
/// later), where a server may not make requests of the client.
pub(crate) fn has_rounds(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// The bytes a state is bound to: the method, the tool, its arguments and
/// the authenticated caller, so that a state cannot be replayed on another
/// call, nor by another caller.
fn bound_to(tool: &str, arguments: &Value, caller: Option<&str>) -> Vec<u8> {
    let mut bytes = b"tools/call\0".to_vec();
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

impl Asking {
    /// The asking side of a request: on 2026-07-28, the answers its
    /// `requestState` carries and those of its `inputResponses` that answer
    /// what the last round asked.
    ///
    /// A state that carries a person's approval opens once: a replay of
    /// it runs nothing.
    ///
    /// # Errors
    ///
    /// `-32602`, one text whatever the reason, for a `requestState` this
    /// server did not seal for this call and caller, whose time is up, or
    /// that carries an approval already used.
    pub(crate) async fn open(
        seal: &Seal,
        context: &RequestContext<RoleServer>,
        tool: &str,
        arguments: &Value,
        caller: Option<&str>,
        round: (Option<InputResponses>, Option<String>),
    ) -> Result<Self, ErrorData> {
        let (responses, state) = round;
        let rounds = has_rounds(context);
        let mut answers = HashMap::new();
        if rounds && let Some(sealed) = state {
            let state: State = seal
                .codec
                .open_json_with(&sealed, &bound_to(tool, arguments, caller))
                .map_err(|error| {
                    tracing::debug!(tool, %error, "requestState refused");
                    refused_state()
                })?;
            answers.extend(state.answers);
            let mut responses = responses.unwrap_or_default();
            for key in state.asked {
                if let Some(answer) = responses.remove(&key) {
                    answers.insert(key, answer);
                }
            }
            let spend = seal
                .redeemed
                .redeem(&state.nonce, seal.ttl, state.expires_ms, caller);
            if approves(&answers) && !spend.await {
                tracing::debug!(tool, "requestState refused: its approval was used already");
                return Err(refused_state());
            }
        }
        Ok(Asking {
            mode: match rounds {
                true => Mode::Rounds,
                false => Mode::Requests,
            },
            client: ClientSide::default(),
            answers,
            stop: Mutex::new(None),
            stopped: Notify::new(),
        })
    }

    /// The asking side of a call run as the task `task`, whose time to
    /// live `ends`, for the client the request that made it came from.
    pub(crate) fn task(
        task: TaskContext,
        context: &RequestContext<RoleServer>,
        ends: Instant,
    ) -> Self {
        Asking {
            mode: Mode::Task(task, Mutex::new(HashMap::new()), ends),
            client: ClientSide::read_now(context),
            answers: HashMap::new(),
            stop: Mutex::new(None),
            stopped: Notify::new(),
        }
    }

    /// The task the call runs as, if it does, and when its time to live ends.
    pub(crate) fn task_context(&self) -> Option<(&TaskContext, Instant)> {
        match &self.mode {
            Mode::Task(task, _, ends) => Some((task, *ends)),
            Mode::Requests | Mode::Rounds => None,
        }
    }

    /// Whether a question can stop the call: on 2026-07-28.
    pub(crate) fn stops(&self) -> bool {
        matches!(self.mode, Mode::Rounds)
    }

    /// Reads what the client says of itself from `request`, the request
    /// this asking side was opened for, when first asked: most calls never
    /// ask, and on 2026-07-28 it is decoded from the request's `_meta`.
    /// [`LiveRequest::new`](super::live::LiveRequest::new) hands the
    /// request over.
    pub(crate) fn read_client_from(&mut self, request: RequestContext<RoleServer>) {
        self.client = ClientSide::of(request);
    }

    /// The client's name and version, as it gave them.
    pub(crate) fn client(&self) -> Option<&str> {
        self.client.name()
    }

    /// What the client declared it can answer.
    pub(crate) fn capabilities(&self) -> Option<&ClientCapabilities> {
        self.client.capabilities()
    }

    /// Whether the client declared it can answer `kind`.
    pub(crate) fn can_answer(&self, kind: Kind) -> bool {
        let Some(capabilities) = self.capabilities() else {
            return false;
        };
        match kind {
            Kind::Elicitation => capabilities.elicitation.is_some(),
            Kind::Sampling => capabilities.sampling.is_some(),
            Kind::Roots => capabilities.roots.is_some(),
        }
    }

    /// Asks `questions`, and returns their answers in order, as JSON: an
    /// `ElicitResult`, a `CreateMessageResult`, a `ListRootsResult`.
    pub(crate) async fn ask_all(
        &self,
        peer: &Peer<RoleServer>,
        questions: &[Question],
    ) -> Result<Vec<Value>, ErrorEnvelope> {
        let mut missing: Vec<Kind> = Vec::new();
        for question in questions {
            if !self.can_answer(question.kind()) && !missing.contains(&question.kind()) {
                missing.push(question.kind());
            }
        }
        match &self.mode {
            Mode::Rounds => {}
            Mode::Requests | Mode::Task(..) if !missing.is_empty() => {
                return Err(ask::cannot_answer(&missing));
            }
            Mode::Requests => {
                let mut answers = Vec::with_capacity(questions.len());
                for question in questions {
                    answers.push(request(peer, question).await?);
                }
                return Ok(answers);
            }
            Mode::Task(task, known, _) => return ask_task(task, known, questions).await,
        }
        if !missing.is_empty() {
            return self.stop(Stop::Missing(missing)).await;
        }
        let mut answers = Vec::with_capacity(questions.len());
        let mut unanswered = InputRequests::new();
        for question in questions {
            match self.answers.get(question.key()) {
                Some(answer) => match question.answer_of(answer.clone()) {
                    Ok(answer) => answers.push(answer),
                    Err(error) => {
                        let message = format!(
                            "inputResponses[`{}`] is not an answer to the {} request asked: {error}",
                            crate::limits::text_for_wire(question.key(), 128),
                            question.kind().capability()
                        );
                        let message = crate::limits::text_for_wire(&message, 1024).into_owned();
                        return self.stop(Stop::Invalid(message)).await;
                    }
                },
                None => {
                    unanswered.insert(question.key().to_owned(), question.request().clone());
                }
            }
        }
        if !unanswered.is_empty() {
            return self.stop(Stop::Input(unanswered)).await;
        }
        Ok(answers)
    }

    /// Stops the call (the first stop wins; later questions join its
    /// round), and never returns: the call's future is dropped.
    async fn stop<T>(&self, stop: Stop) -> T {
        {
            let mut slot = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
            match (&mut *slot, stop) {
                (Some(Stop::Input(asked)), Stop::Input(more)) => asked.extend(more),
                (Some(_), _) => {}
                (None, stop) => *slot = Some(stop),
            }
        }
        self.stopped.notify_one();
        std::future::pending().await
    }

    /// Completes once a question stopped the call.
    pub(crate) async fn stopped(&self) {
        self.stopped.notified().await;
    }

    /// What the call answers once it stopped: the next round's questions
    /// and sealed state, or the revision's error.
    pub(crate) fn answer(
        &self,
        seal: &Seal,
        tool: &str,
        arguments: &Value,
        caller: Option<&str>,
    ) -> Result<InputRequiredResult, ErrorData> {
        let stop = self
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match stop {
            Some(Stop::Input(asked)) => {
                let state = State {
                    asked: asked.keys().cloned().collect(),
                    answers: self.answers.clone().into_iter().collect(),
                    nonce: nonce(),
                    expires_ms: crate::store::now_ms().saturating_add(held::ms(seal.ttl)),
                };
                let bound = bound_to(tool, arguments, caller);
                let options = SealOptions::new().associated_data(&bound).ttl(seal.ttl);
                let sealed = seal
                    .codec
                    .seal_json_with(&state, &options)
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                Ok(InputRequiredResult::new(Some(asked), Some(sealed)))
            }
            Some(Stop::Missing(kinds)) => {
                let mut required = Map::new();
                for kind in kinds {
                    required.insert(kind.capability().to_owned(), Value::Object(Map::new()));
                }
                let required: ClientCapabilities =
                    serde_json::from_value(Value::Object(required)).unwrap_or_default();
                Err(ErrorData::missing_required_client_capability(required))
            }
            Some(Stop::Invalid(message)) => Err(ErrorData::invalid_params(message, None)),
            None => Err(ErrorData::internal_error(
                "the call stopped for no reason",
                None,
            )),
        }
    }
}

/// Asks `questions` as a task's input requests, all at once, and waits for
/// their answers (`tasks/update`). A cancelled task never gets them: its
/// call is stopped from outside.
async fn ask_task(
    task: &TaskContext,
    known: &Mutex<HashMap<String, Value>>,
    questions: &[Question],
) -> Result<Vec<Value>, ErrorEnvelope> {
    let asked = questions.iter().map(|question| async {
        let cached = (known.lock().unwrap_or_else(PoisonError::into_inner))
            .get(question.key())
            .cloned();
        if let Some(answer) = cached {
            return Ok(answer);
        }
        let Ok(answer) = task
            .request_input(question.key(), question.request().clone())
            .await
        else {
            return std::future::pending().await;
        };
        let answer = question
            .answer_of(answer)
            .map_err(|error| ask::invalid_answer(question.kind(), &error))?;
        (known.lock().unwrap_or_else(PoisonError::into_inner))
            .insert(question.key().to_owned(), answer.clone());
        Ok(answer)
    });
    futures_util::future::join_all(asked)
        .await
        .into_iter()
        .collect()
}

/// Asks `question` as a request to the client (2025-11-25 and before),
/// and checks the answer as a round's is checked.
async fn request(peer: &Peer<RoleServer>, question: &Question) -> Result<Value, ErrorEnvelope> {
    let answer = ask_peer(peer, question).await?;
    question
        .answer_of(answer)
        .map_err(|error| ask::invalid_answer(question.kind(), &error))
}

/// Asks `question` as a request to the client.
async fn ask_peer(peer: &Peer<RoleServer>, question: &Question) -> Result<Value, ErrorEnvelope> {
    let kind = question.kind();
    let failed = |error: &dyn std::fmt::Display| ask::not_answered(kind, error);
    match question.request() {
        InputRequest::Elicitation(request) => peer
            .create_elicitation(request.params.clone())
            .await
            .map_err(|error| failed(&error))
            .and_then(|result| to_json(&result)),
        InputRequest::CreateMessage(request) => peer
            .create_message(request.params.clone())
            .await
            .map_err(|error| failed(&error))
            .and_then(|result| to_json(&result)),
        InputRequest::ListRoots(_) => peer
            .list_roots()
            .await
            .map_err(|error| failed(&error))
            .and_then(|result| to_json(&result)),
        _ => Err(failed(&"this kind of request is not one this crate sends")),
    }
}

fn to_json(value: &impl Serialize) -> Result<Value, ErrorEnvelope> {
    serde_json::to_value(value).map_err(|error| ErrorEnvelope::other(error.to_string()))
}
