package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreTransaction;
import dev.sandgate.gateway.token.ExecutionTokens;
import dev.sandgate.spi.Mismatch;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Resolves what a request names to a stored sandbox, and checks its preconditions. The sandbox id is authoritative: a
 * target with an id and a name resolves by the id and fails with SANDBOX_ID_MISMATCH if the name is another's; an
 * expected sandbox id or execution token that does not match the target fails the request before anything is
 * written.
 */
final class Targets {
    private final Store store;
    private final ExecutionTokens tokens;

    Targets(Store store, ExecutionTokens tokens) {
        this.store = requireNonNull(store, "store is null");
        this.tokens = requireNonNull(tokens, "tokens is null");
    }

    /** The sandbox {@code target} names; a target with an id is looked up in the store's last committed rows first. */
    SandboxRecord resolve(Commands.Target target) {
        if (target.id().isPresent()) {
            Optional<SandboxRecord> row = store.sandbox(target.id().get());
            if (row.isPresent()) {
                verifyLocators(target, row.get());
                return row.get();
            }
        }
        return store.read(tx -> resolveIn(tx, target));
    }

    /** The sandbox {@code target} names, in {@code tx}. */
    static SandboxRecord resolveIn(StoreTransaction tx, Commands.Target target) {
        if (target.id().isPresent()) {
            String id = target.id().get();
            Optional<SandboxRecord> row = tx.sandbox(id);
            if (row.isPresent()) {
                verifyLocators(target, row.get());
                return row.get();
            }
            if (target.workspace().isPresent()) {
                Optional<SandboxRecord> byName =
                        tx.sandboxByName(target.workspace().get(), target.name().get());
                if (byName.isPresent()) {
                    throw GatewayException.withMismatch(
                            ErrorReason.SANDBOX_ID_MISMATCH,
                            target.workspace().get() + "/" + target.name().get() + " is sandbox "
                                    + byName.get().id() + ", not " + id + "; the id is authoritative",
                            new Mismatch(Mismatch.SANDBOX_ID, id, byName.get().id()));
                }
            }
            throw notFound(target);
        }
        return tx.sandboxByName(target.workspace().get(), target.name().get()).orElseThrow(() -> notFound(target));
    }

    /** The sandbox {@code target} resolved to before, read again by its id in {@code tx}. */
    static SandboxRecord reread(StoreTransaction tx, Commands.Target target, String id) {
        SandboxRecord row = tx.sandbox(id).orElseThrow(() -> notFound(target));
        verifyLocators(target, row);
        return row;
    }

    private static void verifyLocators(Commands.Target target, SandboxRecord row) {
        if (target.workspace().isEmpty()) {
            return;
        }
        List<Mismatch> mismatches = new ArrayList<>();
        if (!target.workspace().get().equals(row.workspace())) {
            mismatches.add(new Mismatch(Mismatch.WORKSPACE, target.workspace().get(), row.workspace()));
        }
        if (!target.name().get().equals(row.name())) {
            mismatches.add(new Mismatch(Mismatch.NAME, target.name().get(), row.name()));
        }
        if (!mismatches.isEmpty()) {
            throw new GatewayException(
                    ErrorReason.SANDBOX_ID_MISMATCH,
                    "sandbox " + row.id() + " is " + row.workspace() + "/" + row.name() + ", not "
                            + target.workspace().get() + "/" + target.name().get() + "; the id is authoritative",
                    null,
                    mismatches,
                    Map.of("sandbox_id", row.id()));
        }
    }

    static GatewayException notFound(Commands.Target target) {
        String what = target.id().isPresent()
                ? "sandbox " + target.id().get()
                : "sandbox " + target.workspace().get() + "/" + target.name().get();
        return new GatewayException(ErrorReason.SANDBOX_NOT_FOUND, what + " does not exist");
    }

    /** The claim of the precondition's execution token, if it has one; EXECUTION_TOKEN_INVALID if it is forged. */
    Optional<ExecutionTokens.Claim> verifyToken(Optional<Commands.Precondition> precondition) {
        return precondition
                .flatMap(Commands.Precondition::expectedToken)
                .map(token -> tokens.verify("precondition.expected_execution_token", token));
    }

    /** Checks, in this order, the expected sandbox id, then the token's sandbox and generation. */
    static void checkPrecondition(
            Optional<Commands.Precondition> precondition, Optional<ExecutionTokens.Claim> claim, SandboxRecord row) {
        if (precondition.isEmpty()) {
            return;
        }
        Optional<String> expectedId = precondition.get().expectedSandboxId();
        if (expectedId.isPresent() && !expectedId.get().equals(row.id())) {
            throw GatewayException.withMismatch(
                    ErrorReason.SANDBOX_ID_MISMATCH,
                    "the target is sandbox " + row.id() + ", not the expected " + expectedId.get(),
                    new Mismatch(Mismatch.SANDBOX_ID, expectedId.get(), row.id()));
        }
        if (claim.isPresent()) {
            ExecutionTokens.Claim c = claim.get();
            if (!c.sandboxId().equals(row.id())) {
                throw GatewayException.withMismatch(
                        ErrorReason.STALE_EXECUTION,
                        "the execution token belongs to another sandbox (" + c.sandboxId() + "), not " + row.id()
                                + "; it may have been deleted and its name reused",
                        new Mismatch(Mismatch.SANDBOX_ID, c.sandboxId(), row.id()));
            }
            if (c.generation() != row.generation()) {
                throw GatewayException.withMismatch(
                        ErrorReason.STALE_EXECUTION,
                        "the execution token names generation " + c.generation() + " of sandbox " + row.id()
                                + ", but its current execution is generation " + row.generation(),
                        new Mismatch(
                                Mismatch.GENERATION, Long.toString(c.generation()), Long.toString(row.generation())));
            }
        }
    }
}
