package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.SandboxRef;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One sandbox as the store holds it. Immutable; {@link #toBuilder()} makes modified copies that the lifecycle writes
 * back with a compare-and-set on {@link #resourceVersion()}.
 *
 * @param id the stable id
 * @param workspace the workspace (a locator)
 * @param name the name within the workspace (a locator)
 * @param phase the lifecycle phase
 * @param generation the latest claimed execution generation
 * @param generationStart when that generation was claimed
 * @param launchRevision the policy revision captured with that generation (in the same transaction as the claim)
 * @param launchDigest the digest of that revision
 * @param runtimeGeneration the generation last confirmed on the runtime resource (0: none yet)
 * @param runtimeState the runtime state last reported by the driver (an SPI {@code SandboxState} name, or empty)
 * @param runtimeDetail the detail last reported by the driver
 * @param policyMode LIVE or FROZEN
 * @param admittedRevision the latest admitted policy revision
 * @param admittedDigest the digest of that revision
 * @param spec what the sandbox runs
 * @param labels user labels
 * @param conditions current conditions
 * @param pending the committed, unfinished transition, if any
 * @param resourceVersion increases with every committed change
 * @param createTime when the sandbox was created
 * @param updateTime when it last changed
 * @param expiry the expiry policy given at create; empty: the sandbox never expires
 * @param lease the lease of the latest claimed execution; present exactly when {@code expiry} is
 */
public record SandboxRecord(
        String id,
        String workspace,
        String name,
        SandboxPhase phase,
        long generation,
        Instant generationStart,
        long launchRevision,
        String launchDigest,
        long runtimeGeneration,
        String runtimeState,
        String runtimeDetail,
        PolicyMode policyMode,
        long admittedRevision,
        String admittedDigest,
        StoredSpec spec,
        Map<String, String> labels,
        List<ConditionRecord> conditions,
        Optional<PendingTransition> pending,
        long resourceVersion,
        Instant createTime,
        Instant updateTime,
        Optional<ExpiryRecord> expiry,
        Optional<LeaseRecord> lease) {
    public SandboxRecord {
        requireNonNull(id, "id is null");
        requireNonNull(workspace, "workspace is null");
        requireNonNull(name, "name is null");
        requireNonNull(phase, "phase is null");
        requireNonNull(generationStart, "generationStart is null");
        requireNonNull(launchDigest, "launchDigest is null");
        requireNonNull(runtimeState, "runtimeState is null");
        requireNonNull(runtimeDetail, "runtimeDetail is null");
        requireNonNull(policyMode, "policyMode is null");
        requireNonNull(admittedDigest, "admittedDigest is null");
        requireNonNull(spec, "spec is null");
        labels = Map.copyOf(requireNonNull(labels, "labels is null"));
        conditions = List.copyOf(requireNonNull(conditions, "conditions is null"));
        requireNonNull(pending, "pending is null");
        requireNonNull(createTime, "createTime is null");
        requireNonNull(updateTime, "updateTime is null");
        requireNonNull(expiry, "expiry is null");
        requireNonNull(lease, "lease is null");
    }

    public SandboxRef ref() {
        return new SandboxRef(id, workspace, name);
    }

    public Builder toBuilder() {
        return new Builder(this);
    }

    /** A modified copy in the making. */
    public static final class Builder {
        private final SandboxRecord base;
        private SandboxPhase phase;
        private long generation;
        private Instant generationStart;
        private long launchRevision;
        private String launchDigest;
        private long runtimeGeneration;
        private String runtimeState;
        private String runtimeDetail;
        private long admittedRevision;
        private String admittedDigest;
        private List<ConditionRecord> conditions;
        private Optional<PendingTransition> pending;
        private long resourceVersion;
        private Instant updateTime;
        private Optional<LeaseRecord> lease;

        private Builder(SandboxRecord base) {
            this.base = base;
            this.phase = base.phase;
            this.generation = base.generation;
            this.generationStart = base.generationStart;
            this.launchRevision = base.launchRevision;
            this.launchDigest = base.launchDigest;
            this.runtimeGeneration = base.runtimeGeneration;
            this.runtimeState = base.runtimeState;
            this.runtimeDetail = base.runtimeDetail;
            this.admittedRevision = base.admittedRevision;
            this.admittedDigest = base.admittedDigest;
            this.conditions = new ArrayList<>(base.conditions);
            this.pending = base.pending;
            this.resourceVersion = base.resourceVersion;
            this.updateTime = base.updateTime;
            this.lease = base.lease;
        }

        public Builder phase(SandboxPhase value) {
            this.phase = value;
            return this;
        }

        /**
         * Claims {@code newGeneration} with the policy revision captured for it. With an expiry policy, the new
         * execution gets its own lease, from {@code at}, and the previous execution's {@code EXPIRED} condition goes.
         */
        public Builder claim(long newGeneration, long revision, String digest, Instant at) {
            this.generation = newGeneration;
            this.generationStart = at;
            this.launchRevision = revision;
            this.launchDigest = digest;
            if (base.expiry.isPresent()) {
                this.lease = Optional.of(base.expiry.get().leaseFor(newGeneration, at));
                conditions.removeIf(c -> c.type().equals(ConditionRecord.EXPIRED));
            }
            return this;
        }

        /** Replaces the lease (a renewal, or the gateway having acted on its expiry). */
        public Builder lease(LeaseRecord value) {
            if (base.expiry.isEmpty()) {
                throw new IllegalStateException("sandbox " + base.id + " has no expiry policy, so no lease");
            }
            this.lease = Optional.of(value);
            return this;
        }

        public Builder runtime(long observedGeneration, String state, String detail) {
            this.runtimeGeneration = observedGeneration;
            this.runtimeState = state;
            this.runtimeDetail = detail;
            return this;
        }

        public Builder admitted(long revision, String digest) {
            this.admittedRevision = revision;
            this.admittedDigest = digest;
            return this;
        }

        /** Sets (replaces) the condition of the same type. */
        public Builder condition(ConditionRecord condition) {
            conditions.removeIf(c -> c.type().equals(condition.type()));
            conditions.add(condition);
            return this;
        }

        public Builder clearCondition(String type) {
            conditions.removeIf(c -> c.type().equals(type));
            return this;
        }

        public Builder pending(Optional<PendingTransition> value) {
            this.pending = value;
            return this;
        }

        public Builder resourceVersion(long value) {
            this.resourceVersion = value;
            return this;
        }

        public Builder updateTime(Instant value) {
            this.updateTime = value;
            return this;
        }

        public SandboxRecord build() {
            return new SandboxRecord(
                    base.id,
                    base.workspace,
                    base.name,
                    phase,
                    generation,
                    generationStart,
                    launchRevision,
                    launchDigest,
                    runtimeGeneration,
                    runtimeState,
                    runtimeDetail,
                    base.policyMode,
                    admittedRevision,
                    admittedDigest,
                    base.spec,
                    base.labels,
                    conditions,
                    pending,
                    resourceVersion,
                    base.createTime,
                    updateTime,
                    base.expiry,
                    lease);
        }
    }

    /** Whether everything but the resource version and update time equals {@code other}. */
    public boolean sameContent(SandboxRecord other) {
        return toBuilder()
                .resourceVersion(0)
                .updateTime(Instant.EPOCH)
                .build()
                .equals(other.toBuilder()
                        .resourceVersion(0)
                        .updateTime(Instant.EPOCH)
                        .build());
    }
}
