package dev.sandgate.driver.host;

import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverConfig;
import dev.sandgate.spi.DriverException;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceLoader;

/**
 * Runs one SPI driver, found by {@link ServiceLoader} on this process's class path, as a separate process serving
 * {@code sandgate.driver.v1}. Each driver gets a process and a class path of its own:
 *
 * <pre>
 * java -cp 'driver-host.jar:lib/*:my-driver/*' dev.sandgate.driver.host.DriverHostMain \
 *     --driver my --listen unix:///run/sandgate/my.sock --config my.properties
 * </pre>
 *
 * Options: {@code --driver NAME} (may be left out when exactly one driver is on the class path), {@code
 * --provider-class CLASS} (a provider not registered with ServiceLoader), {@code --listen unix:///path} or {@code
 * --listen host:port} with {@code --tls-certificate FILE --tls-key FILE --tls-client-trust FILE} (mutual TLS), {@code
 * --config FILE} (driver settings as properties), {@code --set KEY=VALUE} (repeatable). Prints {@code
 * sandgate-driver-host: serving <driver> on <address>} once it accepts calls; stops on SIGTERM.
 */
public final class DriverHostMain {
    private DriverHostMain() {}

    public static void main(String[] args) throws Exception {
        Map<String, List<String>> options = parse(args);
        ComputeDriverProvider provider = provider(options);
        DriverConfig config = config(options);
        DriverHost.Listen listen = listen(options);
        DriverHost host = DriverHost.start(provider, config, listen);
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().unstarted(host::close));
        String address = listen instanceof DriverHost.Listen.Unix unix
                ? "unix://" + unix.path().toAbsolutePath()
                : ((DriverHost.Listen.Tcp) listen).host() + ":" + host.port();
        System.out.println("sandgate-driver-host: serving " + provider.name() + " on " + address);
        System.out.flush();
        host.awaitTermination();
    }

    private static Map<String, List<String>> parse(String[] args) {
        Map<String, List<String>> options = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String option = args[i];
            if (!option.startsWith("--") || i + 1 >= args.length) {
                throw usage("expected --option value, got '" + option + "'");
            }
            options.computeIfAbsent(option.substring(2), key -> new ArrayList<>())
                    .add(args[++i]);
        }
        for (String option : options.keySet()) {
            if (!List.of(
                            "driver",
                            "provider-class",
                            "listen",
                            "config",
                            "set",
                            "tls-certificate",
                            "tls-key",
                            "tls-client-trust")
                    .contains(option)) {
                throw usage("unknown option --" + option);
            }
        }
        return options;
    }

    private static String single(Map<String, List<String>> options, String option) {
        List<String> values = options.getOrDefault(option, List.of());
        if (values.size() > 1) {
            throw usage("--" + option + " is given more than once");
        }
        return values.isEmpty() ? null : values.get(0);
    }

    private static ComputeDriverProvider provider(Map<String, List<String>> options)
            throws ReflectiveOperationException {
        String providerClass = single(options, "provider-class");
        if (providerClass != null) {
            return (ComputeDriverProvider)
                    Class.forName(providerClass).getConstructor().newInstance();
        }
        String name = single(options, "driver");
        List<ComputeDriverProvider> found = ServiceLoader.load(ComputeDriverProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(provider -> !provider.name().equals(RemoteDriverProvider.NAME))
                .toList();
        List<String> names = found.stream().map(ComputeDriverProvider::name).toList();
        if (name == null) {
            if (found.size() != 1) {
                throw usage("--driver is required: the class path has the drivers " + names);
            }
            return found.get(0);
        }
        return found.stream()
                .filter(provider -> provider.name().equals(name))
                .findFirst()
                .orElseThrow(() -> usage("--driver " + name + ": no such driver on the class path; it has " + names));
    }

    private static DriverConfig config(Map<String, List<String>> options) throws IOException {
        Map<String, String> settings = new HashMap<>();
        String file = single(options, "config");
        if (file != null) {
            var properties = new Properties();
            try (Reader reader = Files.newBufferedReader(Path.of(file))) {
                properties.load(reader);
            }
            properties.stringPropertyNames().forEach(key -> settings.put(key, properties.getProperty(key)));
        }
        for (String assignment : options.getOrDefault("set", List.of())) {
            int equals = assignment.indexOf('=');
            if (equals <= 0) {
                throw usage("--set " + assignment + ": expected KEY=VALUE");
            }
            settings.put(assignment.substring(0, equals), assignment.substring(equals + 1));
        }
        return new DriverConfig(settings);
    }

    private static DriverHost.Listen listen(Map<String, List<String>> options) {
        String listen = single(options, "listen");
        if (listen == null) {
            throw usage("--listen is required");
        }
        if (listen.startsWith("unix:")) {
            String path = listen.substring("unix:".length()).replaceFirst("^//", "");
            if (!path.startsWith("/")) {
                throw usage("--listen " + listen + ": expected unix:///absolute/path");
            }
            return new DriverHost.Listen.Unix(Path.of(path));
        }
        int colon = listen.lastIndexOf(':');
        String certificate = single(options, "tls-certificate");
        String key = single(options, "tls-key");
        String trust = single(options, "tls-client-trust");
        if (colon <= 0 || certificate == null || key == null || trust == null) {
            throw usage("--listen host:port needs --tls-certificate, --tls-key and --tls-client-trust (mutual TLS)");
        }
        return new DriverHost.Listen.Tcp(
                listen.substring(0, colon),
                Integer.parseInt(listen.substring(colon + 1)),
                Path.of(certificate),
                Path.of(key),
                Path.of(trust));
    }

    private static DriverException usage(String problem) {
        return DriverException.invalidArgument("driver-host", problem);
    }
}
