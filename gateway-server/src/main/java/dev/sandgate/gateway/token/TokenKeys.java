package dev.sandgate.gateway.token;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Optional;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * The HMAC keys that sign execution tokens: a current key and, after a rotation, the previous one. Tokens are signed
 * with the current key and verify against either, so a rotation does not invalidate tokens handed out before it.
 *
 * <p>The key file is a properties file readable only by its owner:
 *
 * <pre>
 * current.id=k1a2b3c4
 * current.key=&lt;base64 of 32 random bytes&gt;
 * previous.id=...
 * previous.key=...
 * </pre>
 *
 * It is created on first start and survives restarts. Keys never appear in logs or messages.
 *
 * @param current the key new tokens are signed with
 * @param previous the key before the last rotation, if any
 */
public record TokenKeys(Key current, Optional<Key> previous) {
    private static final Pattern KEY_ID = Pattern.compile("[a-z0-9]{1,16}");
    private static final int KEY_BYTES = 32;
    private static final SecureRandom RANDOM = new SecureRandom();

    public TokenKeys {
        requireNonNull(current, "current is null");
        requireNonNull(previous, "previous is null");
        if (previous.isPresent() && previous.get().id().equals(current.id())) {
            throw new IllegalArgumentException("the previous key must have another id than the current key");
        }
    }

    /**
     * One signing key: equal when id and secret are (the secret compared in constant time); {@link #toString()} never
     * shows the secret.
     */
    public static final class Key {
        private final String id;
        private final byte[] secret;

        public Key(String id, byte[] secret) {
            if (id == null || !KEY_ID.matcher(id).matches()) {
                throw new IllegalArgumentException("key id must be 1 to 16 lowercase letters or digits");
            }
            requireNonNull(secret, "secret is null");
            if (secret.length < KEY_BYTES) {
                throw new IllegalArgumentException("a token key must have at least " + KEY_BYTES + " bytes");
            }
            this.id = id;
            this.secret = secret.clone();
        }

        public String id() {
            return id;
        }

        /** A copy of the secret. */
        public byte[] secret() {
            return secret.clone();
        }

        static Key generate() {
            byte[] secret = new byte[KEY_BYTES];
            RANDOM.nextBytes(secret);
            byte[] id = new byte[4];
            RANDOM.nextBytes(id);
            return new Key("k" + HexFormat.of().formatHex(id), secret);
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Key that
                    && id.equals(that.id)
                    && java.security.MessageDigest.isEqual(secret, that.secret);
        }

        @Override
        public int hashCode() {
            return id.hashCode();
        }

        @Override
        public String toString() {
            return "Key[id=" + id + ", secret=(hidden)]";
        }
    }

    /** Reads the key file, creating it with a fresh key if it does not exist. */
    public static TokenKeys loadOrCreate(Path file) {
        if (Files.exists(file)) {
            return read(file);
        }
        TokenKeys keys = new TokenKeys(Key.generate(), Optional.empty());
        write(file, keys);
        return keys;
    }

    /** Makes a fresh key current and keeps the current one as previous (dropping the one before). */
    public static TokenKeys rotate(Path file) {
        TokenKeys old = loadOrCreate(file);
        Key fresh;
        do {
            fresh = Key.generate();
        } while (fresh.id().equals(old.current.id()));
        TokenKeys rotated = new TokenKeys(fresh, Optional.of(old.current));
        write(file, rotated);
        return rotated;
    }

    /** The key with this id, current or previous. */
    public Optional<Key> find(String id) {
        if (current.id().equals(id)) {
            return Optional.of(current);
        }
        return previous.filter(key -> key.id().equals(id));
    }

    static TokenKeys read(Path file) {
        OwnerOnly.require(file, "token key file");
        Properties properties = new Properties();
        try (var in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            properties.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read token key file " + file, e);
        }
        try {
            Key current = key(properties, "current").orElseThrow(() -> new IllegalArgumentException("no current key"));
            return new TokenKeys(current, key(properties, "previous"));
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("token key file " + file + " is invalid: " + e.getMessage(), e);
        }
    }

    private static Optional<Key> key(Properties properties, String prefix) {
        String id = properties.getProperty(prefix + ".id");
        String secret = properties.getProperty(prefix + ".key");
        if (id == null && secret == null) {
            return Optional.empty();
        }
        if (id == null || secret == null) {
            throw new IllegalArgumentException(prefix + ".id and " + prefix + ".key go together");
        }
        return Optional.of(new Key(id.trim(), Base64.getDecoder().decode(secret.trim())));
    }

    private static void write(Path file, TokenKeys keys) {
        StringBuilder text =
                new StringBuilder("# Sandgate execution token keys. Keep secret; see docs/operations.md.\n");
        append(text, "current", keys.current);
        keys.previous.ifPresent(key -> append(text, "previous", key));
        try {
            Path parent = file.toAbsolutePath().getParent();
            Files.createDirectories(parent);
            Path temp = Files.createTempFile(parent, ".token-keys", ".tmp");
            try {
                restrict(temp);
                Files.writeString(temp, text, StandardCharsets.UTF_8);
                try {
                    Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING);
                }
            } finally {
                Files.deleteIfExists(temp);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write token key file " + file, e);
        }
    }

    private static void append(StringBuilder text, String prefix, Key key) {
        text.append(prefix)
                .append(".id=")
                .append(key.id())
                .append('\n')
                .append(prefix)
                .append(".key=")
                .append(Base64.getEncoder().encodeToString(key.secret))
                .append('\n');
    }

    private static void restrict(Path file) throws IOException {
        try {
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        } catch (UnsupportedOperationException e) {
            // Not a POSIX file system: the directory's permissions are all there is.
        }
    }
}
