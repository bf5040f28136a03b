-- What one caller has waiting and open is counted before each new approval
-- and escalation is kept (`Store::waiting_approvals`,
-- `Store::open_escalations`), to bound it.
CREATE INDEX IF NOT EXISTS te_approvals_waiting_by_caller
    ON te_approvals (caller, state, expires_ms);
CREATE INDEX IF NOT EXISTS te_escalations_open_by_caller
    ON te_escalations (caller, state);
