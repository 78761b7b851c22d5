package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DecodedColumnsTest {
    private static final String SPEC_A =
            StoreJson.spec(new StoredSpec("busybox", List.of("sh"), List.of(), Map.of(), 0, 0));
    private static final String SPEC_B =
            StoreJson.spec(new StoredSpec("debian", List.of("sleep"), List.of("1"), Map.of("K", "v"), 1, 2));

    @Test
    void theSameTextsOfOneSandboxAreDecodedOnce() {
        DecodedColumns columns = new DecodedColumns();

        DecodedColumns.Decoded first = columns.decode("id-1", SPEC_A, "{\"team\":\"a\"}");
        DecodedColumns.Decoded again = columns.decode("id-1", SPEC_A, "{\"team\":\"a\"}");

        assertThat(again).isSameAs(first);
        assertThat(again.spec().image()).isEqualTo("busybox");
        assertThat(again.labels()).containsExactly(Map.entry("team", "a"));
    }

    @Test
    void aDifferentStoredTextIsDecodedAfreshNeverAnsweredFromTheEntry() {
        DecodedColumns columns = new DecodedColumns();
        columns.decode("id-1", SPEC_A, "{\"team\":\"a\"}");

        DecodedColumns.Decoded changedSpec = columns.decode("id-1", SPEC_B, "{\"team\":\"a\"}");
        DecodedColumns.Decoded changedLabels = columns.decode("id-1", SPEC_B, "{\"team\":\"b\"}");

        assertThat(changedSpec.spec().image()).isEqualTo("debian");
        assertThat(changedSpec.spec().environment()).containsExactly(Map.entry("K", "v"));
        assertThat(changedLabels.labels()).containsExactly(Map.entry("team", "b"));
    }

    @Test
    void aDeletedSandboxLeavesNoEntry(@TempDir Path dir) {
        try (SqliteStore store = new SqliteStore(dir.resolve("store.db"), SqliteStore.Synchronous.NORMAL)) {
            SandboxRecord inserted = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("gone")));
            SandboxRecord read = store.read(tx -> tx.sandbox(inserted.id())).orElseThrow();
            assertThat(read.spec()).isEqualTo(inserted.spec());
            assertThat(read.labels()).isEqualTo(inserted.labels());
            assertThat(store.decodedEntries()).isEqualTo(1);

            store.write(tx -> {
                tx.deleteSandbox(read.id(), read.resourceVersion());
                return null;
            });

            assertThat(store.decodedEntries()).isZero();
        }
    }
}
