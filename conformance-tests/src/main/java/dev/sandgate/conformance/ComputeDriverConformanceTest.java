package dev.sandgate.conformance;

import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverConfig;
import dev.sandgate.spi.SandboxSpec;
import java.time.Duration;

/**
 * The conformance kit every compute driver passes. A driver's test extends this class and answers the hooks; the
 * scenarios are inherited. Hook methods are called once per test class.
 *
 * <p>SKELETON: the scenarios are being written (issue 2); the hooks below are settled.
 */
public abstract class ComputeDriverConformanceTest {
    /** The provider under test, as ServiceLoader would find it. */
    protected abstract ComputeDriverProvider provider();

    /** The settings to create the driver with (the same for every driver instance of the class). */
    protected abstract DriverConfig config();

    /** Out-of-band access to the backend the driver uses. Called once per test class and closed after it. */
    protected abstract BackendProbe probe();

    /**
     * A spec whose execution keeps running until it is stopped (a container whose process sleeps, a VM image).
     * Its workspace must be writable through {@link BackendProbe#writeWorkspaceMarker}.
     */
    protected abstract SandboxSpec runningSpec();

    /** How long a launched sandbox may take to be reported RUNNING. */
    protected Duration readinessTimeout() {
        return Duration.ofSeconds(60);
    }
}
