//! An approval is one person's yes to one call: it runs the call once, a
//! replay of it runs nothing, it waives only the block it answered, each
//! approvable block is asked for on its own, a permission block is never
//! approvable, the guard's question never takes a tool's own answer, a
//! refused state gets one answer whatever the reason, and an answer that
//! does not fit its form never reaches the tool. rmcp's own client, in the
//! same process, on both revisions.
#![cfg(feature = "rmcp")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorCode, Implementation, ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use tool_envelope::guard::{Blocked, Guards, ToolCall};
use tool_envelope::mcp::{Elicitation, ToolContext, ToolSet};
use tool_envelope::store::{self, MemoryStore, Store};
use tool_envelope::{ErrorEnvelope, Secret, tool};

/// What each tool did, by a label of its own: a test counts its own label.
static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn done(label: impl Into<String>) {
    DONE.lock().unwrap().push(label.into());
}

fn times(label: &str) -> usize {
    DONE.lock().unwrap().iter().filter(|l| *l == label).count()
}

/// Over $500 a person may approve.
fn cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 500 {
        return Err(
            Blocked::new(format!("Refund of ${amount} exceeds the $500 cap"))
                .with_reason("OVER_CAP")
                .unless_approved(),
        );
    }
    Ok(())
}

/// A frozen order is never refunded, whoever approves what.
fn frozen(call: &ToolCall) -> Result<(), Blocked> {
    let order: String = call.require("order")?;
    if order.starts_with("FROZEN") {
        return Err(Blocked::new(format!("Order {order} is frozen")).with_reason("FROZEN"));
    }
    Ok(())
}

/// A second look at large refunds, under the same reason as the cap.
fn second_look(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 600 {
        return Err(Blocked::new(format!("${amount} also needs a second look"))
            .with_reason("OVER_CAP")
            .unless_approved());
    }
    Ok(())
}

/// A permission block that asks to be approvable: it is not.
fn needs_a_right(call: &ToolCall) -> Result<(), Blocked> {
    let order: String = call.require("order")?;
    if order.starts_with("PAYROLL") {
        return Err(Blocked::permission("Payroll refunds need the payroll role").unless_approved());
    }
    Ok(())
}

/// The policy of `policed_refund`, as its own guard: cap, then frozen.
static POLICY: std::sync::LazyLock<Guards> =
    std::sync::LazyLock::new(|| Guards::new().for_all(cap).for_all(frozen));

/// Refund an order (the set's guards: cap, second look, frozen, a right).
#[tool(destructive)]
fn refund(order: String, amount: u64, card: Secret<String>) -> Result<String, ErrorEnvelope> {
    let _ = card;
    done(format!("refund {order} {amount}"));
    Ok(format!("Refunded ${amount} on {order}"))
}

/// Refund an order, guarded by its own chain.
#[tool(destructive, guard = *POLICY)]
fn policed_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    done(format!("policed {order} {amount}"));
    Ok(format!("Refunded ${amount} on {order}"))
}

/// Where to ship, as the user confirms it.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Address {
    /// The address.
    address: String,
}

/// Ship a replacement: over the cap a person approves, and the tool asks
/// its own question under the key `approval`.
#[tool(destructive, guard = cap)]
async fn ship(context: ToolContext, order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    let Elicitation::Accepted(Address { address }) = context
        .elicit::<Address>("approval", "Ship to which address?")
        .await?
    else {
        return Ok("not shipped".into());
    };
    done(format!("ship {order} {amount} {address}"));
    Ok(format!("Shipped {order} to {address}"))
}

/// Asks under a key kept for the crate's own questions.
#[tool(read_only)]
async fn sneaky(context: ToolContext) -> Result<String, ErrorEnvelope> {
    let _ = context
        .elicit::<Address>("tool-envelope/approval/s0-000000000000", "Where?")
        .await?;
    Ok("asked".into())
}

