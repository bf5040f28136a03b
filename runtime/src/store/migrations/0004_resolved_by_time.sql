-- Resolved escalations are forgotten some time after their resolution
-- (`Store::forget_resolved_escalations`, on every sweep when a tool set asks
-- for it): found by their resolution's time, not by reading them all.
CREATE INDEX IF NOT EXISTS te_escalations_resolved_by_time
    ON te_escalations (state, resolved_ms);
