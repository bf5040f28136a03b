//! What the inbox's pages show of an approval and of an escalation, read
//! from the records the store keeps (their envelopes masked already).

use serde::Serialize;
use serde_json::Value;

use super::time::{span, utc};
use crate::caller::Caller;
use crate::keys;
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
fn arguments_of(envelope: &Value) -> Vec<Argument> {
    let mut arguments: Vec<Argument> = match envelope.get(keys::ATTEMPTED_QUERY) {
        Some(Value::Object(fields)) => fields
            .iter()
            .map(|(name, value)| Argument {
                name: visible(name),
                value: visible(&value.to_string()),
            })
            .collect(),
        Some(Value::String(query)) => vec![Argument {
            name: "query".into(),
            value: visible(&Value::from(query.as_str()).to_string()),
        }],
        _ => Vec::new(),
    };
    let numeric = |argument: &Argument| argument.value.parse::<f64>().is_ok();
    arguments.sort_by_key(|argument| !numeric(argument));
    arguments
}

/// `text` with each character that does not show itself — controls, marks
/// that turn the direction of what follows (a caller could make
/// `4321` read as `1234`), characters of no width, tags — written out as
/// `\u{202e}`: a person approving sees every character the call carries.
fn visible(text: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(
                c,
                '\u{00ad}'
                    | '\u{034f}'
                    | '\u{061c}'
                    | '\u{115f}'
                    | '\u{1160}'
                    | '\u{17b4}'
                    | '\u{17b5}'
                    | '\u{180b}'..='\u{180f}'
                    | '\u{200b}'..='\u{200f}'
                    | '\u{202a}'..='\u{202e}'
                    | '\u{2060}'..='\u{206f}'
                    | '\u{3164}'
                    | '\u{fe00}'..='\u{fe0f}'
                    | '\u{feff}'
                    | '\u{ffa0}'
                    | '\u{fff0}'..='\u{fffb}'
                    | '\u{1d173}'..='\u{1d17a}'
                    | '\u{e0000}'..='\u{e0fff}'
            )
    };
    if !text.contains(hidden) {
        return text.to_owned();
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match hidden(c) {
            true => shown.push_str(&format!("\\u{{{:04x}}}", u32::from(c))),
            false => shown.push(c),
        }
    }
    shown
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(visible))
                .collect()
        })
        .unwrap_or_default()
}

/// A text of the records, every character shown ([`visible`]).
fn text(value: Option<&Value>) -> String {
    visible(value.and_then(Value::as_str).unwrap_or_default())
}

pub(super) fn view(approval: &ApprovalRecord, who: &Caller) -> ApprovalView {
    let shown = &approval.shown;
    let own = approval.caller.as_deref() == Some(who.subject());
    let holds = who.has_scope(&approval.approvers);
    let pending = approval.state == ApprovalState::Pending;
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
    let outcome = match (approval.state, structured) {
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
        tool: approval.tool.clone(),
        caller: approval
            .caller
            .clone()
            .unwrap_or_else(|| "(anonymous)".into()),
        approvers: approval.approvers.clone(),
        arguments: arguments_of(shown),
        alternatives: strings(shown.get(keys::ALTERNATIVES)),
        created: utc(approval.created_ms),
        expires: utc(approval.expires_ms),
        state: approval.state.as_str(),
        decided_by: approval.decided_by.clone(),
        decided: approval.decided_ms.map(utc),
        decision: match approval.state {
            ApprovalState::Declined => "declined",
            ApprovalState::Withdrawn => "withdrawn",
            ApprovalState::Pending => "pending",
            ApprovalState::Expired => "expired",
            _ => "approved",
        },
        note: approval.note.clone().filter(|note| !note.is_empty()),
        result: structured
            .map(|content| visible(&serde_json::to_string_pretty(content).unwrap_or_default())),
        result_kind: if failed { "failure" } else { "success" },
        outcome: visible(&outcome),
        can_decide: pending && holds && !own,
        why_not,
    }
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
        message: text(envelope.get(keys::MESSAGE)),
        category: text(envelope.get(keys::ERROR_CATEGORY)),
        code: text(envelope.get(keys::REASON)),
        why: text(info.and_then(|info| info.get(keys::escalation::REASON))),
        tool: escalation.tool.clone().unwrap_or_default(),
        caller: escalation
            .caller
            .clone()
            .unwrap_or_else(|| "(anonymous)".into()),
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
        arguments: arguments_of(envelope),
        partial: envelope
            .get(keys::PARTIAL_RESULTS)
            .filter(|partial| !partial.is_null())
            .map(|partial| visible(&serde_json::to_string_pretty(partial).unwrap_or_default())),
        alternatives: strings(envelope.get(keys::ALTERNATIVES)),
    }
}
