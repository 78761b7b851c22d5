package dev.sandgate.testing.replicas;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * The test driver {@value #NAME}: the driver named by {@value #DELEGATE}, with every mutating call written to the
 * {@link DriverJournal} at {@value #FILE} (see {@link JournalingDriver}). Its other properties go to that driver.
 *
 * <p>It is not registered in this module's jar, so that no other test's gateway sees it: {@link #serviceDirectory}
 * writes a class path entry that registers it, for the gateway processes of a test that wants it.
 */
public final class JournalingDriverProvider implements ComputeDriverProvider {
    public static final String NAME = "journaling";
    public static final String DELEGATE = "journal.delegate";
    public static final String FILE = "journal.file";

    @Override
    public String name() {
        return NAME;
    }

    /** Only when named. */
    @Override
    public int priority() {
        return -1;
    }

    @Override
    public Availability availability(DriverSettings config) {
        return config.get(DELEGATE).isPresent() && config.get(FILE).isPresent()
                ? delegate(config).availability(delegateSettings(config))
                : Availability.unavailable(DELEGATE + " and " + FILE + " are required");
    }

    @Override
    public ComputeDriver create(DriverSettings config, DriverContext context) {
        Path file = Path.of(config.require(FILE));
        ComputeDriver delegate = delegate(config).create(delegateSettings(config), context);
        return new JournalingDriver(delegate, DriverJournal.appendingTo(file));
    }

    private static ComputeDriverProvider delegate(DriverSettings config) {
        String name = config.require(DELEGATE);
        return ServiceLoader.load(ComputeDriverProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(provider -> provider.name().equals(name))
                .findFirst()
                .orElseThrow(() -> new DriverException(
                        DriverErrorCode.INVALID_ARGUMENT, DELEGATE + ": no driver named " + name + " is installed"));
    }

    private static DriverSettings delegateSettings(DriverSettings config) {
        return new DriverSettings(config.properties().entrySet().stream()
                .filter(entry -> !entry.getKey().startsWith("journal."))
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)));
    }

    /**
     * Writes, under {@code directory}, the service registration of this provider, and returns {@code directory}: put
     * it on a gateway process's class path (before the rest) to make {@value #NAME} available there.
     */
    public static Path serviceDirectory(Path directory) throws IOException {
        Path services = directory.resolve("META-INF/services");
        Files.createDirectories(services);
        Files.writeString(
                services.resolve(ComputeDriverProvider.class.getName()),
                JournalingDriverProvider.class.getName() + "\n",
                StandardCharsets.UTF_8);
        return directory;
    }
}
