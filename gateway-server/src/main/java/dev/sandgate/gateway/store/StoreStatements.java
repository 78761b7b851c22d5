package dev.sandgate.gateway.store;

import dev.sandgate.gateway.api.ApiMethod;

/**
 * Every SQL statement the gateway runs against its store, for each {@link SqlDialect} (the schemas are in
 * db/migration for SQLite and db/postgresql for PostgreSQL). The two dialects differ only where they must: the
 * column that orders requests by admission, and the insert of a sandbox whose name is taken.
 */
final class StoreStatements {
    /** Group commit: each queued write runs inside this savepoint of the shared transaction. */
    static final String SAVEPOINT = "SAVEPOINT queued_write";

    static final String ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT queued_write";

    static final String RELEASE_SAVEPOINT = "RELEASE SAVEPOINT queued_write";

    static final String SANDBOX_COLUMNS = "id, workspace, name, phase, generation, generation_start_ms,"
            + " launch_revision, launch_digest, runtime_generation, runtime_state, runtime_detail, policy_mode,"
            + " admitted_revision, admitted_digest,"
            + " spec_json, labels_json, conditions_json, pending_operation, pending_operation_id, pending_request_id,"
            + " pending_expected_gen, pending_since_ms, resource_version, create_ms, update_ms,"
            + " expiry_ttl_ms, expiry_idle_ms, expiry_action, lease_generation, lease_ttl_deadline_ms,"
            + " lease_idle_deadline_ms, lease_renew_ms, lease_due_ms";

    static final String SELECT_SANDBOX = "SELECT " + SANDBOX_COLUMNS + " FROM sandbox WHERE id = ?";

    static final String SELECT_SANDBOX_BY_NAME =
            "SELECT " + SANDBOX_COLUMNS + " FROM sandbox WHERE workspace = ? AND name = ?";

    private static final String INSERT_SANDBOX_VALUES = "INSERT INTO sandbox (" + SANDBOX_COLUMNS + ")"
            + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            + " ?, ?, ?, ?, ?, ?, ?, ?)";

    static final String INSERT_LABEL =
            "INSERT INTO sandbox_label (sandbox_id, label_key, label_value) VALUES (?, ?, ?)";

    /** Compare-and-set: writes only if the stored resource version is the one the writer read. */
    static final String UPDATE_SANDBOX = "UPDATE sandbox SET phase = ?, generation = ?, generation_start_ms = ?,"
            + " launch_revision = ?, launch_digest = ?, runtime_generation = ?, runtime_state = ?, runtime_detail = ?,"
            + " admitted_revision = ?, admitted_digest = ?, conditions_json = ?, pending_operation = ?,"
            + " pending_operation_id = ?, pending_request_id = ?, pending_expected_gen = ?, pending_since_ms = ?,"
            + " lease_generation = ?, lease_ttl_deadline_ms = ?, lease_idle_deadline_ms = ?, lease_renew_ms = ?,"
            + " lease_due_ms = ?, resource_version = ?, update_ms = ? WHERE id = ? AND resource_version = ?";

    static final String DELETE_SANDBOX = "DELETE FROM sandbox WHERE id = ? AND resource_version = ?";

    /** The delete that returns the row it deleted, for the change log (PostgreSQL). */
    static final String DELETE_SANDBOX_RETURNING = DELETE_SANDBOX + " RETURNING " + SANDBOX_COLUMNS;

    static final String SELECT_PENDING =
            "SELECT " + SANDBOX_COLUMNS + " FROM sandbox WHERE pending_operation IS NOT NULL ORDER BY pending_since_ms";

    /** The start of a list query; the filters and the page bound are appended by {@link SqlTransaction}. */
    static final String SELECT_SANDBOXES_PREFIX = "SELECT " + SANDBOX_COLUMNS + " FROM sandbox s WHERE 1 = 1";

    static final String FILTER_WORKSPACE = " AND s.workspace = ?";
    static final String FILTER_LABEL =
            " AND EXISTS (SELECT 1 FROM sandbox_label l WHERE l.sandbox_id = s.id AND l.label_key = ?"
                    + " AND l.label_value = ?)";
    static final String FILTER_PHASE_PREFIX = " AND s.phase IN (";
    /**
     * The keyset seek past the previous page's last (workspace, name): a row value, which the unique index on those
     * columns serves as a range, so that every page costs the same however deep it is.
     */
    static final String FILTER_AFTER = " AND (s.workspace, s.name) > (?, ?)";

    /**
     * The seek within one workspace's list: with {@code s.workspace = ?} the planners search the index by that equality
     * and would filter a row value row by row from the workspace's first name; a range on the name seeks.
     */
    static final String FILTER_AFTER_NAME = " AND s.name > ?";

    static final String ORDER_AND_LIMIT = " ORDER BY s.workspace, s.name LIMIT ?";

    /** The columns of a {@link RuntimeState}: none of the JSON that only a whole record needs, bar the conditions. */
    static final String RUNTIME_COLUMNS = "id, workspace, name, phase, generation, runtime_generation, runtime_state,"
            + " runtime_detail, conditions_json, pending_operation, update_ms";

    static final String SELECT_RUNTIME_STATE = "SELECT " + RUNTIME_COLUMNS + " FROM sandbox WHERE id = ?";

