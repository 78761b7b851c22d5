package dev.sandgate.gateway.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.gateway.lifecycle.Commands;
import dev.sandgate.gateway.lifecycle.Observation;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import java.time.Instant;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** A watch stream never goes back: what it sends of a sandbox is never older than what it sent before. */
class SentVersionsTest {
    @StartedGateway
    TestGateway gateway;

    private SandboxRecord stored() {
        String id = gateway.create("team", "a").getId();
        return gateway.gateway().lifecycle().get(Commands.Target.byId(id));
    }

    private static SandboxChange change(SandboxRecord sandbox, long version, boolean stateChanged) {
        SandboxRecord at = sandbox.toBuilder().resourceVersion(version).build();
        return new SandboxChange(
                stateChanged ? SandboxChange.Type.MODIFIED : SandboxChange.Type.PLATFORM,
                at,
                new Observation(at.generation(), "RUNNING", "", Instant.EPOCH, stateChanged ? "" : "ImagePulled"),
                stateChanged);
    }

    @Test
    @DisplayName("an event that changes nothing but carries the sandbox older than a version sent is dropped")
    void anObservationWithAnOlderSandboxIsDropped() {
        SandboxRecord sandbox = stored();
        SentVersions sent = new SentVersions();
        sent.snapshot(sandbox.toBuilder().resourceVersion(5).build());

        assertThat(sent.admit(change(sandbox, 6, true))).isTrue();

        assertThat(sent.admit(change(sandbox, 5, false))).isFalse();
        assertThat(sent.admit(change(sandbox, 6, false))).isTrue();
        assertThat(sent.admit(change(sandbox, 7, false))).isTrue();
    }

    @Test
    @DisplayName("a change at or below the version sent (by the snapshot or a change) is dropped, a newer one sent")
    void changesAreSentOnceInVersionOrder() {
        SandboxRecord sandbox = stored();
        SentVersions sent = new SentVersions();
        sent.snapshot(sandbox.toBuilder().resourceVersion(3).build());

        assertThat(sent.admit(change(sandbox, 3, true))).isFalse();
        assertThat(sent.admit(change(sandbox, 4, true))).isTrue();
        assertThat(sent.admit(change(sandbox, 4, true))).isFalse();
        assertThat(sent.admit(change(sandbox, 2, false))).isFalse();
    }

    @Test
    @DisplayName("an event that changes nothing of a sandbox the stream sent nothing of is sent")
    void anObservationOfAnUnseenSandboxIsSent() {
        SentVersions sent = new SentVersions();

        assertThat(sent.admit(change(stored(), 1, false))).isTrue();
    }

    @Test
    @DisplayName(
            "after an event that changes nothing showed a newer version, neither an older event nor an older change"
                    + " is sent, and the change at that version still is")
    void aNewerObservationHoldsBackOlderChanges() {
        SandboxRecord sandbox = stored();
        SentVersions sent = new SentVersions();
        sent.snapshot(sandbox.toBuilder().resourceVersion(4).build());

        assertThat(sent.admit(change(sandbox, 5, true))).isTrue();
        assertThat(sent.admit(change(sandbox, 6, false))).isTrue();

        assertThat(sent.admit(change(sandbox, 5, false))).isFalse();
        assertThat(sent.admit(change(sandbox, 5, true))).isFalse();
        assertThat(sent.admit(change(sandbox, 6, true))).isTrue();
        assertThat(sent.admit(change(sandbox, 6, true))).isFalse();
    }

    private static SandboxChange added(SandboxRecord sandbox, long version) {
        SandboxRecord at = sandbox.toBuilder().resourceVersion(version).build();
        return new SandboxChange(
                SandboxChange.Type.ADDED, at, new Observation(at.generation(), "RUNNING", "", Instant.EPOCH, ""), true);
    }

    private static SandboxChange removed(SandboxRecord sandbox, long version) {
        SandboxRecord at = sandbox.toBuilder().resourceVersion(version).build();
        return new SandboxChange(
                SandboxChange.Type.REMOVED,
                at,
                new Observation(at.generation(), "DELETED", "", Instant.EPOCH, ""),
                true);
    }

