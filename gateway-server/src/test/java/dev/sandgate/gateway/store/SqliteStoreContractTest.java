package dev.sandgate.gateway.store;

import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/** The store contract on the embedded SQLite store. */
@Tag("sqlite-only") // Not on PostgreSQL: PostgresStoreContractTest is its PostgreSQL twin.
class SqliteStoreContractTest extends StoreContractTest {
    @TempDir
    Path dir;

    @Override
    Store openEmpty() {
        return new SqliteStore(dir.resolve("store.db"), SqliteStore.Synchronous.NORMAL);
    }
}
