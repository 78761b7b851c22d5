package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.Labels;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The {@code names/} index of one gateway folder of a {@link DirectoryBackend}: an empty file {@code
 * <workspace>/<name>/<key>} per resource stamped with that workspace and name, so that the resources holding a name are
 * found without reading every record. The backend writes an entry before its resource moves into place and removes it
 * after its resource left, so an entry may name a resource that is gone, never miss one that exists; readers read the
 * records an entry names. A resource whose workspace or name is not a folder name has no entry.
 */
final class NameIndex {
    /** The file that says the index holds every resource (written once it was built from the records). */
    static final String COMPLETE = ".complete";

    private final Path folder;

    /** The index in {@code folder} (which may not exist yet). */
    NameIndex(Path folder) {
        this.folder = requireNonNull(folder, "folder is null");
    }

    /** Whether the index holds every resource: false for a gateway folder written before the index existed. */
    boolean complete() {
        return Files.exists(folder.resolve(COMPLETE));
    }

    /** Indexes every one of {@code resources}, then marks the index complete. */
    void build(Iterable<StoredResource> resources) {
        for (StoredResource resource : resources) {
            add(resource);
        }
        try {
            Files.createDirectories(folder);
            Files.write(folder.resolve(COMPLETE), new byte[0]);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + folder, e);
        }
    }

    /** The keys indexed under {@code workspace} and {@code name} (both folder names), in no particular order. */
    List<String> keys(String workspace, String name) {
        return SmallFiles.childNames(folder.resolve(workspace).resolve(name));
    }

    /** Writes the entry of {@code resource}; an existing entry stays. */
    void add(StoredResource resource) {
        Optional<Path> entry = entry(resource);
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

    /** Removes the entry of {@code resource}, if there is one. */
    void remove(StoredResource resource) {
        Optional<Path> entry = entry(resource);
        if (entry.isEmpty()) {
            return;
        }
        try {
            Files.deleteIfExists(entry.get());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + entry.get(), e);
        }
    }

    /** The entry of {@code resource}, if it carries a workspace and name that are folder names. */
    private Optional<Path> entry(StoredResource resource) {
        String workspace = resource.label(Labels.WORKSPACE);
        String name = resource.label(Labels.NAME);
        if (workspace == null
                || name == null
                || !DirectoryBackend.isSegment(workspace)
                || !DirectoryBackend.isSegment(name)) {
            return Optional.empty();
        }
        return Optional.of(folder.resolve(workspace).resolve(name).resolve(resource.key()));
    }
}