/// Takes a count from 1 to 10 from the user.
#[tool(read_only)]
async fn pick(context: ToolContext) -> Result<u64, ErrorEnvelope> {
    let form = json!({
        "type": "object",
        "properties": {"count": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["count"]
    });
    match context.elicit_form("count", "How many?", form).await? {
        Elicitation::Accepted(answer) => {
            done(format!("picked {}", answer["count"]));
            done(format!("pick saw {}", Value::Object(answer.clone())));
            answer["count"]
                .as_u64()
                .ok_or_else(|| ErrorEnvelope::other("the tool was handed a count that is not one"))
        }
        _ => Ok(0),
    }
}

fn tools() -> ToolSet {
    ToolSet::new()
        .tool::<refund>()
        .tool::<policed_refund>()
        .tool::<ship>()
        .tool::<sneaky>()
        .tool::<pick>()
        .guards(
            Guards::new()
                .for_tool("refund", cap)
                .for_tool("refund", second_look)
                .for_tool("refund", frozen)
                .for_tool("refund", needs_a_right),
        )
        .request_state_key([9u8; 32], Duration::from_secs(60))
}

/// A client whose user approves every approval (as "Grace"), gives
/// "221B Baker Street" as an address, and `count` as a count.
#[derive(Clone)]
struct Person {
    count: Value,
    /// Fields the person adds to the count's form, which it did not ask.
    extra: serde_json::Map<String, Value>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Person {
    fn new(count: Value) -> Self {
        Person {
            count,
            extra: serde_json::Map::new(),
            asked: Arc::default(),
        }
    }

    fn with_extra(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_owned(), value);
        self
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new("person", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = serde_json::to_value(&request).unwrap();
        let message = request["message"].as_str().unwrap_or_default().to_owned();
        self.asked.lock().unwrap().push(message.clone());
        let properties = &request["requestedSchema"]["properties"];
        let content = if properties.get("approver").is_some() {
            json!({"approver": "Grace", "note": "checked"})
        } else if properties.get("address").is_some() {
            json!({"address": "221B Baker Street"})
        } else {
            let mut content = self.extra.clone();
            content.insert("count".to_owned(), self.count.clone());
            Value::Object(content)
        };
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }
}

#[derive(Clone, Copy, Debug)]
enum Revision {
    Sessions,
    Rounds,
}

const BOTH: [Revision; 2] = [Revision::Sessions, Revision::Rounds];

async fn connect_to(
    tools: ToolSet,
    revision: Revision,
    person: Person,
) -> RunningService<RoleClient, Person> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = tools.serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    match revision {
        Revision::Sessions => person.serve(client_io).await,
        Revision::Rounds => {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            person.serve_with_lifecycle(client_io, lifecycle).await
        }
    }
    .expect("the client connects")
}

async fn connect(revision: Revision, person: Person) -> RunningService<RoleClient, Person> {
    connect_to(tools(), revision, person).await
}

fn call(tool: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().unwrap().clone())
}

fn refund_of(order: &str, amount: u64) -> CallToolRequestParams {
    call(
        "refund",
        json!({"order": order, "amount": amount, "card": "4111-1111-1111-1111"}),
    )
}

/// The refund of `order` for $550 asked of `client`, over the cap: the
/// round that brings Grace's yes to its approval, with the state it was
/// asked with.
async fn approving_round(
    client: &RunningService<RoleClient, Person>,
    order: &str,
) -> CallToolRequestParams {
    let first = client.call_tool_once(refund_of(order, 550)).await.unwrap();
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected the approval to be asked, got {first:?}");
    };
    let key = asked.input_requests.unwrap().keys().next().unwrap().clone();
    let yes = json!({"action": "accept", "content": {"approver": "Grace"}});
    refund_of(order, 550)
        .with_input_responses([(key, yes)].into())
        .with_request_state(asked.request_state.expect("a state"))
}

/// The envelope of a failed call, or the value of a successful one.
async fn outcome(
    client: &RunningService<RoleClient, Person>,
    params: CallToolRequestParams,
) -> Result<Value, Value> {
    let result = client.call_tool(params).await.expect("an answer");
    let structured = result.structured_content.unwrap_or(Value::Null);
    match result.is_error {
        Some(true) => Err(structured),
        _ => Ok(structured),
    }
}

