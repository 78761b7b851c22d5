package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Timestamp;
import dev.sandgate.api.v1.Observation;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import org.junit.jupiter.api.Test;

class WatchStampsTest {
    @Test
    void readsTheTypeAndTheObservationTimeAndSkipsTheSandbox() {
        WatchSandboxesResponse event = WatchSandboxesResponse.newBuilder()
                .setType(WatchEventType.MODIFIED)
                .setSandbox(Sandbox.newBuilder()
                        .setId("sb-1")
                        .setWorkspace("w")
                        .setName("n")
                        .putLabels("team", "a"))
                .setObservation(Observation.newBuilder()
                        .setGeneration(7)
                        .setExecutionToken("token")
                        .setRuntimeState("RUNNING")
                        .setObserveTime(Timestamp.newBuilder()
                                .setSeconds(1_800_000_000L)
                                .setNanos(123_456_789))
                        .setPlatformEventType("start"))
                .build();

        WatchStamps.Stamp stamp = WatchStamps.parse(event.toByteArray());

        assertThat(stamp.type()).isEqualTo(WatchEventType.MODIFIED_VALUE);
        assertThat(stamp.observeEpochNanos()).isEqualTo(1_800_000_000_123_456_789L);
    }

    @Test
    void aSyncedMarkerHasNoObservationTime() {
        WatchSandboxesResponse synced = WatchSandboxesResponse.newBuilder()
                .setType(WatchEventType.SYNCED)
                .build();

        WatchStamps.Stamp stamp = WatchStamps.parse(synced.toByteArray());

        assertThat(stamp.type()).isEqualTo(WatchStamps.Stamp.SYNCED);
        assertThat(stamp.observeEpochNanos()).isZero();
    }
}
