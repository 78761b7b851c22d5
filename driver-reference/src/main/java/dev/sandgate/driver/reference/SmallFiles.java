package dev.sandgate.driver.reference;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * The small-file operations of {@link DirectoryBackend}: a file created whole or renamed over another (so that a
 * reader sees the old text or the new, never part of one), a small file read with few system calls, folder listings,
 * tree deletion, and names no other process's temporary entries get.
 */
final class SmallFiles {
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");
    /** Each thread's buffer for reading files: more than a record or a spec holds. */
    private static final ThreadLocal<ByteBuffer> READ_BUFFER = ThreadLocal.withInitial(() -> ByteBuffer.allocate(8192));
    /** What this process's staging, trash and temporary names begin with; see {@link #uniqueSuffix}. */
    private static final String PROCESS_PREFIX =
            Long.toString(new SecureRandom().nextLong() >>> 1, Character.MAX_RADIX) + "-";

    private static final AtomicLong NAMES = new AtomicLong();
    private static final Set<OpenOption> CREATE_NEW_FILE =
            Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);

    private SmallFiles() {}

    /**
     * Writes {@code text} to a temporary file next to {@code file} and renames it over {@code file}.
     *
     * @return the version {@code file} has then
     */
    static DirectoryBackend.Version replace(Path file, String text) throws IOException {
        Path temporary = file.resolveSibling("." + file.getFileName() + "-" + uniqueSuffix());
        boolean renamed = false;
        try {
            writeNew(temporary, text, false);
            DirectoryBackend.Version version =
                    writtenVersion(temporary); // a rename keeps the file's identity, time and size
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
    static void writeNew(Path file, String text, boolean ownerOnly) throws IOException {
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

    /** The version of {@code file}, which was just written. */
    static DirectoryBackend.Version writtenVersion(Path file) throws IOException {
        return DirectoryBackend.version(file)
                .orElseThrow(() -> new NoSuchFileException(file.toString(), null, "gone once written"));
    }

    /**
     * The text of a small file (strict UTF-8: malformed input fails as it does for a buffered reader). Records are read
     * on every lifecycle call and by every watch scan: one open, a read into this thread's buffer (larger than a
     * record), the read that finds the end, one close, and no allocation but the text's. {@link Files#readAllBytes}
     * also asks the file for its size first, and a buffered reader allocates 16 KiB of buffers and asks for the
     * available bytes on every fill. The records written here are ASCII, which needs no decoding.
     */
    static String readText(Path file) throws IOException {
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
    static String uniqueSuffix() {
        return PROCESS_PREFIX + Long.toString(NAMES.incrementAndGet(), Character.MAX_RADIX);
    }

    private static boolean supportsPosix(Path file) {
        return file.getFileSystem().supportedFileAttributeViews().contains("posix");
    }

    static List<String> childNames(Path folder) {
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

    /** Deletes {@code tree} and what it holds, as far as it can; what is left, a later sweep deletes. */
    static void deleteTree(Path tree) {
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