fn code_and_message(error: &rmcp::ServiceError) -> (ErrorCode, String, Option<Value>) {
    match error {
        rmcp::ServiceError::McpError(data) => {
            (data.code, data.message.to_string(), data.data.clone())
        }
        other => panic!("expected a protocol error, got {other}"),
    }
}

#[tokio::test]
async fn a_replayed_approval_runs_nothing() {
    let person = Person::new(json!(1));
    let client = connect(Revision::Rounds, person.clone()).await;
    let first = client
        .call_tool_once(refund_of("O-REPLAY", 550))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected the approval to be asked, got {first:?}");
    };
    let requests = asked.input_requests.expect("the approval");
    let key = requests.keys().next().unwrap().clone();
    assert!(key.starts_with("tool-envelope/approval/"), "{key}");
    let state = asked.request_state.expect("a state");
    let yes = json!({"action": "accept", "content": {"approver": "Grace"}});
    let approving = refund_of("O-REPLAY", 550)
        .with_input_responses([(key.clone(), yes.clone())].into())
        .with_request_state(state.clone());

    let done_once = client.call_tool_once(approving.clone()).await.unwrap();
    assert!(
        matches!(done_once, CallToolResponse::Complete(_)),
        "{done_once:?}"
    );
    assert_eq!(times("refund O-REPLAY 550"), 1);

    // The same state and answer, sent again and again: nothing runs.
    for _ in 0..3 {
        let refused = client.call_tool_once(approving.clone()).await.unwrap_err();
        let (code, message, data) = code_and_message(&refused);
        assert_eq!(code, ErrorCode::INVALID_PARAMS);
        assert_eq!(
            message,
            "requestState was refused; call the tool again without it"
        );
        assert_eq!(data.unwrap()["reason"], "REQUEST_STATE_REFUSED");
    }
    assert_eq!(times("refund O-REPLAY 550"), 1, "one yes, one refund");

    // The spent state with a no instead: refused as well (the refund is
    // not safe to repeat, so its every round opens once); nothing runs.
    let no = json!({"action": "decline"});
    let declining = refund_of("O-REPLAY", 550)
        .with_input_responses([(key, no.clone())].into())
        .with_request_state(state);
    let refused = client.call_tool_once(declining).await.unwrap_err();
    assert_eq!(code_and_message(&refused).0, ErrorCode::INVALID_PARAMS);

    // A fresh round declined is no approval: the call completes saying so,
    // and sending that round again runs nothing either.
    let CallToolResponse::InputRequired(asked) = client
        .call_tool_once(refund_of("O-REPLAY", 550))
        .await
        .unwrap()
    else {
        panic!("expected the approval to be asked again");
    };
    let key = asked.input_requests.unwrap().keys().next().unwrap().clone();
    let declining = refund_of("O-REPLAY", 550)
        .with_input_responses([(key, no)].into())
        .with_request_state(asked.request_state.unwrap());
    let answer = client.call_tool_once(declining.clone()).await.unwrap();
    let CallToolResponse::Complete(result) = answer else {
        panic!("a decline completes the call: {answer:?}");
    };
    assert_eq!(
        result.structured_content.unwrap()["reason"],
        "HUMAN_DECLINED"
    );
    let refused = client.call_tool_once(declining).await.unwrap_err();
    assert_eq!(code_and_message(&refused).0, ErrorCode::INVALID_PARAMS);
    assert_eq!(times("refund O-REPLAY 550"), 1);
}

