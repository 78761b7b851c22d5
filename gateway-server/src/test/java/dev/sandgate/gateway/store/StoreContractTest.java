package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import dev.sandgate.gateway.policy.PolicyDocument;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * What every {@link Store} does, whatever database is under it: each subclass opens an empty store of its kind. The
 * lifecycle relies on nothing else.
 */
abstract class StoreContractTest {
    /** An instant with nanoseconds, which a store keeps to the millisecond. */
    static final Instant FINE = Instant.parse("2026-03-04T05:06:07.123456789Z");

    Store store;

    /** An empty store, migrated. */
    abstract Store openEmpty() throws Exception;

    @BeforeEach
    void openStore() throws Exception {
        store = openEmpty();
    }

    @AfterEach
    void closeStore() {
        if (store != null) {
            store.close();
        }
    }

    // Typed reads: assertThat of a generic read is ambiguous to the compiler.
    Optional<SandboxRecord> sandboxRead(String id) {
        return store.read(tx -> tx.sandbox(id));
    }

    Optional<SandboxRecord> sandboxByNameRead(String workspace, String name) {
        return store.read(tx -> tx.sandboxByName(workspace, name));
    }

    Optional<String> metaRead(String key) {
        return store.read(tx -> tx.meta(key));
    }

    List<SandboxRecord> listed(SandboxFilter filter, Optional<StoreTransaction.SandboxKey> after, int limit) {
        return store.read(tx -> tx.listSandboxes(filter, after, limit));
    }

    int pruned(Instant cutoff, int limit) {
        return store.write(tx -> tx.pruneRequests(cutoff, limit));
    }

    Optional<PolicyRevisionRecord> revisionRead(String sandboxId, long revision) {
        return store.read(tx -> tx.policyRevision(sandboxId, revision));
    }

    Optional<RequestRecord> requestRead(String requestId) {
        return store.read(tx -> tx.request(requestId));
    }

    private SandboxRecord insert(SandboxRecord sandbox) {
        return store.write(tx -> tx.insertSandbox(sandbox));
    }

    @Test
    @DisplayName("a sandbox reads back as written, by id and by name, inside and outside a transaction")
    void createAndRead() {
        SandboxRecord written = insert(StoreRecords.sandbox("a"));

        assertThat(written.resourceVersion()).isEqualTo(1);
        assertThat(sandboxRead(written.id())).contains(written);
        assertThat(sandboxByNameRead("team", "a")).contains(written);
        assertThat(store.sandbox(written.id())).contains(written);
        assertThat(sandboxRead("no-such-id")).isEmpty();
    }

    @Test
    @DisplayName("times are kept to the millisecond")
    void millisecondTimes() {
        SandboxRecord written =
                insert(StoreRecords.sandbox("a").toBuilder().updateTime(FINE).build());

        SandboxRecord read = sandboxRead(written.id()).orElseThrow();

        assertThat(read.updateTime()).isEqualTo(Instant.ofEpochMilli(FINE.toEpochMilli()));
    }

    @Test
    @DisplayName("an update writes over the version it read and refuses a stale record, writing nothing")
    void updateRefusesStaleRecord() {
        SandboxRecord v1 = insert(StoreRecords.sandbox("a"));
        SandboxRecord v2 = store.write(tx -> tx.updateSandbox(v1.toBuilder()
                .phase(SandboxPhase.STOPPED)
                .runtime(2, "EXITED", "exit 0")
                .build()));

        assertThat(v2.resourceVersion()).isEqualTo(2);
        assertThatThrownBy(() -> store.write(tx -> tx.updateSandbox(
                        v1.toBuilder().phase(SandboxPhase.ERROR).build())))
                .isInstanceOf(StaleRecordException.class);
        SandboxRecord read = sandboxRead(v1.id()).orElseThrow();
        assertThat(read).isEqualTo(v2);
        assertThat(store.sandbox(v1.id())).contains(v2);
        assertThatThrownBy(() -> store.write(tx -> {
                    tx.deleteSandbox(v1.id(), 1);
                    return null;
                }))
                .isInstanceOf(StaleRecordException.class);
        assertThat(store.sandbox(v1.id())).isPresent();
    }

