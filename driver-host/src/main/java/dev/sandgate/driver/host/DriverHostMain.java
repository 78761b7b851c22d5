package dev.sandgate.driver.host;

import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
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
 * {@code sandgate.driver.v1}. Each driver gets a process and a class path of its own, e.g. a directory of jars per
 * driver:
 *
 * <pre>
 * java -cp 'driver-host/*:drivers/my/*' dev.sandgate.driver.host.DriverHostMain \
 *     --driver my --listen unix:///run/sandgate/my.sock --config my.properties
 * </pre>
 *
 * Options: {@code --driver NAME} (may be left out when exactly one driver is on the class path), {@code
 * --provider-class CLASS} (a provider not registered with ServiceLoader), {@code --listen unix:///path} (owner-only)
 * or {@code --listen host:port} with {@code --tls-certificate FILE --tls-key FILE --tls-trust FILE} (mutual TLS: the
 * host's PEM certificate and PKCS#8 key, and the CA its clients' certificates must chain to; plaintext TCP is
 * refused), {@code --config FILE} (driver settings as properties), {@code --set KEY=VALUE} (repeatable). Prints {@code
 * sandgate-driver-host: serving <driver> on <address>} once it accepts calls; stops on SIGTERM. A wrong option prints
 * {@code sandgate-driver-host: <problem>} on standard error and exits with status 2.
 */
public final class DriverHostMain {
    /** The options of mutual TLS, named like the remote driver's settings {@code remote.tls.*}. */
    static final String TLS_CERTIFICATE = "tls-certificate";

    static final String TLS_KEY = "tls-key";
    static final String TLS_TRUST = "tls-trust";

    private DriverHostMain() {}

    public static void main(String[] args) throws Exception {
        ComputeDriverProvider provider;
        DriverHost host;
        String address;
        try {
            Map<String, List<String>> options = parse(args);
            provider = provider(options);
            DriverSettings config = config(options);
            DriverHost.Listen listen = listen(options);
            host = DriverHost.start(provider, config, listen);
            address = switch (listen) {
                case DriverHost.Listen.Unix unix -> "unix://" + unix.path().toAbsolutePath();
                case DriverHost.Listen.Tcp tcp -> tcp.host() + ":" + host.port();
            };
        } catch (DriverException e) {
            System.err.println("sandgate-driver-host: " + e.getMessage());
            System.exit(2);
            return;
        }
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().unstarted(host::close));
        System.out.println("sandgate-driver-host: serving " + provider.name() + " on " + address);
        System.out.flush();
        host.awaitTermination();
    }

    static Map<String, List<String>> parse(String[] args) {
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
            if (!List.of("driver", "provider-class", "listen", "config", "set", TLS_CERTIFICATE, TLS_KEY, TLS_TRUST)
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
            Class<?> type;
            try {
                type = Class.forName(providerClass);
            } catch (ClassNotFoundException e) {
                throw usage("--provider-class " + providerClass + ": no such class on the class path");
            }
            return (ComputeDriverProvider) type.getConstructor().newInstance();
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

    private static DriverSettings config(Map<String, List<String>> options) throws IOException {
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
        return new DriverSettings(settings);
    }

    /**
     * {@code --listen unix:///path} (no TLS: the socket is owner-only) or {@code --listen host:port}, which is served only
     * with mutual TLS, on loopback too: plaintext TCP is refused.
     */
    static DriverHost.Listen listen(Map<String, List<String>> options) {
        String listen = single(options, "listen");
        if (listen == null) {
            throw usage("--listen is required: unix:///absolute/path or host:port (mutual TLS)");
        }
        String certificate = single(options, TLS_CERTIFICATE);
        String key = single(options, TLS_KEY);
        String trust = single(options, TLS_TRUST);
        if (listen.startsWith("unix:")) {
            String path = listen.substring("unix:".length()).replaceFirst("^//", "");
            if (!path.startsWith("/")) {
                throw usage("--listen " + listen + ": expected unix:///absolute/path");
            }
            if (certificate != null || key != null || trust != null) {
                throw usage("--" + TLS_CERTIFICATE + ", --" + TLS_KEY + ", --" + TLS_TRUST
                        + " are for a TCP address; a Unix socket is served without TLS and is owner-only");
            }
            return new DriverHost.Listen.Unix(Path.of(path));
        }
        int colon = listen.lastIndexOf(':');
        if (colon <= 0 || colon == listen.length() - 1) {
            throw usage("--listen " + listen + ": expected unix:///absolute/path or host:port");
        }
        String host = listen.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(listen.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw usage("--listen " + listen + ": the port must be a number");
        }
        if (port < 0 || port > 65535) {
            throw usage("--listen " + listen + ": the port must be between 0 and 65535");
        }
        List<String> missing = new ArrayList<>();
        if (certificate == null) {
            missing.add("--" + TLS_CERTIFICATE);
        }
        if (key == null) {
            missing.add("--" + TLS_KEY);
        }
        if (trust == null) {
            missing.add("--" + TLS_TRUST);
        }
        if (!missing.isEmpty()) {
            throw usage("--listen " + listen + ": TCP is served only with mutual TLS (plaintext is refused, on loopback"
                    + " too); missing " + String.join(", ", missing));
        }
        return new DriverHost.Listen.Tcp(
                host, port, readable(TLS_CERTIFICATE, certificate), readable(TLS_KEY, key), readable(TLS_TRUST, trust));
    }

    private static Path readable(String option, String file) {
        Path path = Path.of(file);
        if (!Files.isRegularFile(path) || !Files.isReadable(path)) {
            throw usage("--" + option + " " + file + ": not a readable file");
        }
        return path;
    }

    private static DriverException usage(String problem) {
        return new DriverException(DriverErrorCode.INVALID_ARGUMENT, problem);
    }
}