/// A fleet adding a store (a rolling change, as SECURITY.md advises): a
/// yes asked by a replica without one, then brought to one with it and to
/// the one that asked, once ran the refund on both — the store had never
/// heard of the first's ledger, nor the first of the store's. It opens only
/// where it was asked, in either order.
#[tokio::test]
async fn a_yes_asked_without_a_store_opens_once_on_a_fleet_that_adds_one() {
    for (order, store_first) in [("O-MIX-1", true), ("O-MIX-2", false)] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let old = connect(Revision::Rounds, Person::new(json!(1))).await;
        let new = connect_to(
            tools().store(Arc::clone(&store)),
            Revision::Rounds,
            Person::new(json!(1)),
        )
        .await;
        let first = old.call_tool_once(refund_of(order, 550)).await.unwrap();
        let CallToolResponse::InputRequired(asked) = first else {
            panic!("expected the approval to be asked, got {first:?}");
        };
        let key = asked.input_requests.unwrap().keys().next().unwrap().clone();
        let yes = json!({"action": "accept", "content": {"approver": "Grace"}});
        let approving = refund_of(order, 550)
            .with_input_responses([(key, yes)].into())
            .with_request_state(asked.request_state.expect("a state"));
        let (one, two) = match store_first {
            true => (&new, &old),
            false => (&old, &new),
        };
        let _ = one.call_tool_once(approving.clone()).await;
        let _ = two.call_tool_once(approving).await;
        let label = format!("refund {order} 550");
        assert_eq!(times(&label), 1, "one yes, one refund ({order})");
    }
}

/// Without a store, a yes is taken only by the tool set that asked for it:
/// a process restarted with the same key (or a set built apart — a
/// session factory's), whose record of spent states starts empty, refuses
/// the approving round rather than refund once more. A round that brings
/// no yes still resumes wherever the key is.
#[tokio::test]
async fn without_a_store_a_yes_is_taken_only_where_it_was_asked() {
    let before = connect(Revision::Rounds, Person::new(json!(1))).await;
    let approving = approving_round(&before, "O-RESTART").await;
    let done = before.call_tool_once(approving.clone()).await.unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    assert_eq!(times("refund O-RESTART 550"), 1);

    // Restarted: the same tools, the same key, an empty record.
    let after = connect(Revision::Rounds, Person::new(json!(1))).await;
    let refused = after.call_tool_once(approving).await.unwrap_err();
    let (code, _, data) = code_and_message(&refused);
    assert_eq!(code, ErrorCode::INVALID_PARAMS);
    assert_eq!(data.unwrap()["reason"], "REQUEST_STATE_REFUSED");
    assert_eq!(times("refund O-RESTART 550"), 1, "one yes, one refund");

    // A question that is no approval, asked before the restart, is
    // answered after it.
    let asked = before
        .call_tool_once(call("pick", json!({})))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(asked) = asked else {
        panic!("expected the count to be asked, got {asked:?}");
    };
    let answered = call("pick", json!({}))
        .with_input_responses(
            [(
                "count".to_owned(),
                json!({"action": "accept", "content": {"count": 3}}),
            )]
            .into(),
        )
        .with_request_state(asked.request_state.expect("a state"));
    let done = after.call_tool_once(answered).await.unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
}

/// With a store, a yes is taken only where that store's record of spent
/// states is: a process restarted with the same key and a new in-memory
/// store (or a replica with a database of its own), whose record never saw
/// the state spent, refuses the approving round rather than refund once
/// more — as a tool set with no store does (above).
#[tokio::test]
async fn with_a_store_a_yes_is_taken_only_where_that_store_is() {
    let replica = |store: Arc<dyn Store>| {
        tools()
            .store(store)
            .request_state_key([7u8; 32], Duration::from_secs(600))
    };
    let before = connect_to(
        replica(Arc::new(MemoryStore::new())),
        Revision::Rounds,
        Person::new(json!(1)),
    )
    .await;
    let approving = approving_round(&before, "O-OWN-STORE").await;
    let done = before.call_tool_once(approving.clone()).await.unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    assert_eq!(times("refund O-OWN-STORE 550"), 1);

    // Restarted: the same tools, the same key, a new store.
    let after = connect_to(
        replica(Arc::new(MemoryStore::new())),
        Revision::Rounds,
        Person::new(json!(1)),
    )
    .await;
    let refused = after.call_tool_once(approving).await.unwrap_err();
    let (code, _, data) = code_and_message(&refused);
    assert_eq!(code, ErrorCode::INVALID_PARAMS);
    assert_eq!(data.unwrap()["reason"], "REQUEST_STATE_REFUSED");
    assert_eq!(times("refund O-OWN-STORE 550"), 1, "one yes, one refund");
}

