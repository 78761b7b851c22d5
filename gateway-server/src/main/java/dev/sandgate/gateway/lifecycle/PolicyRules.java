package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.store.PolicyMode;
import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StoreTransaction;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxSpec;

/**
 * What a policy must satisfy to be admitted or launched: the sandbox's policy mode and expected revision, the
 * driver's capabilities, and the driver's own check of the launch. Checked before an intent is recorded, so that a
 * sandbox never keeps a revision it cannot launch.
 */
final class PolicyRules {
    private final ComputeDriver driver;
    private final String driverName;
    private final boolean launchPolicyOnStart;

    PolicyRules(ComputeDriver driver, String driverName, DriverCapabilities capabilities) {
        this.driver = requireNonNull(driver, "driver is null");
        this.driverName = requireNonNull(driverName, "driverName is null");
        this.launchPolicyOnStart = capabilities.launchPolicyOnStart();
    }

    /** The launch input of a start of {@code row} with {@code policy}, checked by the driver. */
    LaunchInput launchOnStart(SandboxRecord row, PolicyRevisionRecord policy) {
        if (!policy.digest().equals(row.launchDigest()) && !launchPolicyOnStart) {
            throw new GatewayException(
                    ErrorReason.DRIVER_CAPABILITY_MISSING,
                    "driver " + driverName + " cannot launch a policy other than the previous execution's;"
                            + " recreate the sandbox to change its policy");
        }
        LaunchInput input = new LaunchInput(
                row.generation() + 1,
                PolicyDocument.fromCanonical(policy.document()).toLaunchPolicy(policy.revision()));
        validate(row.spec().toSpi(row.labels()), input);
        return input;
    }

    /** The checks of a policy update that hold whatever the proposed policy is. */
    static void checkUpdate(Commands.UpdatePolicy c, SandboxRecord row) {
        if (row.policyMode() == PolicyMode.FROZEN) {
            throw new GatewayException(
                    ErrorReason.POLICY_FROZEN,
                    "sandbox " + row.id() + " has a FROZEN policy: it keeps its creation snapshot");
        }
        if (c.expectedRevision() != 0 && c.expectedRevision() != row.admittedRevision()) {
            throw GatewayException.withMismatch(
                    ErrorReason.REVISION_MISMATCH,
                    "the admitted policy revision is " + row.admittedRevision() + ", not " + c.expectedRevision(),
                    new Mismatch(
                            "policy_revision",
                            Long.toString(c.expectedRevision()),
                            Long.toString(row.admittedRevision())));
        }
    }

    /** The checks of a policy update that changes the policy. */
    void checkChange(PolicyDocument proposed, SandboxRecord row, StoreTransaction tx) {
        if (!launchPolicyOnStart) {
            throw new GatewayException(
                    ErrorReason.DRIVER_CAPABILITY_MISSING,
                    "driver " + driverName + " cannot launch a changed policy, so no new revision can be admitted");
        }
        PolicyDocument launched = PolicyDocument.fromCanonical(
                Transitions.revision(tx, row.id(), row.launchRevision()).document());
        if (proposed.staticDiffers(launched) && row.phase().mayRun()) {
            throw new GatewayException(
                    ErrorReason.STATIC_POLICY_CHANGE_REQUIRES_STOP,
                    "the static policy of sandbox " + row.id() + " cannot change while it may run (phase " + row.phase()
                            + "); stop it first");
        }
    }

    /** Asks the driver to check a launch without touching its backend (so without a timeout or a thread hop). */
    void validate(SandboxSpec spec, LaunchInput input) {
        try {
            driver.validate(spec, input);
        } catch (DriverException e) {
            throw GatewayException.fromDriver(e);
        } catch (RuntimeException e) {
            throw GatewayException.fromDriver(new DriverException(
                    DriverErrorCode.INTERNAL, "driver " + driverName + " failed to validate: " + e, e));
        }
    }
}
