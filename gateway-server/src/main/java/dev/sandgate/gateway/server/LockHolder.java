package dev.sandgate.gateway.server;

import java.io.IOException;
import java.io.StringReader;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Properties;

/**
 * Who holds the data directory's lock file: the gateway that locks it writes its pid, host and start time into it, so
 * that a second gateway refused on the same directory can name the holder.
 */
final class LockHolder {
    private LockHolder() {}

    /** The lock, or null when another gateway holds it (in another process or in this one). */
    static FileLock tryLock(FileChannel channel) throws IOException {
        try {
            return channel.tryLock();
        } catch (OverlappingFileLockException e) {
            return null;
        }
    }

    /** Writes this process's identity into the locked file. */
    static void write(FileChannel channel) throws IOException {
        String text = "pid=" + ProcessHandle.current().pid() + "\nhost=" + hostName() + "\nstarted="
                + Instant.now().truncatedTo(ChronoUnit.SECONDS) + "\n";
        channel.truncate(0);
        channel.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), 0);
        channel.force(false);
    }

    /** The holder as written in {@code lockFile}: {@code pid 123 on host h, started T}, or why that is unknown. */
    static String describe(Path lockFile) {
        Properties holder = new Properties();
        try {
            holder.load(new StringReader(Files.readString(lockFile, StandardCharsets.UTF_8)));
        } catch (IOException | IllegalArgumentException e) {
            return "holder unknown: " + e.getMessage();
        }
        String pid = holder.getProperty("pid");
        if (pid == null) {
            return "holder unknown: " + lockFile + " names none";
        }
        return "pid " + pid + " on host " + holder.getProperty("host", "?") + ", started "
                + holder.getProperty("started", "?");
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown";
        }
    }
}
