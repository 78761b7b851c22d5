package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.gateway.policy.PolicyDocument;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("sqlite-only") // Not on PostgreSQL: SQLite itself, the embedded store and its file.
class SqliteStoreTest {
    @TempDir
    Path dir;

    SqliteStore store;

    @BeforeEach
    void open() {
        store = new SqliteStore(dir.resolve("store.db"), SqliteStore.Synchronous.NORMAL);
    }

    @AfterEach
    void close() {
        store.close();
    }

    @Test
    @DisplayName("a sandbox reads back as written, with resource version 1")
    void roundTrip() {
        SandboxRecord written = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("a")));

        SandboxRecord read = store.read(tx -> tx.sandbox(written.id())).orElseThrow();

        assertThat(read).isEqualTo(written);
        assertThat(read.resourceVersion()).isEqualTo(1);
        Optional<SandboxRecord> byName = store.read(tx -> tx.sandboxByName("team", "a"));
        assertThat(byName).contains(written);
    }

    @Test
    @DisplayName("an update is a compare-and-set on the resource version")
    void compareAndSet() {
        SandboxRecord v1 = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("a")));
        SandboxRecord v2 = store.write(tx ->
                tx.updateSandbox(v1.toBuilder().phase(SandboxPhase.STOPPED).build()));

        assertThat(v2.resourceVersion()).isEqualTo(2);
        assertThatThrownBy(() -> store.write(tx -> tx.updateSandbox(
                        v1.toBuilder().phase(SandboxPhase.ERROR).build())))
                .isInstanceOf(StaleRecordException.class);
        assertThat(store.read(tx -> tx.sandbox(v1.id())).orElseThrow().phase()).isEqualTo(SandboxPhase.STOPPED);
    }

    @Test
    @DisplayName("a failed transaction writes nothing")
    void rollback() {
        SandboxRecord a = StoreRecords.sandbox("a");

        assertThatThrownBy(() -> store.write(tx -> {
                    tx.insertSandbox(a);
                    throw new IllegalStateException("boom");
                }))
                .hasMessage("boom");

        Optional<SandboxRecord> found = store.read(tx -> tx.sandbox(a.id()));
        assertThat(found).isEmpty();
    }

    @Test
    @DisplayName("a name is unique within its workspace")
    void nameIsUnique() {
        store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("a")));

        assertThatThrownBy(() -> store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("a"))))
                .isInstanceOf(NameTakenException.class);
    }

    @Test
    @DisplayName("deleting a sandbox removes its labels and policy revisions; the name can be reused")
    void deleteCascades() {
        SandboxRecord a = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("a")));
        store.write(tx -> {
            tx.insertPolicyRevision(new PolicyRevisionRecord(
                    a.id(), 1, a.admittedDigest(), PolicyDocument.DEFAULT.canonicalDocument(), a.createTime()));
            return null;
        });

        store.write(tx -> {
            tx.deleteSandbox(a.id(), a.resourceVersion());
            return null;
        });

        Optional<PolicyRevisionRecord> revision = store.read(tx -> tx.policyRevision(a.id(), 1));
        List<SandboxRecord> labelled = store.read(tx -> tx.listSandboxes(
                new SandboxFilter(Optional.empty(), Map.of("app", "x"), java.util.Set.of()), Optional.empty(), 10));
        assertThat(revision).isEmpty();
        assertThat(labelled).isEmpty();
        assertThat(store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("a")))
                        .name())
                .isEqualTo("a");
    }

    @Test
    @DisplayName("request records are completed once and pruned after their completion time")
    void requests() {
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        store.write(tx -> {
            tx.insertRequest(new RequestRecord(
                    "r1", "StopSandbox", "f", Optional.of("s"), 1, Optional.empty(), t, Optional.empty()));
            tx.completeRequest("r1", RequestResult.success("STOPPED_NOW", "s", 1, 0), t.plusSeconds(1));
            return null;
        });

        assertThatThrownBy(() -> store.write(tx -> {
                    tx.completeRequest("r1", RequestResult.success("STOPPED_NOW", "s", 1, 0), t);
                    return null;
                }))
                .isInstanceOf(StaleRecordException.class);
        assertThat(store.read(tx -> tx.request("r1"))
                        .orElseThrow()
                        .result()
                        .orElseThrow()
                        .outcome())
                .isEqualTo("STOPPED_NOW");
        int notYet = store.write(tx -> tx.pruneRequests(t.plusSeconds(1), 10));
        int pruned = store.write(tx -> tx.pruneRequests(t.plusSeconds(2), 10));
        Optional<RequestRecord> gone = store.read(tx -> tx.request("r1"));
        assertThat(notYet).isZero();
        assertThat(pruned).isEqualTo(1);
        assertThat(gone).isEmpty();
    }

    @Test
    @DisplayName("the store survives a reopen")
    void reopen() {
        SandboxRecord a = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("a")));
        store.close();

        store = new SqliteStore(dir.resolve("store.db"), SqliteStore.Synchronous.FULL);

        Optional<SandboxRecord> reopened = store.read(tx -> tx.sandbox(a.id()));
        assertThat(reopened).contains(a);
    }

    @Test
    @DisplayName("every page of a list and of the reconciler's runtime states seeks the name index past the last key")
    void pagesSeekTheIndex() throws Exception {
        String listAll = StoreStatements.SELECT_SANDBOXES_PREFIX
                + StoreStatements.FILTER_AFTER
                + StoreStatements.ORDER_AND_LIMIT;
        String listWorkspace = StoreStatements.SELECT_SANDBOXES_PREFIX
                + StoreStatements.FILTER_WORKSPACE
                + StoreStatements.FILTER_AFTER_NAME
                + StoreStatements.ORDER_AND_LIMIT;
        String listPhases = StoreStatements.SELECT_SANDBOXES_PREFIX + StoreStatements.FILTER_PHASE_PREFIX + "?)"
                + StoreStatements.FILTER_AFTER + StoreStatements.ORDER_AND_LIMIT;

        assertThat(queryPlan(listAll, 3))
                .contains("SEARCH")
                .contains("sandbox_workspace_name")
                .contains("(workspace,name)>");
        assertThat(queryPlan(listWorkspace, 3)).contains("SEARCH").contains("workspace=? AND name>?");
        assertThat(queryPlan(listPhases, 4)).contains("SEARCH").contains("(workspace,name)>");
        assertThat(queryPlan(StoreStatements.SELECT_RUNTIME_STATES_AFTER, 3))
                .contains("SEARCH")
                .contains("(workspace,name)>")
                .doesNotContain("TEMP B-TREE");
        assertThat(queryPlan(StoreStatements.SELECT_RUNTIME_STATES, 1))
                .contains("sandbox_workspace_name")
                .doesNotContain("TEMP B-TREE");
    }

    private String queryPlan(String sql, int parameters) throws SQLException {
        try (Connection db = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("store.db"));
                PreparedStatement plan = db.prepareStatement("EXPLAIN QUERY PLAN " + sql)) {
            for (int i = 1; i <= parameters; i++) {
                plan.setString(i, "x");
            }
            StringBuilder out = new StringBuilder();
            try (ResultSet rs = plan.executeQuery()) {
                while (rs.next()) {
                    out.append(rs.getString("detail")).append('\n');
                }
            }
            return out.toString();
        }
    }
}
