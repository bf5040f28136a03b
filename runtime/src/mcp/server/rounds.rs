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
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ListRootsRequest, ProtocolVersion, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext, ServiceError};
use rmcp::task_manager::TaskContext;
use rmcp::{ErrorData, Peer, RoleServer};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::client::ClientSide;
use super::sealed::{Seal, State, approves, asked_as, is_asked_as, refused_state};
use crate::caller::Caller;
use crate::envelope::ErrorEnvelope;
use crate::mcp::ask::{self, Kind, Question};

/// Why a call stopped before its tool finished.
enum Stop {
    /// Questions without answers yet, the next round's: each key's
    /// request, and its digest ([`asked_as`]), one never without the other.
    Input(BTreeMap<String, (InputRequest, String)>),
    /// Questions the client did not declare it can answer.
    Missing(Vec<Kind>),
    /// An answer that is not one of the kind asked.
    Invalid(String),
}

/// How a request asks its client.
enum Mode {
    /// 2025-11-25 and before: requests to the client, each answered
    /// within the time given or not at all.
    Requests(Duration),
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
    /// The question each of `answers` answered, by its digest
    /// ([`asked_as`]): an answer is taken only by the question it answered.
    answered_as: HashMap<String, String>,
    /// Until when the approvals among `answers` count (ms since the
    /// epoch; 0: it holds none): sealed into the next round's state.
    approved_until_ms: i64,
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

impl Asking {
    /// The asking side of a request: on 2026-07-28, the answers its
    /// `requestState` carries and those of its `inputResponses` that answer
    /// what the last round asked.
    ///
    /// A state that carries a person's approval opens once, and so does
    /// every state of a tool that is not safe to repeat (`repeatable`: its
    /// definition says it is idempotent, as the retry decision reads it —
    /// a read-only tool is, unless `idempotent = false`): the answers a
    /// round brought — "yes, delete it" — run the tool once, and a replay
    /// of the round runs nothing.
    ///
    /// # Errors
    ///
    /// `-32602`, one text whatever the reason, for a `requestState` this
    /// server did not seal for this call and caller (a token of theirs
    /// that grants less than the one it was sealed for), whose time is up, or
    /// that was used already (an approval's, or a state of a tool not safe
    /// to repeat).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn open(
        seal: &Seal,
        context: &RequestContext<RoleServer>,
        (service, tool): (&str, &str),
        arguments: &Value,
        caller: Option<&Caller>,
        round: (Option<InputResponses>, Option<String>),
        ask_timeout: Duration,
        repeatable: bool,
    ) -> Result<Self, ErrorData> {
        let (responses, state) = round;
        let rounds = has_rounds(context);
        let mut answers = HashMap::new();
        let mut answered_as = HashMap::new();
        let mut approved_until_ms = 0;
        if rounds && let Some(sealed) = state {
            let mut state = seal.open(&sealed, (service, tool), arguments, caller)?;
            (answers, approved_until_ms) =
                state.take_answers(responses.unwrap_or_default(), crate::store::now_ms());
            answered_as = state.take_answered_as();
            let approving = approves(&answers);
            let subject = caller.map(Caller::subject);
            if (approving || !repeatable) && !seal.spend(&state, subject, approving).await {
                tracing::debug!(tool, "requestState refused: it was used already");
                return Err(refused_state());
            }
        }
        Ok(Asking {
            mode: match rounds {
                true => Mode::Rounds,
                false => Mode::Requests(ask_timeout),
            },
            client: ClientSide::default(),
            answers,
            answered_as,
            approved_until_ms,
            stop: Mutex::new(None),
            stopped: Notify::new(),
        })
    }

    /// The asking side of a call run as the task `task`, whose time to
    /// live `ends`, for `client`, what the request that made it said of
    /// its client ([`ClientSide::read_now`]).
    pub(crate) fn task(task: TaskContext, client: ClientSide, ends: Instant) -> Self {
        Asking {
            mode: Mode::Task(task, Mutex::new(HashMap::new()), ends),
            client,
            answers: HashMap::new(),
            answered_as: HashMap::new(),
            approved_until_ms: 0,
            stop: Mutex::new(None),
            stopped: Notify::new(),
        }
    }

    /// The task the call runs as, if it does, and when its time to live ends.
    pub(crate) fn task_context(&self) -> Option<(&TaskContext, Instant)> {
        match &self.mode {
            Mode::Task(task, _, ends) => Some((task, *ends)),
            Mode::Requests(_) | Mode::Rounds => None,
        }
    }

