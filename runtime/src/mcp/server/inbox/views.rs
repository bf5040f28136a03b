//! What the inbox's pages show of an approval and of an escalation, read
//! from the records the store keeps (their envelopes masked already).

use serde::Serialize;
use serde_json::Value;

use super::time::{span, utc};
use crate::caller::Caller;
use crate::keys;
use crate::mcp::server::visible::{visible, visible_lines};
use crate::store::{ApprovalRecord, ApprovalState, EscalationRecord};

/// An approval as the page shows it.
#[derive(Serialize)]
pub(super) struct ApprovalView {
    id: String,
    headline: String,
    reason: String,
    tool: String,
    caller: String,
    approvers: String,
    arguments: Vec<Argument>,
    alternatives: Vec<String>,
    /// What the caller's client said its user approved of the same call
    /// before it waited here: the names as the client sent them.
    client_approved: Vec<String>,
    created: String,
    expires: String,
    state: &'static str,
    decided_by: Option<String>,
    decided: Option<String>,
    decision: &'static str,
    note: Option<String>,
    result: Option<String>,
    result_kind: &'static str,
    outcome: String,
    can_decide: bool,
    why_not: String,
}

/// One argument of a call, as shown (secrets are masked already).
#[derive(Serialize)]
struct Argument {
    name: String,
    value: String,
}

/// The arguments of an envelope's `attempted_query`, numbers first: the
/// amount a person decides on before the rest. Each value is shown as the
/// JSON it was sent as — a text quoted, so that `"620"` is not taken for
/// `620` — with every character that does not show itself written out
/// ([`visible`]).
/// Each shown to `most` bytes.
fn arguments_of(envelope: &Value, most: usize) -> Vec<Argument> {
    let mut arguments: Vec<Argument> = match envelope.get(keys::ATTEMPTED_QUERY) {
        Some(Value::Object(fields)) => fields
            .iter()
            .map(|(name, value)| Argument {
                name: cut(name, most, visible),
                value: cut(&value.to_string(), most, visible),
            })
            .collect(),
        Some(Value::String(query)) => vec![Argument {
            name: "query".into(),
            value: cut(&Value::from(query.as_str()).to_string(), most, visible),
        }],
        _ => Vec::new(),
    };
    let numeric = |argument: &Argument| argument.value.parse::<f64>().is_ok();
    arguments.sort_by_key(|argument| !numeric(argument));
    arguments
}

/// The first [`MOVES`] texts of a list, each a [`LINE`] at most, and a
/// last one saying how many more there are.
fn strings(value: Option<&Value>) -> Vec<String> {
    let texts = value
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let texts: Vec<&str> = texts.iter().filter_map(Value::as_str).collect();
    let mut shown: Vec<String> = (texts.iter().take(MOVES))
        .map(|text| cut(text, LINE, visible))
        .collect();
    if texts.len() > MOVES {
        shown.push(format!("… and {} more, not shown", texts.len() - MOVES));
    }
    shown
}

/// The most bytes shown of a line of a list (an outcome, a next move, an
/// escalation's argument), and of a block (a result, partial results): a
/// page lists up to a thousand records, each of which may hold megabytes.
/// An approval's arguments are shown whole: a person decides on them (and
/// a call too long to show whole never waits for one: `TOO_LONG_TO_APPROVE`).
const LINE: usize = 512;
const BLOCK: usize = 4 * 1024;
/// The most next moves shown of one record.
const MOVES: usize = 8;
/// The most bytes shown of an approved call's result, on its own page.
const RESULT: usize = 64 * 1024;

/// `text` as `show` shows it ([`visible`], [`visible_lines`]), cut to
/// `most` bytes with a word saying so: only what may be shown is read.
fn cut(text: &str, most: usize, show: fn(&str) -> String) -> String {
    let mut shown = show(&text[..text.floor_char_boundary(most)]);
    if shown.len() > most || text.len() > most {
        shown.truncate(shown.floor_char_boundary(most));
        shown.push_str(&format!(" … [cut: {} bytes in all]", text.len()));
    }
    shown
}

/// A text of the records, every character shown ([`visible`]).
fn text(value: Option<&Value>) -> String {
    visible(value.and_then(Value::as_str).unwrap_or_default())
}

