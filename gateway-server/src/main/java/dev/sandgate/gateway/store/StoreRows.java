package dev.sandgate.gateway.store;

import com.google.protobuf.ByteString;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** Rows to records, each column read by its name, and records to statement parameters. */
final class StoreRows {
    private StoreRows() {}

    /** A marker for SQL NULL in parameter lists (which cannot hold null). */
    enum Null {
        VALUE
    }

    static Object nullable(Optional<?> value) {
        return value.isPresent() ? value.get() : Null.VALUE;
    }

    static void bind(PreparedStatement statement, List<Object> parameters) throws SQLException {
        for (int i = 0; i < parameters.size(); i++) {
            Object value = parameters.get(i);
            int index = i + 1;
            switch (value) {
                case Null n -> statement.setNull(index, Types.NULL);
                case String s -> statement.setString(index, s);
                case Long l -> statement.setLong(index, l);
                case Integer n -> statement.setLong(index, n);
                case byte[] bytes -> statement.setBytes(index, bytes);
                default ->
                    throw new IllegalArgumentException("unsupported parameter type "
                            + value.getClass().getName().toLowerCase(Locale.ROOT));
            }
        }
    }

    /** The parameters of {@link StoreStatements#insertSandbox}, in the order of its columns. */
    static List<Object> insertParameters(SandboxRecord s, String specJson, String labelsJson, String conditionsJson) {
        Optional<PendingTransition> p = s.pending();
        return List.of(
                s.id(),
                s.workspace(),
                s.name(),
                s.phase().name(),
                s.generation(),
                s.generationStart().toEpochMilli(),
                s.launchRevision(),
                s.launchDigest(),
                s.runtimeGeneration(),
                s.runtimeState(),
                s.runtimeDetail(),
                s.policyMode().name(),
                s.admittedRevision(),
                s.admittedDigest(),
                specJson,
                labelsJson,
                conditionsJson,
                nullable(p.map(t -> t.kind().name())),
                nullable(p.map(PendingTransition::operationId)),
                nullable(p.flatMap(PendingTransition::requestId)),
                nullable(p.map(PendingTransition::expectedGeneration)),
                nullable(p.map(t -> t.since().toEpochMilli())),
                1L,
                s.createTime().toEpochMilli(),
                s.updateTime().toEpochMilli(),
                nullable(s.expiry().flatMap(ExpiryRecord::ttl).map(Duration::toMillis)),
                nullable(s.expiry().flatMap(ExpiryRecord::idleTimeout).map(Duration::toMillis)),
                nullable(s.expiry().map(e -> e.action().name())),
                nullable(s.lease().map(LeaseRecord::generation)),
                nullable(s.lease().flatMap(LeaseRecord::ttlDeadline).map(Instant::toEpochMilli)),
                nullable(s.lease().flatMap(LeaseRecord::idleDeadline).map(Instant::toEpochMilli)),
                nullable(s.lease().map(l -> l.renewTime().toEpochMilli())),
                nullable(s.lease().flatMap(LeaseRecord::due).map(Instant::toEpochMilli)));
    }

    /** The parameters of {@link StoreStatements#UPDATE_SANDBOX}: the columns it writes, then the id and version. */
    static List<Object> updateParameters(SandboxRecord s, String conditionsJson, long nextVersion) {
        Optional<PendingTransition> p = s.pending();
        return List.of(
                s.phase().name(),
                s.generation(),
                s.generationStart().toEpochMilli(),
                s.launchRevision(),
                s.launchDigest(),
                s.runtimeGeneration(),
                s.runtimeState(),
                s.runtimeDetail(),
                s.admittedRevision(),
                s.admittedDigest(),
                conditionsJson,
                nullable(p.map(t -> t.kind().name())),
                nullable(p.map(PendingTransition::operationId)),
                nullable(p.flatMap(PendingTransition::requestId)),
                nullable(p.map(PendingTransition::expectedGeneration)),
                nullable(p.map(t -> t.since().toEpochMilli())),
                nullable(s.lease().map(LeaseRecord::generation)),
                nullable(s.lease().flatMap(LeaseRecord::ttlDeadline).map(Instant::toEpochMilli)),
                nullable(s.lease().flatMap(LeaseRecord::idleDeadline).map(Instant::toEpochMilli)),
                nullable(s.lease().map(l -> l.renewTime().toEpochMilli())),
                nullable(s.lease().flatMap(LeaseRecord::due).map(Instant::toEpochMilli)),
                nextVersion,
                s.updateTime().toEpochMilli(),
                s.id(),
                s.resourceVersion());
    }

