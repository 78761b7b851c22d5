package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.conformance.AppliedPolicy;
import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.StaticPolicy;
import java.io.File;
import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The conformance kit's out-of-band access to the VM backend: the state directories under the driver's root and the
 * QEMU processes themselves.
 *
 * <p>It reads records as plain properties and checks processes in {@code /proc} itself, so that what the driver wrote
 * is checked independently. It plants with the driver's own building blocks ({@link VmRecord}, {@link StateStore},
 * {@link Qemu}), so that a planted VM is stamped and launched exactly as the driver would do it; it boots for real
 * (the probe returns without waiting for the guest). Workspace markers go through the guest's serial console, as a
 * program in the guest would write them.
 *
 * <p>Leaks are looked for in processes too: a QEMU process named for a sandbox whose working directory lies under the
 * root but is no sandbox directory any more (a deleted one) is reported as a resource of that sandbox.
 *
 * <p>The applied policy is read from the QEMU process itself: the process found in {@code /proc} by its name ({@code
 * -name sandgate-<id>}) and its working directory (the sandbox's state directory), whose real command line ({@code
 * /proc/<pid>/cmdline}) {@link QemuCommandLine} reads.
 */
final class VmBackendProbe implements BackendProbe {
    private static final String MARKER_FILE = "/workspace/.sandgate-kit-marker";
    private static final Duration CONSOLE_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration DEVICE_HELP_TIMEOUT = Duration.ofSeconds(60);
    private static final Pattern QEMU_NAME =
            Pattern.compile("sandgate-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})");
    private static final Pattern DEVICE_NAME = Pattern.compile("(?:^|, )(?:name|alias) \"([^\"]+)\"");

    private final VmSettings settings;
    private final Path root;
    private final Set<String> planted = ConcurrentHashMap.newKeySet();
    private final Map<String, Object> consoleLocks = new ConcurrentHashMap<>();
    private final Map<String, Set<String>> networkDevicesByBinary = new ConcurrentHashMap<>();

    VmBackendProbe(VmSettings settings) {
        this.settings = requireNonNull(settings, "settings is null");
        this.root = settings.stateDirectory().toAbsolutePath().normalize();
    }

