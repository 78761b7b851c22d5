package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.Backoff;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StaticPolicy;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts and ends QEMU processes for sandbox state directories.
 *
 * <p>QEMU runs in its own session ({@code setsid}), with the sandbox's state directory as its working directory and
 * relative socket paths, so that it outlives the driver instance and the JVM. Every later connection goes through
 * {@code /proc/<pid>/cwd/<socket>} of a verified {@link ProcessIdentity}: it reaches the socket of that very process
 * (a VM replaced in the same directory is a different process), and it keeps socket paths short whatever the state
 * directory's path is (unix socket paths are limited to 107 bytes).
 */
final class Qemu {
    private static final Logger LOG = LoggerFactory.getLogger(Qemu.class);
    private static final Duration QMP_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration QUIT_TIMEOUT = Duration.ofSeconds(10);
    private static final int LOG_TAIL_BYTES = 2048;

    private final VmSettings settings;

    Qemu(VmSettings settings) {
        this.settings = requireNonNull(settings, "settings is null");
    }

    /** Guest memory in MiB for {@code policy}: its memory limit, else the configured default. */
    long memoryMebibytes(StaticPolicy policy) {
        long bytes = policy.memoryLimitBytes() > 0 ? policy.memoryLimitBytes() : settings.memoryBytes();
        return bytes >> 20;
    }

    /**
     * vCPUs for {@code policy}: its CPU limit in cores, at most {@link VmSettings#MAX_CPUS} (fewer vCPUs than asked is
     * stricter), else the configured default. The driver refuses a limit that is not a whole number of cores before
     * it gets here ({@link VmDriver#validate}): rounding it up would give the guest more than it asked.
     *
     * @throws IllegalArgumentException if the limit is not a multiple of 1000 millicores
     */
    int cpus(StaticPolicy policy) {
        long millis = policy.cpuLimitMillis();
        if (millis == 0) {
            return settings.cpus();
        }
        if (millis % 1000 != 0) {
            throw new IllegalArgumentException(
                    "a CPU limit of " + millis + " millicores is not a whole number of vCPUs");
        }
        return (int) Math.min(VmSettings.MAX_CPUS, millis / 1000);
    }

    /** QEMU's arguments (without the executable) for one launch, relative to the sandbox's state directory. */
    List<String> arguments(VmImage image, SandboxRef ref, LaunchInput launch) {
        StaticPolicy policy = launch.policy().staticPolicy();
        boolean kvm = settings.useKvm();
        var args = new ArrayList<String>();
        add(args, "-name", "sandgate-" + ref.id());
        add(args, "-machine", settings.machine());
        add(args, "-accel", kvm ? "kvm" : "tcg");
        add(args, "-cpu", kvm ? "host" : "qemu64");
        add(args, "-m", memoryMebibytes(policy) + "M");
        add(args, "-smp", Integer.toString(cpus(policy)));
        add(args, "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot");
        add(args, "-kernel", image.kernel().toAbsolutePath().toString());
        add(args, "-initrd", image.initramfs().toAbsolutePath().toString());
        add(
                args,
                "-append",
                settings.kernelArguments() + " sandgate.sandbox-id=" + ref.id() + " sandgate.generation="
                        + launch.generation() + " sandgate.policy-digest="
                        + launch.policy().digest());
        add(
                args,
                "-chardev",
                "socket,id=console,path=" + StateStore.CONSOLE_SOCKET + ",server=on,wait=off,logfile="
                        + StateStore.CONSOLE_LOG);
        add(args, "-serial", "chardev:console");
        add(
                args,
                "-chardev",
                "socket,id=control,path=" + StateStore.CONTROL_SOCKET + ",server=on,wait=off,logfile="
                        + StateStore.CONTROL_LOG);
        add(args, "-serial", "chardev:control");
        // virtio-serial ports: the guest agent (exec), and the workload's standard output and standard error, written
        // to files that a launch creates anew (see launch), so that an open file is one execution's output only.
        add(args, "-device", "virtio-serial-pci,id=sandgate-ports");
        add(args, "-chardev", "socket,id=agent,path=" + StateStore.AGENT_SOCKET + ",server=on,wait=off");
        add(args, "-device", "virtserialport,chardev=agent,name=" + GuestAgent.PORT);
        add(args, "-chardev", "file,id=stdout,path=" + StateStore.STDOUT_LOG);
        add(args, "-device", "virtserialport,chardev=stdout,name=sandgate.stdout");
        add(args, "-chardev", "file,id=stderr,path=" + StateStore.STDERR_LOG);
        add(args, "-device", "virtserialport,chardev=stderr,name=sandgate.stderr");
        add(args, "-qmp", "unix:" + StateStore.QMP_SOCKET + ",server=on,wait=off");
        add(args, "-pidfile", StateStore.PID_FILE);
        disk(args, "workspace", StateStore.WORKSPACE_DISK, false);
        disk(args, ConfigDisk.SERIAL, StateStore.CONFIG_DISK, true);
        image.rootDisk()
                .ifPresent(disk -> disk(args, "root", disk.toAbsolutePath().toString(), true));
        switch (policy.networkMode()) {
            case NONE -> add(args, "-nic", "none");
            // restrict=on: the guest reaches neither the host nor the outside; only forwarded ports would connect.
            case DEFAULT -> add(args, "-nic", "user,model=virtio-net-pci,restrict=on");
        }
        return args;
    }

