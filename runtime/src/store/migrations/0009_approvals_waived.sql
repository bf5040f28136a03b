-- An approval that waits for approvers keeps the blocks of the same call
-- its client's user approved before it waited: its approved run passes
-- them too. A replica that does not know the column runs the call as
-- before, its client's blocks not passed: it stops there, nothing runs.
ALTER TABLE te_approvals ADD COLUMN waived TEXT NOT NULL DEFAULT '[]';
