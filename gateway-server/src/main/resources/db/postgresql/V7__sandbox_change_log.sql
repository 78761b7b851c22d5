-- Watch across replicas (issue 31): every write of a sandbox row appends one row here in the same transaction, and
-- notifies the channel sandgate_sandbox_change (delivered at the commit). Each replica follows the log in seq order and
-- streams its rows to its own watchers. seq is taken before the commit, so a row can become visible after a row with
-- a larger seq: a follower holds at such a hole until the transaction that took it has ended. sandbox_json is the
-- record after the change (before it, for a deletion) without environment values, as a watch event shows it.
CREATE TABLE sandbox_change (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sandbox_id      TEXT NOT NULL,
    resource_version BIGINT NOT NULL,
    change_type     TEXT NOT NULL,
    sandbox_json    TEXT NOT NULL,
    change_ms       BIGINT NOT NULL
);

-- The leader prunes the log (oldest first); through is the largest seq it may have removed. A follower whose position
-- is below it may have missed rows: its replica's watch streams end with WATCH_OVERFLOW.
CREATE TABLE sandbox_change_pruned (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    through BIGINT NOT NULL
);
INSERT INTO sandbox_change_pruned (id, through) VALUES (1, 0);
