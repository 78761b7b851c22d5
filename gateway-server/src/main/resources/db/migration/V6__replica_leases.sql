-- Replicas (issue 31): the table of db/postgresql V6, so that both schemas stay at one version. A gateway on SQLite
-- is one process (gateway.lock) and takes no leases; the table lets the store contract run the lease rules on both.
CREATE TABLE replica_lease (
    lease_key  TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    epoch      INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
);
