package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import com.google.protobuf.ByteString;
import java.time.Instant;

/**
 * One admitted policy revision of a sandbox; immutable once written. Equal when sandbox, revision and digest are (the
 * digest determines the document).
 *
 * @param sandboxId the sandbox
 * @param revision 1 for the creation snapshot, +1 per admitted update
 * @param digest {@code sha256:<hex>} of the canonical document
 * @param document the canonical document bytes
 * @param admitTime when it was admitted
 */
public record PolicyRevisionRecord(
        String sandboxId, long revision, String digest, ByteString document, Instant admitTime) {
    public PolicyRevisionRecord {
        requireNonNull(sandboxId, "sandboxId is null");
        requireNonNull(digest, "digest is null");
        requireNonNull(document, "document is null");
        requireNonNull(admitTime, "admitTime is null");
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof PolicyRevisionRecord that
                && sandboxId.equals(that.sandboxId)
                && revision == that.revision
                && digest.equals(that.digest);
    }

    @Override
    public int hashCode() {
        return sandboxId.hashCode() * 31 + Long.hashCode(revision);
    }

    @Override
    public String toString() {
        return "PolicyRevisionRecord[" + sandboxId + " r" + revision + " " + digest + "]";
    }
}
