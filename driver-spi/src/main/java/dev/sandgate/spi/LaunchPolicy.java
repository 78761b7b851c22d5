package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * One approved policy revision as handed to a driver: typed records to enforce, plus the exact canonical bytes
 * (RFC 8785 JSON, produced by the gateway) and their digest. Drivers never parse JSON; they enforce the typed records
 * and may hand the bytes to the sandbox (a VM's config disk, say).
 *
 * <p>The digest is {@code sha256:} followed by 64 lowercase hex characters over {@link #canonicalDocument()}. A
 * malformed digest, or one that does not match the bytes, is refused here with {@link
 * DriverErrorCode#INVALID_ARGUMENT}, so no driver can be handed one.
 *
 * <p>An immutable value: the canonical bytes are copied in and out, and two launch policies are equal when every part
 * is.
 */
public final class LaunchPolicy {
    private static final Pattern DIGEST = Pattern.compile("sha256:[0-9a-f]{64}");
    public static final int MAX_DOCUMENT_BYTES = 64 * 1024;

    private final long revision;
    private final String digest;
    private final byte[] canonicalDocument;
    private final StaticPolicy staticPolicy;
    private final DynamicPolicy dynamicPolicy;

    /**
     * @param revision the policy revision this document was admitted as (1 for the creation snapshot)
     * @param digest {@code sha256:<64 hex>} over the canonical document
     * @param canonicalDocument the canonical JSON bytes
     * @param staticPolicy the fields applied at launch
     * @param dynamicPolicy the fields that may change while running
     */
    public LaunchPolicy(
            long revision,
            String digest,
            byte[] canonicalDocument,
            StaticPolicy staticPolicy,
            DynamicPolicy dynamicPolicy) {
        if (revision < 1) {
            throw DriverException.invalidArgument("policy.revision", "must be at least 1");
        }
        requireNonNull(digest, "digest is null");
        requireNonNull(canonicalDocument, "canonicalDocument is null");
        requireNonNull(staticPolicy, "staticPolicy is null");
        requireNonNull(dynamicPolicy, "dynamicPolicy is null");
        if (!DIGEST.matcher(digest).matches()) {
            throw DriverException.invalidArgument(
                    "policy.digest", "must be 'sha256:' followed by 64 lowercase hex characters");
        }
        if (canonicalDocument.length > MAX_DOCUMENT_BYTES) {
            throw DriverException.invalidArgument(
                    "policy.document", "must be at most " + MAX_DOCUMENT_BYTES + " bytes");
        }
        byte[] copy = canonicalDocument.clone();
        if (!digest.equals(digestOf(copy))) {
            throw DriverException.invalidArgument("policy.digest", "does not match the canonical document");
        }
        this.revision = revision;
        this.digest = digest;
        this.canonicalDocument = copy;
        this.staticPolicy = staticPolicy;
        this.dynamicPolicy = dynamicPolicy;
    }

    /** The digest of {@code canonicalBytes} in the form {@code sha256:<64 lowercase hex>}. */
    public static String digestOf(byte[] canonicalBytes) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(canonicalBytes);
            return "sha256:" + HexFormat.of().formatHex(hash);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /** The policy revision this document was admitted as (1 for the creation snapshot). */
    public long revision() {
        return revision;
    }

    /** {@code sha256:<64 hex>} over the canonical document. */
    public String digest() {
        return digest;
    }

    /** A copy of the canonical JSON bytes. */
    public byte[] canonicalDocument() {
        return canonicalDocument.clone();
    }

    /** The fields applied at launch. */
    public StaticPolicy staticPolicy() {
        return staticPolicy;
    }

    /** The fields that may change while running. */
    public DynamicPolicy dynamicPolicy() {
        return dynamicPolicy;
    }

    /** The canonical document as UTF-8 text. */
    public String canonicalText() {
        return new String(canonicalDocument, StandardCharsets.UTF_8);
    }

    /** The fields this policy uses (see {@link PolicyField}). */
    public Set<PolicyField> usedFields() {
        return PolicyField.usedBy(staticPolicy, dynamicPolicy);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof LaunchPolicy that
                && revision == that.revision
                && digest.equals(that.digest)
                && Arrays.equals(canonicalDocument, that.canonicalDocument)
                && staticPolicy.equals(that.staticPolicy)
                && dynamicPolicy.equals(that.dynamicPolicy);
    }

    @Override
    public int hashCode() {
        return digest.hashCode() * 31 + Long.hashCode(revision);
    }

    @Override
    public String toString() {
        return "LaunchPolicy[revision=" + revision + ", digest=" + digest + ", static=" + staticPolicy + ", dynamic="
                + dynamicPolicy + "]";
    }
}
