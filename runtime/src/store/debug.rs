//! How the records of a store print: without the arguments of their call,
//! which are the call's as its client sent them, secrets and all, nor the
//! answers its client gave.

use std::fmt;

use crate::redact::REDACTED;
use crate::store::{ApprovalRecord, TaskRecord};

/// Its arguments are not printed: they are the call's as sent, secrets
/// and all.
impl fmt::Debug for TaskRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskRecord")
            .field("id", &self.id)
            .field("service", &self.service)
            .field("tool", &self.tool)
            .field("arguments", &REDACTED)
            .field("caller", &self.caller)
            .field("caller_scopes", &self.caller_scopes)
            .field("state", &self.state)
            .field("status_message", &self.status_message)
            .field("created_ms", &self.created_ms)
            .field("updated_ms", &self.updated_ms)
            .field("ttl_ms", &self.ttl_ms)
            .field("holder", &self.holder)
            .field("lease_until_ms", &self.lease_until_ms)
            .field("safe_to_repeat", &self.safe_to_repeat)
            .field("runs", &self.runs)
            .field("input_requests", &self.input_requests)
            .field(
                "input_responses",
                &self.input_responses.as_ref().map(|_| REDACTED),
            )
            .field("cancel_requested", &self.cancel_requested)
            .field("result", &self.result)
            .field("error", &self.error)
            .finish()
    }
}

/// Its arguments are not printed: they are the call's as sent, secrets
/// and all.
impl fmt::Debug for ApprovalRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalRecord")
            .field("id", &self.id)
            .field("service", &self.service)
            .field("digest", &self.digest)
            .field("block", &self.block)
            .field("waived", &self.waived)
            .field("client_answers", &self.client_answers)
            .field("tool", &self.tool)
            .field("arguments", &REDACTED)
            .field("shown", &self.shown)
            .field("caller", &self.caller)
            .field("caller_scopes", &self.caller_scopes)
            .field("approvers", &self.approvers)
            .field("state", &self.state)
            .field("created_ms", &self.created_ms)
            .field("expires_ms", &self.expires_ms)
            .field("decided_by", &self.decided_by)
            .field("decided_ms", &self.decided_ms)
            .field("note", &self.note)
            .field("holder", &self.holder)
            .field("lease_until_ms", &self.lease_until_ms)
            .field("safe_to_repeat", &self.safe_to_repeat)
            .field("result", &self.result)
            .field("notice_due_ms", &self.notice_due_ms)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::store::{ApprovalRecord, MemoryStore, Store, TaskRecord};

    /// A store, and the records it gives, print no argument of a call: a
    /// log line or a panic that prints them shows no secret.
    #[tokio::test]
    async fn records_print_no_argument() {
        let arguments = json!({"order": "O-1", "card": "4111-s3cret"});
        let task = TaskRecord::new("refund", arguments.clone(), None, 60_000);
        let approval = ApprovalRecord::new(
            "digest",
            "block",
            "refund",
            arguments,
            json!({"attempted_query": {"card": "[redacted]"}}),
            None,
            "refunds:approve",
            i64::MAX,
        );
        let store = MemoryStore::new();
        store.create_task(&task, 10).await.unwrap();
        store.open_approval(&approval, 10).await.unwrap();
        let printed = format!("{task:?} {approval:?} {store:?}");
        assert!(printed.contains("refund"), "{printed}");
        assert!(!printed.contains("s3cret"), "{printed}");
    }
}
