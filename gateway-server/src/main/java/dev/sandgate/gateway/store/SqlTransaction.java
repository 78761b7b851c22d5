package dev.sandgate.gateway.store;

import static dev.sandgate.gateway.store.StoreRows.bind;
import static dev.sandgate.gateway.store.StoreRows.nullable;
import static dev.sandgate.gateway.store.StoreStatements.*;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A transaction on one connection, in any {@link SqlDialect}. A write transaction records what it changes in sandbox
 * rows ({@link CommittedRows.Change}), as a read would then return them, for a layer above that keeps them.
 */
final class SqlTransaction implements StoreTransaction {
    private final PreparedConnection db;
    private final SqlDialect dialect;
    private final StoreStatements statements;
    /** Where a write transaction records what it changes in sandbox rows; null in a read-only one. */
    private final List<CommittedRows.Change> changes;

    /** A read-only transaction. */
    SqlTransaction(PreparedConnection db, SqlDialect dialect) {
        this(db, dialect, null);
    }

    SqlTransaction(PreparedConnection db, SqlDialect dialect, List<CommittedRows.Change> changes) {
        this.db = db;
        this.dialect = dialect;
        this.statements = dialect.statements;
        this.changes = changes;
    }

    private void requireWritable() {
        if (changes == null) {
            throw new IllegalStateException("write in a read-only transaction");
        }
    }

    @Override
    public Optional<SandboxRecord> sandbox(String id) {
        return one(changes == null ? SELECT_SANDBOX : statements.selectSandboxForWrite, List.of(id));
    }

    @Override
    public Optional<SandboxRecord> sandboxByName(String workspace, String name) {
        return one(
                changes == null ? SELECT_SANDBOX_BY_NAME : statements.selectSandboxByNameForWrite,
                List.of(workspace, name));
    }

    private Optional<SandboxRecord> one(String sql, List<Object> parameters) {
        List<SandboxRecord> rows = sandboxes(sql, parameters);
        return rows.isEmpty() ? Optional.empty() : Optional.of(rows.getFirst());
    }