    @Test
    @DisplayName("an expiry policy and its lease read back as written; a claim gives the new execution its own lease")
    void expiryAndLease() {
        ExpiryRecord expiry = new ExpiryRecord(
                Optional.of(Duration.ofMinutes(10)), Optional.of(Duration.ofSeconds(90)), ExpiryRecord.Action.DELETE);
        SandboxRecord written = insert(StoreRecords.expiring("a", expiry, FINE));

        SandboxRecord read = sandboxRead(written.id()).orElseThrow();
        assertThat(store.sandbox(written.id())).contains(read);
        assertThat(read.lease()).isEqualTo(written.lease());
        assertThat(read.expiry()).contains(expiry);
        assertThat(read.lease().orElseThrow().ttlDeadline())
                .contains(millis(FINE).plus(Duration.ofMinutes(10)));
        assertThat(read.lease().orElseThrow().due()).contains(millis(FINE).plusSeconds(90));

        Instant later = FINE.plusSeconds(30);
        SandboxRecord renewed = store.write(tx -> tx.updateSandbox(read.toBuilder()
                .lease(read.lease().orElseThrow().renewed(expiry, later))
                .build()));
        assertThat(sandboxRead(written.id())).contains(renewed);
        assertThat(store.sandbox(written.id())).contains(renewed);
        assertThat(renewed.lease().orElseThrow().idleDeadline())
                .contains(millis(later).plusSeconds(90));

        Instant start = millis(FINE).plusSeconds(60);
        SandboxRecord claimed = store.write(tx ->
                tx.updateSandbox(renewed.toBuilder().claim(2, 1, "d", start).build()));
        SandboxRecord again = sandboxRead(written.id()).orElseThrow();
        assertThat(again).isEqualTo(claimed);
        assertThat(store.sandbox(written.id())).contains(claimed);
        assertThat(again.lease().orElseThrow().generation()).isEqualTo(2);
        assertThat(again.lease().orElseThrow().renewTime()).isEqualTo(millis(start));
        assertThat(sandboxRead(insert(StoreRecords.sandbox("plain")).id())
                        .orElseThrow()
                        .lease())
                .isEmpty();
    }

    @Test
    @DisplayName("armed leases come earliest due first, up to the limit; disarmed leases and plain sandboxes never")
    void leasesByDue() {
        ExpiryRecord ttl =
                new ExpiryRecord(Optional.of(Duration.ofSeconds(10)), Optional.empty(), ExpiryRecord.Action.STOP);
        SandboxRecord late = insert(StoreRecords.expiring("late", ttl, FINE.plusSeconds(20)));
        SandboxRecord early = insert(StoreRecords.expiring("early", ttl, FINE));
        SandboxRecord disarmed = insert(StoreRecords.expiring("done", ttl, FINE.minusSeconds(5)));
        insert(StoreRecords.sandbox("plain"));
        store.write(tx -> tx.updateSandbox(disarmed.toBuilder()
                .lease(disarmed.lease().orElseThrow().disarmed())
                .build()));

        List<DueLease> all = store.read(tx -> tx.leasesByDue(10));
        List<DueLease> first = store.read(tx -> tx.leasesByDue(1));

        assertThat(all)
                .containsExactly(
                        new DueLease(early.id(), 1, millis(FINE).plusSeconds(10)),
                        new DueLease(late.id(), 1, millis(FINE).plusSeconds(30)));
        assertThat(first).containsExactly(all.getFirst());
        assertThat(sandboxRead(disarmed.id())
                        .orElseThrow()
                        .lease()
                        .orElseThrow()
                        .armed())
                .isFalse();
    }

    private static Instant millis(Instant instant) {
        return Instant.ofEpochMilli(instant.toEpochMilli());
    }

    @Test
    @DisplayName("a failed write transaction writes nothing, and the next one commits")
    void failedWriteWritesNothing() {
        SandboxRecord a = StoreRecords.sandbox("a");

        assertThatThrownBy(() -> store.write(tx -> {
                    tx.insertSandbox(a);
                    throw new IllegalStateException("boom");
                }))
                .hasMessage("boom");

        assertThat(sandboxRead(a.id())).isEmpty();
        assertThat(store.sandbox(a.id())).isEmpty();
        assertThat(insert(StoreRecords.sandbox("a")).name()).isEqualTo("a");
    }

