-- The service that keeps a task or opened an approval: the name of its
-- tool set (empty for a set without one). A replica takes over only its
-- own service's tasks and runs only its own service's approved calls: two
-- services sharing a store may each have a tool of the same name doing
-- different things. Rows kept before this migration belong to the
-- unnamed service (see the CHANGELOG for a named one). An escalation is a
-- service's (seen on its inbox alone), or, null, a calling agent's.
ALTER TABLE te_tasks ADD COLUMN service TEXT NOT NULL DEFAULT '';
ALTER TABLE te_approvals ADD COLUMN service TEXT NOT NULL DEFAULT '';
ALTER TABLE te_escalations ADD COLUMN service TEXT;
