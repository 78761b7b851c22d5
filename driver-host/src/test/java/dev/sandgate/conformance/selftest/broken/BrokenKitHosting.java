package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.driver.host.HostedDriverProcess;
import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Places each broken kit's driver in a driver host process of its own: the kit's provider becomes the remote driver,
 * pointed at a host that runs {@link HostedBrokenKitProvider} with the kit's settings. One host at a time: the
 * previous one stops when the next kit starts, the last one at {@link #stop()}.
 */
public final class BrokenKitHosting {
    private static HostedDriverProcess current;

    private BrokenKitHosting() {}

    /** From now on, the broken kits run out of process. */
    public static synchronized void start() {
        BrokenReferenceKit.placement = (kit, inProcess) -> new HostedProvider(kit.getClass());
    }

    /** Back in process; stops the last host. */
    public static synchronized void stop() {
        BrokenReferenceKit.placement = (kit, inProcess) -> inProcess;
        replace(null);
    }

    private static synchronized void replace(HostedDriverProcess next) {
        if (current != null) {
            current.close();
        }
        current = next;
    }

    /** The kit's side: the remote driver, once a host with the kit's settings serves. */
    private static final class HostedProvider implements ComputeDriverProvider {
        private final Class<?> kitClass;
        private final RemoteDriverProvider remote = new RemoteDriverProvider();
        private DriverSettings remoteConfig;

        HostedProvider(Class<?> kitClass) {
            this.kitClass = kitClass;
        }

        @Override
        public String name() {
            return remote.name();
        }

        @Override
        public int priority() {
            return remote.priority();
        }

        @Override
        public Availability availability(DriverSettings config) {
            return remote.availability(remoteConfig(config));
        }

        @Override
        public ComputeDriver create(DriverSettings config, DriverContext context) {
            return remote.create(remoteConfig(config), context);
        }

        private synchronized DriverSettings remoteConfig(DriverSettings kitConfig) {
            if (remoteConfig == null) {
                Path socketDirectory;
                try {
                    socketDirectory = Files.createTempDirectory("sandgate-broken-host-");
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                Map<String, String> settings = new HashMap<>(kitConfig.properties());
                settings.put(HostedBrokenKitProvider.KIT, kitClass.getName());
                HostedDriverProcess process = HostedDriverProcess.of(
                        List.of("--provider-class", HostedBrokenKitProvider.class.getName()),
                        settings,
                        socketDirectory.resolve("driver.sock"),
                        socketDirectory.resolve("host.log"));
                replace(process);
                process.start();
                remoteConfig = process.remoteConfig();
            }
            return remoteConfig;
        }
    }
}