    @Test
    @DisplayName("a name is unique within its workspace, not across workspaces; a deleted sandbox frees it")
    void nameUniquePerWorkspace() {
        SandboxRecord a = insert(StoreRecords.sandbox("team", "a"));
        insert(StoreRecords.sandbox("other", "a"));

        assertThatThrownBy(() -> insert(StoreRecords.sandbox("team", "a"))).isInstanceOf(NameTakenException.class);
        // The transaction that found the name taken can go on (and commit what else it wrote).
        SandboxRecord b = store.write(tx -> {
            try {
                tx.insertSandbox(StoreRecords.sandbox("team", "a"));
            } catch (NameTakenException expected) {
                // taken
            }
            return tx.insertSandbox(StoreRecords.sandbox("team", "b"));
        });
        assertThat(sandboxByNameRead("team", "b")).contains(b);
        store.write(tx -> {
            tx.deleteSandbox(a.id(), a.resourceVersion());
            return null;
        });
        assertThat(store.sandbox(a.id())).isEmpty();
        assertThat(insert(StoreRecords.sandbox("team", "a")).name()).isEqualTo("a");
    }

    @Test
    @DisplayName("the request ledger: admitted once, completed once, its result replaced, pruned after retention")
    void requestLedger() {
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        store.write(tx -> {
            tx.insertRequest(new RequestRecord(
                    "r1", "StopSandbox", "f", Optional.of("s"), 1, Optional.empty(), t, Optional.empty(), "alice"));
            tx.insertRequest(new RequestRecord(
                    "r2", "CreateSandbox", "g", Optional.empty(), 0, Optional.empty(), t, Optional.empty()));
            return null;
        });
        RequestRecord pending = store.request("r1").orElseThrow();
        assertThat(pending.done()).isFalse();
        assertThat(pending.principal()).isEqualTo("alice");
        assertThat(pending.sandboxId()).contains("s");
        assertThat(store.request("r2").orElseThrow().sandboxId()).isEmpty();
        assertThat(store.request("r3")).isEmpty();

        store.write(tx -> {
            tx.completeRequest("r1", RequestResult.success("STOPPED_NOW", "s", 1, 0), t.plusSeconds(1));
            return null;
        });
        assertThatThrownBy(() -> store.write(tx -> {
                    tx.completeRequest("r1", RequestResult.success("STOPPED_NOW", "s", 1, 0), t);
                    return null;
                }))
                .isInstanceOf(StaleRecordException.class);
        store.write(tx -> {
            tx.replaceRequestResult("r1", RequestResult.success("ALREADY_STOPPED", "s", 1, 0));
            return null;
        });
        assertThatThrownBy(() -> store.write(tx -> {
                    tx.replaceRequestResult("r2", RequestResult.success("CREATED", "s", 1, 0));
                    return null;
                }))
                .isInstanceOf(StaleRecordException.class);

        RequestRecord done = requestRead("r1").orElseThrow();
        assertThat(done.result().orElseThrow().outcome()).isEqualTo("ALREADY_STOPPED");
        assertThat(done.completeTime()).contains(t.plusSeconds(1));
        assertThat(pruned(t.plusSeconds(1), 10)).isZero();
        assertThat(pruned(t.plusSeconds(2), 10)).isEqualTo(1);
        assertThat(requestRead("r1")).isEmpty();
        assertThat(requestRead("r2")).as("pending: never pruned").isPresent();
    }

    @Test
    @DisplayName("requests are pruned oldest first, a limited number at a time")
    void pruneOldestFirst() {
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        store.write(tx -> {
            for (int i = 0; i < 5; i++) {
                tx.insertRequest(new RequestRecord(
                        "r" + i,
                        "StopSandbox",
                        "f",
                        Optional.empty(),
                        1,
                        Optional.of(RequestResult.success("STOPPED_NOW", "s", 1, 0)),
                        t.plusSeconds(i),
                        Optional.of(t.plusSeconds(i))));
            }
            return null;
        });

        assertThat(pruned(t.plusSeconds(10), 2)).isEqualTo(2);

        assertThat(store.request("r0")).isEmpty();
        assertThat(store.request("r1")).isEmpty();
        assertThat(store.request("r2")).isPresent();
        assertThat(pruned(t.plusSeconds(3), 10)).isEqualTo(1);
        assertThat(store.request("r3")).isPresent();
    }

