package dev.sandgate.gateway.token;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a secret file owner-only, as the store's files are: a file others may read or write is made {@code rw-------}
 * with a warning, and refused when that cannot be done (a read-only mount). Group access that cannot be removed is
 * only warned about: a Kubernetes Secret mounted with the pod's {@code fsGroup} is group-readable whatever its mode,
 * and that group is the pod's own.
 */
public final class OwnerOnly {
    private static final Logger log = LoggerFactory.getLogger(OwnerOnly.class);
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");

    private OwnerOnly() {}

    public static void require(Path file, String what) {
        Set<PosixFilePermission> permissions;
        try {
            permissions = Files.getPosixFilePermissions(file);
        } catch (UnsupportedOperationException e) {
            return; // not a POSIX file system: the directory's permissions are all there is
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the permissions of the " + what + " " + file, e);
        }
        boolean others = permissions.stream().anyMatch(p -> p.name().startsWith("OTHERS"));
        boolean group = permissions.stream().anyMatch(p -> p.name().startsWith("GROUP"));
        if (!others && !group) {
            return;
        }
        String was = PosixFilePermissions.toString(permissions);
        try {
            Files.setPosixFilePermissions(file, OWNER_ONLY);
            log.warn("the {} {} was {}: made it owner-only (rw-------), as it holds secrets", what, file, was);
        } catch (IOException | SecurityException e) {
            if (others) {
                throw new IllegalStateException("refusing the " + what + " " + file + ": it is " + was
                        + ", readable by others, and cannot be made owner-only (" + e.getMessage() + "); chmod 600"
                        + " it, or mount it with mode 0400 or 0440");
            }
            log.warn(
                    "the {} {} is {} and cannot be made owner-only: only its owner and group may read it",
                    what,
                    file,
                    was);
        }
    }
}
