-- Who may see and resolve an escalation: the scope a person's token must
-- grant (an expired approval's escalation is its approvers'); none, anyone
-- who may enter the inbox.
ALTER TABLE te_escalations ADD COLUMN approvers TEXT;
