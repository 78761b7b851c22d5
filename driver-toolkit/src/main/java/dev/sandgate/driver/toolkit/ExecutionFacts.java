package dev.sandgate.driver.toolkit;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxRef;

/**
 * What a driver found for {@code ref.id()} when exec or logs names execution G: the locator stamps and generation
 * stamp of the resource that carries the id, and whether that resource's execution runs. {@link #require} checks
 * them in the one order that {@link dev.sandgate.spi.ComputeDriver#exec} and {@link
 * dev.sandgate.spi.ComputeDriver#logs} prescribe, so that every driver refuses the same way.
 *
 * <p>The driver resolves the resource by the sandbox id (never by name; NOT_FOUND if nothing carries it), builds
 * these facts from it, calls {@link #require}, and only then reaches the execution through its immutable backend
 * identity (container id, pod UID, backend id), which it keeps checking as its backend allows.
 *
 * @param workspace the workspace stamp the resource carries (may be null: absent)
 * @param name the name stamp the resource carries (may be null: absent)
 * @param generation the execution generation stamp the resource carries
 * @param running whether the resource's execution runs; only exec asks
 */
public record ExecutionFacts(String workspace, String name, long generation, boolean running) {
    /** What the execution is reached for: exec needs it to run, logs reads a stopped execution too. */
    public enum Access {
        /** Run a command: the execution must run. */
        EXEC,
        /** Read the output: the execution may have stopped. */
        LOGS
    }

    /**
     * Checks, in this order, each failure before anything is reached: the resource is at {@code ref}'s locator
     * (FAILED_PRECONDITION, {@link DriverException#identityMismatch}); it carries exactly {@code generation}
     * (FAILED_PRECONDITION with a {@code generation} mismatch: an older or newer execution is never reached); for
     * {@link Access#EXEC}, the execution runs (FAILED_PRECONDITION with a {@code running} mismatch). Returns normally
     * when every check passes.
     */
    public void require(SandboxRef ref, long generation, Access access) {
        requireNonNull(ref, "ref is null");
        requireNonNull(access, "access is null");
        Identity.requireLocator(ref, workspace, name);
        if (this.generation != generation) {
            throw DriverException.generationMismatch(ref, generation, this.generation);
        }
        switch (access) {
            case EXEC -> {
                if (!running) {
                    throw DriverException.notRunning(ref, generation);
                }
            }
            case LOGS -> {
                // a stopped execution's output is still its own
            }
        }
    }
}
