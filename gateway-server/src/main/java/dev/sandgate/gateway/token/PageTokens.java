package dev.sandgate.gateway.token;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.GatewayException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Mints and verifies ListSandboxes page tokens, signed with the execution-token keys ({@link TokenKeys}), so that a
 * client can neither make one nor alter or cut one and resume elsewhere.
 *
 * <p>A token is {@code sgp1.<key id>.<payload>.<mac>}: the payload is base64url (no padding) of {@code scope "/"
 * workspace "/" name} (the scope binds the token to the filters it was issued for; workspace and name are the last
 * sandbox of the page); the mac is base64url of HMAC-SHA256 over {@code "sgp1." + key id + "." + payload}. The prefix
 * differs from execution tokens' {@code sgx1}, so neither kind of signature stands for the other. Tokens signed with
 * the current or the previous key verify.
 */
public final class PageTokens {
    private static final String PREFIX = "sgp1";
    private static final Pattern SHAPE =
            Pattern.compile("sgp1\\.[a-z0-9]{1,16}\\.[A-Za-z0-9_-]{1,400}\\.[A-Za-z0-9_-]{43}");
    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();

    private final ExecutionTokens tokens;

    public PageTokens(ExecutionTokens tokens) {
        this.tokens = requireNonNull(tokens, "tokens is null");
    }

    /** Where a page ends: the last sandbox it listed. */
    public record Position(String workspace, String name) {}

    /** A token for the page after {@code position}, valid only with the filters whose digest is {@code scope}. */
    public String mint(String scope, Position position) {
        if (scope.contains("/")) {
            throw new IllegalArgumentException("scope must not contain '/'");
        }
        TokenKeys.Key key = tokens.keys().current();
        String payload = scope + "/" + position.workspace() + "/" + position.name();
        String signed =
                PREFIX + "." + key.id() + "." + ENCODER.encodeToString(payload.getBytes(StandardCharsets.UTF_8));
        return signed + "." + ENCODER.encodeToString(ExecutionTokens.mac(key, signed));
    }

    /**
     * The position {@code token} names. Throws INVALID_FIELD naming {@code field} when it is not a page token of this
     * gateway (altered, truncated, signed with a retired key) or was issued for other filters than {@code scope}.
     */
    public Position verify(String field, String token, String scope) {
        if (!SHAPE.matcher(token).matches()) {
            throw GatewayException.invalidField(field, "is not a page token of this gateway (truncated or altered?)");
        }
        String[] parts = token.split("\\.", -1);
        String signed = parts[0] + "." + parts[1] + "." + parts[2];
        Optional<TokenKeys.Key> key = tokens.keys().find(parts[1]);
        // Compared as text, so that only the canonical encoding verifies.
        byte[] presented = parts[3].getBytes(StandardCharsets.US_ASCII);
        if (key.isEmpty()
                || !MessageDigest.isEqual(ENCODER.encode(ExecutionTokens.mac(key.get(), signed)), presented)) {
            throw GatewayException.invalidField(
                    field, "does not verify: it was altered, or not issued by this gateway, or its key was retired");
        }
        String[] payload = new String(Base64.getUrlDecoder().decode(parts[2]), StandardCharsets.UTF_8).split("/", -1);
        if (payload.length != 3) {
            throw GatewayException.invalidField(field, "is not a page token of this gateway");
        }
        if (!payload[0].equals(scope)) {
            throw GatewayException.invalidField(field, "was issued for other filters");
        }
        return new Position(payload[1], payload[2]);
    }
}