    static final String SELECT_RUNTIME_STATES =
            "SELECT " + RUNTIME_COLUMNS + " FROM sandbox ORDER BY workspace, name LIMIT ?";

    static final String SELECT_RUNTIME_STATES_AFTER = "SELECT " + RUNTIME_COLUMNS
            + " FROM sandbox WHERE (workspace, name) > (?, ?) ORDER BY workspace, name LIMIT ?";

    /**
     * The earliest armed leases, by the partial index on their due time (sandbox_lease_due): the expiry loop's one
     * query, which reads only the leases that are due or next, never the whole table.
     */
    static final String SELECT_LEASES_BY_DUE = "SELECT id, lease_generation, lease_due_ms FROM sandbox"
            + " WHERE lease_due_ms IS NOT NULL ORDER BY lease_due_ms LIMIT ?";

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

    static final String SELECT_META = "SELECT meta_value FROM gateway_meta WHERE meta_key = ?";

    static final String UPSERT_META = "INSERT INTO gateway_meta (meta_key, meta_value) VALUES (?, ?)"
            + " ON CONFLICT (meta_key) DO UPDATE SET meta_value = excluded.meta_value";

    static final String SELECT_LEASE = "SELECT owner, epoch FROM replica_lease WHERE lease_key = ?";

    static final String RELEASE_LEASE =
            "UPDATE replica_lease SET expires_ms = 0 WHERE lease_key = ? AND owner = ? AND epoch = ?";

    /** The database's clock in milliseconds since the epoch: the one clock that every replica's lease is on. */
    private static final String SQLITE_NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

    private static final String POSTGRESQL_NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

    static final StoreStatements SQLITE = new StoreStatements("rowid", INSERT_SANDBOX_VALUES, SQLITE_NOW_MS, "");

    /**
     * PostgreSQL: requests carry an admission sequence number, and a taken name inserts nothing instead of failing
     * (a failed statement would abort the whole transaction, so the name could not be checked after it).
     */
    static final StoreStatements POSTGRESQL = new StoreStatements(
            "admission",
            INSERT_SANDBOX_VALUES + " ON CONFLICT (workspace, name) DO NOTHING",
            POSTGRESQL_NOW_MS,
            " FOR UPDATE");

    final String insertSandbox;

    /**
     * Requests are stored in the order they were admitted (SQLite's rowid, PostgreSQL's admission sequence), which is
     * the order of create_ms; the pruning finds where the records admitted since its cutoff begin by bisecting that
     * order with these two.
     */
    final String requestOrderBounds;

    final String firstRequestFrom;

    /**
     * Among the requests admitted before a position, up to a limit, oldest first: the finished ones completed before a
     * cutoff, and the execs that never got a result (their gateway stopped while they ran: nothing else will finish
     * them; a pending request of another method has a pending transition that recovery finishes).
     */
    final String pruneRequests;

    /**
     * Takes a lease that nobody holds or whose holder let it expire (or released it), at the next epoch; returns the
     * epoch, or no row if the lease is held.
     */
    final String takeLease;

    /** Extends a lease that was not taken over. */
    final String renewLease;

    /** Reads a lease's holder, locking its row where the database can (PostgreSQL). */
    final String selectLeaseForUpdate;

    /**
     * A write transaction's reads of a sandbox, locking its row where the database can (PostgreSQL): the row it then
     * updates is the one it read, even with other replicas' writers on the same database (on SQLite the one writer
     * already excludes them).
     */
    final String selectSandboxForWrite;

    final String selectSandboxByNameForWrite;

    private StoreStatements(String order, String insertSandbox, String nowMs, String forUpdate) {
        this.insertSandbox = insertSandbox;
        this.takeLease = "INSERT INTO replica_lease (lease_key, owner, epoch, expires_ms) VALUES (?, ?, 1, " + nowMs
                + " + ?) ON CONFLICT (lease_key) DO UPDATE SET owner = excluded.owner,"
                + " epoch = replica_lease.epoch + 1, expires_ms = excluded.expires_ms"
                + " WHERE replica_lease.expires_ms <= " + nowMs + " RETURNING epoch";
        this.renewLease = "UPDATE replica_lease SET expires_ms = " + nowMs
                + " + ? WHERE lease_key = ? AND owner = ? AND epoch = ?";
        this.selectLeaseForUpdate = SELECT_LEASE + forUpdate;
        this.selectSandboxForWrite = SELECT_SANDBOX + forUpdate;
        this.selectSandboxByNameForWrite = SELECT_SANDBOX_BY_NAME + forUpdate;
        // each one b-tree descent
        this.requestOrderBounds = "SELECT (SELECT min(" + order + ") FROM request) AS low, (SELECT max(" + order
                + ") FROM request) AS high";
        this.firstRequestFrom = "SELECT " + order + " AS position, create_ms FROM request WHERE " + order
                + " >= ? ORDER BY " + order + " LIMIT 1";
        this.pruneRequests = "DELETE FROM request WHERE " + order + " IN (SELECT " + order + " FROM request WHERE "
                + order + " < ? AND ((state = 'DONE' AND complete_ms < ?) OR (state = 'PENDING' AND method = '"
                + ApiMethod.EXEC_SANDBOX.wireName() + "')) ORDER BY " + order + " LIMIT ?)";
    }
}
