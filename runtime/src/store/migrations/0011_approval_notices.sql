-- When the notice of an approval is due (`ApprovalRecord::notice_due_ms`):
-- set when a tool set with a webhook opens it, moved on by the replica
-- that claims it to post, cleared once it is delivered. A runner posts the
-- pending approvals whose notice is due, so that a notice outlives the
-- replica that opened its approval, a store that failed after keeping it,
-- and a receiver that was down. A replica that does not know the column
-- opens approvals without one: none is due.
ALTER TABLE te_approvals ADD COLUMN notice_due_ms BIGINT;
CREATE INDEX IF NOT EXISTS te_approvals_notices ON te_approvals (service, notice_due_ms)
    WHERE notice_due_ms IS NOT NULL AND state = 'pending';