    @Test
    @DisplayName(
            "nothing of a sandbox is sent after its REMOVED: not an event read before the deletion, nor REMOVED again")
    void nothingFollowsRemoved() {
        SandboxRecord sandbox = stored();
        SentVersions sent = new SentVersions();
        sent.snapshot(sandbox.toBuilder().resourceVersion(25).build());

        assertThat(sent.admit(removed(sandbox, 25))).isTrue();

        assertThat(sent.admit(change(sandbox, 25, false))).isFalse();
        assertThat(sent.admit(change(sandbox, 26, true))).isFalse();
        assertThat(sent.admit(removed(sandbox, 25))).isFalse();
    }

    @Test
    @DisplayName("a REMOVED of a sandbox the stream never showed is not sent; one it showed by a change is")
    void onlyShownSandboxesAreRemoved() {
        SandboxRecord sandbox = stored();
        SandboxRecord other = withId(sandbox, "other");
        SentVersions sent = new SentVersions();

        assertThat(sent.admit(removed(other, 4))).isFalse();
        assertThat(sent.admit(added(sandbox, 1))).isTrue();
        assertThat(sent.admit(removed(sandbox, 1))).isTrue();
    }

    @Test
    @DisplayName("a change of a sandbox neither in the snapshot nor added since is not sent when the stream watches its"
            + " whole scope (the sandbox was deleted before the snapshot); with a phase filter it is")
    void aLateChangeOfASandboxGoneBeforeTheSnapshotIsNotSent() {
        SandboxRecord gone = stored();
        SentVersions whole = new SentVersions();
        SentVersions phases = new SentVersions(false, System::nanoTime);

        assertThat(whole.admit(change(gone, 7, true))).isFalse();
        assertThat(whole.admit(removed(gone, 7))).isFalse();
        assertThat(phases.admit(change(gone, 7, true))).isTrue();
        assertThat(phases.admit(removed(gone, 7))).isTrue();
    }

    @Test
    @DisplayName("a stream forgets a removed sandbox after a minute, and beyond the newest 4096 removals")
    void removalsAreRememberedForAWhile() {
        long[] now = {0};
        SentVersions sent = new SentVersions(true, () -> now[0]);
        SandboxRecord first = stored();
        sent.snapshot(first);
        assertThat(sent.admit(removed(first, 1))).isTrue();

        now[0] += SentVersions.TOMBSTONE_NANOS;
        assertThat(sent.admit(change(first, 1, false))).isFalse();
        now[0] += 1;
        assertThat(sent.admit(change(first, 1, false))).isTrue();

        SandboxRecord second = withId(first, "second");
        sent.snapshot(second);
        assertThat(sent.admit(removed(second, 1))).isTrue();
        for (int i = 0; i < SentVersions.MAX_TOMBSTONES - 1; i++) {
            assertThat(sent.admit(removed(withId(second, "other-" + i), 1))).isFalse();
        }
        assertThat(sent.admit(change(second, 1, false))).isFalse();
        assertThat(sent.admit(removed(withId(second, "other-last"), 1))).isFalse();
        assertThat(sent.admit(change(second, 1, false))).isTrue();
    }

    private static SandboxRecord withId(SandboxRecord r, String id) {
        return new SandboxRecord(
                id,
                r.workspace(),
                r.name(),
                r.phase(),
                r.generation(),
                r.generationStart(),
                r.launchRevision(),
                r.launchDigest(),
                r.runtimeGeneration(),
                r.runtimeState(),
                r.runtimeDetail(),
                r.policyMode(),
                r.admittedRevision(),
                r.admittedDigest(),
                r.spec(),
                r.labels(),
                r.conditions(),
                r.pending(),
                r.resourceVersion(),
                r.createTime(),
                r.updateTime(),
                r.expiry(),
                r.lease());
    }
}