    @Test
    @DisplayName("policy revisions are kept per sandbox and removed with it")
    void policyRevisions() {
        SandboxRecord a = insert(StoreRecords.sandbox("a"));
        ByteString document = PolicyDocument.DEFAULT.canonicalDocument();
        store.write(tx -> {
            tx.insertPolicyRevision(new PolicyRevisionRecord(a.id(), 1, "d1", document, FINE));
            tx.insertPolicyRevision(new PolicyRevisionRecord(
                    a.id(), 2, "d2", ByteString.copyFrom(new byte[] {0, 1, 2, (byte) 255}), FINE));
            return null;
        });

        PolicyRevisionRecord first = store.policyRevision(a.id(), 1).orElseThrow();
        PolicyRevisionRecord second = revisionRead(a.id(), 2).orElseThrow();
        assertThat(first.digest()).isEqualTo("d1");
        assertThat(first.document()).isEqualTo(document);
        assertThat(first.admitTime()).isEqualTo(Instant.ofEpochMilli(FINE.toEpochMilli()));
        assertThat(second.document().toByteArray()).containsExactly(0, 1, 2, 255);
        assertThat(store.policyRevision(a.id(), 3)).isEmpty();
        store.write(tx -> {
            tx.deleteSandbox(a.id(), a.resourceVersion());
            return null;
        });
        assertThat(revisionRead(a.id(), 1)).isEmpty();
    }

    @Test
    @DisplayName("a pending transition (the intent) is stored with the sandbox, listed until it is cleared")
    void transitionsAndIntents() {
        SandboxRecord a = insert(StoreRecords.sandbox("a"));
        SandboxRecord b = insert(StoreRecords.sandbox("b"));
        PendingTransition stop =
                new PendingTransition(TransitionKind.STOP, "op-1", Optional.of("r1"), 1, Instant.ofEpochMilli(2000));
        PendingTransition start =
                new PendingTransition(TransitionKind.START, "op-2", Optional.empty(), 2, Instant.ofEpochMilli(1000));

        SandboxRecord a2 = store.write(tx -> tx.updateSandbox(a.toBuilder()
                .phase(SandboxPhase.STOPPING)
                .pending(Optional.of(stop))
                .build()));
        SandboxRecord b2 = store.write(tx -> tx.updateSandbox(b.toBuilder()
                .phase(SandboxPhase.STARTING)
                .pending(Optional.of(start))
                .build()));

        List<SandboxRecord> pending = store.read(StoreTransaction::pendingSandboxes);
        assertThat(pending)
                .extracting(SandboxRecord::name)
                .as("oldest intent first")
                .containsExactly("b", "a");
        assertThat(pending.get(1).pending()).contains(stop);
        assertThat(pending.get(0).pending()).contains(start);

        SandboxRecord a3 = store.write(tx -> tx.updateSandbox(a2.toBuilder()
                .phase(SandboxPhase.STOPPED)
                .pending(Optional.empty())
                .build()));
        assertThat(a3.resourceVersion()).isEqualTo(3);
        assertThat(store.read(StoreTransaction::pendingSandboxes))
                .extracting(SandboxRecord::id)
                .containsExactly(b2.id());
        assertThat(store.sandbox(a.id()).orElseThrow().pending()).isEmpty();
    }

    @Test
    @DisplayName("lists page in (workspace, name) byte order, with filters on workspace, labels and phase")
    void pagingOrder() {
        List<String> names = new ArrayList<>(List.of("b", "a", "B", "a-1", "a_1", "z", "Z9", "0"));
        Collections.shuffle(names);
        names.forEach(name -> insert(StoreRecords.sandbox("team", name)));
        insert(StoreRecords.sandbox("alpha", "m"));
        insert(StoreRecords.sandbox("zeta", "m"));

        List<String> paged = new ArrayList<>();
        Optional<StoreTransaction.SandboxKey> after = Optional.empty();
        while (true) {
            Optional<StoreTransaction.SandboxKey> from = after;
            List<SandboxRecord> page = listed(SandboxFilter.ALL, from, 3);
            page.forEach(s -> paged.add(s.workspace() + "/" + s.name()));
            if (page.size() < 3) {
                break;
            }
            SandboxRecord last = page.getLast();
            after = Optional.of(new StoreTransaction.SandboxKey(last.workspace(), last.name()));
        }

        assertThat(paged)
                .containsExactly(
                        "alpha/m",
                        "team/0",
                        "team/B",
                        "team/Z9",
                        "team/a",
                        "team/a-1",
                        "team/a_1",
                        "team/b",
                        "team/z",
                        "zeta/m");
        assertThat(listed(
                        new SandboxFilter(Optional.of("team"), Map.of("app", "x"), Set.of(SandboxPhase.READY)),
                        Optional.of(new StoreTransaction.SandboxKey("team", "a")),
                        100))
                .extracting(SandboxRecord::name)
                .containsExactly("a-1", "a_1", "b", "z");
        assertThat(listed(
                        new SandboxFilter(Optional.of("team"), Map.of(), Set.of()),
                        Optional.of(new StoreTransaction.SandboxKey("alpha", "z")),
                        100))
                .hasSize(names.size());
        assertThat(listed(
                        new SandboxFilter(Optional.of("team"), Map.of(), Set.of()),
                        Optional.of(new StoreTransaction.SandboxKey("zeta", "0")),
                        100))
                .isEmpty();
        assertThat(listed(new SandboxFilter(Optional.empty(), Map.of("app", "y"), Set.of()), Optional.empty(), 100))
                .isEmpty();
        assertThat(listed(
                        new SandboxFilter(Optional.empty(), Map.of(), Set.of(SandboxPhase.STOPPED)),
                        Optional.empty(),
                        100))
                .isEmpty();
    }

