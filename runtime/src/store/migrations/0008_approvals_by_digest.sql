-- Every guarded call reads its own approvals before it runs (the same call
-- made again meets its approval whatever the guards say now): by digest,
-- decided ones included, which the partial index above leaves out.
CREATE INDEX IF NOT EXISTS te_approvals_by_digest ON te_approvals (digest, created_ms);
