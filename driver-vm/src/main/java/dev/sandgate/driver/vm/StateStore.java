package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.SlotLocks;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The VM driver's backend state on disk: one directory per sandbox, keyed by its stable id and grouped by gateway.
 *
 * <pre>
 * &lt;root&gt;/&lt;gatewayId&gt;/.locks                    lock regions (one per slot of sandbox ids)
 * &lt;root&gt;/&lt;gatewayId&gt;/&lt;sandboxId&gt;/record.properties  the {@link VmRecord}, owner-only, replaced atomically
 * &lt;root&gt;/&lt;gatewayId&gt;/&lt;sandboxId&gt;/workspace.img     the persistent workspace disk (ext4, sparse)
 * &lt;root&gt;/&lt;gatewayId&gt;/&lt;sandboxId&gt;/config.img        the launch input of the current generation (tar)
 * &lt;root&gt;/&lt;gatewayId&gt;/&lt;sandboxId&gt;/{qmp,console,control}.sock, console.log, control.log, qemu.log, qemu.pid
 * &lt;root&gt;/&lt;gatewayId&gt;/.tmp-*                   sandboxes being created
 * &lt;root&gt;/&lt;gatewayId&gt;/.trash-*                 sandboxes being removed
 * </pre>
 *
 * A sandbox appears and disappears atomically for readers: it is built in a {@code .tmp-} directory and renamed into
 * place, and removed by renaming it into a {@code .trash-} directory first. Readers take no lock; writers hold the
 * sandbox's lock ({@link #locked}), which excludes other threads of this JVM and other processes.
 *
 * <p>Methods throw {@link UncheckedIOException} when the file system fails and {@link IllegalArgumentException} for a
 * record that cannot be read.
 */
final class StateStore {
    static final String RECORD = "record.properties";
    static final String WORKSPACE_DISK = "workspace.img";
    static final String CONFIG_DISK = "config.img";
    static final String QMP_SOCKET = "qmp.sock";
    static final String CONSOLE_SOCKET = "console.sock";
    static final String CONTROL_SOCKET = "control.sock";
    static final String AGENT_SOCKET = "agent.sock";
    static final String CONSOLE_LOG = "console.log";
    static final String CONTROL_LOG = "control.log";
    static final String QEMU_LOG = "qemu.log";
    static final String STDOUT_LOG = "stdout.log";
    static final String STDERR_LOG = "stderr.log";
    static final String PID_FILE = "qemu.pid";

    private static final String LOCKS = ".locks";
    private static final String TMP_PREFIX = ".tmp-";
    private static final String TRASH_PREFIX = ".trash-";
    private static final Duration STALE_TMP_AGE = Duration.ofMinutes(10);
    private static final Pattern SANDBOX_DIRECTORY =
            Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

    private final Path root;

    StateStore(Path root) {
        this.root = requireNonNull(root, "root is null").toAbsolutePath().normalize();
    }

    Path root() {
        return root;
    }

    Path gatewayDirectory(String gatewayId) {
        return root.resolve(gatewayId);
    }

    Path sandboxDirectory(String gatewayId, String sandboxId) {
        return gatewayDirectory(gatewayId).resolve(sandboxId);
    }

    /** The record of {@code sandboxId} under {@code gatewayId}; empty if there is no such sandbox directory. */
    Optional<VmRecord> read(String gatewayId, String sandboxId) {
        return readRecord(sandboxDirectory(gatewayId, sandboxId));
    }

    /** One sandbox directory of a gateway as a listing found it. */
    record Entry(String directoryName, VmRecord record) {}