    /**
     * Creates a sparse workspace disk of the configured size and formats it with ext4.
     *
     * @throws IOException if the file cannot be written or mkfs fails
     */
    void createWorkspaceDisk(Path file) throws IOException {
        try (var disk = new RandomAccessFile(file.toFile(), "rw")) {
            disk.setLength(settings.workspaceBytes());
        }
        ProcessBuilder mkfs = new ProcessBuilder(
                        settings.mkfs().toString(),
                        "-q",
                        "-F",
                        "-L",
                        "workspace",
                        "-m",
                        "0",
                        "-E",
                        "lazy_itable_init=1,lazy_journal_init=1",
                        file.toString())
                .redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process process = mkfs.start();
        String output;
        try (InputStream in = process.getInputStream()) {
            output = new String(in.readNBytes(LOG_TAIL_BYTES), StandardCharsets.UTF_8);
        }
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(settings.mkfs() + " did not finish within 30 s");
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while formatting " + file, e);
        }
        if (process.exitValue() != 0) {
            throw new IOException(
                    settings.mkfs() + " failed with status " + process.exitValue() + ": " + output.strip());
        }
    }

    /**
     * Starts QEMU in {@code directory} and returns once it answers on its QMP socket: the VM then boots on its own.
     * Its config disk must already be written.
     *
     * @throws DriverException UNAVAILABLE if QEMU exits during start-up (with the end of its log), DEADLINE_EXCEEDED if
     *     it does not answer in time (it is killed)
     */
    ProcessIdentity launch(Path directory, List<String> arguments) {
        for (String stale : List.of(
                StateStore.PID_FILE,
                StateStore.QMP_SOCKET,
                StateStore.CONSOLE_SOCKET,
                StateStore.CONTROL_SOCKET,
                StateStore.AGENT_SOCKET,
                StateStore.STDOUT_LOG,
                StateStore.STDERR_LOG)) {
            StateStore.deleteQuietly(directory.resolve(stale));
        }
        var command = new ArrayList<String>();
        command.add("setsid"); // its own session: no terminal signal of the gateway's reaches the VM
        command.add(settings.qemu().toString());
        command.addAll(arguments);
        Process process;
        try {
            process = new ProcessBuilder(command)
                    .directory(directory.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .redirectErrorStream(true)
                    .redirectOutput(directory.resolve(StateStore.QEMU_LOG).toFile())
                    .start();
        } catch (IOException e) {
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE, "cannot start " + settings.qemu() + ": " + e.getMessage(), e);
        }
        long deadline = System.nanoTime() + settings.launchTimeout().toNanos();
        var poll = backoff();
        Optional<ProcessIdentity> identity = Optional.empty();
        while (true) {
            if (identity.isEmpty()) {
                identity = pidFromFile(directory).flatMap(ProcessIdentity::of);
            }
            if (identity.isPresent() && answersQmp(identity.get())) {
                return identity.get();
            }
            if (!process.isAlive()) {
                identity = pidFromFile(directory).flatMap(ProcessIdentity::of);
            }
            if (!process.isAlive() && identity.isEmpty()) {
                throw new DriverException(
                        DriverErrorCode.UNAVAILABLE,
                        "QEMU exited while starting (status " + process.exitValue() + "): "
                                + tail(directory.resolve(StateStore.QEMU_LOG)));
            }
            if (System.nanoTime() - deadline > 0) {
                identity.ifPresent(ProcessIdentity::kill);
                process.destroyForcibly();
                throw new DriverException(
                        DriverErrorCode.DEADLINE_EXCEEDED,
                        "QEMU did not answer on its QMP socket within " + settings.launchTimeout());
            }
            poll.pause("QEMU");
        }
    }

    /**
     * Ends the VM of {@code process} and waits until it has exited: first, if {@code graceful}, by asking the guest
     * to shut down on its control channel (it syncs and unmounts the workspace) and waiting up to the stop timeout;
     * then with QMP {@code quit}; then with SIGKILL. Does nothing to another process than {@code process}.
     *
     * @throws DriverException DEADLINE_EXCEEDED if the process outlives all of it
     */
    void stop(ProcessIdentity process, boolean graceful) {
        if (graceful) {
            try (LineChannel control = LineChannel.connect(process.inWorkingDirectory(StateStore.CONTROL_SOCKET))) {
                control.write("stop\n");
                if (awaitExit(process, settings.stopTimeout())) {
                    return;
                }
                LOG.info("VM ({}) did not shut down within {}; quitting QEMU", process, settings.stopTimeout());
            } catch (IOException e) {
                LOG.debug("cannot ask the guest of {} to shut down: {}", process, e.getMessage());
            }
        }
        if (!process.alive()) {
            return;
        }
        try (LineChannel qmp = qmp(process)) {
            qmp.write("{\"execute\":\"quit\"}\n");
            if (awaitExit(process, QUIT_TIMEOUT)) {
                return;
            }
        } catch (IOException e) {
            LOG.debug("QMP quit of {} failed: {}", process, e.getMessage());
        }
        process.kill();
        if (!awaitExit(process, QUIT_TIMEOUT)) {
            throw new DriverException(
                    DriverErrorCode.DEADLINE_EXCEEDED, "QEMU (" + process + ") did not exit, even after SIGKILL");
        }
    }

    /** Whether {@code process} answers a QMP handshake on its own socket. */
    boolean answersQmp(ProcessIdentity process) {
        if (!process.alive()) {
            return false;
        }
        try (LineChannel qmp = qmp(process)) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** A QMP session with {@code process}, past the capabilities negotiation. */
    private static LineChannel qmp(ProcessIdentity process) throws IOException {
        LineChannel channel = LineChannel.connect(process.inWorkingDirectory(StateStore.QMP_SOCKET));
        try {
            String greeting = channel.readLine(QMP_TIMEOUT);
            if (!greeting.startsWith("{\"QMP\"")) {
                throw new IOException("not a QMP greeting: " + greeting);
            }
            channel.write("{\"execute\":\"qmp_capabilities\"}\n");
            while (true) {
                String answer = channel.readLine(QMP_TIMEOUT);
                if (answer.startsWith("{\"return\"")) {
                    return channel;
                }
                if (answer.startsWith("{\"error\"")) {
                    throw new IOException("QMP refused qmp_capabilities: " + answer);
                }
                // an event: skip it
            }
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    /** Polls until {@code process} has exited; false if it still runs after {@code timeout}. */
    static boolean awaitExit(ProcessIdentity process, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        var poll = backoff();
        while (process.alive()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            poll.pause("QEMU");
        }
        return true;
    }

    private static Optional<Long> pidFromFile(Path directory) {
        try {
            String text = Files.readString(directory.resolve(StateStore.PID_FILE), StandardCharsets.US_ASCII)
                    .strip();
            return text.isEmpty() ? Optional.empty() : Optional.of(Long.parseLong(text));
        } catch (NoSuchFileException | NumberFormatException e) {
            return Optional.empty(); // not written yet, or being written
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The end of a log file, for error messages (QEMU's own output holds no secrets). */
    static String tail(Path log) {
        try {
            byte[] bytes = Files.readAllBytes(log);
            int from = Math.max(0, bytes.length - LOG_TAIL_BYTES);
            return new String(bytes, from, bytes.length - from, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private static void disk(List<String> args, String serial, String file, boolean readOnly) {
        add(
                args,
                "-drive",
                "id=" + serial + ",file=" + file.replace(",", ",,") + ",format=raw,if=none"
                        + (readOnly ? ",readonly=on" : ""));
        add(args, "-device", "virtio-blk-pci,drive=" + serial + ",serial=" + serial);
    }

    private static void add(List<String> args, String... values) {
        args.addAll(List.of(values));
    }

    /** Sleeps 5 ms, doubling up to 100 ms: for polling a process or a file with a deadline. */
    static Backoff backoff() {
        return new Backoff(Duration.ofMillis(5), Duration.ofMillis(100));
    }
}
