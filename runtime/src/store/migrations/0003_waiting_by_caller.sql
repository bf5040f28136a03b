-- How many approvals one caller has waiting is counted before each new one
-- is opened (`Store::waiting_approvals`).
CREATE INDEX IF NOT EXISTS te_approvals_waiting_by_caller
    ON te_approvals (caller, state, expires_ms);
