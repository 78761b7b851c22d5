package dev.sandgate.driver.toolkit;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;

/**
 * What {@code start(ref, input)} with generation G does, by the Start(G) rules of {@link
 * dev.sandgate.spi.ComputeDriver}: the one place that decides whether a start is a replay or a launch, so that no
 * driver gets the order of the checks wrong. A start always launches the generation of its input, never another.
 */
public enum StartDecision {
    /** The resource runs G already: answer success and change nothing ({@code launched == false}). */
    REPLAY,
    /** The resource carries G but does not run: launch G again with the same input. */
    RELAUNCH,
    /** The resource carries an older generation and does not run: launch G. */
    LAUNCH;

    /** Whether the driver launches an execution (of {@code launch.generation()}) for this decision. */
    public boolean launches() {
        return this != REPLAY;
    }

    /**
     * Decides a start of {@code launch} over a resource that carries {@code generation} and {@code policyDigest} and
     * runs ({@code running}) or not. Call it before mutating anything, and again under the sandbox's lock.
     *
     * @param launchPolicyOnStart whether the driver can launch a later generation with another policy than the one
     *     the resource carries ({@link dev.sandgate.spi.DriverCapabilities#launchPolicyOnStart()})
     * @throws DriverException FAILED_PRECONDITION for an older input, another generation running, or the same
     *     generation with another policy digest; UNSUPPORTED for a changed policy the driver cannot launch
     */
    public static StartDecision decide(
            SandboxRef ref,
            LaunchInput launch,
            long generation,
            String policyDigest,
            boolean running,
            boolean launchPolicyOnStart) {
        requireNonNull(ref, "ref is null");
        requireNonNull(launch, "launch is null");
        String digest = launch.policy().digest();
        if (generation == launch.generation()) {
            if (!digest.equals(policyDigest)) {
                throw DriverException.policyDigestMismatch(ref, digest, policyDigest);
            }
            return running ? REPLAY : RELAUNCH;
        }
        if (generation > launch.generation() || running) {
            throw DriverException.launchRefused(ref, launch.generation(), generation);
        }
        if (!launchPolicyOnStart && !digest.equals(policyDigest)) {
            throw new DriverException(
                    DriverErrorCode.UNSUPPORTED,
                    "this driver cannot launch sandbox " + ref.id() + " with another policy than its previous"
                            + " execution had");
        }
        return LAUNCH;
    }
}
