-- The name of the database's record of used nonces (`Store::ledger`):
-- one row, written by the first replica to open the database after this
-- migration, read by every one after. A `requestState` carrying a yes is
-- spent only by a store of the same name: a replica whose database never
-- saw it spent does not take it as unspent.
CREATE TABLE te_ledger (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    id TEXT NOT NULL
);
