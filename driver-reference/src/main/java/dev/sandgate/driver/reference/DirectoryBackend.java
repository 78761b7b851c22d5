package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.SlotLocks;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * The reference driver's backend: resources kept as folders of one directory, which several processes may share. It
 * plays the part an engine plays for other drivers (it knows nothing of identity or generation rules; the driver
 * does), and test probes use it directly to act behind the driver's back.
 *
 * <p>Layout under the root:
 *
 * <pre>
 * &lt;gatewayId&gt;/lock                              one-byte lock regions, one per slot of keys
 * &lt;gatewayId&gt;/sandboxes/&lt;key&gt;/resource.properties  backend id, state, labels (stamps), launch settings
 * &lt;gatewayId&gt;/sandboxes/&lt;key&gt;/spec.properties      the stored spec, owner-only (environment values are secrets)
 * &lt;gatewayId&gt;/sandboxes/&lt;key&gt;/workspace/           the persistent workspace
 * &lt;gatewayId&gt;/names/&lt;workspace&gt;/&lt;name&gt;/&lt;key&gt;    an empty file per resource stamped with that workspace and name
 * &lt;gatewayId&gt;/sandboxes/&lt;key&gt;/files/, output/     the simulated /tmp and output ({@link SimulatedExecutions})
 * &lt;gatewayId&gt;/tmp/                              resources being inserted
 * &lt;gatewayId&gt;/trash/                            resources being removed
 * </pre>
 *
 * <p>Every change is atomic for readers: a resource is built in {@code tmp/} and renamed into {@code sandboxes/}, its
 * record is replaced by writing a temporary file and renaming it over the old one, and it is removed by renaming it
 * into {@code trash/} before its files are deleted. The {@code names/} index is to this backend what unique container
 * names are to an engine: it finds the resources stamped with a workspace and name without reading every record. An
 * entry is written before its resource moves into place and removed after its resource left, so it may name a resource
 * that is gone (a crash in between), never miss one that exists; {@link #named} reads the records it names. Readers
 * take no lock. Writers ({@link #insert}, {@link #replace},
 * {@link #remove}) must hold the key's lock ({@link #locked}), which excludes other threads and other processes.
 *
 * <p>Methods throw {@link UncheckedIOException} when the file system fails.
 */
public final class DirectoryBackend {
    static final String RESOURCE_FILE = "resource.properties";
    static final String SPEC_FILE = "spec.properties";
    static final String WORKSPACE = "workspace";
    private static final String SANDBOXES = "sandboxes";
    private static final String TMP = "tmp";
    private static final String TRASH = "trash";
    private static final String LOCK_FILE = "lock";
    private static final String NAME_INDEX = "names";
    /** In {@code names/}: the index holds every resource (written once it was built from the records). */
    static final String NAME_INDEX_COMPLETE = ".complete";

    private static final String BACKEND_ID = "backend-id";
    private static final String STATE = "state";
    private static final String LABEL_PREFIX = "label.";
    private static final String SETTING_PREFIX = "setting.";
    private static final Duration STALE_TMP_AGE = Duration.ofMinutes(10);
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");
    /** Each thread's buffer for reading files: more than a record or a spec holds. */
    private static final ThreadLocal<ByteBuffer> READ_BUFFER = ThreadLocal.withInitial(() -> ByteBuffer.allocate(8192));
    /** What this process's staging, trash and temporary names begin with; see {@link #uniqueSuffix}. */
    private static final String PROCESS_PREFIX =
            Long.toString(new SecureRandom().nextLong() >>> 1, Character.MAX_RADIX) + "-";

    private static final AtomicLong NAMES = new AtomicLong();
    private static final Set<OpenOption> CREATE_NEW_FILE =
            Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);

    private final Path root;
    /** The lock of each gateway folder this backend has used; the folder exists once it is here. */
    private final ConcurrentHashMap<String, SlotLocks> locks = new ConcurrentHashMap<>();

    /** A backend over {@code root}, which is created if missing. */
    public DirectoryBackend(Path root) {
        this.root = requireNonNull(root, "root is null").toAbsolutePath().normalize();
        try {
            Files.createDirectories(this.root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + this.root, e);
        }
    }

    public Path root() {
        return root;
    }

    /** The folder of one resource (which may not exist). */
    public Path resourceFolder(String gatewayId, String key) {
        return sandboxes(gatewayId).resolve(requireSegment("key", key));
    }

    /** The persistent workspace of one resource (which may not exist). */
    public Path workspace(String gatewayId, String key) {
        return resourceFolder(gatewayId, key).resolve(WORKSPACE);
    }

    /** Runs {@code action} holding the lock of {@code key} in {@code gatewayId}. Reentrant. */
    public <T> T locked(String gatewayId, String key, Supplier<T> action) {
        requireSegment("key", key);
        return locks(gatewayId).locked(key, action);
    }

    /**
     * Calls {@code hook} before a mutation of {@code ref}'s resource {@code backendId} in {@code gatewayId}, which the
     * caller must do without the lock of {@code ref.id()} ({@link SlotLocks#beforeMutation}).
     */
    public void beforeMutation(
            String gatewayId, MutationHook hook, SandboxRef ref, MutationHook.Operation operation, String backendId) {
        locks(gatewayId).beforeMutation(hook, ref, operation, backendId);
    }

    /**
     * Whether a record is stored under {@code key}: one stat, without the exception that {@link #read} of an absent
     * record costs. The answer may be out of date by the time it is used unless the caller holds the key's lock.
     */
    public boolean exists(String gatewayId, String key) {
        return Files.exists(recordFile(gatewayId, key));
    }

    /** The resource stored under {@code key}, if any. */
    public Optional<StoredResource> read(String gatewayId, String key) {
        return readRecord(resourceFolder(gatewayId, key), gatewayId, key);
    }

    private static Optional<StoredResource> readRecord(Path folder, String gatewayId, String key) {
        Path file = folder.resolve(RESOURCE_FILE);
        Map<String, String> properties;
        try {
            properties = PropertiesText.parse(readText(file));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
        String backendId = properties.get(BACKEND_ID);
        String state = properties.get(STATE);
        if (backendId == null || state == null) {
            throw new IllegalStateException(file + " lacks " + BACKEND_ID + " or " + STATE);
        }
        var labels = new TreeMap<String, String>();
        var settings = new TreeMap<String, String>();
        properties.forEach((name, value) -> {
            if (name.startsWith(LABEL_PREFIX)) {
                labels.put(name.substring(LABEL_PREFIX.length()), value);
            } else if (name.startsWith(SETTING_PREFIX)) {
                settings.put(name.substring(SETTING_PREFIX.length()), value);
            }
        });
        return Optional.of(
                new StoredResource(gatewayId, key, backendId, StoredResource.State.valueOf(state), labels, settings));
    }

    /**
     * One version of a resource's record, known without reading it: the record file's identity (every change writes a
     * new file and renames it into place), modification time and size. Equal versions mean an unchanged record, except
     * in the unlikely case that two rewrites within one file-system clock tick reuse the first file's inode and size:
     * readers that rely on versions reread everything now and then.
     */
    public record Version(Object fileKey, FileTime modified, long size) {
        public Version {
            requireNonNull(modified, "modified is null");
        }
    }

    /** The keys of the resources in {@code gatewayId}'s folder, in no particular order. */
    public List<String> keys(String gatewayId) {
        var keys = new ArrayList<String>();
        for (String key : childNames(sandboxes(gatewayId))) {
            if (isSegment(key)) {
                keys.add(key);
            }
        }
        return keys;
    }

    /** The version of the record stored under {@code key}, if any. Cheaper than {@link #read}: one stat. */
    public Optional<Version> version(String gatewayId, String key) {
        return version(recordFile(gatewayId, key));
    }

    /** The file holding the record of {@code key} (which may not exist). */
    Path recordFile(String gatewayId, String key) {
        return recordFile(sandboxes(gatewayId), requireSegment("key", key));
    }

    /** The folder holding the records of {@code gatewayId}, for {@link #recordFile(Path, String)}. */
    Path recordsFolder(String gatewayId) {
        return sandboxes(gatewayId);
    }

    /** The file holding the record of {@code key}, a key already checked, in {@code recordsFolder}. */
    static Path recordFile(Path recordsFolder, String key) {
        return recordsFolder.resolve(key).resolve(RESOURCE_FILE);
    }

    /** The version of the record in {@code file} (from {@link #recordFile}), if it exists. */
    static Optional<Version> version(Path file) {
        try {
            BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
            return Optional.of(new Version(attributes.fileKey(), attributes.lastModifiedTime(), attributes.size()));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the attributes of " + file, e);
        }
    }

    /** Every resource in {@code gatewayId}'s folder. Resources that vanish while listing are left out. */
    public List<StoredResource> list(String gatewayId) {
        var resources = new ArrayList<StoredResource>();
        for (String key : keys(gatewayId)) {
            read(gatewayId, key).ifPresent(resources::add);
        }
        return resources;
    }

    /** Every resource of every gateway folder. */
    public List<StoredResource> listAll() {
        var resources = new ArrayList<StoredResource>();
        for (String gatewayId : childNames(root)) {
            if (isSegment(gatewayId)) {
                resources.addAll(list(gatewayId));
            }
        }
        return resources;
    }

    /**
     * The resources of {@code gatewayId} stamped with {@code workspace} and {@code name} ({@link
     * dev.sandgate.spi.Labels#WORKSPACE}, {@link dev.sandgate.spi.Labels#NAME}): reads only the records the name index
     * lists. A gateway folder written before the index existed is indexed first, once.
     */
    public List<StoredResource> named(String gatewayId, String workspace, String name) {
        Path index = gatewayFolder(gatewayId).resolve(NAME_INDEX);
        if (!Files.exists(index.resolve(NAME_INDEX_COMPLETE))) {
            buildNameIndex(gatewayId, index);
        }
        if (!isSegment(workspace) || !isSegment(name)) {
            return List.of();
        }
        var resources = new ArrayList<StoredResource>();
        for (String key : childNames(index.resolve(workspace).resolve(name))) {
            if (isSegment(key)) {
                read(gatewayId, key)
                        .filter(r -> workspace.equals(r.label(Labels.WORKSPACE)) && name.equals(r.label(Labels.NAME)))
                        .ifPresent(resources::add);
            }
        }
        return resources;
    }

    private void buildNameIndex(String gatewayId, Path index) {
        for (StoredResource resource : list(gatewayId)) {
            indexName(index, resource);
        }
        try {
            Files.createDirectories(index);
            Files.write(index.resolve(NAME_INDEX_COMPLETE), new byte[0]);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + index, e);
        }
    }

    /** The index entry of {@code resource}, if it carries a workspace and name that are folder names. */
    private static Optional<Path> nameEntry(Path index, StoredResource resource) {
        String workspace = resource.label(Labels.WORKSPACE);
        String name = resource.label(Labels.NAME);
        if (workspace == null || name == null || !isSegment(workspace) || !isSegment(name)) {
            return Optional.empty();
        }
        return Optional.of(index.resolve(workspace).resolve(name).resolve(resource.key()));
    }

    private static void indexName(Path index, StoredResource resource) {
        Optional<Path> entry = nameEntry(index, resource);
        if (entry.isEmpty()) {
            return;
        }
        try {
            try {
                Files.createFile(entry.get());
            } catch (NoSuchFileException e) {
                Files.createDirectories(entry.get().getParent());
                Files.createFile(entry.get());
            }
        } catch (FileAlreadyExistsException e) {
            // indexed already
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + entry.get(), e);
        }
    }

    /**
     * Inserts a new resource with its stored spec and an empty workspace, atomically. Requires the key's lock.
     *
     * @return the version of the record written, as {@link #version} will find it until the record changes again
     * @throws IllegalStateException if a resource is stored under the key
     */
    public Version insert(StoredResource resource, Map<String, String> spec) {
        requireLocked(resource.gatewayId(), resource.key());
        Path target = resourceFolder(resource.gatewayId(), resource.key());
        if (Files.exists(target)) {
            throw new IllegalStateException("a resource is stored under " + target);
        }
        Path staging = gatewayFolder(resource.gatewayId()).resolve(TMP).resolve(resource.key() + "-" + uniqueSuffix());
        try {
            try {
                Files.createDirectory(staging);
            } catch (NoSuchFileException e) {
                Files.createDirectories(staging.getParent()); // the first insert, or tmp/ was removed behind our back
                Files.createDirectory(staging);
            }
            Files.createDirectory(staging.resolve(WORKSPACE));
            // No reader looks into tmp/, and the folder moves into place whole: its files are written where they stay.
            writeNew(staging.resolve(SPEC_FILE), PropertiesText.of(spec), true);
            Path record = staging.resolve(RESOURCE_FILE);
            writeNew(record, PropertiesText.of(toProperties(resource)), false);
            Version version = writtenVersion(record); // a rename keeps the file's identity, time and size
            indexName(gatewayFolder(resource.gatewayId()).resolve(NAME_INDEX), resource);
            try {
                Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (NoSuchFileException e) {
                Files.createDirectories(target.getParent());
                Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            }
            return version;
        } catch (IOException e) {
            deleteTree(staging);
            throw new UncheckedIOException("cannot insert " + target, e);
        }
    }

    /**
     * Replaces the record (state and labels) of an existing resource with the same backend id, atomically. Requires
     * the key's lock.
     *
     * @return the version of the record written, as {@link #version} will find it until the record changes again
     * @throws IllegalStateException if no resource with that backend id is stored under the key
     */
    public Version replace(StoredResource resource) {
        requireLocked(resource.gatewayId(), resource.key());
        StoredResource current = read(resource.gatewayId(), resource.key())
                .orElseThrow(() -> new IllegalStateException("nothing is stored under " + resource.key()));
        return write(current, resource);
    }

    /**
     * {@link #replace} for a caller that read {@code current} while holding the key's lock, and still holds it: the
     * record cannot have changed since, so it is not read again.
     */
    Version replace(StoredResource current, StoredResource resource) {
        requireLocked(resource.gatewayId(), resource.key());
        return write(current, resource);
    }

    private Version write(StoredResource current, StoredResource resource) {
        if (!current.key().equals(resource.key()) || !current.backendId().equals(resource.backendId())) {
            throw new IllegalStateException("the resource under " + resource.key() + " was replaced");
        }
        Path file = resourceFolder(resource.gatewayId(), resource.key()).resolve(RESOURCE_FILE);
        try {
            return replaceFile(file, PropertiesText.of(toProperties(resource)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    /**
     * Removes the resource under {@code key} with its workspace. Requires the key's lock.
     *
     * @return false if nothing was stored under the key
     */
    public boolean remove(String gatewayId, String key) {
        requireLocked(gatewayId, key);
        Path folder = resourceFolder(gatewayId, key);
        Path trash = gatewayFolder(gatewayId).resolve(TRASH).resolve(key + "-" + uniqueSuffix());
        try {
            try {
                Files.move(folder, trash, StandardCopyOption.ATOMIC_MOVE);
            } catch (NoSuchFileException e) {
                if (!Files.exists(folder, LinkOption.NOFOLLOW_LINKS)) {
                    return false;
                }
                Files.createDirectories(trash.getParent()); // the first removal, or trash/ was removed behind our back
                Files.move(folder, trash, StandardCopyOption.ATOMIC_MOVE);
            }
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + folder, e);
        }
        Path index = gatewayFolder(gatewayId).resolve(NAME_INDEX);
        readRecord(trash, gatewayId, key)
                .flatMap(resource -> nameEntry(index, resource))
                .ifPresent(entry -> {
                    try {
                        Files.deleteIfExists(entry);
                    } catch (IOException e) {
                        throw new UncheckedIOException("cannot remove " + entry, e);
                    }
                });
        deleteResource(trash);
        return true;
    }

    /** The stored spec of a resource; empty if there is none. */
    public Map<String, String> readSpec(String gatewayId, String key) {
        Path file = resourceFolder(gatewayId, key).resolve(SPEC_FILE);
        try {
            return new TreeMap<>(PropertiesText.parse(readText(file)));
        } catch (NoSuchFileException e) {
            return Map.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /**
     * Deletes what crashed processes left in {@code gatewayId}'s {@code trash/} folder, and {@code tmp/} entries
     * older than ten minutes (younger ones may belong to an insert in progress).
     */
    public void sweep(String gatewayId) {
        Path gateway = gatewayFolder(gatewayId);
        for (String name : childNames(gateway.resolve(TRASH))) {
            deleteTree(gateway.resolve(TRASH).resolve(name));
        }
        Instant staleBefore = Instant.now().minus(STALE_TMP_AGE);
        for (String name : childNames(gateway.resolve(TMP))) {
            Path entry = gateway.resolve(TMP).resolve(name);
            try {
                FileTime modified = Files.getLastModifiedTime(entry);
                if (modified.toInstant().isBefore(staleBefore)) {
                    deleteTree(entry);
                }
            } catch (IOException e) {
                // vanished meanwhile
            }
        }
    }

    /**
     * Whether {@code value} is a valid folder name: 1 to 100 of a-z, 0-9 and '-', not starting with '-'. Checked by
     * hand: watches check every stored key on every scan.
     */
    static boolean isSegment(String value) {
        int length = value.length();
        if (length < 1 || length > 100) {
            return false;
        }
        for (int i = 0; i < length; i++) {
            char c = value.charAt(i);
            boolean letterOrDigit = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
            if (!letterOrDigit && (c != '-' || i == 0)) {
                return false;
            }
        }
        return true;
    }

    static String requireSegment(String field, String value) {
        if (value == null || !isSegment(value)) {
            throw new IllegalArgumentException(
                    field + " must be 1 to 100 characters of a-z, 0-9 and '-', starting with a letter or digit");
        }
        return value;
    }

    private Path gatewayFolder(String gatewayId) {
        return root.resolve(requireSegment("gatewayId", gatewayId));
    }

    private Path sandboxes(String gatewayId) {
        return gatewayFolder(gatewayId).resolve(SANDBOXES);
    }

    private SlotLocks locks(String gatewayId) {
        SlotLocks known = locks.get(gatewayId);
        if (known != null) {
            return known;
        }
        Path gateway = gatewayFolder(gatewayId);
        try {
            if (!Files.isDirectory(gateway)) {
                Files.createDirectories(gateway);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + gateway, e);
        }
        return locks.computeIfAbsent(gatewayId, id -> SlotLocks.of(gateway.resolve(LOCK_FILE)));
    }

    private void requireLocked(String gatewayId, String key) {
        if (!locks(gatewayId).isHeldByCurrentThread(key)) {
            throw new IllegalStateException("the lock of " + gatewayId + "/" + key + " is not held");
        }
    }

    private static Map<String, String> toProperties(StoredResource resource) {
        var properties = new HashMap<String, String>();
        properties.put(BACKEND_ID, resource.backendId());
        properties.put(STATE, resource.state().name());
        resource.labels().forEach((name, value) -> properties.put(LABEL_PREFIX + name, value));
        resource.settings().forEach((name, value) -> properties.put(SETTING_PREFIX + name, value));
        return properties;
    }

    /**
     * Writes {@code text} to a temporary file next to {@code file} and renames it over {@code file}.
     *
     * @return the version {@code file} has then
     */
    private static Version replaceFile(Path file, String text) throws IOException {
        Path temporary = file.resolveSibling("." + file.getFileName() + "-" + uniqueSuffix());
        boolean renamed = false;
        try {
            writeNew(temporary, text, false);
            Version version = writtenVersion(temporary); // a rename keeps the file's identity, time and size
            try {
                Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE);
                renamed = true;
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("the file system of " + file + " cannot rename atomically", e);
            }
            return version;
        } finally {
            if (!renamed) {
                Files.deleteIfExists(temporary);
            }
        }
    }

    /**
     * Creates {@code file}, which must not exist, holding {@code text} (ASCII, as {@link PropertiesText#of} writes it;
     * other characters fail): one open, one write, one close.
     */
    private static void writeNew(Path file, String text, boolean ownerOnly) throws IOException {
        ByteBuffer bytes = StandardCharsets.US_ASCII.newEncoder().encode(CharBuffer.wrap(text));
        FileAttribute<?>[] attributes = ownerOnly && supportsPosix(file)
                ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(OWNER_ONLY)}
                : new FileAttribute<?>[0];
        try (SeekableByteChannel channel = Files.newByteChannel(file, CREATE_NEW_FILE, attributes)) {
            while (bytes.hasRemaining()) {
                channel.write(bytes);
            }
        }
    }

    private static Version writtenVersion(Path file) throws IOException {
        return version(file).orElseThrow(() -> new NoSuchFileException(file.toString(), null, "gone once written"));
    }

    /**
     * The text of a small file (strict UTF-8: malformed input fails as it does for a buffered reader). Records are read
     * on every lifecycle call and by every watch scan: one open, a read into this thread's buffer (larger than a
     * record), the read that finds the end, one close, and no allocation but the text's. {@link Files#readAllBytes}
     * also asks the file for its size first, and a buffered reader allocates 16 KiB of buffers and asks for the
     * available bytes on every fill. The records written here are ASCII, which needs no decoding.
     */
    private static String readText(Path file) throws IOException {
        ByteBuffer buffer = READ_BUFFER.get().clear();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            while (channel.read(buffer) >= 0) {
                if (!buffer.hasRemaining()) {
                    buffer = ByteBuffer.allocate(buffer.capacity() * 2).put(buffer.flip()); // a large file: grow
                }
            }
        }
        byte[] bytes = buffer.array();
        int length = buffer.position();
        for (int i = 0; i < length; i++) {
            if (bytes[i] < 0) {
                return StandardCharsets.UTF_8
                        .newDecoder()
                        .decode(ByteBuffer.wrap(bytes, 0, length))
                        .toString();
            }
        }
        return new String(bytes, 0, length, StandardCharsets.ISO_8859_1);
    }

    /**
     * A name part that no other staging, trash or temporary entry of any process gets: this process's random prefix
     * and a count. {@link UUID#randomUUID} would ask the system's secure random source on every write.
     */
    private static String uniqueSuffix() {
        return PROCESS_PREFIX + Long.toString(NAMES.incrementAndGet(), Character.MAX_RADIX);
    }

    private static boolean supportsPosix(Path file) {
        return file.getFileSystem().supportedFileAttributeViews().contains("posix");
    }

    private static List<String> childNames(Path folder) {
        var names = new ArrayList<String>();
        try (DirectoryStream<Path> children = Files.newDirectoryStream(folder)) {
            for (Path child : children) {
                names.add(child.getFileName().toString());
            }
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + folder, e);
        }
        return names;
    }

    /**
     * Deletes a resource folder moved to {@code trash/}: the files and the workspace the layout has, then the folder,
     * a few system calls; {@link #deleteTree} walks whatever else it holds (a workspace with files, a leftover
     * temporary record).
     */
    private static void deleteResource(Path folder) {
        try {
            Files.deleteIfExists(folder.resolve(RESOURCE_FILE));
            Files.deleteIfExists(folder.resolve(SPEC_FILE));
            Files.deleteIfExists(folder.resolve(WORKSPACE));
            Files.delete(folder);
        } catch (IOException e) {
            deleteTree(folder); // not empty, or not of the layout: walk it
        }
    }

    private static void deleteTree(Path tree) {
        try (Stream<Path> paths = Files.walk(tree)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                try {
                    Files.deleteIfExists(path);
                } catch (FileSystemException e) {
                    // another process deletes the same tree
                }
            }
        } catch (NoSuchFileException e) {
            // already gone
        } catch (IOException | UncheckedIOException e) {
            // left for sweep()
        }
    }
}
