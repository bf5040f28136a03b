-- A caller's running tasks are counted before the next is kept
-- (`Store::create_task` with a bound), as their waiting approvals and
-- open escalations are (0003): by caller and state, not by every running
-- task of every caller.
CREATE INDEX IF NOT EXISTS te_tasks_running_by_caller
    ON te_tasks (caller, state);
