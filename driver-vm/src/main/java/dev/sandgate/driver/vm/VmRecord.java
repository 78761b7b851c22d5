package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.Labels;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/**
 * What a sandbox's state directory records about it: the stamps (managed labels, which always win, and user labels),
 * the spec given at create, the launch input of the current generation, what the driver last did with it, and the
 * QEMU process it launched. Stored as {@code record.properties}, owner-only (the spec's environment values are
 * secrets), and replaced atomically.
 *
 * @param backendId the incarnation of this state directory: a fresh UUID at create, kept for the sandbox's life. A
 *     state directory replaced behind the driver's back has another one, so the driver never mutates it.
 * @param labels the managed stamps of {@link Labels} and the user labels
 * @param spec what the sandbox runs
 * @param policyRevision the revision of the launch policy of the current generation
 * @param phase what the driver last did
 * @param process the QEMU process of the current generation, once launched
 */
record VmRecord(
        String backendId,
        Map<String, String> labels,
        SandboxSpec spec,
        long policyRevision,
        Phase phase,
        Optional<ProcessIdentity> process) {
    static final int FORMAT = 1;

    VmRecord {
        requireNonNull(backendId, "backendId is null");
        labels = Map.copyOf(requireNonNull(labels, "labels is null"));
        requireNonNull(spec, "spec is null");
        requireNonNull(phase, "phase is null");
        requireNonNull(process, "process is null");
        for (String key : List.of(
                Labels.MANAGED_BY,
                Labels.GATEWAY_ID,
                Labels.SANDBOX_ID,
                Labels.WORKSPACE,
                Labels.NAME,
                Labels.GENERATION,
                Labels.POLICY_DIGEST)) {
            if (!labels.containsKey(key)) {
                throw new IllegalArgumentException("the record lacks the stamp " + key);
            }
        }
        generationOf(labels);
    }

    /** What the driver last did with the sandbox; together with the process it decides the observed state. */
    enum Phase {
        /** A launch of the recorded generation was committed; QEMU is being started. */
        LAUNCHING,
        /** QEMU could not be started for the recorded generation (its output is in {@code qemu.log}). */
        LAUNCH_FAILED,
        /** QEMU was started for the recorded generation and the driver has not stopped it. */
        RUNNING,
        /** The driver stopped the VM. */
        STOPPED
    }

    /** The managed stamps for {@code ref} at {@code generation}, over {@code userLabels} (managed stamps win). */
    static Map<String, String> stamps(
            Map<String, String> userLabels, String gatewayId, SandboxRef ref, long generation, String policyDigest) {
        var labels = new TreeMap<>(userLabels);
        labels.put(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE);
        labels.put(Labels.GATEWAY_ID, gatewayId);
        labels.put(Labels.SANDBOX_ID, ref.id());
        labels.put(Labels.WORKSPACE, ref.workspace());
        labels.put(Labels.NAME, ref.name());
        labels.put(Labels.GENERATION, Long.toString(generation));
        labels.put(Labels.POLICY_DIGEST, policyDigest);
        return labels;
    }

    String sandboxId() {
        return labels.get(Labels.SANDBOX_ID);
    }

    String gatewayId() {
        return labels.get(Labels.GATEWAY_ID);
    }

    String workspace() {
        return labels.get(Labels.WORKSPACE);
    }

    String name() {
        return labels.get(Labels.NAME);
    }

    long generation() {
        return generationOf(labels);
    }

    String policyDigest() {
        return labels.get(Labels.POLICY_DIGEST);
    }

    /** The identity the stamps carry; throws IllegalArgumentException if they are not a valid reference. */
    SandboxRef ref() {
        return new SandboxRef(sandboxId(), workspace(), name());
    }

    /** The user labels: every label outside the reserved prefix. */
    Map<String, String> userLabels() {
        var user = new TreeMap<String, String>();
        labels.forEach((key, value) -> {
            if (!Labels.isReserved(key)) {
                user.put(key, value);
            }
        });
        return user;
    }

    /** The process, if it is recorded and that very process still runs. */
    Optional<ProcessIdentity> liveProcess() {
        return process.filter(ProcessIdentity::alive);
    }

    VmRecord withLaunch(long generation, String policyDigest, long revision) {
        var next = new TreeMap<>(labels);
        next.put(Labels.GENERATION, Long.toString(generation));
        next.put(Labels.POLICY_DIGEST, policyDigest);
        return new VmRecord(backendId, next, spec, revision, Phase.LAUNCHING, Optional.empty());
    }

    VmRecord withProcess(ProcessIdentity launched) {
        return new VmRecord(backendId, labels, spec, policyRevision, Phase.RUNNING, Optional.of(launched));
    }

    VmRecord launchFailed() {
        return new VmRecord(backendId, labels, spec, policyRevision, Phase.LAUNCH_FAILED, Optional.empty());
    }

    VmRecord stopped() {
        return new VmRecord(backendId, labels, spec, policyRevision, Phase.STOPPED, Optional.empty());
    }

    /** The record as properties text (no timestamp, sorted keys). */
    String encode() {
        var properties = new TreeMap<String, String>();
        properties.put("format", Integer.toString(FORMAT));
        properties.put("backend-id", backendId);
        properties.put("phase", phase.name());
        properties.put("policy-revision", Long.toString(policyRevision));
        process.ifPresent(identity -> {
            properties.put("process.pid", Long.toString(identity.pid()));
            properties.put("process.start-ticks", Long.toString(identity.startTicks()));
        });
        labels.forEach((key, value) -> properties.put("label." + key, value));
        properties.put("spec.image", spec.image());
        putList(properties, "spec.command.", spec.command());
        putList(properties, "spec.args.", spec.args());
        spec.environment().forEach((key, value) -> properties.put("spec.env." + key, value));
        spec.labels().forEach((key, value) -> properties.put("spec.label." + key, value));
        properties.put(
                "spec.resources.memory-bytes", Long.toString(spec.resources().memoryBytes()));
        properties.put(
                "spec.resources.milli-cpus", Long.toString(spec.resources().milliCpus()));
        var text = new Properties(); // stores its keys sorted (JDK 18 and later)
        text.putAll(properties);
        var writer = new StringWriter();
        try {
            text.store(writer, null);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        var lines = new StringBuilder();
        writer.toString()
                .lines()
                .filter(line -> !line.startsWith("#"))
                .forEach(line -> lines.append(line).append('\n'));
        return lines.toString();
    }

    /** Parses {@link #encode()}'s text; IllegalArgumentException if it is not a valid record. */
    static VmRecord decode(String text) {
        var properties = new Properties();
        try {
            properties.load(new StringReader(text));
        } catch (IOException | IllegalArgumentException e) {
            throw new IllegalArgumentException("unreadable record: " + e.getMessage(), e);
        }
        String format = properties.getProperty("format");
        if (!Integer.toString(FORMAT).equals(format)) {
            throw new IllegalArgumentException("record format " + format + " is not " + FORMAT);
        }
        var labels = new TreeMap<String, String>();
        var environment = new TreeMap<String, String>();
        var specLabels = new TreeMap<String, String>();
        for (String key : properties.stringPropertyNames()) {
            String value = properties.getProperty(key);
            if (key.startsWith("label.")) {
                labels.put(key.substring("label.".length()), value);
            } else if (key.startsWith("spec.env.")) {
                environment.put(key.substring("spec.env.".length()), value);
            } else if (key.startsWith("spec.label.")) {
                specLabels.put(key.substring("spec.label.".length()), value);
            }
        }
        Optional<ProcessIdentity> process = Optional.empty();
        if (properties.getProperty("process.pid") != null) {
            process = Optional.of(
                    new ProcessIdentity(number(properties, "process.pid"), number(properties, "process.start-ticks")));
        }
        SandboxSpec spec;
        try {
            spec = new SandboxSpec(
                    required(properties, "spec.image"),
                    list(properties, "spec.command."),
                    list(properties, "spec.args."),
                    environment,
                    specLabels,
                    new ResourceRequests(
                            number(properties, "spec.resources.memory-bytes"),
                            number(properties, "spec.resources.milli-cpus")));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("the record's spec is invalid: " + e.getMessage(), e);
        }
        Phase phase;
        try {
            phase = Phase.valueOf(required(properties, "phase"));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the record's phase is invalid", e);
        }
        return new VmRecord(
                required(properties, "backend-id"),
                labels,
                spec,
                number(properties, "policy-revision"),
                phase,
                process);
    }

    private static long generationOf(Map<String, String> labels) {
        try {
            long generation = Long.parseLong(labels.get(Labels.GENERATION));
            if (generation >= 1) {
                return generation;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("the record's generation stamp is '" + labels.get(Labels.GENERATION) + "'");
    }

    private static void putList(Map<String, String> properties, String prefix, List<String> values) {
        for (int i = 0; i < values.size(); i++) {
            properties.put(prefix + String.format("%04d", i), values.get(i));
        }
    }

    private static List<String> list(Properties properties, String prefix) {
        var values = new ArrayList<String>();
        for (int i = 0; ; i++) {
            String value = properties.getProperty(prefix + String.format("%04d", i));
            if (value == null) {
                return values;
            }
            values.add(value);
        }
    }

    private static String required(Properties properties, String key) {
        String value = properties.getProperty(key);
        if (value == null) {
            throw new IllegalArgumentException("the record lacks " + key);
        }
        return value;
    }

    private static long number(Properties properties, String key) {
        try {
            return Long.parseLong(required(properties, key));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the record's " + key + " is not a number", e);
        }
    }

    @Override
    public String toString() {
        return "VmRecord[" + labels.get(Labels.SANDBOX_ID) + ", backendId=" + backendId + ", generation="
                + labels.get(Labels.GENERATION) + ", phase=" + phase + ", process=" + process + "]";
    }
}
