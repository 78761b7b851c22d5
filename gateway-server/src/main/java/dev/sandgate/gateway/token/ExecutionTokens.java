package dev.sandgate.gateway.token;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Mints and verifies execution tokens.
 *
 * <p>A token is {@code sgx1.<key id>.<payload>.<mac>}: the payload is base64url (no padding) of the sandbox id's 16
 * bytes and the generation's 8 bytes; the mac is base64url of HMAC-SHA256 over {@code "sgx1." + key id + "." +
 * payload} with that key. A token is therefore a pure function of (key id, sandbox id, generation): the same
 * execution always gets the same token while the key is current, and clients cannot forge one. Tokens are opaque to
 * clients and never logged.
 */
public final class ExecutionTokens {
    private static final String PREFIX = "sgx1";
    private static final Pattern SHAPE =
            Pattern.compile("sgx1\\.[a-z0-9]{1,16}\\.[A-Za-z0-9_-]{32}\\.[A-Za-z0-9_-]{43}");
    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder DECODER = Base64.getUrlDecoder();
    /** A Mac per thread: looking the algorithm up costs more than the mac itself; init sets the key each time. */
    private static final ThreadLocal<Mac> MACS = ThreadLocal.withInitial(ExecutionTokens::newMac);

    private volatile TokenKeys keys;

    public ExecutionTokens(TokenKeys keys) {
        this.keys = requireNonNull(keys, "keys is null");
    }

    /** What a verified token names. */
    public record Claim(String sandboxId, long generation) {}

    /** Replaces the keys (after a rotation). Tokens signed with the new previous key keep verifying. */
    public void useKeys(TokenKeys newKeys) {
        this.keys = requireNonNull(newKeys, "newKeys is null");
    }

    /** The token of execution {@code generation} of sandbox {@code sandboxId}, signed with the current key. */
    public String mint(String sandboxId, long generation) {
        TokenKeys current = keys;
        UUID uuid = UUID.fromString(sandboxId);
        ByteBuffer payload = ByteBuffer.allocate(24);
        payload.putLong(uuid.getMostSignificantBits())
                .putLong(uuid.getLeastSignificantBits())
                .putLong(generation);
        String signed = PREFIX + "." + current.current().id() + "." + ENCODER.encodeToString(payload.array());
        return signed + "." + ENCODER.encodeToString(mac(current.current(), signed));
    }

    /**
     * Checks a token's syntax only. Throws INVALID_FIELD naming {@code field} for anything that is not a token.
     */
    public static void requireWellFormed(String field, String token) {
        if (token == null || !SHAPE.matcher(token).matches()) {
            throw GatewayException.invalidField(field, "is not an execution token");
        }
    }

    /**
     * Verifies the signature and returns what the token names. Throws INVALID_FIELD for a malformed token and
     * EXECUTION_TOKEN_INVALID when the signature does not verify with the current or the previous key.
     */
    public Claim verify(String field, String token) {
        requireWellFormed(field, token);
        String[] parts = token.split("\\.", -1);
        String signed = parts[0] + "." + parts[1] + "." + parts[2];
        Optional<TokenKeys.Key> key = keys.find(parts[1]);
        // Compared as text, so that only the canonical encoding verifies (base64 leaves spare bits in its last
        // character: decoding alone would accept several spellings of one token).
        byte[] presented = parts[3].getBytes(StandardCharsets.US_ASCII);
        if (key.isEmpty() || !MessageDigest.isEqual(ENCODER.encode(mac(key.get(), signed)), presented)) {
            throw new GatewayException(
                    ErrorReason.EXECUTION_TOKEN_INVALID,
                    field + " does not verify: it was not issued by this gateway or its key was retired");
        }
        ByteBuffer payload = ByteBuffer.wrap(DECODER.decode(parts[2]));
        UUID uuid = new UUID(payload.getLong(), payload.getLong());
        return new Claim(uuid.toString(), payload.getLong());
    }

    /** The keys in use (for {@link PageTokens}, which signs with the same keys). */
    TokenKeys keys() {
        return keys;
    }

    static byte[] mac(TokenKeys.Key key, String signed) {
        try {
            Mac mac = MACS.get();
            mac.init(new SecretKeySpec(key.secret(), "HmacSHA256"));
            return mac.doFinal(signed.getBytes(StandardCharsets.US_ASCII));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("every JDK has HmacSHA256", e);
        }
    }

    private static Mac newMac() {
        try {
            return Mac.getInstance("HmacSHA256");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("every JDK has HmacSHA256", e);
        }
    }
}
