package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("sqlite-only") // Not on PostgreSQL: the embedded store's cached request ids (CachingStore).
class RequestIdsTest {
    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

    @TempDir
    Path dir;

    SqliteStore store;

    @AfterEach
    void close() {
        if (store != null) {
            store.close();
        }
    }

    private SqliteStore open(long expected, RequestIds.ScanHook hook) {
        store = new SqliteStore(
                dir.resolve("store.db"),
                SqliteStore.Synchronous.NORMAL,
                SqliteStore.Tuning.DEFAULT.withRequestIds(expected, hook));
        return store;
    }

    private SqliteStore open(long expected) {
        return open(expected, () -> {});
    }

    private static RequestRecord pending(String requestId, Instant at) {
        return new RequestRecord(
                requestId, "StopSandbox", "f", Optional.empty(), 1, Optional.empty(), at, Optional.empty());
    }

    private List<String> insert(int count, Instant at) {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String id = UUID.randomUUID().toString();
            store.write(tx -> {
                tx.insertRequest(pending(id, at));
                return null;
            });
            ids.add(id);
        }
        return ids;
    }

    @Test
    void everyRecordedRequestIsFoundAndAnUnknownIdIsNot() {
        open(RequestIds.MIN_EXPECTED);
        List<String> ids = insert(50, T0);

        for (String id : ids) {
            assertThat(store.request(id)).map(RequestRecord::requestId).contains(id);
        }
        assertThat(store.request(UUID.randomUUID().toString())).isEmpty();
    }

    @Test
    void aFilterFullerThanItsSizeIsRebuiltFromTheTableAndLosesNoId() {
        open(16);
        List<String> ids = new ArrayList<>();
        // A rebuild scans in the background and is put in place by a later write, so write until three were.
        while (store.requestIdRebuilds() < 3 && ids.size() < 20_000) {
            ids.addAll(insert(1, T0));
        }

        assertThat(store.requestIdRebuilds())
                .as("rebuilds after %d ids", ids.size())
                .isGreaterThanOrEqualTo(3);
        for (String id : ids) {
            assertThat(store.request(id)).as(id).isPresent();
        }
    }

    @Test
    void writesGoOnWhileARebuildScansAndNoIdWrittenMeanwhileIsLost() throws Exception {
        Semaphore scans = new Semaphore(0);
        CountDownLatch scanning = new CountDownLatch(1);
        open(16, () -> {
            scanning.countDown();
            scans.acquire(); // held until the test lets one scan go on; later scans stay held
        });
        List<String> before = insert(17, T0);
        List<String> trigger = insert(1, T0); // the first write after the filter is full starts the scan
        assertThat(scanning.await(30, TimeUnit.SECONDS)).as("a scan began").isTrue();

        ExecutorService writers = Executors.newFixedThreadPool(4);
        List<String> meanwhile;
        try {
            List<Future<List<String>>> written = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                written.add(writers.submit(() -> insert(25, T0)));
            }
            meanwhile = new ArrayList<>();
            for (Future<List<String>> f : written) {
                meanwhile.addAll(f.get(30, TimeUnit.SECONDS)); // writes complete while the scan is held
            }
        } finally {
            writers.shutdownNow();
        }
        assertThat(store.requestIdRebuilds())
                .as("nothing put in place while the scan is held")
                .isZero();

        scans.release();
        List<String> after = new ArrayList<>();
        while (store.requestIdRebuilds() == 0 && after.size() < 20_000) {
            after.addAll(insert(1, T0));
        }

        assertThat(store.requestIdRebuilds()).isEqualTo(1);
        for (List<String> ids : List.of(before, trigger, meanwhile, after)) {
            for (String id : ids) {
                assertThat(store.request(id)).as(id).isPresent();
            }
        }
    }

    @Test
    void aScanThatFailsKeepsTheOldFilterWithEveryId() {
        AtomicInteger failed = new AtomicInteger();
        open(16, () -> {
            failed.incrementAndGet();
            throw new IllegalStateException("the scan fails");
        });
        List<String> ids = new ArrayList<>();
        while (failed.get() < 2 && ids.size() < 20_000) {
            ids.addAll(insert(1, T0));
        }

        assertThat(failed).as("scans tried").hasValueGreaterThanOrEqualTo(2);
        assertThat(store.requestIdRebuilds()).isZero();
        for (String id : ids) {
            assertThat(store.request(id)).as(id).isPresent();
        }
    }

    @Test
    void requestsRecordedBeforeARestartAreFound() {
        open(RequestIds.MIN_EXPECTED);
        List<String> ids = insert(20, T0);
        store.close();

        open(RequestIds.MIN_EXPECTED);

        for (String id : ids) {
            assertThat(store.request(id)).as(id).isPresent();
        }
    }

    @Test
    void idsPrunedFromTheTableAreNotFoundAndTheRestAre() {
        open(16);
        List<String> old = insert(30, T0);
        store.write(tx -> {
            for (String id : old) {
                tx.completeRequest(id, RequestResult.success("STOPPED_NOW", null, 1, 0), T0);
            }
            return tx.pruneRequests(T0.plusSeconds(1), 100);
        });
        List<String> recent = insert(40, T0.plusSeconds(5));

        for (String id : old) {
            assertThat(store.request(id)).as(id).isEmpty();
        }
        for (String id : recent) {
            assertThat(store.request(id)).as(id).isPresent();
        }
    }

    @Test
    void theFilterAnswersAbsentForNearlyAllUnknownIds() {
        RequestIds filter = new RequestIds(1_000);
        for (int i = 0; i < 1_000; i++) {
            filter.adding("known-" + i);
        }
        int maybe = 0;
        for (int i = 0; i < 10_000; i++) {
            if (filter.mightHold("unknown-" + i)) {
                maybe++;
            }
        }
        for (int i = 0; i < 1_000; i++) {
            assertThat(filter.mightHold("known-" + i)).isTrue();
        }
        assertThat(maybe).as("false positives among 10,000 unknown ids").isLessThan(300);
    }
}
