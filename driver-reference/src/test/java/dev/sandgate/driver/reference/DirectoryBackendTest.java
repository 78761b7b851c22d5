package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.Labels;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DirectoryBackendTest {
    private static final String GATEWAY = "gw-test";

    @TempDir
    Path root;

    private StoredResource resource(String key) {
        return new StoredResource(
                GATEWAY, key, "backend-" + key, StoredResource.State.RUNNING, Map.of("sandgate.dev/name", "n"));
    }

    private void insert(DirectoryBackend backend, StoredResource resource, Map<String, String> spec) {
        backend.locked(GATEWAY, resource.key(), () -> {
            backend.insert(resource, spec);
            return null;
        });
    }

    private StoredResource named(String key, String workspace, String name) {
        return new StoredResource(
                GATEWAY,
                key,
                "backend-" + key,
                StoredResource.State.RUNNING,
                Map.of(Labels.WORKSPACE, workspace, Labels.NAME, name));
    }

    @Test
    void resourcesAreFoundByWorkspaceAndNameUntilRemoved() {
        var backend = new DirectoryBackend(root);
        insert(backend, named("one", "ws", "a"), Map.of());
        insert(backend, named("two", "ws", "a"), Map.of());
        insert(backend, named("three", "ws", "b"), Map.of());

        assertThat(backend.named(GATEWAY, "ws", "a"))
                .containsExactlyInAnyOrder(named("one", "ws", "a"), named("two", "ws", "a"));
        assertThat(backend.named(GATEWAY, "other", "a")).isEmpty();

        backend.locked(GATEWAY, "one", () -> backend.remove(GATEWAY, "one"));
        assertThat(backend.named(GATEWAY, "ws", "a")).containsExactly(named("two", "ws", "a"));
        assertThat(root.resolve(GATEWAY)
                        .resolve("names")
                        .resolve("ws")
                        .resolve("a")
                        .resolve("one"))
                .doesNotExist();
    }

    @Test
    void aFolderWrittenWithoutTheNameIndexIsIndexedOnFirstLookUp() throws IOException {
        var backend = new DirectoryBackend(root);
        insert(backend, named("one", "ws", "a"), Map.of());
        insert(backend, named("two", "ws", "b"), Map.of());
        // As a folder written before the index existed: no entries, no completion mark.
        deleteTree(root.resolve(GATEWAY).resolve("names"));

        assertThat(backend.named(GATEWAY, "ws", "b")).containsExactly(named("two", "ws", "b"));
        assertThat(root.resolve(GATEWAY).resolve("names").resolve(NameIndex.COMPLETE))
                .exists();
        assertThat(root.resolve(GATEWAY)
                        .resolve("names")
                        .resolve("ws")
                        .resolve("a")
                        .resolve("one"))
                .exists();
    }

    @Test
    void anIndexEntryWhoseResourceIsGoneOrRenamedIsIgnored() throws IOException {
        var backend = new DirectoryBackend(root);
        insert(backend, named("one", "ws", "a"), Map.of());
        assertThat(backend.named(GATEWAY, "ws", "a")).hasSize(1);
        // A crash between writing an entry and moving its resource into place leaves an entry without a resource.
        Files.createFile(root.resolve(GATEWAY)
                .resolve("names")
                .resolve("ws")
                .resolve("a")
                .resolve("ghost"));
        // An entry whose resource is stamped with another name (written behind the index's back).
        Path stale = root.resolve(GATEWAY).resolve("names").resolve("ws").resolve("z");
        Files.createDirectories(stale);
        Files.createFile(stale.resolve("one"));

        assertThat(backend.named(GATEWAY, "ws", "a")).containsExactly(named("one", "ws", "a"));
        assertThat(backend.named(GATEWAY, "ws", "z")).isEmpty();
    }

    private static void deleteTree(Path folder) throws IOException {
        try (var paths = Files.walk(folder)) {
            for (Path path : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }

    @Test
    void anInsertedResourceIsReadBackWithItsLabelsStateAndWorkspace() {
        var backend = new DirectoryBackend(root);
        insert(backend, resource("one"), Map.of("image", "x"));

        assertThat(backend.read(GATEWAY, "one")).contains(resource("one"));
        assertThat(backend.list(GATEWAY)).containsExactly(resource("one"));
        assertThat(backend.workspace(GATEWAY, "one")).isDirectory();
        assertThat(backend.readSpec(GATEWAY, "one")).containsEntry("image", "x");
    }

    @Test
    void launchSettingsAreKeptApartFromLabelsAndReplacedWithTheRecord() {
        var backend = new DirectoryBackend(root);
        StoredResource first = resource("one").withSettings(Map.of("network-mode", "NONE", "pids-limit", "64"));
        insert(backend, first, Map.of());
        assertThat(backend.read(GATEWAY, "one")).contains(first);

        StoredResource relaunched =
                first.withState(StoredResource.State.RUNNING).withSettings(Map.of("network-mode", "DEFAULT"));
        backend.locked(GATEWAY, "one", () -> backend.replace(relaunched));

        StoredResource read = backend.read(GATEWAY, "one").orElseThrow();
        assertThat(read.settings()).containsExactly(Map.entry("network-mode", "DEFAULT"));
        assertThat(read.labels()).isEqualTo(first.labels());
    }

    @Test
    void aRecordExistsFromItsInsertUntilItsRemoval() {
        var backend = new DirectoryBackend(root);
        assertThat(backend.exists(GATEWAY, "one")).isFalse();

        insert(backend, resource("one"), Map.of());
        assertThat(backend.exists(GATEWAY, "one")).isTrue();
        assertThat(backend.exists(GATEWAY, "two")).isFalse();

        backend.locked(GATEWAY, "one", () -> backend.remove(GATEWAY, "one"));
        assertThat(backend.exists(GATEWAY, "one")).isFalse();
    }

    @Test
    void writesRequireTheKeysLock() {
        var backend = new DirectoryBackend(root);

        assertThatThrownBy(() -> backend.insert(resource("one"), Map.of()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("lock");
        assertThatThrownBy(() -> backend.remove(GATEWAY, "one")).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aReplaceOfAnotherIncarnationIsRefused() {
        var backend = new DirectoryBackend(root);
        insert(backend, resource("one"), Map.of());
        var otherIncarnation =
                new StoredResource(GATEWAY, "one", "another-backend-id", StoredResource.State.STOPPED, Map.of());

        assertThatThrownBy(() -> backend.locked(GATEWAY, "one", () -> {
                    backend.replace(otherIncarnation);
                    return null;
                }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("replaced");
        assertThat(backend.read(GATEWAY, "one")).contains(resource("one"));
    }

    @Test
    void removeTakesTheResourceAndItsWorkspaceAndAnswersFalseOnceGone() throws IOException {
        var backend = new DirectoryBackend(root);
        insert(backend, resource("one"), Map.of());
        Files.writeString(backend.workspace(GATEWAY, "one").resolve("data"), "kept until delete");

        assertThat(backend.locked(GATEWAY, "one", () -> backend.remove(GATEWAY, "one")))
                .isTrue();
        assertThat(backend.locked(GATEWAY, "one", () -> backend.remove(GATEWAY, "one")))
                .isFalse();
        assertThat(backend.read(GATEWAY, "one")).isEmpty();
        assertThat(backend.resourceFolder(GATEWAY, "one")).doesNotExist();
        assertThat(root.resolve(GATEWAY).resolve("trash")).isEmptyDirectory();
    }

    @Test
    void removeOfAResourceWithNothingInItsWorkspaceLeavesNothingBehind() {
        var backend = new DirectoryBackend(root);
        insert(backend, resource("one"), Map.of("image", "busybox"));

        assertThat(backend.locked(GATEWAY, "one", () -> backend.remove(GATEWAY, "one")))
                .isTrue();

        assertThat(backend.resourceFolder(GATEWAY, "one")).doesNotExist();
        assertThat(root.resolve(GATEWAY).resolve("trash")).isEmptyDirectory();
    }

    @Test
    void aSpecLargerThanTheReadBufferIsReadBackWhole() {
        var backend = new DirectoryBackend(root);
        String large = "x".repeat(20_000) + "\u00e9 and more";
        insert(backend, resource("one"), Map.of("env.LARGE", large, "image", "busybox"));

        assertThat(backend.readSpec(GATEWAY, "one"))
                .containsEntry("env.LARGE", large)
                .containsEntry("image", "busybox");
        assertThat(backend.read(GATEWAY, "one")).contains(resource("one"));
    }

    @Test
    void sweepDeletesWhatACrashedProcessLeftInTheTrash() throws IOException {
        var backend = new DirectoryBackend(root);
        Path leftover = root.resolve(GATEWAY).resolve("trash").resolve("one-crashed");
        Files.createDirectories(leftover.resolve("workspace"));

        backend.sweep(GATEWAY);

        assertThat(leftover).doesNotExist();
    }

    @Test
    void theStoredSpecIsReadableByItsOwnerOnly() throws IOException {
        var backend = new DirectoryBackend(root);
        insert(backend, resource("one"), Map.of("env.TOKEN", "s3cr3t"));

        Path spec = backend.resourceFolder(GATEWAY, "one").resolve(DirectoryBackend.SPEC_FILE);
        assertThat(Files.getPosixFilePermissions(spec))
                .containsExactlyInAnyOrder(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);
        assertThat(Files.readString(backend.resourceFolder(GATEWAY, "one").resolve(DirectoryBackend.RESOURCE_FILE)))
                .doesNotContain("s3cr3t");
    }

    @Test
    @SuppressWarnings("ThreadPriorityCheck") // the yield widens the window an unlocked overlap would need
    void theLockOfAKeyExcludesOtherThreads() throws Exception {
        var backend = new DirectoryBackend(root);
        var inside = new AtomicInteger();
        var maximum = new AtomicInteger();
        var start = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                futures.add(threads.submit(() -> {
                    start.await();
                    for (int round = 0; round < 200; round++) {
                        backend.locked(GATEWAY, "shared", () -> {
                            maximum.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            Thread.yield();
                            inside.decrementAndGet();
                            return null;
                        });
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> future : futures) {
                future.get(30, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
        assertThat(maximum.get()).as("threads inside the lock at once").isEqualTo(1);
    }

    @Test
    void anInterruptedThreadStillLocksAndKeepsItsInterruptStatus() {
        var backend = new DirectoryBackend(root);
        Thread.currentThread().interrupt();
        try {
            assertThat(backend.locked(GATEWAY, "one", () -> "done")).isEqualTo("done");
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
        assertThat(backend.locked(GATEWAY, "one", () -> "the lock file is still usable"))
                .isNotNull();
    }

    @Test
    void folderNamesAreOneToAHundredLowercaseLettersDigitsAndDashesNotStartingWithADash() {
        assertThat(DirectoryBackend.isSegment("a")).isTrue();
        assertThat(DirectoryBackend.isSegment("8a4d6f3e-5b1c-4f2a-9e7d-1c2b3a4d5e6f"))
                .isTrue();
        assertThat(DirectoryBackend.isSegment("x".repeat(100))).isTrue();
        assertThat(DirectoryBackend.isSegment("0-")).isTrue();

        assertThat(DirectoryBackend.isSegment("")).isFalse();
        assertThat(DirectoryBackend.isSegment("x".repeat(101))).isFalse();
        assertThat(DirectoryBackend.isSegment("-a")).isFalse();
        assertThat(DirectoryBackend.isSegment("A")).isFalse();
        assertThat(DirectoryBackend.isSegment("a.b")).isFalse();
        assertThat(DirectoryBackend.isSegment("a/b")).isFalse();
        assertThat(DirectoryBackend.isSegment("..")).isFalse();
        assertThatThrownBy(() -> DirectoryBackend.requireSegment("key", "../x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key");
    }
}
