-- An approval that waits for approvers keeps the blocks of the same call
-- its client's user approved before it waited, and the records of their
-- answers: its approved run passes those blocks too, and its reply
-- carries the records. A replica that does not know the columns runs the
-- call as before, its client's blocks not passed: it stops there, nothing
-- runs.
ALTER TABLE te_approvals ADD COLUMN waived TEXT NOT NULL DEFAULT '[]';
ALTER TABLE te_approvals ADD COLUMN client_answers TEXT NOT NULL DEFAULT '[]';
