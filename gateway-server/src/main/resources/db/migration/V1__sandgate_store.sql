-- The gateway's embedded store. Every statement the gateway runs lives in dev.sandgate.gateway.store.SqliteStatements.

CREATE TABLE gateway_meta (
    meta_key   TEXT PRIMARY KEY,
    meta_value TEXT NOT NULL
);

-- One row per sandbox that exists (a delete removes the row when the driver has removed the runtime resource).
CREATE TABLE sandbox (
    id                    TEXT PRIMARY KEY,
    workspace             TEXT NOT NULL,
    name                  TEXT NOT NULL,
    phase                 TEXT NOT NULL,
    -- the latest claimed execution generation (1 at create, +1 per claimed start, never reused)
    generation            INTEGER NOT NULL,
    generation_start_ms   INTEGER NOT NULL,
    -- the policy revision captured for that generation, in the same transaction as the claim
    launch_revision       INTEGER NOT NULL,
    launch_digest         TEXT NOT NULL,
    -- the generation last confirmed on the runtime resource (0: none yet)
    runtime_generation    INTEGER NOT NULL,
    runtime_state         TEXT NOT NULL,
    runtime_detail        TEXT NOT NULL,
    policy_mode           TEXT NOT NULL,
    admitted_revision     INTEGER NOT NULL,
    admitted_digest       TEXT NOT NULL,
    spec_json             TEXT NOT NULL,
    labels_json           TEXT NOT NULL,
    conditions_json       TEXT NOT NULL,
    -- the unfinished transition, if any: recorded before the driver is called, cleared with its result
    pending_operation     TEXT,
    pending_operation_id  TEXT,
    pending_request_id    TEXT,
    pending_expected_gen  INTEGER,
    pending_since_ms      INTEGER,
    resource_version      INTEGER NOT NULL,
    create_ms             INTEGER NOT NULL,
    update_ms             INTEGER NOT NULL
);

CREATE UNIQUE INDEX sandbox_workspace_name ON sandbox (workspace, name);
CREATE INDEX sandbox_pending ON sandbox (pending_operation) WHERE pending_operation IS NOT NULL;

CREATE TABLE sandbox_label (
    sandbox_id  TEXT NOT NULL REFERENCES sandbox (id) ON DELETE CASCADE,
    label_key   TEXT NOT NULL,
    label_value TEXT NOT NULL,
    PRIMARY KEY (sandbox_id, label_key)
);

CREATE INDEX sandbox_label_lookup ON sandbox_label (label_key, label_value);

-- Admitted policy revisions; immutable once written.
CREATE TABLE policy_revision (
    sandbox_id  TEXT NOT NULL REFERENCES sandbox (id) ON DELETE CASCADE,
    revision    INTEGER NOT NULL,
    digest      TEXT NOT NULL,
    document    BLOB NOT NULL,
    admit_ms    INTEGER NOT NULL,
    PRIMARY KEY (sandbox_id, revision)
);

-- Idempotency records: the first admission of each request_id, its target and its result.
CREATE TABLE request (
    request_id   TEXT PRIMARY KEY,
    method       TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    sandbox_id   TEXT,
    generation   INTEGER NOT NULL,
    state        TEXT NOT NULL,
    result_json  TEXT,
    create_ms    INTEGER NOT NULL,
    complete_ms  INTEGER
);

CREATE INDEX request_completed ON request (complete_ms) WHERE state = 'DONE';