    @Override
    public BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest) {
        return plant(ref, gatewayId, policyDigest, true);
    }

    /** A sandbox directory whose record says STOPPED, without a QEMU process: what the driver's stop leaves. */
    @Override
    public BackendResource plantStopped(SandboxRef ref, String gatewayId, String policyDigest) {
        return plant(ref, gatewayId, policyDigest, false);
    }

    /** In the directory the driver keeps {@code ref} in (keyed by its id: the driver derives no name from it). */
    private BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest, boolean running) {
        var store = new StateStore(root);
        var qemu = new Qemu(settings);
        Path directory = store.sandboxDirectory(gatewayId, ref.id());
        try {
            Files.createDirectories(directory.getParent());
            Files.createDirectory(directory);
            qemu.createWorkspaceDisk(directory.resolve(StateStore.WORKSPACE_DISK));
            SandboxSpec spec = SandboxSpec.ofImage(VmSettings.DEFAULT_IMAGE);
            // The guest gets a launch input of its own (the probe has only a digest, not its document); the record
            // carries the digest asked for, as the driver would stamp it.
            byte[] document = "{}".getBytes(StandardCharsets.UTF_8);
            var guestPolicy = new LaunchPolicy(
                    1, LaunchPolicy.digestOf(document), document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY);
            var launch = new LaunchInput(1, guestPolicy);
            ConfigDisk.write(directory.resolve(StateStore.CONFIG_DISK), ref, spec, launch);
            Optional<ProcessIdentity> process = running
                    ? Optional.of(qemu.launch(directory, qemu.arguments(settings.image(spec.image()), ref, launch)))
                    : Optional.empty();
            var record = new VmRecord(
                    UUID.randomUUID().toString(),
                    VmRecord.stamps(spec.labels(), gatewayId, ref, 1, policyDigest),
                    spec,
                    1,
                    running ? VmRecord.Phase.RUNNING : VmRecord.Phase.STOPPED,
                    process);
            store.write(directory, record);
            planted.add(ref.id());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot plant " + ref, e);
        }
        return resources(ref.id()).stream()
                .filter(resource -> gatewayId.equals(resource.stamp(Labels.GATEWAY_ID)))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("the planted VM " + ref + " is not visible"));
    }

    @Override
    public List<BackendResource> resources(String sandboxId) {
        var found = new ArrayList<BackendResource>();
        for (Stored stored : storedSandboxes()) {
            if (sandboxId.equals(stored.stamps().get(Labels.SANDBOX_ID))) {
                found.add(stored.resource());
            }
        }
        for (Orphan orphan : orphans()) {
            if (orphan.sandboxId().equals(sandboxId)) {
                found.add(orphan.resource());
            }
        }
        return found;
    }

    @Override
    public List<BackendResource> resourcesOfGateway(String gatewayId) {
        var found = new ArrayList<BackendResource>();
        for (Stored stored : storedSandboxes()) {
            if (gatewayId.equals(stored.stamps().get(Labels.GATEWAY_ID))) {
                found.add(stored.resource());
            }
        }
        for (Orphan orphan : orphans()) {
            if (orphan.gatewayId().equals(gatewayId)) {
                found.add(orphan.resource());
            }
        }
        return found;
    }

    @Override
    public void remove(String sandboxId) {
        for (Stored stored : storedSandboxes()) {
            if (sandboxId.equals(stored.stamps().get(Labels.SANDBOX_ID))) {
                stored.process().ifPresent(VmBackendProbe::killAndWait);
                StateStore.deleteTree(stored.directory());
            }
        }
        for (Orphan orphan : orphans()) {
            if (orphan.sandboxId().equals(sandboxId)) {
                killAndWait(orphan.process());
            }
        }
        planted.remove(sandboxId);
    }

    @Override
    public void writeWorkspaceMarker(SandboxRef ref, String marker) {
        List<String> output = console(
                ref, "printf '%s' " + ConfigDisk.quote(marker) + " > " + MARKER_FILE + " && sync && echo written");
        if (!output.contains("written")) {
            throw new IllegalStateException("the guest of " + ref + " did not write the marker: " + output);
        }
    }

    @Override
    public Optional<String> readWorkspaceMarker(SandboxRef ref) {
        List<String> output = console(
                ref, "if [ -f " + MARKER_FILE + " ]; then printf 'present:'; cat " + MARKER_FILE + "; echo; fi");
        String text = String.join("\n", output);
        return text.startsWith("present:") ? Optional.of(text.substring("present:".length())) : Optional.empty();
    }

    /**
     * Reads the restrictions from the command line of the QEMU process running the sandbox's current execution: its
     * RAM ({@code -m}), its vCPUs ({@code -smp}, 1000 millicores each) and whether the guest has a network device.
     *
     * @throws IllegalStateException if no state directory carries the id, no QEMU runs for it (a stopped sandbox), or
     *     its command line cannot be read for certain (the message names the argument)
     */
    @Override
    public AppliedPolicy appliedPolicy(SandboxRef ref) {
        Stored stored = storedSandbox(ref);
        QemuProcess process = currentProcess(ref, stored);
        try {
            QemuCommandLine commandLine = QemuCommandLine.parse(process.argv());
            String generation = stored.stamps().get(Labels.GENERATION);
            Optional<String> running = commandLine.kernelArgument("sandgate.generation");
            if (!running.equals(Optional.ofNullable(generation))) {
                throw new IllegalStateException("it runs generation " + running.orElse("(none on -append)")
                        + ", the state directory's current generation is " + generation);
            }
            return AppliedPolicy.of(commandLine.staticPolicy(networkDevices(process)));
        } catch (IllegalStateException e) {
            throw new IllegalStateException(
                    "QEMU (" + process.identity() + ") of sandbox " + ref.id() + ": " + e.getMessage()
                            + "; its command line: " + process.argv(),
                    e);
        }
    }

    /**
     * The environment of the shell on the guest's console, which the guest's {@code /init} starts after sourcing the
     * config disk's {@code environment.sh}, as it starts the workload: {@code /proc/$$/environ} printed as hex bytes
     * (values may hold new lines), split at NUL and at each entry's first {@code =}.
     */
    @Override
    public Map<String, String> launchedEnvironment(SandboxRef ref) {
        List<String> output = console(ref, "od -An -tx1 -v /proc/$$/environ | tr -d ' \\n'; echo");
        String hex = String.join("", output).trim();
        if (!hex.matches("([0-9a-f]{2})*")) {
            throw new IllegalStateException("the guest of " + ref + " printed no environment: " + output);
        }
        byte[] bytes = HexFormat.of().parseHex(hex);
        var environment = new TreeMap<String, String>();
        for (String entry : new String(bytes, StandardCharsets.UTF_8).split("\0", -1)) {
            int equals = entry.indexOf('=');
            if (equals > 0) {
                environment.put(entry.substring(0, equals), entry.substring(equals + 1));
            }
        }
        return environment;
    }

    @Override
    public void close() {
        for (String id : List.copyOf(planted)) {
            remove(id);
        }
    }

    // ---- the guest console

    /** Runs {@code command} in the shell on the guest's serial console; returns its output lines. */
    List<String> console(SandboxRef ref, String command) {
        Stored stored = storedSandboxes().stream()
                .filter(candidate -> ref.id().equals(candidate.stamps().get(Labels.SANDBOX_ID)))
                .filter(candidate ->
                        candidate.process().map(ProcessIdentity::alive).orElse(false))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no running VM carries sandbox id " + ref.id()));
        ProcessIdentity process = stored.process().orElseThrow();
        synchronized (consoleLocks.computeIfAbsent(ref.id(), id -> new Object())) {
            String nonce = UUID.randomUUID().toString().replace("-", "");
            // The quotes keep the terminal's echo of the command line from matching the markers.
            String line = "echo BEGIN''" + nonce + "; " + command + "; echo END''" + nonce + "\n";
            try (LineChannel console = LineChannel.connect(process.inWorkingDirectory(StateStore.CONSOLE_SOCKET))) {
                console.write(line);
                var output = new ArrayList<String>();
                boolean inside = false;
                while (true) {
                    String received = console.readLine(CONSOLE_TIMEOUT);
                    if (received.equals("END" + nonce)) {
                        return output;
                    }
                    if (inside) {
                        output.add(received);
                    } else if (received.equals("BEGIN" + nonce)) {
                        inside = true;
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException("the console of " + ref + " did not answer", e);
            }
        }
    }

    // ---- reading the backend

    /** A sandbox directory with its record, read as plain properties. */
    private record Stored(
            Path directory, String backendId, Map<String, String> stamps, Optional<ProcessIdentity> process) {
        BackendResource resource() {
            return new BackendResource(
                    backendId, process.map(ProcessIdentity::alive).orElse(false), stamps);
        }
    }

    /** A QEMU process of a sandbox whose working directory is no sandbox directory any more. */
    private record Orphan(ProcessIdentity process, String sandboxId, String gatewayId) {
        BackendResource resource() {
            return new BackendResource(
                    "orphan " + process,
                    true,
                    Map.of(Labels.SANDBOX_ID, sandboxId, Labels.GATEWAY_ID, gatewayId, Labels.MANAGED_BY, "sandgate"));
        }
    }

    private List<Stored> storedSandboxes() {
        var stored = new ArrayList<Stored>();
        for (Path gateway : children(root)) {
            for (Path directory : children(gateway)) {
                if (directory.getFileName().toString().startsWith(".")) {
                    continue;
                }
                readRecord(directory).ifPresent(stored::add);
            }
        }
        return stored;
    }

    private static Optional<Stored> readRecord(Path directory) {
        String text;
        try {
            text = Files.readString(directory.resolve(StateStore.RECORD), StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        var properties = new Properties();
        try {
            properties.load(new StringReader(text));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        var stamps = new HashMap<String, String>();
        for (String key : properties.stringPropertyNames()) {
            if (key.startsWith("label.")) {
                stamps.put(key.substring("label.".length()), properties.getProperty(key));
            }
        }
        Optional<ProcessIdentity> process = Optional.empty();
        String pid = properties.getProperty("process.pid");
        if (pid != null) {
            process = Optional.of(new ProcessIdentity(
                    Long.parseLong(pid), Long.parseLong(properties.getProperty("process.start-ticks"))));
        }
        return Optional.of(new Stored(directory, properties.getProperty("backend-id"), stamps, process));
    }

    /** QEMU processes named for a sandbox, working under the root, in no current sandbox directory. */
    private List<Orphan> orphans() {
        var orphans = new ArrayList<Orphan>();
        for (QemuProcess process : qemuProcesses()) {
            String cwd = process.cwd();
            if (!cwd.startsWith(root + "/")) {
                continue;
            }
            String relative = cwd.substring(root.toString().length() + 1);
            String gateway = relative.contains("/") ? relative.substring(0, relative.indexOf('/')) : relative;
            if (!cwd.endsWith(" (deleted)")) {
                Optional<Stored> owner = readRecord(Path.of(cwd));
                if (owner.flatMap(Stored::process).map(ProcessIdentity::pid).orElse(-1L)
                        == process.identity().pid()) {
                    continue; // the recorded process of a sandbox directory: reported with it
                }
            }
            orphans.add(new Orphan(process.identity(), process.sandboxId(), gateway));
        }
        return orphans;
    }

    /** A live QEMU process named for a sandbox: its identity, working directory and command line as /proc has them. */
    private record QemuProcess(ProcessIdentity identity, String cwd, List<String> argv, String sandboxId) {}

    /** Every live process of this host named {@code -name sandgate-<sandbox id>}, wherever it works. */
    private static List<QemuProcess> qemuProcesses() {
        var found = new ArrayList<QemuProcess>();
        try (Stream<Path> processes = Files.list(Path.of("/proc"))) {
            for (Path proc : processes.toList()) {
                String name = proc.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                qemuProcess(Long.parseLong(name)).ifPresent(found::add);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return found;
    }

    private static Optional<QemuProcess> qemuProcess(long pid) {
        Optional<ProcessIdentity> identity = ProcessIdentity.of(pid);
        if (identity.isEmpty()) {
            return Optional.empty();
        }
        String cwd;
        List<String> argv;
        try {
            cwd = Files.readSymbolicLink(Path.of("/proc", Long.toString(pid), "cwd"))
                    .toString();
            argv = List.of(new String(
                            Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), StandardCharsets.UTF_8)
                    .split("\0"));
        } catch (IOException | SecurityException e) {
            return Optional.empty(); // gone, or not ours to read
        }
        int name = argv.indexOf("-name");
        if (name < 0 || name + 1 >= argv.size()) {
            return Optional.empty();
        }
        var matcher = QEMU_NAME.matcher(argv.get(name + 1));
        if (!matcher.matches() || !identity.get().alive()) {
            return Optional.empty(); // not a sandbox's QEMU, or the pid was reused while it was read
        }
        return Optional.of(new QemuProcess(identity.get(), cwd, argv, matcher.group(1)));
    }

    /** The only state directory under the root named for {@code ref}'s id and carrying it. */
    private Stored storedSandbox(SandboxRef ref) {
        List<Stored> carrying = storedSandboxes().stream()
                .filter(candidate -> ref.id().equals(candidate.stamps().get(Labels.SANDBOX_ID)))
                .filter(candidate ->
                        candidate.directory().getFileName().toString().equals(ref.id()))
                .toList();
        if (carrying.isEmpty()) {
            throw new IllegalStateException("no VM state directory carries sandbox id " + ref.id());
        }
        if (carrying.size() > 1) {
            throw new IllegalStateException("several VM state directories carry sandbox id " + ref.id() + ": "
                    + carrying.stream().map(Stored::directory).toList());
        }
        return carrying.getFirst();
    }

    /**
     * The QEMU process of the sandbox's current execution, found without the record: the only live process named for
     * the sandbox whose working directory is its state directory. The record's process, if it names a live one, must
     * be that very process (pid and start time).
     */
    private static QemuProcess currentProcess(SandboxRef ref, Stored stored) {
        String directory;
        try {
            directory = stored.directory().toRealPath().toString();
        } catch (IOException e) {
            throw new IllegalStateException("the state directory of sandbox " + ref.id() + " is gone", e);
        }
        List<QemuProcess> running = qemuProcesses().stream()
                .filter(process -> process.sandboxId().equals(ref.id()))
                .filter(process -> process.cwd().equals(directory))
                .toList();
        if (running.isEmpty()) {
            throw new IllegalStateException("no QEMU process runs for sandbox " + ref.id() + " in its state directory "
                    + directory + ": the sandbox is not running");
        }
        if (running.size() > 1) {
            throw new IllegalStateException("several QEMU processes run for sandbox " + ref.id() + ": "
                    + running.stream().map(QemuProcess::identity).toList());
        }
        QemuProcess process = running.getFirst();
        Optional<ProcessIdentity> recorded = stored.process().filter(ProcessIdentity::alive);
        if (recorded.isPresent() && !recorded.get().equals(process.identity())) {
            throw new IllegalStateException("the record of sandbox " + ref.id() + " names QEMU (" + recorded.get()
                    + "), but (" + process.identity() + ") runs in its state directory");
        }
        return process;
    }

    /**
     * The device types the process's own QEMU binary lists as network devices ({@code -device help}), with their
     * aliases; read once per binary.
     */
    private Set<String> networkDevices(QemuProcess process) {
        Path executable;
        try {
            executable = Files.readSymbolicLink(
                    Path.of("/proc", Long.toString(process.identity().pid()), "exe"));
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the executable of QEMU (" + process.identity() + ")", e);
        }
        return networkDevicesByBinary.computeIfAbsent(executable.toString(), VmBackendProbe::listNetworkDevices);
    }

    private static Set<String> listNetworkDevices(String executable) {
        String output;
        try {
            Process help = new ProcessBuilder(executable, "-device", "help")
                    .redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            try (var in = help.getInputStream()) {
                output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            if (!help.waitFor(DEVICE_HELP_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                help.destroyForcibly();
                throw new IllegalStateException(executable + " -device help did not finish");
            }
            if (help.exitValue() != 0) {
                throw new IllegalStateException(
                        executable + " -device help failed with status " + help.exitValue() + ": " + output.strip());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + executable + " -device help", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + executable + " -device help", e);
        }
        var devices = new TreeSet<String>();
        boolean inSection = false;
        for (String line : output.lines().toList()) {
            if (line.equals("Network devices:")) {
                inSection = true;
            } else if (inSection && (line.isBlank() || line.endsWith(":"))) {
                break;
            } else if (inSection) {
                var matcher = DEVICE_NAME.matcher(line);
                while (matcher.find()) {
                    devices.add(matcher.group(1));
                }
            }
        }
        if (devices.isEmpty()) {
            throw new IllegalStateException(executable + " -device help lists no network devices");
        }
        return Set.copyOf(devices);
    }

    private static List<Path> children(Path directory) {
        var children = new ArrayList<Path>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory)) {
            stream.forEach(child -> {
                if (Files.isDirectory(child)) {
                    children.add(child);
                }
            });
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return children;
    }

    private static void killAndWait(ProcessIdentity process) {
        process.kill();
        if (!Qemu.awaitExit(process, EXIT_TIMEOUT)) {
            throw new IllegalStateException("QEMU (" + process + ") survived SIGKILL");
        }
    }
}
