package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.conformance.reference.ReferenceBackendProbe;
import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.BiFunction;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kit against the reference driver with one bug planted by a decorator. Run only through EngineTestKit by
 * {@code BrokenDriversAreCaughtTest}: these classes are excluded from Surefire, and their names do not match its
 * patterns.
 */
abstract class BrokenReferenceKit extends ComputeDriverConformanceTest {
    @TempDir
    static Path directory;

    /**
     * Where the broken driver runs: in this process by default. driver-host's self-test runs each in a driver host
     * process instead (its kit calls then cross sandgate.driver.v1), and expects the same failures.
     */
    static volatile BiFunction<BrokenReferenceKit, ComputeDriverProvider, ComputeDriverProvider> placement =
            (kit, inProcess) -> inProcess;

    /** Wraps the reference driver into the broken one. */
    abstract ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context);

    /** What the provider says of its availability; the reference driver's answer by default. */
    Availability availability(ComputeDriverProvider reference, DriverSettings config) {
        return reference.availability(config);
    }

    /** The context the reference driver gets; the kit's own by default. */
    DriverContext contextFor(DriverContext kitContext) {
        return kitContext;
    }

    @Override
    protected ComputeDriverProvider provider() {
        return placement.apply(this, inProcessProvider());
    }

    /** The reference driver with this kit's bug, in this process. */
    ComputeDriverProvider inProcessProvider() {
        var reference = new ReferenceDriverProvider();
        return new ComputeDriverProvider() {
            @Override
            public String name() {
                return reference.name();
            }

            @Override
            public int priority() {
                return reference.priority();
            }

            @Override
            public Availability availability(DriverSettings config) {
                return BrokenReferenceKit.this.availability(reference, config);
            }

            @Override
            public ComputeDriver create(DriverSettings config, DriverContext context) {
                return breakDriver(reference.create(config, contextFor(context)), directory, context);
            }
        };
    }

    @Override
    protected DriverSettings config() {
        return DriverSettings.EMPTY.with(ReferenceDriverProvider.DIRECTORY, directory.toString());
    }

    @Override
    protected BackendProbe probe() {
        return new ReferenceBackendProbe(directory);
    }

    @Override
    protected SandboxSpec runningSpec() {
        return SandboxSpec.ofImage("reference/sleeper");
    }

    @Override
    protected SandboxSpec permanentlyRefusedSpec() {
        return SandboxSpec.ofImage("missing/sleeper");
    }

    /** Generous: the machine may be busy, and only a broken driver makes the kit wait this long. */
    @Override
    protected Duration readinessTimeout() {
        return Duration.ofSeconds(10);
    }
}
