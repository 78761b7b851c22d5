package dev.sandgate.conformance;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.StaticPolicy;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Real {@link LaunchPolicy} values for tests: the canonical document is a small JSON object with sorted keys and no
 * white space, generated deterministically from the typed records, and the digest is computed over it. (The gateway
 * produces the production document; a driver never parses it, so any deterministic document serves a test.)
 */
public final class LaunchPolicies {
    private LaunchPolicies() {}

    /** A policy of {@code revision} with these fields and a canonical document generated from them. */
    public static LaunchPolicy of(long revision, StaticPolicy staticPolicy, DynamicPolicy dynamicPolicy) {
        byte[] document = canonicalDocument(revision, staticPolicy, dynamicPolicy);
        return new LaunchPolicy(revision, LaunchPolicy.digestOf(document), document, staticPolicy, dynamicPolicy);
    }

    /** Network {@link NetworkMode#DEFAULT} and nothing else: a policy that uses no {@link PolicyField}. */
    public static StaticPolicy unrestricted() {
        return new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 0, 0, 0);
    }

    /**
     * The kit's everyday policy, revision 1: the gateway's default (network none) where the driver enforces it, else
     * one that uses no field, so that every driver can launch it.
     */
    static LaunchPolicy kitBase(Set<PolicyField> enforceable) {
        return of(1, kitBaseStatic(enforceable), DynamicPolicy.EMPTY);
    }

    /**
     * The kit's "another policy", revision 2, with another digest than {@link #kitBase}: the base with a pids limit
     * where the driver enforces one, else the base's restrictions under another revision.
     */
    static LaunchPolicy kitOther(Set<PolicyField> enforceable) {
        StaticPolicy base = kitBaseStatic(enforceable);
        StaticPolicy other = enforceable.contains(PolicyField.PIDS_LIMIT)
                ? new StaticPolicy(
                        base.readOnlyRootFilesystem(),
                        base.networkMode(),
                        base.dropCapabilities(),
                        base.noNewPrivileges(),
                        base.memoryLimitBytes(),
                        base.cpuLimitMillis(),
                        512)
                : base;
        return of(2, other, DynamicPolicy.EMPTY);
    }

    private static StaticPolicy kitBaseStatic(Set<PolicyField> enforceable) {
        return enforceable.contains(PolicyField.NETWORK_NONE) ? StaticPolicy.DEFAULT : unrestricted();
    }

    /** A policy whose {@link LaunchPolicy#usedFields()} is exactly {@code field}. */
    public static LaunchPolicy usingOnly(PolicyField field, long revision) {
        return usingAll(Set.of(field), revision);
    }

    /**
     * The values a policy built by {@link #usingAll} asks for. Each is one every backend can apply exactly (whole MiB,
     * whole cores) and a sleeping process survives. The two sets differ in every limit, capability and allow-list
     * entry (each drops a capability Docker and Podman both grant by default: {@code SYS_CHROOT}, {@code SETFCAP}), so
     * that a backend whose defaults happen to equal one set still shows, with the other, whether the policy was
     * applied. The flags (read-only root, no new privileges) and network none are the same in both.
     */
    public record Restrictions(
            long memoryLimitBytes,
            long cpuLimitMillis,
            long pidsLimit,
            Set<String> dropCapabilities,
            List<String> networkAllowList) {
        public static final Restrictions STANDARD = new Restrictions(
                256L << 20, 1000, 256, Set.of("NET_RAW", "SYS_CHROOT"), List.of("example.org:443", "10.20.0.0/16"));
        public static final Restrictions ALTERNATE = new Restrictions(
                192L << 20, 2000, 128, Set.of("MKNOD", "SETFCAP"), List.of("example.net:8443", "10.30.0.0/16"));

        public Restrictions {
            dropCapabilities = Set.copyOf(dropCapabilities);
            networkAllowList = List.copyOf(networkAllowList);
        }
    }

    /** {@link #usingAll(Collection, long, Restrictions)} with {@link Restrictions#STANDARD}. */
    public static LaunchPolicy usingAll(Collection<PolicyField> fields, long revision) {
        return usingAll(fields, revision, Restrictions.STANDARD);
    }

    /**
     * A policy that uses every field of {@code fields}, with {@code values} for the limits and capabilities. {@link
     * PolicyField#NETWORK_NONE} and {@link PolicyField#NETWORK_ALLOW_LIST} exclude each other; asked for both, this
     * uses {@code NETWORK_NONE}.
     */
    public static LaunchPolicy usingAll(Collection<PolicyField> fields, long revision, Restrictions values) {
        boolean networkNone = fields.contains(PolicyField.NETWORK_NONE);
        var staticPolicy = new StaticPolicy(
                fields.contains(PolicyField.READ_ONLY_ROOT_FILESYSTEM),
                networkNone ? NetworkMode.NONE : NetworkMode.DEFAULT,
                fields.contains(PolicyField.DROP_CAPABILITIES) ? values.dropCapabilities() : Set.of(),
                fields.contains(PolicyField.NO_NEW_PRIVILEGES),
                fields.contains(PolicyField.MEMORY_LIMIT) ? values.memoryLimitBytes() : 0,
                fields.contains(PolicyField.CPU_LIMIT) ? values.cpuLimitMillis() : 0,
                fields.contains(PolicyField.PIDS_LIMIT) ? values.pidsLimit() : 0);
        var dynamicPolicy = !networkNone && fields.contains(PolicyField.NETWORK_ALLOW_LIST)
                ? new DynamicPolicy(values.networkAllowList())
                : DynamicPolicy.EMPTY;
        return of(revision, staticPolicy, dynamicPolicy);
    }

    /** The document {@link #of} uses: JSON with sorted keys, no white space, UTF-8. */
    public static byte[] canonicalDocument(long revision, StaticPolicy staticPolicy, DynamicPolicy dynamicPolicy) {
        requireNonNull(staticPolicy, "staticPolicy is null");
        requireNonNull(dynamicPolicy, "dynamicPolicy is null");
        var json = new StringBuilder(256);
        json.append("{\"dynamic\":{\"networkAllowList\":");
        appendStrings(json, dynamicPolicy.networkAllowList());
        json.append("},\"revision\":").append(revision);
        json.append(",\"static\":{\"cpuLimitMillis\":").append(staticPolicy.cpuLimitMillis());
        json.append(",\"dropCapabilities\":");
        appendStrings(json, new TreeSet<>(staticPolicy.dropCapabilities()));
        json.append(",\"memoryLimitBytes\":").append(staticPolicy.memoryLimitBytes());
        json.append(",\"networkMode\":\"")
                .append(staticPolicy.networkMode().name())
                .append('"');
        json.append(",\"noNewPrivileges\":").append(staticPolicy.noNewPrivileges());
        json.append(",\"pidsLimit\":").append(staticPolicy.pidsLimit());
        json.append(",\"readOnlyRootFilesystem\":").append(staticPolicy.readOnlyRootFilesystem());
        json.append("}}");
        return json.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static void appendStrings(StringBuilder json, Collection<String> values) {
        json.append('[');
        boolean first = true;
        for (String value : values) {
            if (!first) {
                json.append(',');
            }
            first = false;
            json.append('"');
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                switch (c) {
                    case '"' -> json.append("\\\"");
                    case '\\' -> json.append("\\\\");
                    default -> {
                        if (c < 0x20) {
                            json.append(String.format("\\u%04x", (int) c));
                        } else {
                            json.append(c);
                        }
                    }
                }
            }
            json.append('"');
        }
        json.append(']');
    }
}
