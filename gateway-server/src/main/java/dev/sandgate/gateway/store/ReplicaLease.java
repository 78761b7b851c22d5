package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

/**
 * A lease one gateway replica holds on a key ({@link StoreTransaction#takeLease}): who holds it and at which epoch. The
 * epoch grows at every take-over, so it fences: a holder whose lease was taken over commits nothing with its old epoch
 * ({@link StoreTransaction#holdsLease}).
 *
 * @param key what is held: {@link #LEADER}, or {@link #sandbox} of an id
 * @param owner the replica's id
 * @param epoch the epoch of this holding, from 1
 */
public record ReplicaLease(String key, String owner, long epoch) {
    /** The key of the leader's lease: its holder runs the driver watch, the reconciliation and the expiry loop. */
    public static final String LEADER = "leader";

    public ReplicaLease {
        requireNonNull(key, "key is null");
        requireNonNull(owner, "owner is null");
        if (epoch < 1) {
            throw new IllegalArgumentException("epoch must be positive: " + epoch);
        }
    }

    /** The key of the lease on one sandbox, held by the replica that is changing it, across its driver call. */
    public static String sandbox(String sandboxId) {
        return "sandbox/" + requireNonNull(sandboxId, "sandboxId is null");
    }
}
