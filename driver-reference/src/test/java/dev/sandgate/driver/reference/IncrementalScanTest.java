package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IncrementalScanTest {
    private static final String GATEWAY = "gw-test";

    @TempDir
    Path root;

    /** What the scan makes of a record: its state, so a state change is a different Seen. */
    private static Optional<IncrementalScan.Seen> seen(StoredResource resource) {
        SandboxState state = resource.running() ? SandboxState.RUNNING : SandboxState.STOPPED;
        var ref = new SandboxRef("8a4d6f3e-5b1c-4f2a-9e7d-1c2b3a4d5e6f", "ws", resource.key());
        return Optional.of(new IncrementalScan.Seen(
                resource.backendId(), new SandboxObservation(ref, 1, state, "", Map.of(), "")));
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

    private static void replace(DirectoryBackend backend, String key, StoredResource.State state) {
        backend.locked(GATEWAY, key, () -> {
            backend.replace(resource(key, state));
            return null;
        });
    }

    /** Records {@code s0} to {@code s<count - 1>}, running. */
    private static void insertMany(DirectoryBackend backend, int count) {
        for (int i = 0; i < count; i++) {
            insert(backend, "s" + i);
        }
    }

    private static List<String> keys(List<IncrementalScan.Seen> seen) {
        return seen.stream()
                .map(s -> s.backendId().substring("backend-".length()))
                .toList();
    }

    /** The keys of vanished sandboxes, which the test's sandboxes carry as their names. */
    private static List<String> removedKeys(List<SandboxObservation> removed) {
        return removed.stream().map(o -> o.ref().name()).toList();
    }

    @Test
    void aSweepRereadsOnlyTheRecordsThatChangedSinceThePreviousScan() {
        var backend = new DirectoryBackend(root);
        insertMany(backend, 20);
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1, 1_000);

        assertThat(scan.first()).hasSize(20);
        assertThat(scan.reads()).isEqualTo(20);

        replace(backend, "s7", StoredResource.State.STOPPED);
        IncrementalScan.Delta second = scan.next();

        assertThat(scan.reads()).isEqualTo(21);
        assertThat(keys(second.changed())).containsExactly("s7");
        assertThat(second.changed().getFirst().observation().state()).isEqualTo(SandboxState.STOPPED);
        assertThat(second.removed()).isEmpty();
    }

    @Test
    void everyRewriteIsSeenEvenWhenTheRecordIsRewrittenTwiceBetweenScans() {
        var backend = new DirectoryBackend(root);
        insert(backend, "one");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1, 1_000);
        scan.first();

        for (StoredResource.State state : new StoredResource.State[] {
            StoredResource.State.STOPPED, StoredResource.State.RUNNING, StoredResource.State.STOPPED
        }) {
            replace(backend, "one", state);
        }

        IncrementalScan.Delta delta = scan.next();
        assertThat(delta.changed())
                .singleElement()
                .satisfies(seen -> assertThat(seen.observation().state()).isEqualTo(SandboxState.STOPPED));
    }

    @Test
    void removedAndAddedResourcesAreSeenAtTheNextSweep() {
        var backend = new DirectoryBackend(root);
        insert(backend, "old");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1, 1_000);
        assertThat(scan.first()).containsOnlyKeys("old");

        backend.locked(GATEWAY, "old", () -> backend.remove(GATEWAY, "old"));
        insert(backend, "new");

        IncrementalScan.Delta delta = scan.next();
        assertThat(keys(delta.changed())).containsExactly("new");
        assertThat(removedKeys(delta.removed())).containsExactly("old");
    }

    @Test
    void eachScanLooksAtTheMarkedRecordsAndOneSliceOfTheOthersEveryRecordOncePerRound() {
        var backend = new DirectoryBackend(root);
        insertMany(backend, 30);
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 3, 1_000);
        scan.first();

        long before = scan.looks();
        long[] perScan = new long[3];
        for (int n = 0; n < 3; n++) {
            long at = scan.looks();
            scan.next();
            perScan[n] = scan.looks() - at;
        }

        assertThat(scan.looks() - before)
                .as("every record once over a round of 3 scans")
                .isEqualTo(30);
        assertThat(Arrays.stream(perScan).max().orElseThrow())
                .as("no scan looks at them all")
                .isLessThan(30);
    }

    @Test
    void aChangeBehindTheDriversBackIsSeenOnceWithinARound() {
        var backend = new DirectoryBackend(root);
        insertMany(backend, 30);
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 3, 1_000);
        scan.first();

        replace(backend, "s5", StoredResource.State.STOPPED); // behind the driver's back: not marked
        replace(backend, "s6", StoredResource.State.STOPPED);
        scan.changed("s6");
        IncrementalScan.Delta first = scan.next();
        var seen = new ArrayList<>(keys(first.changed()));
        seen.addAll(keys(scan.next().changed()));
        seen.addAll(keys(scan.next().changed()));

        assertThat(keys(first.changed())).as("a marked record: at once").contains("s6");
        assertThat(seen).containsExactlyInAnyOrder("s5", "s6");
    }

    @Test
    void aRecordAddedBehindTheDriversBackIsSeenWhenTheNextRoundListsTheFolder() {
        var backend = new DirectoryBackend(root);
        insert(backend, "a");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 3, 1_000);
        scan.first();
        scan.next(); // the first scan of a round lists the folder

        insert(backend, "late");
        assertThat(scan.next().changed()).isEmpty();
        assertThat(scan.next().changed()).isEmpty();

        assertThat(keys(scan.next().changed())).as("the next round's listing").containsExactly("late");
    }

    @Test
    void everyNthRoundRereadsTheRecordsItLooksAt() {
        var backend = new DirectoryBackend(root);
        insertMany(backend, 8);
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 2, 4);
        scan.first(); // 8 reads
        scan.next();
        scan.next(); // round 1: looks only
        assertThat(scan.reads()).isEqualTo(8);

        scan.next();
        scan.next(); // round 2 of 2 scans each: fullEvery 4 = every second round rereads

        assertThat(scan.reads()).isEqualTo(16);
    }

    @Test
    void aMarkedRecordThatVanishedIsReportedRemovedOnce() {
        var backend = new DirectoryBackend(root);
        insert(backend, "gone");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1_000, 1_000);
        scan.first();

        backend.locked(GATEWAY, "gone", () -> backend.remove(GATEWAY, "gone"));
        scan.changed("gone");

        assertThat(removedKeys(scan.next().removed())).containsExactly("gone");
        scan.changed("gone");
        assertThat(scan.next().removed()).isEmpty();
    }

    /** Replaces the record as the driver does: then tells the scan what it wrote and the version it had. */
    private static void replaceTelling(
            DirectoryBackend backend, IncrementalScan scan, String key, StoredResource.State state) {
        backend.locked(GATEWAY, key, () -> {
            StoredResource resource = resource(key, state);
            scan.wrote(key, backend.replace(resource), resource);
            return null;
        });
    }

    @Test
    void aRecordTheDriverSaysItWroteIsDeliveredWithoutBeingReadBack() {
        var backend = new DirectoryBackend(root);
        insertMany(backend, 3);
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1, 1_000);
        scan.first();
        long reads = scan.reads();

        replaceTelling(backend, scan, "s1", StoredResource.State.STOPPED);
        IncrementalScan.Delta delta = scan.next();

        assertThat(keys(delta.changed())).containsExactly("s1");
        assertThat(delta.changed().getFirst().observation().state()).isEqualTo(SandboxState.STOPPED);
        assertThat(scan.reads()).isEqualTo(reads);
        assertThat(scan.told()).isEqualTo(1);
    }

    @Test
    void aRecordRewrittenBehindTheDriversBackAfterItsWriteIsReadNotTakenFromTheDriver() {
        var backend = new DirectoryBackend(root);
        insert(backend, "raced");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1, 1_000);
        scan.first();
        long reads = scan.reads();

        replaceTelling(backend, scan, "raced", StoredResource.State.STOPPED);
        // Another process writes the same record before the scan looks: another file, so another version.
        replace(new DirectoryBackend(root), "raced", StoredResource.State.RUNNING);
        IncrementalScan.Delta delta = scan.next();

        assertThat(scan.told()).isZero();
        assertThat(scan.reads()).isEqualTo(reads + 1);
        assertThat(delta.changed()).isEmpty(); // running before, running now: nothing to deliver
        replaceTelling(backend, scan, "raced", StoredResource.State.STOPPED);
        assertThat(scan.next().changed().getFirst().observation().state()).isEqualTo(SandboxState.STOPPED);
    }

    @Test
    void aRecordTheDriverWroteAndThenRemovedIsDeliveredAsRemoved() {
        var backend = new DirectoryBackend(root);
        insert(backend, "brief");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1, 1_000);
        scan.first();

        replaceTelling(backend, scan, "brief", StoredResource.State.STOPPED);
        backend.locked(GATEWAY, "brief", () -> backend.remove(GATEWAY, "brief"));
        scan.changed("brief");
        IncrementalScan.Delta delta = scan.next();

        assertThat(delta.changed()).isEmpty();
        assertThat(removedKeys(delta.removed())).containsExactly("brief");
        assertThat(scan.told()).isZero();
    }

    @Test
    void theRereadingScanReadsEvenARecordTheDriverSaysItWrote() {
        var backend = new DirectoryBackend(root);
        insert(backend, "a");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1, 2);
        scan.first();
        scan.next(); // unchanged
        long reads = scan.reads();

        replaceTelling(backend, scan, "a", StoredResource.State.STOPPED);
        scan.next(); // the second scan after the full one rereads every record

        assertThat(scan.told()).isZero();
        assertThat(scan.reads()).isEqualTo(reads + 1);
    }

    @Test
    void aKeyMarkedWhileNothingChangedDeliversNothing() {
        var backend = new DirectoryBackend(root);
        insert(backend, "same");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1_000, 1_000);
        scan.first();

        scan.changed("same");
        IncrementalScan.Delta delta = scan.next();

        assertThat(delta.changed()).isEmpty();
        assertThat(delta.removed()).isEmpty();
        assertThat(scan.reads()).isEqualTo(1);
    }

    @Test
    void everyNthScanRereadsEveryRecord() {
        var backend = new DirectoryBackend(root);
        insert(backend, "a");
        insert(backend, "b");
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1, 3);

        scan.first(); // full: 2 reads
        scan.next(); // unchanged: none
        scan.next(); // unchanged: none
        assertThat(scan.reads()).isEqualTo(2);
        scan.next(); // the third scan after a full one: full again

        assertThat(scan.reads()).isEqualTo(4);
    }

    @Test
    void resourcesTheDriverDoesNotRecogniseAreLeftOutWithoutBeingReadAgain() {
        var backend = new DirectoryBackend(root);
        insert(backend, "foreign");
        var scan = new IncrementalScan(backend, GATEWAY, resource -> Optional.empty(), 1, 1_000);

        assertThat(scan.first()).isEmpty();
        IncrementalScan.Delta delta = scan.next();
        assertThat(delta.changed()).isEmpty();
        assertThat(delta.removed()).isEmpty();
        assertThat(scan.reads()).isEqualTo(1);
    }

    @Test
    void aScanOfManyRecordsLooksAtABoundedSliceAndARoundStillLooksAtEveryRecordOnce() {
        var backend = new DirectoryBackend(root);
        int count = IncrementalScan.MAX_LOOKS_PER_SCAN * 5 / 2;
        insertMany(backend, count);
        var scan = new IncrementalScan(backend, GATEWAY, IncrementalScanTest::seen, 1, 1_000_000);
        scan.first();

        long before = scan.looks();
        var perScan = new ArrayList<Long>();
        while (scan.looks() - before < count) {
            long at = scan.looks();
            scan.next();
            perScan.add(scan.looks() - at);
        }

        assertThat(scan.looks() - before).isEqualTo(count);
        assertThat(perScan)
                .hasSizeGreaterThan(2)
                .allSatisfy(looks -> assertThat(looks).isLessThanOrEqualTo(IncrementalScan.MAX_LOOKS_PER_SCAN * 3 / 2));
        assertThat(scan.reads()).as("nothing changed: nothing reread").isEqualTo(count);
    }
}
