package dev.sandgate.gateway.store;

/** Every SQL statement the gateway runs against its embedded SQLite store (the schema is in db/migration). */
final class SqliteStatements {
    private SqliteStatements() {}

    /** Group commit: each queued write runs inside this savepoint of the shared transaction. */
    static final String SAVEPOINT = "SAVEPOINT queued_write";

    static final String ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT queued_write";

    static final String RELEASE_SAVEPOINT = "RELEASE SAVEPOINT queued_write";

    static final String SANDBOX_COLUMNS = "id, workspace, name, phase, generation, generation_start_ms,"
            + " launch_revision, launch_digest, runtime_generation, runtime_state, runtime_detail, policy_mode,"
            + " admitted_revision, admitted_digest,"
            + " spec_json, labels_json, conditions_json, pending_operation, pending_operation_id, pending_request_id,"
            + " pending_expected_gen, pending_since_ms, resource_version, create_ms, update_ms";

    static final String SELECT_SANDBOX = "SELECT " + SANDBOX_COLUMNS + " FROM sandbox WHERE id = ?";

    static final String SELECT_SANDBOX_BY_NAME =
            "SELECT " + SANDBOX_COLUMNS + " FROM sandbox WHERE workspace = ? AND name = ?";

    static final String INSERT_SANDBOX = "INSERT INTO sandbox (" + SANDBOX_COLUMNS + ")"
            + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

    static final String INSERT_LABEL =
            "INSERT INTO sandbox_label (sandbox_id, label_key, label_value) VALUES (?, ?, ?)";

    /** Compare-and-set: writes only if the stored resource version is the one the writer read. */
    static final String UPDATE_SANDBOX = "UPDATE sandbox SET phase = ?, generation = ?, generation_start_ms = ?,"
            + " launch_revision = ?, launch_digest = ?, runtime_generation = ?, runtime_state = ?, runtime_detail = ?,"
            + " admitted_revision = ?, admitted_digest = ?, conditions_json = ?, pending_operation = ?, pending_operation_id = ?,"
            + " pending_request_id = ?, pending_expected_gen = ?, pending_since_ms = ?, resource_version = ?,"
            + " update_ms = ? WHERE id = ? AND resource_version = ?";

    static final String DELETE_SANDBOX = "DELETE FROM sandbox WHERE id = ? AND resource_version = ?";

    static final String SELECT_PENDING =
            "SELECT " + SANDBOX_COLUMNS + " FROM sandbox WHERE pending_operation IS NOT NULL ORDER BY pending_since_ms";

    /** The start of a list query; the filters and the page bound are appended by {@link SqliteStore}. */
    static final String SELECT_SANDBOXES_PREFIX = "SELECT " + SANDBOX_COLUMNS + " FROM sandbox s WHERE 1 = 1";

    static final String FILTER_WORKSPACE = " AND s.workspace = ?";
    static final String FILTER_LABEL =
            " AND EXISTS (SELECT 1 FROM sandbox_label l WHERE l.sandbox_id = s.id AND l.label_key = ?"
                    + " AND l.label_value = ?)";
    static final String FILTER_PHASE_PREFIX = " AND s.phase IN (";
    static final String FILTER_AFTER = " AND (s.workspace > ? OR (s.workspace = ? AND s.name > ?))";
    static final String ORDER_AND_LIMIT = " ORDER BY s.workspace, s.name LIMIT ?";

    static final String INSERT_POLICY_REVISION =
            "INSERT INTO policy_revision (sandbox_id, revision, digest, document, admit_ms) VALUES (?, ?, ?, ?, ?)";

    static final String SELECT_POLICY_REVISION =
            "SELECT sandbox_id, revision, digest, document, admit_ms FROM policy_revision"
                    + " WHERE sandbox_id = ? AND revision = ?";

    static final String SELECT_REQUEST = "SELECT request_id, method, fingerprint, sandbox_id, generation, state,"
            + " result_json, create_ms, complete_ms, principal FROM request WHERE request_id = ?";

    static final String INSERT_REQUEST = "INSERT INTO request (request_id, method, fingerprint, sandbox_id, generation,"
            + " state, result_json, create_ms, complete_ms, principal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

    static final String COMPLETE_REQUEST = "UPDATE request SET state = 'DONE', result_json = ?, complete_ms = ?"
            + " WHERE request_id = ? AND state = 'PENDING'";

    static final String REPLACE_REQUEST_RESULT =
            "UPDATE request SET result_json = ? WHERE request_id = ? AND state = 'DONE'";

    /**
     * Requests are stored in the order they were admitted (rowid), which is the order of create_ms; the pruning finds
     * where the records admitted since its cutoff begin by bisecting the rowids with these two.
     */
    static final String REQUEST_ROWIDS =
            "SELECT (SELECT min(rowid) FROM request), (SELECT max(rowid) FROM request)"; // each one b-tree descent

    static final String FIRST_REQUEST_FROM =
            "SELECT rowid, create_ms FROM request WHERE rowid >= ? ORDER BY rowid LIMIT 1";

    /** The oldest finished requests completed before a cutoff, among those admitted before a rowid, up to a limit. */
    static final String PRUNE_REQUESTS = "DELETE FROM request WHERE rowid IN (SELECT rowid FROM request"
            + " WHERE rowid < ? AND state = 'DONE' AND complete_ms < ? ORDER BY rowid LIMIT ?)";

    static final String SELECT_META = "SELECT meta_value FROM gateway_meta WHERE meta_key = ?";

    static final String UPSERT_META = "INSERT INTO gateway_meta (meta_key, meta_value) VALUES (?, ?)"
            + " ON CONFLICT (meta_key) DO UPDATE SET meta_value = excluded.meta_value";
}