    /// Whether an earlier round carried an answer under `key`.
    pub(crate) fn answered(&self, key: &str) -> bool {
        self.answers.contains_key(key)
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
        self.client = match self.mode {
            Mode::Requests(_) => ClientSide::of_session(request),
            Mode::Rounds | Mode::Task(..) => ClientSide::of(request),
        };
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
            Mode::Requests(_) | Mode::Task(..) if !missing.is_empty() => {
                return Err(ask::cannot_answer(&missing));
            }
            Mode::Requests(wait) => {
                let mut answers = Vec::with_capacity(questions.len());
                for question in questions {
                    answers.push(request(peer, question, *wait).await?);
                }
                return Ok(answers);
            }
            Mode::Task(task, known, _) => return ask_task(task, known, questions).await,
        }
        if !missing.is_empty() {
            return self.stop(Stop::Missing(missing)).await;
        }
        let mut answers = Vec::with_capacity(questions.len());
        let mut unanswered = BTreeMap::new();
        for question in questions {
            // An answer to this key's question as it was asked: the key
            // asked in other words since is asked afresh.
            let answered = |key: &str| {
                (self.answered_as.get(key)).is_none_or(|asked| is_asked_as(question, asked))
            };
            match (self.answers.get(question.key())).filter(|_| answered(question.key())) {
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
                    let asked = (question.request().clone(), asked_as(question));
                    unanswered.insert(question.key().to_owned(), asked);
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
        (service, tool): (&str, &str),
        arguments: &Value,
        caller: Option<&Caller>,
    ) -> Result<InputRequiredResult, ErrorData> {
        let stop = self
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match stop {
            Some(Stop::Input(asked)) => {
                let (asked, questions): (InputRequests, BTreeMap<_, _>) = (asked.into_iter())
                    .map(|(key, (request, digest))| ((key.clone(), request), (key, digest)))
                    .unzip();
                let answers = self.answers.clone().into_iter().collect();
                let answered_as = self.answered_as.clone().into_iter().collect();
                let state = State::new(
                    asked.keys().cloned().collect(),
                    answers,
                    self.approved_until_ms,
                )
                .with_questions(questions, answered_as);
                let sealed = seal.seal(state, (service, tool), arguments, caller)?;
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
/// and checks the answer as a round's is checked. One not answered within
/// `wait` is not answered: the call goes on without it (a client that
/// never answers holds no call for ever).
async fn request(
    peer: &Peer<RoleServer>,
    question: &Question,
    wait: Duration,
) -> Result<Value, ErrorEnvelope> {
    let answer = ask_peer(peer, question, wait).await?;
    question
        .answer_of(answer)
        .map_err(|error| ask::invalid_answer(question.kind(), &error))
}

/// A question of `kind` the client did not answer within `wait`.
fn unanswered_within(kind: Kind, wait: Duration) -> ErrorEnvelope {
    let waited = match wait.as_secs() {
        0 => format!("no answer within {} ms", wait.as_millis()),
        seconds => format!("no answer within {seconds} s"),
    };
    ask::not_answered(kind, &waited)
}

/// Asks `question` as a request to the client, waiting `wait` for its
/// answer: past it, rmcp tells the client the request is cancelled (a
/// form goes from its user's screen) and stops waiting for it.
async fn ask_peer(
    peer: &Peer<RoleServer>,
    question: &Question,
    wait: Duration,
) -> Result<Value, ErrorEnvelope> {
    let kind = question.kind();
    let failed = |error: &dyn std::fmt::Display| ask::not_answered(kind, error);
    let request = match question.request() {
        InputRequest::Elicitation(request) => {
            return peer
                .create_elicitation_with_timeout(request.params.clone(), Some(wait))
                .await
                .map_err(|error| match error {
                    ServiceError::Timeout { .. } => unanswered_within(kind, wait),
                    error => failed(&error),
                })
                .and_then(|result| to_json(&result));
        }
        InputRequest::CreateMessage(request) => {
            // What rmcp's own `create_message` checks before it sends.
            let params = &request.params;
            if (params.tools.is_some() || params.tool_choice.is_some())
                && !peer.supports_sampling_tools()
            {
                return Err(failed(
                    &"tools or toolChoice given, and the client does not declare sampling tools",
                ));
            }
            params.validate().map_err(|error| failed(&error))?;
            ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params.clone()))
        }
        InputRequest::ListRoots(_) => ServerRequest::ListRootsRequest(ListRootsRequest::default()),
        _ => return Err(failed(&"this kind of request is not one this crate sends")),
    };
    let sent = peer
        .send_cancellable_request(request, PeerRequestOptions::with_timeout(wait))
        .await
        .map_err(|error| failed(&error))?;
    match sent.await_response().await {
        Ok(answer) => to_json(&answer),
        Err(ServiceError::Timeout { .. }) => Err(unanswered_within(kind, wait)),
        Err(error) => Err(failed(&error)),
    }
}

fn to_json(value: &impl Serialize) -> Result<Value, ErrorEnvelope> {
    serde_json::to_value(value).map_err(|error| ErrorEnvelope::other(error.to_string()))
}
