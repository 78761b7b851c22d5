package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RequestPruningTest extends OpenStoreTest {
    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

    /** Admits request {@code id} at {@code admitted} and, unless {@code completed} is null, completes it then. */
    private void request(String id, Instant admitted, Instant completed) {
        store.write(tx -> {
            tx.insertRequest(new RequestRecord(
                    id, "StopSandbox", "f", Optional.of("s"), 1, Optional.empty(), admitted, Optional.empty()));
            if (completed != null) {
                tx.completeRequest(id, RequestResult.success("STOPPED_NOW", "s", 1, 0), completed);
            }
            return null;
        });
    }

    /** Admits an exec {@code id} at {@code admitted} that never gets a result (its gateway stopped while it ran). */
    private void pendingExec(String id, Instant admitted) {
        store.write(tx -> {
            tx.insertRequest(new RequestRecord(
                    id, "ExecSandbox", "f", Optional.of("s"), 1, Optional.empty(), admitted, Optional.empty()));
            return null;
        });
    }

    private int prune(Instant cutoff, int limit) {
        return store.write(tx -> tx.pruneRequests(cutoff, limit));
    }

    private List<String> present(List<String> ids) {
        List<String> found = new ArrayList<>();
        for (String id : ids) {
            if (store.read(tx -> tx.request(id)).isPresent()) {
                found.add(id);
            }
        }
        return found;
    }

    @Test
    void removesAtMostTheLimitPerCallOldestFirstAndThenNothing() {
        List<String> ids = List.of("r0", "r1", "r2", "r3", "r4");
        for (int i = 0; i < ids.size(); i++) {
            request(ids.get(i), T0.plusSeconds(i), T0.plusSeconds(i));
        }
        Instant cutoff = T0.plusSeconds(60);

        assertThat(prune(cutoff, 2)).isEqualTo(2);
        assertThat(present(ids)).containsExactly("r2", "r3", "r4");
        assertThat(prune(cutoff, 2)).isEqualTo(2);
        assertThat(prune(cutoff, 2)).isEqualTo(1);
        assertThat(prune(cutoff, 2)).isZero();
        assertThat(present(ids)).isEmpty();
    }

    @Test
    void keepsRecordsPendingOrCompletedAtTheCutoffAndPrunesTheOlderOnesAfterThem() {
        request("pending", T0, null);
        request("late", T0, T0.plusSeconds(10));
        request("done", T0.plusSeconds(1), T0.plusSeconds(2));
        request("young", T0.plusSeconds(20), T0.plusSeconds(21));
        List<String> ids = List.of("pending", "late", "done", "young");

        assertThat(prune(T0.plusSeconds(10), 10)).isEqualTo(1);
        assertThat(present(ids)).containsExactly("pending", "late", "young");
        assertThat(prune(T0.plusSeconds(11), 10)).isEqualTo(1);
        assertThat(present(ids)).containsExactly("pending", "young");
    }

    @Test
    void findsWhereTheYoungRecordsBeginAcrossTheGapsEarlierPruningsLeft() {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            String id = "r" + i;
            request(id, T0.plusSeconds(i), T0.plusSeconds(i));
            ids.add(id);
            if (i % 7 == 0) {
                request("pending" + i, T0.plusSeconds(i), null); // never pruned
            }
        }

        assertThat(prune(T0.plusSeconds(500), 1000)).isEqualTo(500);
        List<Integer> removedPerCall = new ArrayList<>();
        for (int removed; (removed = prune(T0.plusSeconds(731), 50)) > 0; ) {
            removedPerCall.add(removed);
        }

        assertThat(removedPerCall).containsExactly(50, 50, 50, 50, 31);
        assertThat(present(ids)).isEqualTo(ids.subList(731, 1000));
    }

    @Test
    void neverRemovesARecordBeforeItsRetentionWhenTheClockSteppedBack() {
        // Admitted in this order, with the clock stepping back twice.
        int[] admittedAt = {10, 20, 30, 5, 6, 40, 1, 50};
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < admittedAt.length; i++) {
            ids.add("r" + i);
            request("r" + i, T0.plusSeconds(admittedAt[i]), T0.plusSeconds(admittedAt[i]));
        }
        Instant cutoff = T0.plusSeconds(25);

        while (prune(cutoff, 1) > 0) {}

        List<String> kept = present(ids);
        for (int i = 0; i < admittedAt.length; i++) {
            if (admittedAt[i] >= 25) {
                assertThat(kept).as("completed at %ds", admittedAt[i]).contains("r" + i);
            }
        }
        assertThat(kept).doesNotContain("r0", "r1"); // before the first step back
    }

    @Test
    void removesExecsThatNeverGotAResultOnceAdmittedBeforeTheCutoffButNoOtherPendingRequest() {
        pendingExec("exec-old", T0);
        request("stop-pending", T0.plusSeconds(1), null);
        pendingExec("exec-young", T0.plusSeconds(20));
        List<String> ids = List.of("exec-old", "exec-young", "stop-pending");

        assertThat(prune(T0.plusSeconds(10), 10)).isEqualTo(1);
        assertThat(present(ids)).containsExactly("exec-young", "stop-pending");
        assertThat(prune(T0.plusSeconds(60), 10)).isEqualTo(1);
        assertThat(present(ids)).containsExactly("stop-pending");
    }

    @Test
    void aLimitBelowOneIsRefused() {
        assertThatThrownBy(() -> prune(T0, 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
