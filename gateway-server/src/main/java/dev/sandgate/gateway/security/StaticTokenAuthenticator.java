package dev.sandgate.gateway.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * Static API tokens, of which the gateway knows only SHA-256 digests. The token file has one token a line:
 *
 * <pre>
 * # name      digest of the token (printf %s "$TOKEN" | sha256sum)        groups (optional, comma-separated)
 * ci-runner   sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08   ci,deployers
 * </pre>
 *
 * Tokens should be long random strings (32 bytes or more): a fast digest is then as good as a slow one.
 */
final class StaticTokenAuthenticator implements Authenticator {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}");
    private static final Pattern DIGEST = Pattern.compile("sha256:[0-9a-f]{64}");

    private final Supplier<Map<String, Principal>> byDigest;

    StaticTokenAuthenticator(Supplier<Map<String, Principal>> byDigest) {
        this.byDigest = byDigest;
    }

    @Override
    public boolean readsBearer() {
        return true;
    }

    @Override
    public Optional<Principal> authenticate(Credentials credentials) {
        if (credentials.bearer().isEmpty()) {
            return Optional.empty();
        }
        return Optional.ofNullable(
                byDigest.get().get(digest(credentials.bearer().get())));
    }

    static String digest(String token) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
            return "sha256:" + HexFormat.of().formatHex(hash);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Parses a token file; the message of a failure names the line, never a digest. */
    static Map<String, Principal> parse(byte[] content) {
        Map<String, Principal> byDigest = new HashMap<>();
        String[] lines = new String(content, StandardCharsets.UTF_8).split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] fields = line.split("\\s+", -1);
            if (fields.length < 2 || fields.length > 3) {
                throw new IllegalArgumentException("line " + (i + 1) + ": expected NAME sha256:HEX [GROUP,...]");
            }
            if (!NAME.matcher(fields[0]).matches()) {
                throw new IllegalArgumentException("line " + (i + 1) + ": the name is not a principal name");
            }
            if (!DIGEST.matcher(fields[1]).matches()) {
                throw new IllegalArgumentException(
                        "line " + (i + 1) + ": the digest must be sha256: and 64 lowercase hex digits");
            }
            Set<String> groups = fields.length == 3 ? Set.copyOf(Arrays.asList(fields[2].split(","))) : Set.of();
            if (byDigest.put(fields[1], new Principal(fields[0], groups, "token")) != null) {
                throw new IllegalArgumentException("line " + (i + 1) + ": the same token is listed twice");
            }
        }
        return Map.copyOf(byDigest);
    }
}
