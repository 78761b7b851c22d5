package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IncrementalScanTest {
    private static final String GATEWAY = "gw-test";

    @TempDir
    Path root;

    /** What the scan makes of a record: its state, so a state change is a different Seen. */
    private static Optional<DirectoryWatch.Seen> seen(StoredResource resource) {
        SandboxState state = resource.running() ? SandboxState.RUNNING : SandboxState.STOPPED;
        var ref = new SandboxRef("8a4d6f3e-5b1c-4f2a-9e7d-1c2b3a4d5e6f", "ws", resource.key());
        return Optional.of(
                new DirectoryWatch.Seen(resource.backendId(), new SandboxObservation(ref, 1, state, "", Map.of(), "")));
    }

    private static StoredResource resource(String key, StoredResource.State state) {
        return new StoredResource(GATEWAY, key, "backend-" + key, state, Map.of());
    }

    private static void insert(DirectoryBackend backend, String key) {
        backend.locked(GATEWAY, key, () -> {
            backend.insert(resource(key, StoredResource.State.RUNNING), Map.of());
            return null;
        });
    }

    @Test
    void aScanRereadsOnlyTheRecordsThatChangedSinceThePreviousScan() {
        var backend = new DirectoryBackend(root);
        for (int i = 0; i < 20; i++) {
            insert(backend, "s" + i);
        }
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1_000);

        assertThat(scan.get()).hasSize(20);
        assertThat(scan.reads()).isEqualTo(20);

        backend.locked(GATEWAY, "s7", () -> {
            backend.replace(resource("s7", StoredResource.State.STOPPED));
            return null;
        });
        var second = scan.get();

        assertThat(scan.reads()).isEqualTo(21);
        assertThat(second.get("s7").observation().state()).isEqualTo(SandboxState.STOPPED);
        assertThat(second.get("s8").observation().state()).isEqualTo(SandboxState.RUNNING);
    }

    @Test
    void everyRewriteIsSeenEvenWhenTheRecordIsRewrittenTwiceBetweenScans() {
        var backend = new DirectoryBackend(root);
        insert(backend, "one");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1_000);
        scan.get();

        for (StoredResource.State state : new StoredResource.State[] {
            StoredResource.State.STOPPED, StoredResource.State.RUNNING, StoredResource.State.STOPPED
        }) {
            backend.locked(GATEWAY, "one", () -> {
                backend.replace(resource("one", state));
                return null;
            });
        }

        assertThat(scan.get().get("one").observation().state()).isEqualTo(SandboxState.STOPPED);
    }

    @Test
    void removedAndAddedResourcesAreSeenAtTheNextScan() {
        var backend = new DirectoryBackend(root);
        insert(backend, "old");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1_000);
        assertThat(scan.get()).containsOnlyKeys("old");

        backend.locked(GATEWAY, "old", () -> backend.remove(GATEWAY, "old"));
        insert(backend, "new");

        assertThat(scan.get()).containsOnlyKeys("new");
    }

    @Test
    void everyNthScanRereadsEveryRecord() {
        var backend = new DirectoryBackend(root);
        insert(backend, "a");
        insert(backend, "b");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 3);

        scan.get(); // full: 2 reads
        scan.get(); // unchanged: none
        scan.get(); // unchanged: none
        assertThat(scan.reads()).isEqualTo(2);
        scan.get(); // the third scan after a full one: full again

        assertThat(scan.reads()).isEqualTo(4);
    }

    @Test
    void resourcesTheDriverDoesNotRecogniseAreLeftOutWithoutBeingReadAgain() {
        var backend = new DirectoryBackend(root);
        insert(backend, "foreign");
        var scan = new IncrementalScan(backend, GATEWAY, resource -> Optional.empty(), 1_000);

        assertThat(scan.get()).isEmpty();
        assertThat(scan.get()).isEmpty();
        assertThat(scan.reads()).isEqualTo(1);
    }
}
