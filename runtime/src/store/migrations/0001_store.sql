-- tool-envelope's store: one schema for SQLite and Postgres. Times are
-- milliseconds since the Unix epoch; JSON is kept as text.

CREATE TABLE IF NOT EXISTS te_tasks (
    id               TEXT PRIMARY KEY,
    tool             TEXT NOT NULL,
    arguments        TEXT NOT NULL,
    caller           TEXT,
    state            TEXT NOT NULL,
    status_message   TEXT,
    created_ms       BIGINT NOT NULL,
    updated_ms       BIGINT NOT NULL,
    ttl_ms           BIGINT NOT NULL,
    holder           TEXT,
    lease_until_ms   BIGINT NOT NULL,
    safe_to_repeat   BOOLEAN NOT NULL,
    runs             BIGINT NOT NULL,
    input_requests   TEXT,
    input_responses  TEXT,
    cancel_requested BOOLEAN NOT NULL,
    result           TEXT,
    error            TEXT,
    version          BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS te_tasks_by_lease ON te_tasks (state, lease_until_ms);

CREATE TABLE IF NOT EXISTS te_approvals (
    id             TEXT PRIMARY KEY,
    digest         TEXT NOT NULL,
    block          TEXT NOT NULL,
    tool           TEXT NOT NULL,
    arguments      TEXT NOT NULL,
    shown          TEXT NOT NULL,
    caller         TEXT,
    caller_scopes  TEXT NOT NULL,
    approvers      TEXT NOT NULL,
    state          TEXT NOT NULL,
    created_ms     BIGINT NOT NULL,
    expires_ms     BIGINT NOT NULL,
    decided_by     TEXT,
    decided_ms     BIGINT,
    note           TEXT,
    holder         TEXT,
    lease_until_ms BIGINT NOT NULL,
    safe_to_repeat BOOLEAN NOT NULL,
    result         TEXT
);
-- One undecided or unfinished approval per call and block, whichever
-- replica opens it.
CREATE UNIQUE INDEX IF NOT EXISTS te_approvals_live
    ON te_approvals (digest, block) WHERE state IN ('pending', 'approved', 'running');
CREATE INDEX IF NOT EXISTS te_approvals_by_state ON te_approvals (state, created_ms);

CREATE TABLE IF NOT EXISTS te_redemptions (
    nonce    TEXT PRIMARY KEY,
    until_ms BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS te_escalations (
    id          TEXT PRIMARY KEY,
    tool        TEXT,
    caller      TEXT,
    envelope    TEXT NOT NULL,
    state       TEXT NOT NULL,
    created_ms  BIGINT NOT NULL,
    resolved_by TEXT,
    resolved_ms BIGINT,
    note        TEXT
);
CREATE INDEX IF NOT EXISTS te_escalations_by_state ON te_escalations (state, created_ms);

CREATE TABLE IF NOT EXISTS te_audit (
    id      TEXT PRIMARY KEY,
    at_ms   BIGINT NOT NULL,
    who     TEXT NOT NULL,
    what    TEXT NOT NULL,
    subject TEXT NOT NULL,
    note    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS te_audit_by_time ON te_audit (at_ms);
