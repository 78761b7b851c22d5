package dev.sandgate.gateway.store;

import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/** Store tests on one store in a temporary folder, opened before each test, with threads for concurrent writers. */
abstract class OpenStoreTest {
    /** An instant with nanoseconds, which the store keeps to the millisecond. */
    static final Instant FINE = Instant.parse("2026-03-04T05:06:07.123456789Z");

    @TempDir
    Path dir;

    SqliteStore store;
    final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeEach
    void open() {
        store = new SqliteStore(dir.resolve("store.db"), SqliteStore.Synchronous.NORMAL);
    }

    @AfterEach
    void close() {
        threads.shutdownNow();
        store.close();
    }
}