pub(super) fn view(approval: &ApprovalRecord, who: &Caller) -> ApprovalView {
    let shown = &approval.shown;
    let own = approval.caller.as_deref() == Some(who.subject());
    let holds = who.has_scope(&approval.approvers);
    // As it stands now: one whose time ran out is expired, swept or not.
    let state = approval.state_at(crate::store::now_ms());
    let pending = state == ApprovalState::Pending;
    let why_not = match (holds, own) {
        (false, _) => format!("Deciding this needs `{}`.", approval.approvers),
        (true, true) => "This is your own call: someone else decides it.".to_owned(),
        (true, false) => String::new(),
    };
    let result = approval.result.as_ref();
    let structured = result.and_then(|reply| reply.get("structuredContent"));
    let failed = result
        .and_then(|reply| reply.get("isError"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let outcome = match (state, structured) {
        (ApprovalState::Done, Some(content)) if failed => {
            format!("Failed: {}", text(content.get(keys::MESSAGE)))
        }
        (ApprovalState::Done, Some(content)) => match content.get("result") {
            Some(Value::String(result)) => format!("Done: {result}"),
            Some(other) => format!("Done: {other}"),
            None => "Done".to_owned(),
        },
        (ApprovalState::Done, None) => "Done".to_owned(),
        (state, _) => state.as_str().to_owned(),
    };
    ApprovalView {
        id: approval.id.clone(),
        headline: text(shown.get(keys::MESSAGE)),
        reason: text(shown.get(keys::REASON)),
        tool: visible(&approval.tool),
        caller: visible(approval.caller.as_deref().unwrap_or("(anonymous)")),
        approvers: visible(&approval.approvers),
        arguments: arguments_of(shown, usize::MAX),
        alternatives: strings(shown.get(keys::ALTERNATIVES)),
        client_approved: approval
            .client_answers
            .iter()
            .filter_map(client_said)
            .collect(),
        created: utc(approval.created_ms),
        expires: utc(approval.expires_ms),
        state: state.as_str(),
        decided_by: approval.decided_by.as_deref().map(visible),
        decided: approval.decided_ms.map(utc),
        decision: match state {
            ApprovalState::Declined => "declined",
            ApprovalState::Withdrawn => "withdrawn",
            ApprovalState::Pending => "pending",
            // A yes that lapsed unrun was still a yes: the page says it
            // expired beside it.
            ApprovalState::Expired if approval.decided_by.is_some() => "approved",
            ApprovalState::Expired => "expired",
            _ => "approved",
        },
        note: (approval.note.as_deref())
            .filter(|note| !note.is_empty())
            .map(visible),
        result: structured.map(|content| {
            let pretty = serde_json::to_string_pretty(content).unwrap_or_default();
            cut(&pretty, RESULT, visible_lines)
        }),
        result_kind: if failed { "failure" } else { "success" },
        outcome: cut(&outcome, LINE, visible),
        can_decide: pending && holds && !own,
        why_not,
    }
}

/// One yes of the client's user ([`ApprovalRecord::client_answers`]), in
/// a line: the block they approved, then what the client typed and called
/// itself, each labelled and quoted — text nobody vouches for, never taken
/// for the page's own words — and the caller the server authenticated.
/// `None` for a record that is not a yes.
fn client_said(record: &Value) -> Option<String> {
    let said =
        |field: &str| (record.get(field).and_then(Value::as_str)).filter(|said| !said.is_empty());
    if said("action") != Some("accept") {
        return None;
    }
    let question = said("question").unwrap_or_default();
    let block = crate::mcp::server::approval::block_asked(question);
    let quoted = |field: &str| said(field).map_or("none".to_owned(), |text| format!("“{text}”"));
    let line = format!(
        "“{block}” — approved at the client; name typed there: {}; client: {}; caller: {}",
        quoted("approver"),
        quoted("client"),
        said("caller").unwrap_or("none"),
    );
    Some(cut(&line, LINE, visible))
}

/// An escalation as the page shows it.
#[derive(Serialize)]
pub(super) struct EscalationView {
    id: String,
    message: String,
    category: String,
    code: String,
    why: String,
    tool: String,
    caller: String,
    created: String,
    attempts: u64,
    elapsed: String,
    arguments: Vec<Argument>,
    partial: Option<String>,
    alternatives: Vec<String>,
    /// Whether it is the escalation of `who`'s own call: someone else
    /// resolves it.
    own: bool,
}

/// An escalation, as `who` sees it.
pub(super) fn escalation_view(escalation: &EscalationRecord, who: &Caller) -> EscalationView {
    let envelope = &escalation.envelope;
    let info = envelope.get(keys::ESCALATION);
    EscalationView {
        own: escalation.caller.as_deref() == Some(who.subject()),
        id: escalation.id.clone(),
        message: cut(
            envelope
                .get(keys::MESSAGE)
                .and_then(Value::as_str)
                .unwrap_or_default(),
            BLOCK,
            visible,
        ),
        category: text(envelope.get(keys::ERROR_CATEGORY)),
        code: text(envelope.get(keys::REASON)),
        why: text(info.and_then(|info| info.get(keys::escalation::REASON))),
        tool: visible(escalation.tool.as_deref().unwrap_or_default()),
        caller: visible(escalation.caller.as_deref().unwrap_or("(anonymous)")),
        created: utc(escalation.created_ms),
        attempts: info
            .and_then(|info| info.get(keys::escalation::ATTEMPTS))
            .and_then(Value::as_u64)
            .unwrap_or(0),
        elapsed: span(
            info.and_then(|info| info.get(keys::escalation::ELAPSED_MS))
                .and_then(Value::as_i64)
                .unwrap_or(0),
        ),
        arguments: arguments_of(envelope, LINE),
        partial: envelope
            .get(keys::PARTIAL_RESULTS)
            .filter(|partial| !partial.is_null())
            .map(|partial| {
                let pretty = serde_json::to_string_pretty(partial).unwrap_or_default();
                cut(&pretty, BLOCK, visible_lines)
            }),
        alternatives: strings(envelope.get(keys::ALTERNATIVES)),
    }
}