    /** The sandbox in the current row of {@code rs} (a query of {@link StoreStatements#SANDBOX_COLUMNS}). */
    static SandboxRecord sandbox(ResultSet rs, DecodedColumns decodedColumns) throws SQLException {
        String id = rs.getString("id");
        DecodedColumns.Decoded columns =
                decodedColumns.decode(id, rs.getString("spec_json"), rs.getString("labels_json"));
        String pendingKind = rs.getString("pending_operation");
        Optional<PendingTransition> pending = Optional.empty();
        if (pendingKind != null) {
            pending = Optional.of(new PendingTransition(
                    TransitionKind.valueOf(pendingKind),
                    rs.getString("pending_operation_id"),
                    Optional.ofNullable(rs.getString("pending_request_id")),
                    rs.getLong("pending_expected_gen"),
                    millis(rs, "pending_since_ms")));
        }
        String workspace = rs.getString("workspace");
        String name = rs.getString("name");
        SandboxPhase phase = SandboxPhase.valueOf(rs.getString("phase"));
        long generation = rs.getLong("generation");
        Instant generationStart = millis(rs, "generation_start_ms");
        long launchRevision = rs.getLong("launch_revision");
        String launchDigest = rs.getString("launch_digest");
        long runtimeGeneration = rs.getLong("runtime_generation");
        String runtimeState = rs.getString("runtime_state");
        String runtimeDetail = rs.getString("runtime_detail");
        PolicyMode policyMode = PolicyMode.valueOf(rs.getString("policy_mode"));
        long admittedRevision = rs.getLong("admitted_revision");
        String admittedDigest = rs.getString("admitted_digest");
        List<ConditionRecord> conditions = StoreJson.conditions(rs.getString("conditions_json"));
        long resourceVersion = rs.getLong("resource_version");
        Instant createTime = millis(rs, "create_ms");
        Instant updateTime = millis(rs, "update_ms");
        Optional<ExpiryRecord> expiry = Optional.empty();
        String action = rs.getString("expiry_action");
        if (action != null) {
            expiry = Optional.of(new ExpiryRecord(
                    optionalMillis(rs, "expiry_ttl_ms").map(Duration::ofMillis),
                    optionalMillis(rs, "expiry_idle_ms").map(Duration::ofMillis),
                    ExpiryRecord.Action.valueOf(action)));
        }
        Optional<LeaseRecord> lease = Optional.empty();
        long leaseGeneration = rs.getLong("lease_generation");
        if (!rs.wasNull()) {
            lease = Optional.of(new LeaseRecord(
                    leaseGeneration,
                    optionalMillis(rs, "lease_ttl_deadline_ms").map(Instant::ofEpochMilli),
                    optionalMillis(rs, "lease_idle_deadline_ms").map(Instant::ofEpochMilli),
                    millis(rs, "lease_renew_ms"),
                    optionalMillis(rs, "lease_due_ms").isPresent()));
        }
        return new SandboxRecord(
                id,
                workspace,
                name,
                phase,
                generation,
                generationStart,
                launchRevision,
                launchDigest,
                runtimeGeneration,
                runtimeState,
                runtimeDetail,
                policyMode,
                admittedRevision,
                admittedDigest,
                columns.spec(),
                columns.labels(),
                conditions,
                pending,
                resourceVersion,
                createTime,
                updateTime,
                expiry,
                lease);
    }

    /** A row of {@link StoreStatements#SELECT_LEASES_BY_DUE}. */
    static DueLease dueLease(ResultSet rs) throws SQLException {
        return new DueLease(rs.getString("id"), rs.getLong("lease_generation"), millis(rs, "lease_due_ms"));
    }

    private static Optional<Long> optionalMillis(ResultSet rs, String column) throws SQLException {
        long value = rs.getLong(column);
        return rs.wasNull() ? Optional.empty() : Optional.of(value);
    }

    /** A row of {@link StoreStatements#RUNTIME_COLUMNS}: its conditions are decoded only when it has any. */
    static RuntimeState runtimeState(ResultSet rs) throws SQLException {
        boolean missing = StoreJson.conditions(rs.getString("conditions_json")).stream()
                .anyMatch(c -> c.type().equals(ConditionRecord.RUNTIME_MISSING));
        return new RuntimeState(
                rs.getString("id"),
                rs.getString("workspace"),
                rs.getString("name"),
                SandboxPhase.valueOf(rs.getString("phase")),
                rs.getLong("generation"),
                rs.getLong("runtime_generation"),
                rs.getString("runtime_state"),
                rs.getString("runtime_detail"),
                rs.getString("pending_operation") != null,
                missing,
                millis(rs, "update_ms"));
    }

    static PolicyRevisionRecord policyRevision(ResultSet rs) throws SQLException {
        return new PolicyRevisionRecord(
                rs.getString("sandbox_id"),
                rs.getLong("revision"),
                rs.getString("digest"),
                ByteString.copyFrom(rs.getBytes("document")),
                millis(rs, "admit_ms"));
    }

    static RequestRecord request(ResultSet rs) throws SQLException {
        String requestId = rs.getString("request_id");
        String method = rs.getString("method");
        String fingerprint = rs.getString("fingerprint");
        Optional<String> sandboxId = Optional.ofNullable(rs.getString("sandbox_id"));
        long generation = rs.getLong("generation");
        Optional<RequestResult> result = "DONE".equals(rs.getString("state"))
                ? Optional.of(StoreJson.result(rs.getString("result_json")))
                : Optional.empty();
        Instant createTime = millis(rs, "create_ms");
        long completeMs = rs.getLong("complete_ms");
        Optional<Instant> completeTime =
                rs.wasNull() ? Optional.empty() : Optional.of(Instant.ofEpochMilli(completeMs));
        String principal = rs.getString("principal");
        return new RequestRecord(
                requestId, method, fingerprint, sandboxId, generation, result, createTime, completeTime, principal);
    }

    private static Instant millis(ResultSet rs, String column) throws SQLException {
        return Instant.ofEpochMilli(rs.getLong(column));
    }
}
