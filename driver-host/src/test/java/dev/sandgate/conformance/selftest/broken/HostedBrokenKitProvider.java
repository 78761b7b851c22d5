package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import java.nio.file.Path;

/**
 * Runs inside a driver host process ({@code --provider-class}): the reference driver with the bug of the broken kit
 * named by {@value #KIT}, over the backend directory of {@link ReferenceDriverProvider#DIRECTORY}.
 */
public final class HostedBrokenKitProvider implements ComputeDriverProvider {
    public static final String KIT = "hosted-kit.class";

    private BrokenReferenceKit kit;

    @Override
    public String name() {
        return ReferenceDriverProvider.NAME;
    }

    @Override
    public int priority() {
        return 0;
    }

    @Override
    public Availability availability(DriverSettings config) {
        return kit(config).inProcessProvider().availability(config);
    }

    @Override
    public ComputeDriver create(DriverSettings config, DriverContext context) {
        return kit(config).inProcessProvider().create(config, context);
    }

    private synchronized BrokenReferenceKit kit(DriverSettings config) {
        if (kit == null) {
            try {
                kit = Class.forName(config.require(KIT))
                        .asSubclass(BrokenReferenceKit.class)
                        .getConstructor()
                        .newInstance();
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot create the broken kit " + config.get(KIT), e);
            }
            BrokenReferenceKit.directory = Path.of(config.require(ReferenceDriverProvider.DIRECTORY));
        }
        return kit;
    }
}