/// Replicas that share a store and a key but not a time to live (in the
/// middle of a rolling change): a state one seals for 10 minutes, approved
/// on one whose own states live a second, is remembered as used for the
/// 10 minutes, so the sweep a minute later leaves it spent.
#[tokio::test]
async fn an_approving_state_opens_once_across_replicas_whose_times_to_live_differ() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let replica = |ttl: u64| {
        tools()
            .store(Arc::clone(&store))
            .request_state_key([9u8; 32], Duration::from_secs(ttl))
    };
    let long = connect_to(replica(600), Revision::Rounds, Person::new(json!(1))).await;
    let short = connect_to(replica(1), Revision::Rounds, Person::new(json!(1))).await;
    let approving = approving_round(&long, "O-TTL").await;
    let done = short.call_tool_once(approving.clone()).await.unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    assert_eq!(times("refund O-TTL 550"), 1);

    // Any replica's sweep, a minute on: past the short time to live.
    store.sweep(store::now_ms() + 60_000).await.unwrap();
    let refused = long.call_tool_once(approving).await.unwrap_err();
    let (code, _, data) = code_and_message(&refused);
    assert_eq!(code, ErrorCode::INVALID_PARAMS);
    assert_eq!(data.unwrap()["reason"], "REQUEST_STATE_REFUSED");
    assert_eq!(times("refund O-TTL 550"), 1, "one yes, one refund");
}

#[tokio::test]
async fn an_approval_spelled_as_an_array_is_used_once_and_runs_nothing() {
    // serde reads a struct from an array of its fields too: a yes sent as
    // `["accept", {...}]` must not slip past the state's single use.
    let client = connect(Revision::Rounds, Person::new(json!(1))).await;
    let first = client
        .call_tool_once(refund_of("O-ARRAY", 550))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected the approval to be asked, got {first:?}");
    };
    let key = asked
        .input_requests
        .expect("the approval")
        .keys()
        .next()
        .unwrap()
        .clone();
    let state = asked.request_state.expect("a state");
    let yes = json!(["accept", {"approver": "Grace"}, null]);
    let approving = refund_of("O-ARRAY", 550)
        .with_input_responses([(key, yes)].into())
        .with_request_state(state);

    // The first use: not an answer, refused as such.
    let refused = client.call_tool_once(approving.clone()).await.unwrap_err();
    let (code, message, _) = code_and_message(&refused);
    assert_eq!(code, ErrorCode::INVALID_PARAMS);
    assert!(message.contains("is not an answer"), "{message}");
    // Every use after it: the state is spent.
    for _ in 0..3 {
        let refused = client.call_tool_once(approving.clone()).await.unwrap_err();
        let (code, _, data) = code_and_message(&refused);
        assert_eq!(code, ErrorCode::INVALID_PARAMS);
        assert_eq!(data.unwrap()["reason"], "REQUEST_STATE_REFUSED");
    }
    assert_eq!(
        times("refund O-ARRAY 550"),
        0,
        "no spelling of a yes runs it"
    );
}

