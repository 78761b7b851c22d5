package dev.sandgate.testing.replicas;

import dev.sandgate.testing.GatewayProcess;
import dev.sandgate.testing.StoreSchema;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Gateway replicas, each a process of its own on one PostgreSQL schema, one driver backend, one token key file and one
 * gateway id, with a data directory each, over the {@link JournalingDriverProvider journaling driver}. A slot is
 * killed (SIGKILL) and restarted as a new process; each death is recorded in the journal once the process is gone.
 */
final class ReplicaCluster implements AutoCloseable {
    private final Path root;
    private final String classPath;
    private final String mainClass;
    private static final String COORDINATION = "dev.sandgate.gateway.lifecycle.ReplicaCoordination";
    private static final String LOGGING = "<configuration>\n"
            + "  <appender name=\"OUT\" class=\"ch.qos.logback.core.ConsoleAppender\">\n"
            + "    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{20} - %msg%n</pattern></encoder>\n"
            + "  </appender>\n"
            + "  <logger name=\"" + COORDINATION + "\" level=\"INFO\"/>\n"
            + "@TRACED@"
            + "  <root level=\"WARN\"><appender-ref ref=\"OUT\"/></root>\n"
            + "</configuration>\n";
    /**
     * With {@code -Dsandgate.replicaKill.traceWatch=true}, each replica's log also traces every change on its way to
     * the watch streams (change-log delivery, fan-out, each stream's send): to follow one lost event through the layers.
     */
    private static final boolean TRACE_WATCH = Boolean.getBoolean("sandgate.replicaKill.traceWatch");

    private static final List<String> WATCH_PATH = List.of(
            "dev.sandgate.gateway.lifecycle.ChangeFollower",
            "dev.sandgate.gateway.grpc.WatchFanout",
            "dev.sandgate.gateway.grpc.WatchStream");

    private final List<String> arguments;
    private final List<String> jvmOptions;
    private final GatewayProcess[] slots;
    private final int[] incarnations;
    private final Path journal;
    private int unexpectedExits;

    ReplicaCluster(
            Path root,
            String classPath,
            String mainClass,
            int replicas,
            String gatewayId,
            StoreSchema store,
            String delegate,
            Map<String, String> delegateProperties)
            throws IOException {
        this.root = root;
        this.journal = root.resolve("driver-journal");
        this.classPath = JournalingDriverProvider.serviceDirectory(root.resolve("journaling-service"))
                + File.pathSeparator
                + classPath;
        this.mainClass = mainClass;
        List<String> args = new ArrayList<>(List.of(
                "--driver",
                JournalingDriverProvider.NAME,
                "--driver-property",
                JournalingDriverProvider.DELEGATE + "=" + delegate,
                "--driver-property",
                JournalingDriverProvider.FILE + "=" + journal,
                "--gateway-id",
                gatewayId,
                "--token-key-file",
                root.resolve("token-keys.properties").toString()));
        delegateProperties.forEach((key, value) -> args.addAll(List.of("--driver-property", key + "=" + value)));
        args.addAll(store.storeArgs());
        this.arguments = List.copyOf(args);
        Path logging = root.resolve("replica-logback.xml");
        StringBuilder traced = new StringBuilder();
        if (TRACE_WATCH) {
            WATCH_PATH.forEach(
                    logger -> traced.append("  <logger name=\"").append(logger).append("\" level=\"TRACE\"/>\n"));
        }
        Files.writeString(logging, LOGGING.replace("@TRACED@", traced), StandardCharsets.UTF_8);
        // Which replica leads is in its log: at INFO, whichever slf4j provider the class path has.
        this.jvmOptions = List.of(
                "-Dlogback.configurationFile=" + logging,
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.log." + COORDINATION + "=info");
        this.slots = new GatewayProcess[replicas];
        this.incarnations = new int[replicas];
    }

    Path journal() {
        return journal;
    }

    int size() {
        return slots.length;
    }

    /** Starts every replica, the first alone (it creates the token key file and migrates the schema). */
    void start() throws IOException, InterruptedException {
        for (int slot = 0; slot < slots.length; slot++) {
            restart(slot);
        }
    }

    /** Starts a new process in {@code slot}, which must be empty or dead. */
    synchronized void restart(int slot) throws IOException, InterruptedException {
        int incarnation = ++incarnations[slot];
        List<String> args = new ArrayList<>(arguments);
        args.addAll(List.of("--data-dir", root.resolve("data-" + slot).toString()));
        slots[slot] = GatewayProcess.start(
                root.resolve("logs"), "replica-" + slot + "-" + incarnation, classPath, mainClass, jvmOptions, args);
    }

    /** The process of {@code slot}, alive or not. */
    synchronized GatewayProcess process(int slot) {
        return slots[slot];
    }

    /** Kills the process of {@code slot} (SIGKILL) and records its death; returns whether it led. */
    boolean kill(int slot) throws IOException, InterruptedException {
        GatewayProcess process = process(slot);
        boolean led = leads(process);
        process.kill();
        DriverJournal.recordDeath(journal, process.pid(), "killed");
        return led;
    }

    /** The slot whose live process leads, if one does now. */
    Optional<Integer> leader() throws IOException {
        for (int slot = 0; slot < slots.length; slot++) {
            GatewayProcess process = process(slot);
            if (process != null && process.alive() && leads(process)) {
                return Optional.of(slot);
            }
        }
        return Optional.empty();
    }

    private static boolean leads(GatewayProcess process) throws IOException {
        return process.output().contains(" leads (epoch ");
    }

    /**
     * Restarts every replica that ended by itself (one whose leadership another took exits 75), recording its death
     * first; returns how many did.
     */
    int restartExited() throws IOException, InterruptedException {
        int exited = 0;
        for (int slot = 0; slot < slots.length; slot++) {
            GatewayProcess process = process(slot);
            if (process != null && !process.alive()) {
                DriverJournal.recordDeath(journal, process.pid(), "exited " + process.exitValue());
                unexpectedExits++;
                exited++;
                restart(slot);
            }
        }
        return exited;
    }

    int unexpectedExits() {
        return unexpectedExits;
    }

    /** The output of every process of the run, for a failure message. */
    String logTails() throws IOException {
        StringBuilder out = new StringBuilder();
        for (int slot = 0; slot < slots.length; slot++) {
            GatewayProcess process = process(slot);
            if (process != null) {
                String output = process.output();
                out.append("--- replica ")
                        .append(slot)
                        .append(" (last lines) ---\n")
                        .append(output, Math.max(0, output.length() - 4000), output.length());
            }
        }
        return out.toString();
    }

    @Override
    public void close() {
        for (GatewayProcess process : slots) {
            if (process != null) {
                process.close();
            }
        }
    }
}
