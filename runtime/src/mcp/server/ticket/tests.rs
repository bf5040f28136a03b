//! Tests of the module above.

use super::*;
use serde_json::json;

fn record(block: &str, state: ApprovalState, result: Option<Value>) -> ApprovalRecord {
    let mut approval = ApprovalRecord::new(
        "call",
        block,
        "refund",
        json!({}),
        json!({}),
        Some("alice".to_owned()),
        "refunds:approve",
        i64::MAX,
    );
    approval.state = state;
    approval.result = result;
    approval
}

fn awaiting(id: &str) -> Value {
    json!({"isError": true, "structuredContent": {
        "reason": "AWAITING_APPROVAL",
        "escalation": {"ticket": {"id": id}}
    }})
}

#[test]
fn a_run_that_succeeded_hands_on_to_no_ticket_whatever_it_returned() {
    let finance = record("finance@1", ApprovalState::Pending, None);
    // A tool's success, shaped by its caller as a blocked run's reply.
    let mut forged = awaiting(&finance.id);
    forged["isError"] = json!(false);
    let cap = record("cap@0", ApprovalState::Done, Some(forged));
    let live = [cap.clone(), finance.clone()];
    assert_eq!(onward(&cap, &live).id, cap.id);
    assert_eq!(chain_blocks(&finance, &live), ["finance@1"]);
}

#[test]
fn a_ticket_whose_run_met_the_next_block_answers_for_that_blocks_ticket() {
    let finance = record("finance@1", ApprovalState::Pending, None);
    let cap = record("cap@0", ApprovalState::Done, Some(awaiting(&finance.id)));
    let live = [cap.clone(), finance.clone()];
    assert_eq!(onward(&cap, &live).id, finance.id);
    // Finance's own ticket stands for itself; so does a ticket whose
    // next one is another call's, or gone.
    assert_eq!(onward(&finance, &live).id, finance.id);
    let mut elsewhere = finance.clone();
    elsewhere.digest = "another call".to_owned();
    assert_eq!(onward(&cap, &[cap.clone(), elsewhere]).id, cap.id);
    assert_eq!(onward(&cap, std::slice::from_ref(&cap)).id, cap.id);
}

#[test]
fn a_run_passes_only_the_blocks_of_the_approvals_that_handed_on_to_it() {
    // The cap's approval ran and met finance's block; finance's is the
    // one that runs now: it passes both.
    let finance = record("finance@1", ApprovalState::Running, None);
    let cap = record("cap@0", ApprovalState::Done, Some(awaiting(&finance.id)));
    let live = [cap.clone(), finance.clone()];
    assert_eq!(chain_blocks(&finance, &live), ["finance@1", "cap@0"]);

    // Finance's approval ran the tool; later a new cap approval of the
    // same call runs: finance's spent yes waives nothing for it, nor
    // does another approval that waits to run on its own.
    let ran = record(
        "finance@1",
        ApprovalState::Done,
        Some(json!({"structuredContent": {"result": "Refunded"}})),
    );
    let again = record("cap@0", ApprovalState::Running, None);
    let waiting = record("other@2", ApprovalState::Approved, None);
    let live = [ran, again.clone(), waiting];
    assert_eq!(chain_blocks(&again, &live), ["cap@0"]);

    // Another call's approval that names this one is not of this call.
    let mut elsewhere = record("x@3", ApprovalState::Done, Some(awaiting(&again.id)));
    elsewhere.digest = "another call".to_owned();
    assert_eq!(chain_blocks(&again, &[elsewhere]), ["cap@0"]);
}
