package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import java.nio.file.Path;

/** A driver whose backend is not there: the kit skips (or, when engines are required, fails) the whole class. */
public class UnavailableDriverKit extends BrokenReferenceKit {
    public static final String REASON = "no engine answers at unix:///nowhere.sock";

    @Override
    Availability availability(ComputeDriverProvider reference, DriverSettings config) {
        return Availability.unavailable(REASON);
    }

    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        throw new AssertionError("the kit created a driver it was told is unavailable");
    }
}
