package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The store answers {@link Store#policyRevision} from memory only with revisions that are committed. */
@Tag("sqlite-only") // Not on PostgreSQL: the embedded store's cached policy revisions (CachingStore).
class CommittedRevisionsTest extends OpenStoreTest {
    private static PolicyRevisionRecord revision(SandboxRecord sandbox, long number, String document) {
        return new PolicyRevisionRecord(
                sandbox.id(), number, "sha256:" + document, ByteString.copyFromUtf8(document), FINE);
    }

    private Optional<PolicyRevisionRecord> stored(String sandboxId, long number) {
        return store.read(tx -> tx.policyRevision(sandboxId, number));
    }

    @Test
    void aCommittedRevisionIsWhatAReadReturns() {
        SandboxRecord sandbox = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("revised")));
        store.write(tx -> {
            tx.insertPolicyRevision(revision(sandbox, 2, "{\"network\":\"none\"}"));
            return null;
        });

        PolicyRevisionRecord kept = store.policyRevision(sandbox.id(), 2).orElseThrow();
        PolicyRevisionRecord read = stored(sandbox.id(), 2).orElseThrow();
        assertThat(kept).isEqualTo(read);
        assertThat(kept.document()).isEqualTo(read.document());
        assertThat(kept.admitTime())
                .isEqualTo(read.admitTime())
                .isEqualTo(FINE.truncatedTo(java.time.temporal.ChronoUnit.MILLIS));
        assertThat(store.policyRevision(sandbox.id(), 3)).isEmpty();
    }

    @Test
    void aRevisionOfAWriteThatFailedIsNeverAnswered() {
        SandboxRecord sandbox = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("undone")));

        assertThatThrownBy(() -> store.write(tx -> {
                    tx.insertPolicyRevision(revision(sandbox, 2, "{\"first\":1}"));
                    throw new IllegalStateException("changed my mind");
                }))
                .hasMessage("changed my mind");
        assertThat(store.policyRevision(sandbox.id(), 2)).isEmpty();

        store.write(tx -> {
            tx.insertPolicyRevision(revision(sandbox, 2, "{\"second\":2}"));
            return null;
        });
        assertThat(store.policyRevision(sandbox.id(), 2).orElseThrow().digest()).isEqualTo("sha256:{\"second\":2}");
    }

    @Test
    void aRevisionRolledBackInsideABatchIsNeverAnsweredWhileTheOthersAre() throws Exception {
        SandboxRecord first = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("first")));
        SandboxRecord second = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("second")));
        var holding = new CountDownLatch(1);
        var release = new CountDownLatch(1);
        Future<?> holder = StoreRecords.holdWriter(store, threads, tx -> {}, holding, release);
        assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();

        Future<Object> undone = threads.submit(() -> store.write(tx -> {
            tx.insertPolicyRevision(revision(first, 2, "{\"undone\":1}"));
            throw new IllegalStateException("undone");
        }));
        StoreRecords.awaitQueued(store, 1);
        Future<Object> kept = threads.submit(() -> store.write(tx -> {
            tx.insertPolicyRevision(revision(second, 2, "{\"kept\":1}"));
            return null;
        }));
        StoreRecords.awaitQueued(store, 2);
        release.countDown();
        holder.get(30, TimeUnit.SECONDS);

        assertThatThrownBy(() -> undone.get(30, TimeUnit.SECONDS)).hasRootCauseMessage("undone");
        kept.get(30, TimeUnit.SECONDS);
        assertThat(store.policyRevision(first.id(), 2)).isEmpty();
        assertThat(store.policyRevision(second.id(), 2))
                .isEqualTo(stored(second.id(), 2))
                .isPresent();
    }
}