#[tokio::test]
async fn approving_one_block_waives_no_other_guard() {
    for revision in BOTH {
        // The set's chain: the cap is approved, the frozen order still stands.
        let person = Person::new(json!(1));
        let client = connect(revision, person.clone()).await;
        let blocked = outcome(&client, refund_of("FROZEN-1", 550))
            .await
            .unwrap_err();
        assert_eq!(blocked["reason"], "FROZEN", "{revision:?}: {blocked}");
        assert_eq!(person.asked().len(), 1, "{revision:?}: the cap was asked");
        assert_eq!(times("refund FROZEN-1 550"), 0, "{revision:?}");

        // A tool's own chain, the same.
        let person = Person::new(json!(1));
        let client = connect(revision, person.clone()).await;
        let arguments = json!({"order": "FROZEN-2", "amount": 700});
        let blocked = outcome(&client, call("policed_refund", arguments))
            .await
            .unwrap_err();
        assert_eq!(blocked["reason"], "FROZEN", "{revision:?}: {blocked}");
        assert_eq!(person.asked().len(), 1, "{revision:?}");
        assert_eq!(times("policed FROZEN-2 700"), 0, "{revision:?}");

        // A permission block is never approvable, whatever its guard says.
        let person = Person::new(json!(1));
        let client = connect(revision, person.clone()).await;
        let blocked = outcome(&client, refund_of("PAYROLL-1", 20))
            .await
            .unwrap_err();
        assert_eq!(blocked["errorCategory"], "permission", "{revision:?}");
        assert!(
            person.asked().is_empty(),
            "{revision:?}: nobody is asked for a right"
        );
        let blocked = outcome(&client, refund_of("PAYROLL-2", 550))
            .await
            .unwrap_err();
        assert_eq!(
            blocked["errorCategory"], "permission",
            "{revision:?}: {blocked}"
        );
        assert_eq!(
            person.asked().len(),
            1,
            "{revision:?}: the cap was asked, not the right"
        );
        assert_eq!(times("refund PAYROLL-2 550"), 0);

        // With every block approved and nothing else in the way, it runs once.
        let before = times("refund O-OK 550");
        let client = connect(revision, Person::new(json!(1))).await;
        assert!(outcome(&client, refund_of("O-OK", 550)).await.is_ok());
        assert_eq!(times("refund O-OK 550") - before, 1, "{revision:?}");
    }
}

#[tokio::test]
async fn each_approvable_block_is_asked_for_on_its_own_though_they_share_a_reason() {
    for revision in BOTH {
        let person = Person::new(json!(1));
        let client = connect(revision, person.clone()).await;
        let before = times("refund O-TWICE 640");
        let done = outcome(&client, refund_of("O-TWICE", 640)).await;
        assert_eq!(
            done,
            Ok(json!({"result": "Refunded $640 on O-TWICE"})),
            "{revision:?}"
        );
        let asked = person.asked();
        assert_eq!(asked.len(), 2, "{revision:?}: {asked:?}");
        assert!(
            asked[0].starts_with("Refund of $640 exceeds the $500 cap"),
            "{asked:?}"
        );
        assert!(
            asked[1].starts_with("$640 also needs a second look"),
            "{asked:?}"
        );
        assert_eq!(times("refund O-TWICE 640") - before, 1, "{revision:?}");
    }
}

#[tokio::test]
async fn a_tools_own_question_never_takes_the_guards_approval() {
    for revision in BOTH {
        let person = Person::new(json!(1));
        let client = connect(revision, person.clone()).await;
        let arguments = json!({"order": "O-SHIP", "amount": 800});
        let shipped = outcome(&client, call("ship", arguments)).await;
        assert_eq!(
            shipped,
            Ok(json!({"result": "Shipped O-SHIP to 221B Baker Street"})),
            "{revision:?}"
        );
        // Both were asked: the approval, then the tool's own question.
        let asked = person.asked();
        assert_eq!(asked.len(), 2, "{revision:?}: {asked:?}");
        assert_eq!(asked[1], "Ship to which address?");

        // A tool may not ask under the keys kept for approvals.
        let refused = outcome(&client, call("sneaky", json!({})))
            .await
            .unwrap_err();
        assert_eq!(
            refused["reason"], "RESERVED_QUESTION_KEY",
            "{revision:?}: {refused}"
        );
        assert_eq!(refused["errorCategory"], "other");
    }
}

