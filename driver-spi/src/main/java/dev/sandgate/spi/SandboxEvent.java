package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

/**
 * What a {@link ComputeDriver#watch} subscription delivers. A subscription first delivers a {@link Snapshot} of every
 * sandbox of this gateway, then {@link Synced}, then changes. After the driver reconnects to its backend it resyncs
 * the same way (snapshots, then {@link Synced}); the gateway treats a sandbox missing from a resync as deleted.
 */
public sealed interface SandboxEvent {
    /** The sandbox as the backend reports it now; carries the generation stamped on the resource. */
    record Snapshot(SandboxObservation observation) implements SandboxEvent {
        public Snapshot {
            requireNonNull(observation, "observation is null");
        }
    }

    /**
     * The sandbox's resources are gone. Delivered once per deletion; never for a stop or a start, even one that
     * recreates the backend resource under a new backend id.
     */
    record Deleted(SandboxRef ref, long generation) implements SandboxEvent {
        public Deleted {
            requireNonNull(ref, "ref is null");
        }
    }

    /** A backend event worth showing an operator (an image pull, an OOM kill, a VM boot stage). */
    record Platform(SandboxRef ref, long generation, String type, String message) implements SandboxEvent {
        public Platform {
            requireNonNull(ref, "ref is null");
            requireNonNull(type, "type is null");
            requireNonNull(message, "message is null");
        }
    }

    /** Every sandbox that exists has been delivered as a snapshot; changes follow. */
    record Synced() implements SandboxEvent {}
}