    private List<SandboxRecord> sandboxes(String sql, List<Object> parameters) {
        try {
            PreparedStatement statement = db.prepare(sql);
            bind(statement, parameters);
            List<SandboxRecord> rows = new ArrayList<>();
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    rows.add(StoreRows.sandbox(rs, db.decoded));
                }
            }
            return rows;
        } catch (SQLException e) {
            throw new StoreException("reading sandboxes failed", e);
        }
    }

    @Override
    public SandboxRecord insertSandbox(SandboxRecord s) {
        requireWritable();
        SandboxRecord inserted = s.toBuilder().resourceVersion(1).build();
        String specJson = StoreJson.spec(s.spec());
        String labelsJson = StoreJson.labels(s.labels());
        String conditionsJson = StoreJson.conditions(s.conditions());
        try {
            PreparedStatement statement = db.prepare(statements.insertSandbox);
            bind(statement, StoreRows.insertParameters(s, specJson, labelsJson, conditionsJson));
            int inserts;
            try {
                inserts = statement.executeUpdate();
            } catch (SQLException e) {
                if (dialect.isUniqueViolation(e)
                        && sandboxByName(s.workspace(), s.name()).isPresent()) {
                    throw nameTaken(s);
                }
                throw e;
            }
            if (inserts == 0 && dialect.insertSkipsTakenName()) {
                throw nameTaken(s);
            }
            PreparedStatement label = db.prepare(INSERT_LABEL);
            for (Map.Entry<String, String> entry : s.labels().entrySet()) {
                bind(label, List.of(s.id(), entry.getKey(), entry.getValue()));
                label.executeUpdate();
            }
            SandboxRecord row = CommittedRows.inserted(
                    s, db.decoded.decode(s.id(), specJson, labelsJson), StoreJson.conditions(conditionsJson));
            changes.add(new CommittedRows.Inserted(row));
            if (dialect.logsChanges()) {
                ChangeLog.append(db, ChangeLog.Kind.ADDED, row, Instant.now());
            }
            return inserted;
        } catch (SQLException e) {
            throw new StoreException("inserting sandbox " + s.id() + " failed", e);
        }
    }

    private static NameTakenException nameTaken(SandboxRecord s) {
        return new NameTakenException(s.workspace() + "/" + s.name() + " exists");
    }

    @Override
    public SandboxRecord updateSandbox(SandboxRecord s) {
        requireWritable();
        long next = s.resourceVersion() + 1;
        String conditionsJson = StoreJson.conditions(s.conditions());
        try {
            PreparedStatement statement = db.prepare(UPDATE_SANDBOX);
            bind(statement, StoreRows.updateParameters(s, conditionsJson, next));
            if (statement.executeUpdate() != 1) {
                throw new StaleRecordException("sandbox " + s.id() + " changed since version " + s.resourceVersion());
            }
            changes.add(new CommittedRows.Updated(s, s.resourceVersion(), StoreJson.conditions(conditionsJson)));
            SandboxRecord written = s.toBuilder().resourceVersion(next).build();
            if (dialect.logsChanges()) {
                ChangeLog.append(db, ChangeLog.Kind.MODIFIED, written, Instant.now());
            }
            return written;
        } catch (SQLException e) {
            throw new StoreException("updating sandbox " + s.id() + " failed", e);
        }
    }

    @Override
    public void deleteSandbox(String id, long expectedVersion) {
        requireWritable();
        try {
            if (dialect.logsChanges()) {
                deleteAndLog(id, expectedVersion);
            } else {
                PreparedStatement statement = db.prepare(DELETE_SANDBOX);
                bind(statement, List.of(id, expectedVersion));
                if (statement.executeUpdate() != 1) {
                    throw new StaleRecordException("sandbox " + id + " changed since version " + expectedVersion);
                }
            }
            db.decoded.forget(id);
            changes.add(new CommittedRows.Deleted(id));
        } catch (SQLException e) {
            throw new StoreException("deleting sandbox " + id + " failed", e);
        }
    }

    /** Deletes the row and appends it, as it was, to the change log. */
    private void deleteAndLog(String id, long expectedVersion) throws SQLException {
        PreparedStatement statement = db.prepare(DELETE_SANDBOX_RETURNING);
        bind(statement, List.of(id, expectedVersion));
        SandboxRecord deleted;
        try (ResultSet rs = statement.executeQuery()) {
            if (!rs.next()) {
                throw new StaleRecordException("sandbox " + id + " changed since version " + expectedVersion);
            }
            deleted = StoreRows.sandbox(rs, db.decoded);
        }
        ChangeLog.append(db, ChangeLog.Kind.REMOVED, deleted, Instant.now());
    }

    @Override
    public List<SandboxRecord> listSandboxes(SandboxFilter filter, Optional<SandboxKey> after, int limit) {
        StringBuilder sql = new StringBuilder(SELECT_SANDBOXES_PREFIX);
        List<Object> parameters = new ArrayList<>();
        filter.workspace().ifPresent(workspace -> {
            sql.append(FILTER_WORKSPACE);
            parameters.add(workspace);
        });
        filter.labels().entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(label -> {
            sql.append(FILTER_LABEL);
            parameters.add(label.getKey());
            parameters.add(label.getValue());
        });
        if (!filter.phases().isEmpty()) {
            sql.append(FILTER_PHASE_PREFIX);
            List<SandboxPhase> phases = filter.phases().stream().sorted().toList();
            for (int i = 0; i < phases.size(); i++) {
                sql.append(i == 0 ? "?" : ", ?");
                parameters.add(phases.get(i).name());
            }
            sql.append(')');
        }
        after.ifPresent(key -> {
            if (filter.workspace().isPresent() && filter.workspace().get().equals(key.workspace())) {
                sql.append(FILTER_AFTER_NAME);
                parameters.add(key.name());
            } else {
                sql.append(FILTER_AFTER);
                parameters.add(key.workspace());
                parameters.add(key.name());
            }
        });
        sql.append(ORDER_AND_LIMIT);
        parameters.add((long) limit);
        return sandboxes(sql.toString(), parameters);
    }

    @Override
    public Optional<RuntimeState> runtimeState(String id) {
        List<RuntimeState> rows = runtimeStates(SELECT_RUNTIME_STATE, List.of(id));
        return rows.isEmpty() ? Optional.empty() : Optional.of(rows.getFirst());
    }

    @Override
    public List<RuntimeState> runtimeStates(Optional<SandboxKey> after, int limit) {
        return after.isEmpty()
                ? runtimeStates(SELECT_RUNTIME_STATES, List.of((long) limit))
                : runtimeStates(
                        SELECT_RUNTIME_STATES_AFTER,
                        List.of(after.get().workspace(), after.get().name(), (long) limit));
    }

    private List<RuntimeState> runtimeStates(String sql, List<Object> parameters) {
        try {
            PreparedStatement statement = db.prepare(sql);
            bind(statement, parameters);
            List<RuntimeState> rows = new ArrayList<>();
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    rows.add(StoreRows.runtimeState(rs));
                }
            }
            return rows;
        } catch (SQLException e) {
            throw new StoreException("reading sandboxes failed", e);
        }
    }

    @Override
    public List<SandboxRecord> pendingSandboxes() {
        return sandboxes(SELECT_PENDING, List.of());
    }

    @Override
    public List<DueLease> leasesByDue(int limit) {
        try {
            PreparedStatement statement = db.prepare(SELECT_LEASES_BY_DUE);
            bind(statement, List.of((long) limit));
            List<DueLease> rows = new ArrayList<>();
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    rows.add(StoreRows.dueLease(rs));
                }
            }
            return rows;
        } catch (SQLException e) {
            throw new StoreException("reading leases failed", e);
        }
    }

    @Override
    public void insertPolicyRevision(PolicyRevisionRecord r) {
        requireWritable();
        try {
            PreparedStatement statement = db.prepare(INSERT_POLICY_REVISION);
            bind(
                    statement,
                    List.of(
                            r.sandboxId(),
                            r.revision(),
                            r.digest(),
                            r.document().toByteArray(),
                            r.admitTime().toEpochMilli()));
            statement.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("inserting policy revision failed", e);
        }
    }

    @Override
    public Optional<PolicyRevisionRecord> policyRevision(String sandboxId, long revision) {
        try {
            PreparedStatement statement = db.prepare(SELECT_POLICY_REVISION);
            bind(statement, List.of(sandboxId, revision));
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() ? Optional.of(StoreRows.policyRevision(rs)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("reading policy revision failed", e);
        }
    }

    @Override
    public Optional<RequestRecord> request(String requestId) {
        try {
            PreparedStatement statement = db.prepare(SELECT_REQUEST);
            bind(statement, List.of(requestId));
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() ? Optional.of(StoreRows.request(rs)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("reading request failed", e);
        }
    }

    @Override
    public void insertRequest(RequestRecord r) {
        requireWritable();
        try {
            PreparedStatement statement = db.prepare(INSERT_REQUEST);
            bind(
                    statement,
                    List.of(
                            r.requestId(),
                            r.method(),
                            r.fingerprint(),
                            nullable(r.sandboxId()),
                            r.generation(),
                            r.done() ? "DONE" : "PENDING",
                            nullable(r.result().map(StoreJson::result)),
                            r.createTime().toEpochMilli(),
                            nullable(r.completeTime().map(Instant::toEpochMilli)),
                            r.principal()));
            statement.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("inserting request failed", e);
        }
    }

    @Override
    public void completeRequest(String requestId, RequestResult result, Instant completeTime) {
        requireWritable();
        try {
            PreparedStatement statement = db.prepare(COMPLETE_REQUEST);
            bind(statement, List.of(StoreJson.result(result), completeTime.toEpochMilli(), requestId));
            if (statement.executeUpdate() != 1) {
                throw new StaleRecordException("request " + requestId + " is not pending");
            }
        } catch (SQLException e) {
            throw new StoreException("completing request failed", e);
        }
    }

    @Override
    public void replaceRequestResult(String requestId, RequestResult result) {
        requireWritable();
        try {
            PreparedStatement statement = db.prepare(REPLACE_REQUEST_RESULT);
            bind(statement, List.of(StoreJson.result(result), requestId));
            if (statement.executeUpdate() != 1) {
                throw new StaleRecordException("request " + requestId + " is not done");
            }
        } catch (SQLException e) {
            throw new StoreException("replacing a request's result failed", e);
        }
    }

    @Override
    public int pruneRequests(Instant cutoff, int limit) {
        requireWritable();
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be positive: " + limit);
        }
        try {
            long cutoffMs = cutoff.toEpochMilli();
            PreparedStatement statement = db.prepare(statements.pruneRequests);
            bind(statement, List.of(firstAdmittedSince(cutoffMs), cutoffMs, limit));
            return statement.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("pruning requests failed", e);
        }
    }

    /**
     * The position in admission order from which requests were admitted at or after {@code cutoffMs}: each admission
     * appends a row at a larger position than any stored, so create_ms rises with it and a bisection finds it in a few
     * dozen index look-ups, however many records there are. Should the clock have stepped back, the bisection finds one
     * of the points where create_ms crosses the cutoff, and the rows beyond it wait for a later pruning; a record is
     * never removed before its retention, which the pruning's own condition on complete_ms decides.
     */
    private long firstAdmittedSince(long cutoffMs) throws SQLException {
        long low;
        long high;
        try (ResultSet rs = db.prepare(statements.requestOrderBounds).executeQuery()) {
            rs.next();
            low = rs.getLong("low");
            if (rs.wasNull()) {
                return 0; // no requests
            }
            high = rs.getLong("high") + 1;
        }
        PreparedStatement first = db.prepare(statements.firstRequestFrom);
        // Rows below low were admitted before the cutoff; the answer is at most high.
        while (low < high) {
            long middle = low + (high - low) / 2;
            first.setLong(1, middle);
            try (ResultSet rs = first.executeQuery()) {
                rs.next(); // a row exists: middle < high <= max + 1
                long position = rs.getLong("position");
                if (rs.getLong("create_ms") < cutoffMs) {
                    low = position + 1;
                } else {
                    high = middle;
                }
            }
        }
        return low;
    }

    @Override
    public Optional<ReplicaLease> takeLease(String key, String owner, Duration ttl) {
        requireWritable();
        try {
            PreparedStatement statement = db.prepare(statements.takeLease);
            bind(statement, List.of(key, owner, ttl.toMillis()));
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() ? Optional.of(new ReplicaLease(key, owner, rs.getLong("epoch"))) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("taking lease " + key + " failed", e);
        }
    }

    @Override
    public boolean renewLease(ReplicaLease lease, Duration ttl) {
        requireWritable();
        try {
            PreparedStatement statement = db.prepare(statements.renewLease);
            bind(statement, List.of(ttl.toMillis(), lease.key(), lease.owner(), lease.epoch()));
            return statement.executeUpdate() == 1;
        } catch (SQLException e) {
            throw new StoreException("renewing lease " + lease.key() + " failed", e);
        }
    }

    @Override
    public boolean holdsLease(ReplicaLease lease) {
        try {
            PreparedStatement statement = db.prepare(statements.selectLeaseForUpdate);
            bind(statement, List.of(lease.key()));
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() && rs.getString("owner").equals(lease.owner()) && rs.getLong("epoch") == lease.epoch();
            }
        } catch (SQLException e) {
            throw new StoreException("reading lease " + lease.key() + " failed", e);
        }
    }

    @Override
    public void releaseLease(ReplicaLease lease) {
        requireWritable();
        try {
            PreparedStatement statement = db.prepare(RELEASE_LEASE);
            bind(statement, List.of(lease.key(), lease.owner(), lease.epoch()));
            statement.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("releasing lease " + lease.key() + " failed", e);
        }
    }

    @Override
    public Optional<String> meta(String key) {
        try {
            PreparedStatement statement = db.prepare(SELECT_META);
            bind(statement, List.of(key));
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() ? Optional.of(rs.getString("meta_value")) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("reading meta failed", e);
        }
    }

    @Override
    public void putMeta(String key, String value) {
        requireWritable();
        try {
            PreparedStatement statement = db.prepare(UPSERT_META);
            bind(statement, List.of(key, value));
            statement.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("writing meta failed", e);
        }
    }
}