#[tokio::test]
async fn every_refused_state_gets_one_answer() {
    let client = connect(Revision::Rounds, Person::new(json!(1))).await;
    let first = client
        .call_tool_once(call("pick", json!({})))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected a question");
    };
    let state = asked.request_state.unwrap();
    let answer = json!({"action": "accept", "content": {"count": 3}});
    let round = |tool: &str, arguments: Value, state: String| {
        call(tool, arguments)
            .with_input_responses([("count".to_owned(), answer.clone())].into())
            .with_request_state(state)
    };
    let mut tampered = state.clone();
    tampered.insert(tampered.len() / 2, 'x');
    let refusals = [
        ("tampered", round("pick", json!({}), tampered)),
        (
            "malformed",
            round("pick", json!({}), "not a state".to_owned()),
        ),
        ("another tool's", round("sneaky", json!({}), state.clone())),
    ];
    let mut texts = Vec::new();
    for (what, params) in refusals {
        let refused = client.call_tool_once(params).await.expect_err(what);
        let (code, message, data) = code_and_message(&refused);
        assert_eq!(code, ErrorCode::INVALID_PARAMS, "{what}");
        assert_eq!(data.unwrap()["reason"], "REQUEST_STATE_REFUSED", "{what}");
        texts.push(message);
    }

    // Expired: a tool set whose states live no time at all.
    let fleeting = tools().request_state_key([9u8; 32], Duration::ZERO);
    let client = connect_to(fleeting, Revision::Rounds, Person::new(json!(1))).await;
    let first = client
        .call_tool_once(call("pick", json!({})))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected a question");
    };
    // The state's expiry is in whole milliseconds of the wall clock: wait
    // until the clock has passed it.
    let sealed = std::time::SystemTime::now();
    while sealed.elapsed().unwrap_or_default() < Duration::from_millis(2) {
        std::hint::spin_loop();
    }
    let refused = client
        .call_tool_once(round("pick", json!({}), asked.request_state.unwrap()))
        .await
        .expect_err("expired");
    texts.push(code_and_message(&refused).1);

    texts.dedup();
    assert_eq!(
        texts,
        ["requestState was refused; call the tool again without it"]
    );
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_form_never_reaches_the_tool() {
    for bad in [json!("DROP TABLE orders"), json!(11), json!(null)] {
        // 2025-11-25: a validation envelope, and the tool never sees it.
        let client = connect(Revision::Sessions, Person::new(bad.clone())).await;
        let refused = outcome(&client, call("pick", json!({}))).await.unwrap_err();
        assert_eq!(refused["errorCategory"], "validation", "{bad}: {refused}");
        assert_eq!(refused["reason"], "INVALID_ANSWER", "{bad}");
        assert!(
            refused["message"].as_str().unwrap().contains("/count"),
            "{refused}"
        );

        // 2026-07-28: the round is refused with the revision's error.
        let client = connect(Revision::Rounds, Person::new(bad.clone())).await;
        let refused = client.call_tool(call("pick", json!({}))).await.unwrap_err();
        let (code, message, _) = code_and_message(&refused);
        assert_eq!(code, ErrorCode::INVALID_PARAMS, "{bad}");
        assert!(message.contains("does not fit the form"), "{message}");
        assert!(message.len() <= 1024, "{}", message.len());
    }
    assert_eq!(times("picked \"DROP TABLE orders\""), 0);
    assert_eq!(times("picked 11"), 0);

    // A fitting count with fields the form never asked: the tool reads the
    // fields asked, only what the person was shown.
    for revision in BOTH {
        let sneaky = Person::new(json!(3)).with_extra("role", json!({"grant": ["admin"]}));
        let client = connect(revision, sneaky).await;
        assert_eq!(
            outcome(&client, call("pick", json!({}))).await,
            Ok(json!({"result": 3})),
            "{revision:?}"
        );
    }
    assert_eq!(times(r#"pick saw {"count":3}"#), 2);
    assert!(
        DONE.lock()
            .unwrap()
            .iter()
            .all(|seen| !seen.contains("role")),
        "the unasked field never reached the tool"
    );

    // What fits goes through, on both revisions.
    for revision in BOTH {
        let client = connect(revision, Person::new(json!(7))).await;
        assert_eq!(
            outcome(&client, call("pick", json!({}))).await,
            Ok(json!({"result": 7}))
        );
    }
}

/// A client whose user approves every approval, and, while the question
/// waits, changes what the guard will say (a refund total pushed up by
/// other calls, say).
#[derive(Clone)]
struct Shifting {
    escalated: Arc<std::sync::atomic::AtomicBool>,
}

impl ClientHandler for Shifting {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new("shifting", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        _: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        (self.escalated).store(true, std::sync::atomic::Ordering::SeqCst);
        let content = json!({"approver": "Mallory", "note": "fine"});
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }
}

/// A guard whose block the client's user may approve at first and, once
/// the condition changes, only approvers at the server, with the same
/// words: the client's yes to the first never waives the second.
#[tokio::test]
async fn a_clients_yes_never_waives_a_block_for_approvers_at_the_server() {
    for revision in BOTH {
        let escalated = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = Arc::clone(&escalated);
        let shifty = move |_: &ToolCall| -> Result<(), Blocked> {
            let blocked =
                Blocked::new("This refund needs a second look").with_reason("SECOND_LOOK");
            Err(match seen.load(std::sync::atomic::Ordering::SeqCst) {
                false => blocked.unless_approved(),
                true => blocked
                    .unless_approved_by(tool_envelope::guard::Approvers::scope("finance:approve")),
            })
        };
        let tools = ToolSet::new()
            .tool::<policed_refund>()
            .guards(Guards::new().for_tool("policed_refund", shifty))
            .request_state_key([9u8; 32], Duration::from_secs(60));
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            let running = tools.serve(server_io).await.expect("the server starts");
            let _ = running.waiting().await;
        });
        let shifting = Shifting { escalated };
        let client = match revision {
            Revision::Sessions => shifting.serve(client_io).await,
            Revision::Rounds => {
                let lifecycle = ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                };
                shifting.serve_with_lifecycle(client_io, lifecycle).await
            }
        }
        .expect("the client connects");
        let order = format!("SHIFT-{revision:?}");
        let arguments = json!({"order": order, "amount": 40});
        let result = client
            .call_tool(call("policed_refund", arguments))
            .await
            .expect("an answer");
        assert_eq!(result.is_error, Some(true), "{revision:?}: {result:?}");
        let blocked = result.structured_content.unwrap_or_default();
        assert_eq!(blocked["reason"], "SECOND_LOOK", "{revision:?}: {blocked}");
        assert_eq!(
            times(&format!("policed {order} 40")),
            0,
            "{revision:?}: it ran"
        );
    }
}

