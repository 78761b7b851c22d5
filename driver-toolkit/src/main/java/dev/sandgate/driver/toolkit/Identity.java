package dev.sandgate.driver.toolkit;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxRef;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The identity checks of {@link SandboxRef}, each answered with the SPI's error before anything is mutated: the id is
 * authoritative, a name only a locator. Every method returns normally when the check passes.
 */
public final class Identity {
    /** The stamp name the gateway id mismatch is reported under. */
    static final String GATEWAY_ID = "gateway_id";

    private Identity() {}

    /**
     * Checks the stamps of the resource found for {@code ref.id()}: it must carry that id, {@code gatewayId}, and
     * {@code ref}'s workspace and name; FAILED_PRECONDITION with the mismatches otherwise.
     *
     * @param resource how the message names the resource ("the state directory of sandbox X")
     * @param stamps the stamps the resource carries; any of them may be null (absent)
     */
    public static void requireStamps(SandboxRef ref, String gatewayId, String resource, Stamps stamps) {
        requireNonNull(ref, "ref is null");
        requireNonNull(stamps, "stamps is null");
        if (!ref.id().equals(stamps.sandboxId())) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    resource + " carries sandbox id " + stamps.sandboxId(),
                    List.of(new Mismatch(Mismatch.SANDBOX_ID, ref.id(), String.valueOf(stamps.sandboxId()))),
                    null);
        }
        if (!gatewayId.equals(stamps.gatewayId())) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    resource + " is not stamped by gateway " + gatewayId,
                    List.of(new Mismatch(GATEWAY_ID, gatewayId, String.valueOf(stamps.gatewayId()))),
                    null);
        }
        requireLocator(ref, stamps.workspace(), stamps.name());
    }

    /** FAILED_PRECONDITION ({@link DriverException#identityMismatch}) unless the resource is at {@code ref}'s locator. */
    public static void requireLocator(SandboxRef ref, String workspace, String name) {
        if (!ref.workspace().equals(workspace) || !ref.name().equals(name)) {
            throw DriverException.identityMismatch(ref, String.valueOf(workspace), String.valueOf(name));
        }
    }

    /**
     * For a resource found by {@code ref}'s workspace and name: FAILED_PRECONDITION ({@link
     * DriverException#sandboxIdMismatch}) when it carries another sandbox id. Such a resource is never returned,
     * reused or changed; an absent {@code holderId} (no resource holds the name) passes.
     */
    public static void requireNameFree(SandboxRef ref, Optional<String> holderId) {
        if (holderId.isPresent() && !ref.id().equals(holderId.get())) {
            throw DriverException.sandboxIdMismatch(ref, holderId.get());
        }
    }

    /**
     * Under the sandbox's lock, before mutating: ABORTED ({@link DriverException#replaced}) unless the resource has
     * the backend id that the unlocked lookup verified. A resource replaced meanwhile is never touched.
     */
    public static void requireSameIncarnation(SandboxRef ref, String resolvedBackendId, String currentBackendId) {
        if (!resolvedBackendId.equals(currentBackendId)) {
            throw DriverException.replaced(ref, resolvedBackendId, "mutation");
        }
    }

    /**
     * The expected-generation check of stop and delete: FAILED_PRECONDITION ({@link
     * DriverException#generationMismatch}) when {@code expected} is present and the resource carries another
     * generation; nothing is stopped or removed then.
     */
    public static void requireExpectedGeneration(SandboxRef ref, OptionalLong expected, long actual) {
        if (expected.isPresent() && expected.getAsLong() != actual) {
            throw DriverException.generationMismatch(ref, expected.getAsLong(), actual);
        }
    }

    /** The identity stamps a resource carries, as the backend stores them (any may be null: absent). */
    public record Stamps(String sandboxId, String gatewayId, String workspace, String name) {}
}
