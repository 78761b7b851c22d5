-- The gateway's store on PostgreSQL: the schema of the SQLite store's migrations V1 to V4 (db/migration) in one step,
-- so that both are at version 4 and a later change is one migration of the same version in each. Every statement the
-- gateway runs lives in dev.sandgate.gateway.store.StoreStatements.
--
-- Names sort as in SQLite (byte order, COLLATE "C"), so that pages of a list come in the same order on both stores.

CREATE TABLE gateway_meta (
    meta_key   TEXT PRIMARY KEY,
    meta_value TEXT NOT NULL
);

CREATE TABLE sandbox (
    id                    TEXT PRIMARY KEY,
    workspace             TEXT COLLATE "C" NOT NULL,
    name                  TEXT COLLATE "C" NOT NULL,
    phase                 TEXT NOT NULL,
    generation            BIGINT NOT NULL,
    generation_start_ms   BIGINT NOT NULL,
    launch_revision       BIGINT NOT NULL,
    launch_digest         TEXT NOT NULL,
    runtime_generation    BIGINT NOT NULL,
    runtime_state         TEXT NOT NULL,
    runtime_detail        TEXT NOT NULL,
    policy_mode           TEXT NOT NULL,
    admitted_revision     BIGINT NOT NULL,
    admitted_digest       TEXT NOT NULL,
    spec_json             TEXT NOT NULL,
    labels_json           TEXT NOT NULL,
    conditions_json       TEXT NOT NULL,
    pending_operation     TEXT,
    pending_operation_id  TEXT,
    pending_request_id    TEXT,
    pending_expected_gen  BIGINT,
    pending_since_ms      BIGINT,
    resource_version      BIGINT NOT NULL,
    create_ms             BIGINT NOT NULL,
    update_ms             BIGINT NOT NULL
);

-- Also the conflict target of the insert of a sandbox (ON CONFLICT (workspace, name) DO NOTHING).
CREATE UNIQUE INDEX sandbox_workspace_name ON sandbox (workspace, name);

CREATE TABLE sandbox_label (
    sandbox_id  TEXT NOT NULL REFERENCES sandbox (id) ON DELETE CASCADE,
    label_key   TEXT NOT NULL,
    label_value TEXT NOT NULL,
    PRIMARY KEY (sandbox_id, label_key)
);

CREATE INDEX sandbox_label_lookup ON sandbox_label (label_key, label_value);

CREATE TABLE policy_revision (
    sandbox_id  TEXT NOT NULL REFERENCES sandbox (id) ON DELETE CASCADE,
    revision    BIGINT NOT NULL,
    digest      TEXT NOT NULL,
    document    BYTEA NOT NULL,
    admit_ms    BIGINT NOT NULL,
    PRIMARY KEY (sandbox_id, revision)
);

-- admission: the order requests were admitted in (SQLite's rowid), which the pruning bisects.
CREATE TABLE request (
    request_id   TEXT PRIMARY KEY,
    admission    BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    method       TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    sandbox_id   TEXT,
    generation   BIGINT NOT NULL,
    state        TEXT NOT NULL,
    result_json  TEXT,
    create_ms    BIGINT NOT NULL,
    complete_ms  BIGINT,
    principal    TEXT NOT NULL DEFAULT ''
);