/// A block whose text quotes what an upstream said, credentials and all.
fn upstream_said(call: &ToolCall) -> Result<(), Blocked> {
    let order: String = call.require("order")?;
    Err(Blocked::new(format!(
        "Billing at https://ops:hunter2@billing.internal held {order}: password=hunter2"
    ))
    .with_reason("HELD")
    .unless_approved())
}

/// A set that masks credentials in every failure it sends masks them in
/// the question it puts to the client's user, and in the record of it the
/// reply carries; one that does not, sends the block's text as it is.
#[tokio::test]
async fn a_set_that_masks_credentials_masks_them_in_its_questions_too() {
    for (masked, revision) in [
        (true, Revision::Sessions),
        (true, Revision::Rounds),
        (false, Revision::Sessions),
    ] {
        let mut tools = ToolSet::new()
            .tool::<refund>()
            .guards(Guards::new().for_tool("refund", upstream_said))
            .request_state_key([9u8; 32], Duration::from_secs(60));
        if masked {
            tools = tools.mask_internal_errors("internal error");
        }
        let person = Person::new(json!(1));
        let client = connect_to(tools, revision, person.clone()).await;
        let result = client.call_tool(refund_of("O-HELD", 20)).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{revision:?}: {result:?}");
        let asked = person.asked();
        assert_eq!(asked.len(), 1, "{asked:?}");
        let record = &result.meta.unwrap().0[tool_envelope::mcp::APPROVAL_META_KEY][0];
        let kept = record["question"].as_str().unwrap();
        assert_eq!(kept, asked[0]);
        assert!(asked[0].starts_with("Billing at https://"), "{asked:?}");
        assert_eq!(
            asked[0].contains("hunter2"),
            !masked,
            "{revision:?}, masked: {masked}: {asked:?}"
        );
    }
}
