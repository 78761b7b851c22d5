package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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

    private SqliteStore open(long expected) {
        store = new SqliteStore(dir.resolve("store.db"), SqliteStore.Synchronous.NORMAL, expected);
        return store;
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
        List<String> ids = insert(200, T0);

        assertThat(store.requestIdRebuilds())
                .as("rebuilt after the first 16, 32, 64, ... ids")
                .isGreaterThan(2);
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
            return tx.pruneRequests(T0.plusSeconds(1));
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
