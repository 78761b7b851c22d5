package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.SlotLocks;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

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

    private static final String BACKEND_ID = "backend-id";
    private static final String STATE = "state";
    private static final String LABEL_PREFIX = "label.";
    private static final String SETTING_PREFIX = "setting.";
    private static final Duration STALE_TMP_AGE = Duration.ofMinutes(10);
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
            properties = PropertiesText.parse(SmallFiles.readText(file));
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
        for (String key : SmallFiles.childNames(sandboxes(gatewayId))) {
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
        for (String gatewayId : SmallFiles.childNames(root)) {
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
        NameIndex index = nameIndex(gatewayId);
        if (!index.complete()) {
            index.build(list(gatewayId));
        }
        if (!isSegment(workspace) || !isSegment(name)) {
            return List.of();
        }
        var resources = new ArrayList<StoredResource>();
        for (String key : index.keys(workspace, name)) {
            if (isSegment(key)) {
                read(gatewayId, key)
                        .filter(r -> workspace.equals(r.label(Labels.WORKSPACE)) && name.equals(r.label(Labels.NAME)))
                        .ifPresent(resources::add);
            }
        }
        return resources;
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
        Path staging = gatewayFolder(resource.gatewayId())
                .resolve(TMP)
                .resolve(resource.key() + "-" + SmallFiles.uniqueSuffix());
        try {
            try {
                Files.createDirectory(staging);
            } catch (NoSuchFileException e) {
                Files.createDirectories(staging.getParent()); // the first insert, or tmp/ was removed behind our back
                Files.createDirectory(staging);
            }
            Files.createDirectory(staging.resolve(WORKSPACE));
            // No reader looks into tmp/, and the folder moves into place whole: its files are written where they stay.
            SmallFiles.writeNew(staging.resolve(SPEC_FILE), PropertiesText.of(spec), true);
            Path record = staging.resolve(RESOURCE_FILE);
            SmallFiles.writeNew(record, PropertiesText.of(toProperties(resource)), false);
            Version version = SmallFiles.writtenVersion(record); // a rename keeps the file's identity, time and size
            nameIndex(resource.gatewayId()).add(resource);
            try {
                Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (NoSuchFileException e) {
                Files.createDirectories(target.getParent());
                Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            }
            return version;
        } catch (IOException e) {
            SmallFiles.deleteTree(staging);
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
            return SmallFiles.replace(file, PropertiesText.of(toProperties(resource)));
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
        Path trash = gatewayFolder(gatewayId).resolve(TRASH).resolve(key + "-" + SmallFiles.uniqueSuffix());
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
        readRecord(trash, gatewayId, key).ifPresent(nameIndex(gatewayId)::remove);
        deleteResource(trash);
        return true;
    }

    /** The stored spec of a resource; empty if there is none. */
    public Map<String, String> readSpec(String gatewayId, String key) {
        Path file = resourceFolder(gatewayId, key).resolve(SPEC_FILE);
        try {
            return new TreeMap<>(PropertiesText.parse(SmallFiles.readText(file)));
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
        for (String name : SmallFiles.childNames(gateway.resolve(TRASH))) {
            SmallFiles.deleteTree(gateway.resolve(TRASH).resolve(name));
        }
        Instant staleBefore = Instant.now().minus(STALE_TMP_AGE);
        for (String name : SmallFiles.childNames(gateway.resolve(TMP))) {
            Path entry = gateway.resolve(TMP).resolve(name);
            try {
                FileTime modified = Files.getLastModifiedTime(entry);
                if (modified.toInstant().isBefore(staleBefore)) {
                    SmallFiles.deleteTree(entry);
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

    private NameIndex nameIndex(String gatewayId) {
        return new NameIndex(gatewayFolder(gatewayId).resolve(NAME_INDEX));
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
     * Deletes a resource folder moved to {@code trash/}: the files and the workspace the layout has, then the folder,
     * a few system calls; {@link SmallFiles#deleteTree} walks whatever else it holds (a workspace with files, a leftover
     * temporary record).
     */
    private static void deleteResource(Path folder) {
        try {
            Files.deleteIfExists(folder.resolve(RESOURCE_FILE));
            Files.deleteIfExists(folder.resolve(SPEC_FILE));
            Files.deleteIfExists(folder.resolve(WORKSPACE));
            Files.delete(folder);
        } catch (IOException e) {
            SmallFiles.deleteTree(folder); // not empty, or not of the layout: walk it
        }
    }
}
