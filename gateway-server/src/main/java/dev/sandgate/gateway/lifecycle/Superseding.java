package dev.sandgate.gateway.lifecycle;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.ErrorRecord;
import dev.sandgate.gateway.store.PendingTransition;
import dev.sandgate.gateway.store.RequestResult;
import dev.sandgate.gateway.store.SandboxRecord;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * A delete supersedes a pending create or start: a launch that may never complete (an image that cannot be pulled, a
 * backend that stays down) must not keep a user from deleting the sandbox. The delete's intent replaces the pending
 * launch in the transaction that records it, so a crash afterwards recovers the delete, never the cancelled launch;
 * the cancelled launch's request is completed with {@link ErrorReason#TRANSITION_CANCELLED}. A pending stop or delete
 * is finished first, as before.
 */
final class Superseding {
    private Superseding() {}

    /** Whether a delete must let {@code pending} finish before it is recorded (false: the delete cancels it). */
    static boolean finishBeforeDelete(PendingTransition pending) {
        return switch (pending.kind()) {
            case CREATE, START -> false;
            case STOP, DELETE -> true;
        };
    }

    /** The recorded result of the launch {@code cancelled}, superseded by the delete {@code deleteOperationId}. */
    static RequestResult cancelledResult(SandboxRecord row, PendingTransition cancelled, String deleteOperationId) {
        String verb = cancelled.kind().name().toLowerCase(Locale.ROOT);
        GatewayException e = new GatewayException(
                ErrorReason.TRANSITION_CANCELLED,
                verb + " of sandbox " + row.id() + " (generation " + row.generation()
                        + ") was cancelled by a delete before the driver completed it",
                null,
                List.of(),
                Map.of(
                        "sandbox_id",
                        row.id(),
                        "operation_id",
                        cancelled.operationId(),
                        "cancelled_by_operation_id",
                        deleteOperationId));
        return RequestResult.failure(ErrorRecord.of(e), Optional.of(row.id()), row.generation());
    }
}