    @Test
    @DisplayName("runtime states page in (workspace, name) order and tell pending transitions and missing runtimes")
    void runtimeStatesPage() {
        List<SandboxRecord> inserted = new ArrayList<>();
        for (String name : List.of("c", "a", "b", "d")) {
            inserted.add(insert(StoreRecords.sandbox("team", name)));
        }
        insert(StoreRecords.sandbox("alpha", "z"));
        SandboxRecord b = inserted.get(2);
        store.write(tx -> tx.updateSandbox(b.toBuilder()
                .condition(new ConditionRecord(ConditionRecord.RUNTIME_MISSING, "gone", FINE))
                .runtime(1, "MISSING", "gone")
                .build()));

        SandboxRecord d = inserted.get(3);
        store.write(tx -> tx.updateSandbox(d.toBuilder()
                .pending(Optional.of(new PendingTransition(
                        TransitionKind.STOP, "op-1", Optional.empty(), 1, Instant.ofEpochMilli(1000))))
                .build()));

        List<RuntimeState> first = store.read(tx -> tx.runtimeStates(Optional.empty(), 3));
        List<RuntimeState> rest =
                store.read(tx -> tx.runtimeStates(Optional.of(new StoreTransaction.SandboxKey("team", "b")), 3));

        assertThat(first)
                .extracting(r -> r.workspace() + "/" + r.name())
                .containsExactly("alpha/z", "team/a", "team/b");
        assertThat(rest).extracting(RuntimeState::name).containsExactly("c", "d");
        assertThat(rest).extracting(RuntimeState::pending).containsExactly(false, true);
        RuntimeState missing = first.get(2);
        assertThat(missing.runtimeMissing()).isTrue();
        assertThat(missing.runtimeState()).isEqualTo("MISSING");
        assertThat(missing).isEqualTo(RuntimeState.of(store.sandbox(b.id()).orElseThrow()));
        assertThat(store.runtimeState(b.id())).contains(missing);
        Optional<RuntimeState> read = store.read(tx -> tx.runtimeState(b.id()));
        assertThat(read).contains(missing);
        assertThat(store.runtimeState("nobody")).isEmpty();
        assertThat(first.get(1).runtimeMissing()).isFalse();
        assertThat(first.get(1)).isEqualTo(RuntimeState.of(inserted.get(1)));
    }

