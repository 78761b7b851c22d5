package dev.sandgate.gateway.testing;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import java.nio.file.Path;

/**
 * ServiceLoader entry of {@link FakeDriver} (test class path only), so that a gateway started as a separate process
 * by a test can select it with {@code --driver fake --driver-property fake.directory=DIR}.
 */
public final class FakeDriverProvider implements ComputeDriverProvider {
    public static final String NAME = "fake";
    public static final String DIRECTORY = "fake.directory";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return -1000;
    }

    @Override
    public Availability availability(DriverSettings config) {
        return config.get(DIRECTORY).isPresent()
                ? Availability.available("directory " + config.get(DIRECTORY).get())
                : Availability.unavailable(DIRECTORY + " is not set");
    }

    @Override
    public ComputeDriver create(DriverSettings config, DriverContext context) {
        return new FakeDriver(Path.of(config.require(DIRECTORY)), context.gatewayId(), FakeDriver.allCapabilities());
    }
}