    /**
     * Every sandbox directory of {@code gatewayId} with a readable record. A directory whose record cannot be read
     * is passed to {@code unreadable} and left out.
     */
    List<Entry> list(String gatewayId, java.util.function.BiConsumer<Path, RuntimeException> unreadable) {
        Path directory = gatewayDirectory(gatewayId);
        var entries = new ArrayList<Entry>();
        try (DirectoryStream<Path> children = Files.newDirectoryStream(directory)) {
            for (Path child : children) {
                String name = child.getFileName().toString();
                if (!SANDBOX_DIRECTORY.matcher(name).matches()) {
                    continue;
                }
                try {
                    readRecord(child).ifPresent(record -> entries.add(new Entry(name, record)));
                } catch (IllegalArgumentException | UncheckedIOException e) {
                    unreadable.accept(child, e);
                }
            }
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + directory, e);
        }
        return entries;
    }

    /** The gateway ids that have a directory under the root. */
    List<String> gateways() {
        try (Stream<Path> children = Files.list(root)) {
            return children.filter(Files::isDirectory)
                    .map(path -> path.getFileName().toString())
                    .toList();
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + root, e);
        }
    }

    /** Replaces the record of an existing sandbox directory atomically. The caller holds the sandbox's lock. */
    void write(Path sandboxDirectory, VmRecord record) {
        Path target = sandboxDirectory.resolve(RECORD);
        Path temporary = sandboxDirectory.resolve(RECORD + ".tmp-" + UUID.randomUUID());
        try {
            Files.writeString(
                    temporary,
                    record.encode(),
                    StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.WRITE,
                    StandardOpenOption.DSYNC);
            Files.setPosixFilePermissions(temporary, PosixFilePermissions.fromString("rw-------"));
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            deleteQuietly(temporary);
            throw new UncheckedIOException("cannot write " + target, e);
        }
    }

    /** A fresh, owner-only directory in which a new sandbox is built before {@link #commit}. */
    Path prepare(String gatewayId) {
        try {
            Path gateway = Files.createDirectories(gatewayDirectory(gatewayId));
            return Files.createDirectory(
                    gateway.resolve(TMP_PREFIX + UUID.randomUUID()),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory under " + gatewayDirectory(gatewayId), e);
        }
    }

    /**
     * Moves a prepared directory into place as {@code sandboxId}'s; false (and nothing moved) if that sandbox
     * directory exists already.
     */
    boolean commit(Path prepared, String gatewayId, String sandboxId) {
        Path target = sandboxDirectory(gatewayId, sandboxId);
        try {
            if (Files.exists(target)) {
                return false;
            }
            Files.move(prepared, target, StandardCopyOption.ATOMIC_MOVE);
            return true;
        } catch (FileAlreadyExistsException | DirectoryNotEmptyException e) {
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot move " + prepared + " to " + target, e);
        }
    }

    /**
     * Removes a sandbox directory: renames it out of sight first (so it vanishes atomically), then deletes its files.
     * False if it did not exist.
     */
    boolean remove(String gatewayId, String sandboxId) {
        Path directory = sandboxDirectory(gatewayId, sandboxId);
        Path trash = gatewayDirectory(gatewayId).resolve(TRASH_PREFIX + UUID.randomUUID());
        try {
            Files.move(directory, trash, StandardCopyOption.ATOMIC_MOVE);
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + directory, e);
        }
        deleteTree(trash);
        return true;
    }

    /** Deletes what interrupted creations and removals left behind in {@code gatewayId}'s directory. */
    void sweep(String gatewayId) {
        Path directory = gatewayDirectory(gatewayId);
        Instant staleBefore = Instant.now().minus(STALE_TMP_AGE);
        try (DirectoryStream<Path> children = Files.newDirectoryStream(directory)) {
            for (Path child : children) {
                String name = child.getFileName().toString();
                boolean trash = name.startsWith(TRASH_PREFIX);
                boolean staleTmp = name.startsWith(TMP_PREFIX)
                        && Files.getLastModifiedTime(child).toInstant().isBefore(staleBefore);
                if (trash || staleTmp) {
                    deleteTree(child);
                }
            }
        } catch (NoSuchFileException e) {
            // nothing to sweep
        } catch (IOException e) {
            throw new UncheckedIOException("cannot sweep " + directory, e);
        }
    }

    /** Runs {@code action} holding the lock of {@code sandboxId} (this JVM's threads and other processes). */
    <T> T locked(String gatewayId, String sandboxId, Supplier<T> action) {
        try {
            Files.createDirectories(gatewayDirectory(gatewayId));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + gatewayDirectory(gatewayId), e);
        }
        return locks(gatewayId).locked(sandboxId, action);
    }

    /**
     * Calls {@code hook} before a mutation of {@code ref}'s VM {@code backendId}, which the caller must do without
     * the lock of {@code ref.id()} ({@link SlotLocks#beforeMutation}).
     */
    void beforeMutation(
            String gatewayId, MutationHook hook, SandboxRef ref, MutationHook.Operation operation, String backendId) {
        locks(gatewayId).beforeMutation(hook, ref, operation, backendId);
    }

    private SlotLocks locks(String gatewayId) {
        return SlotLocks.of(gatewayDirectory(gatewayId).resolve(LOCKS));
    }

    static void deleteTree(Path tree) {
        try (Stream<Path> paths = Files.walk(tree)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        } catch (NoSuchFileException e) {
            // already gone
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + tree, e);
        }
    }

    static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // best effort: a leftover temporary file is swept with its directory
        }
    }

    private static Optional<VmRecord> readRecord(Path sandboxDirectory) {
        try {
            return Optional.of(
                    VmRecord.decode(Files.readString(sandboxDirectory.resolve(RECORD), StandardCharsets.UTF_8)));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + sandboxDirectory.resolve(RECORD), e);
        }
    }
}
