package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.StaticPolicy;
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
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
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
 */
final class VmBackendProbe implements BackendProbe {
    private static final String MARKER_FILE = "/workspace/.sandgate-kit-marker";
    private static final Duration CONSOLE_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(10);
    private static final Pattern QEMU_NAME =
            Pattern.compile("sandgate-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})");

    private final VmSettings settings;
    private final Path root;
    private final Set<String> planted = ConcurrentHashMap.newKeySet();
    private final Map<String, Object> consoleLocks = new ConcurrentHashMap<>();

    VmBackendProbe(VmSettings settings) {
        this.settings = requireNonNull(settings, "settings is null");
        this.root = settings.stateDirectory().toAbsolutePath().normalize();
    }

    @Override
    public BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest) {
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
            ProcessIdentity process = qemu.launch(directory, qemu.arguments(settings.image(spec.image()), ref, launch));
            var record = new VmRecord(
                    UUID.randomUUID().toString(),
                    VmRecord.stamps(spec.labels(), gatewayId, ref, 1, policyDigest),
                    spec,
                    1,
                    VmRecord.Phase.RUNNING,
                    Optional.of(process));
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
        try (Stream<Path> processes = Files.list(Path.of("/proc"))) {
            for (Path proc : processes.toList()) {
                String name = proc.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                orphan(Long.parseLong(name)).ifPresent(orphans::add);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return orphans;
    }

    private Optional<Orphan> orphan(long pid) {
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
        if (name < 0 || name + 1 >= argv.size() || !cwd.startsWith(root + "/")) {
            return Optional.empty();
        }
        var matcher = QEMU_NAME.matcher(argv.get(name + 1));
        if (!matcher.matches()) {
            return Optional.empty();
        }
        String relative = cwd.substring(root.toString().length() + 1);
        String gateway = relative.contains("/") ? relative.substring(0, relative.indexOf('/')) : relative;
        if (!cwd.endsWith(" (deleted)")) {
            Optional<Stored> owner = readRecord(Path.of(cwd));
            if (owner.flatMap(Stored::process).map(ProcessIdentity::pid).orElse(-1L) == pid) {
                return Optional.empty(); // the recorded process of a sandbox directory: reported with it
            }
        }
        return ProcessIdentity.of(pid).map(process -> new Orphan(process, matcher.group(1), gateway));
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