    @Test
    @DisplayName("concurrent writers of one sandbox: each commit is the next version, and readers see the last")
    void watchChangeOrder() throws Exception {
        SandboxRecord a = insert(StoreRecords.sandbox("a"));
        int writers = 8;
        int each = 10;
        List<Long> committed = Collections.synchronizedList(new ArrayList<>());
        ExecutorService threads = Executors.newFixedThreadPool(writers);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                int writer = w;
                futures.add(threads.submit(() -> {
                    for (int i = 0; i < each; i++) {
                        long version = store.write(tx -> {
                            SandboxRecord current = tx.sandbox(a.id()).orElseThrow();
                            return tx.updateSandbox(current.toBuilder()
                                            .runtime(
                                                    current.runtimeGeneration(),
                                                    "RUNNING",
                                                    writer + "/" + current.resourceVersion())
                                            .build())
                                    .resourceVersion();
                        });
                        committed.add(version);
                    }
                    return null;
                }));
            }
            for (Future<?> future : futures) {
                future.get();
            }
        } finally {
            threads.shutdownNow();
        }

        List<Long> expected = new ArrayList<>();
        for (long v = 2; v <= 1 + writers * each; v++) {
            expected.add(v);
        }
        assertThat(committed).containsExactlyInAnyOrderElementsOf(expected);
        SandboxRecord last = store.sandbox(a.id()).orElseThrow();
        assertThat(last.resourceVersion()).isEqualTo(1 + writers * each);
        assertThat(last.runtimeDetail()).endsWith("/" + (writers * each));
        assertThat(sandboxRead(a.id())).contains(last);
    }

    @Test
    @DisplayName("meta values are inserted and replaced")
    void meta() {
        assertThat(metaRead("gateway_id")).isEmpty();
        store.write(tx -> {
            tx.putMeta("gateway_id", "gw-1");
            return null;
        });
        store.write(tx -> {
            tx.putMeta("gateway_id", "gw-2");
            return null;
        });
        assertThat(metaRead("gateway_id")).contains("gw-2");
    }

    @Test
    @DisplayName("a read-only transaction refuses writes")
    void readOnly() {
        assertThatThrownBy(() -> store.read(tx -> tx.insertSandbox(StoreRecords.sandbox("a"))))
                .isInstanceOf(IllegalStateException.class);
    }

    // Replica leases: one holder per key, epochs that grow at every take-over and fence the holders before.

    Optional<ReplicaLease> take(String key, String owner, Duration ttl) {
        return store.write(tx -> tx.takeLease(key, owner, ttl));
    }

    boolean holds(ReplicaLease lease) {
        return holds(store, lease);
    }

    static boolean holds(Store store, ReplicaLease lease) {
        return store.write(tx -> tx.holdsLease(lease));
    }

    static boolean renew(Store store, ReplicaLease lease, Duration ttl) {
        return store.write(tx -> tx.renewLease(lease, ttl));
    }

    @Test
    @DisplayName("a lease is held by one owner until it expires; the next owner takes it at the next epoch")
    void leaseTakeOver() {
        ReplicaLease first = take("leader", "a", Duration.ofMillis(50)).orElseThrow();
        assertThat(first.epoch()).isEqualTo(1);

        assertThat(take("leader", "b", Duration.ofHours(1))).isEmpty().as("held, not expired");
        ReplicaLease second = org.awaitility.Awaitility.await()
                .until(() -> take("leader", "b", Duration.ofHours(1)), Optional::isPresent)
                .orElseThrow();

        assertThat(second.epoch()).isEqualTo(2);
        assertThat(holds(first)).isFalse();
        assertThat(holds(second)).isTrue();
        assertThat(renew(store, first, Duration.ofHours(1))).isFalse();
        assertThat(take("leader", "a", Duration.ofHours(1))).isEmpty();
    }

    @Test
    @DisplayName("a renewal keeps the epoch, and a lease nobody took over is still its holder's after it expired")
    void leaseRenewal() {
        ReplicaLease lease = take("sandbox/sb-1", "a", Duration.ofHours(1)).orElseThrow();

        assertThat(renew(store, lease, Duration.ZERO))
                .as("renewed to expire now")
                .isTrue();
        assertThat(holds(lease)).as("expired, not taken over").isTrue();
        assertThat(renew(store, lease, Duration.ofHours(1))).isTrue();

        assertThat(holds(lease)).isTrue();
        assertThat(take("sandbox/sb-1", "b", Duration.ofHours(1))).isEmpty();
    }

    @Test
    @DisplayName("a released lease is free at once, at the next epoch, and its releaser no longer holds it")
    void leaseRelease() {
        ReplicaLease lease = take("sandbox/sb-1", "a", Duration.ofHours(1)).orElseThrow();
        store.write(tx -> {
            tx.releaseLease(lease);
            return null;
        });

        ReplicaLease next = take("sandbox/sb-1", "a", Duration.ofHours(1)).orElseThrow();

        assertThat(next.epoch()).isEqualTo(lease.epoch() + 1);
        assertThat(holds(lease)).isFalse();
        assertThat(holds(next)).isTrue();
        assertThat(take("sandbox/sb-2", "a", Duration.ofHours(1)).orElseThrow().epoch())
                .as("each key has its own epochs")
                .isEqualTo(1);
    }
}
