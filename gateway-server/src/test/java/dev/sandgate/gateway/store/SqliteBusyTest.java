package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("sqlite-only") // Not on PostgreSQL: SQLite itself, its busy handling.
class SqliteBusyTest {
    @Test
    void busyAndItsExtendedCodesAreRecognizedThroughWrappers() {
        assertThat(SqliteStore.isBusy(new SQLException("database is locked", null, 5)))
                .isTrue();
        assertThat(SqliteStore.isBusy(new StoreException("update failed", new SQLException("snapshot", null, 517))))
                .isTrue();
    }

    @Test
    void otherFailuresAreNotRetried() {
        assertThat(SqliteStore.isBusy(new SQLException("constraint", null, 19))).isFalse();
        assertThat(SqliteStore.isBusy(new IllegalStateException("changed while its lock was held")))
                .isFalse();
    }
}
