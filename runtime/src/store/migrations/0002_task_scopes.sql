-- A task kept to be run again keeps the scopes its caller's token granted,
-- so that it runs again as it would have.
ALTER TABLE te_tasks ADD COLUMN caller_scopes TEXT NOT NULL DEFAULT '[]';
