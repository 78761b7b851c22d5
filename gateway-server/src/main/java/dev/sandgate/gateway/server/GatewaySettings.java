package dev.sandgate.gateway.server;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.lifecycle.FaultPoint;
import dev.sandgate.gateway.security.SecuritySettings;
import dev.sandgate.gateway.store.SqliteStore;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.Identifiers;
import java.io.IOException;
import java.io.Reader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The gateway's settings, from (highest precedence first) command-line flags, {@code SANDGATE_*} environment
 * variables, a properties file ({@code --config}) and defaults. {@link GatewayOptions} declares the options and splits
 * the command line (picocli); the values of all three sources are checked here alike. See {@link #usage()}.
 *
 * @param listenHost the address to listen on
 * @param listenPort the port to listen on (0: any free port)
 * @param dataDir the data directory (SQLite store, token keys, lock file)
 * @param driverName the driver to use; empty: the available driver with the highest priority above 0
 * @param driverProperties settings passed to the driver unchanged ({@code docker.host}, {@code reference.directory})
 * @param tokenKeyFile the execution-token key file
 * @param gatewayId this gateway's id for drivers; empty: generated once and kept in the store
 * @param requestRetention how long request-id records are kept
 * @param driverTimeout how long one driver call may take
 * @param storeSynchronous SQLite's synchronous setting
 * @param postgres the PostgreSQL store to use instead of the embedded SQLite store in the data directory
 * @param testFaultsEnabled whether fault points may be armed (tests only)
 * @param faultPoint the armed fault point
 * @param readyFile a file to write "host:port" to once the gateway serves
 * @param help print the usage and exit
 * @param rotateTokenKey rotate the token key file and exit
 * @param security TLS, authentication, authorization ({@link SecuritySettings})
 * @param metricsListen where to serve Prometheus metrics over HTTP; empty: no metrics
 * @param readinessInterval how often the driver's engine is checked for the readiness of the SandboxService
 */
public record GatewaySettings(
        String listenHost,
        int listenPort,
        Path dataDir,
        Optional<String> driverName,
        Map<String, String> driverProperties,
        Path tokenKeyFile,
        Optional<String> gatewayId,
        Duration requestRetention,
        Duration driverTimeout,
        SqliteStore.Synchronous storeSynchronous,
        Optional<PostgresOptions> postgres,
        boolean testFaultsEnabled,
        Optional<FaultPoint> faultPoint,
        Optional<Path> readyFile,
        boolean help,
        boolean rotateTokenKey,
        SecuritySettings security,
        Optional<InetSocketAddress> metricsListen,
        Duration readinessInterval) {
    private static final String DEFAULT_LISTEN = "127.0.0.1:7443";
    private static final String ENV_PREFIX = "SANDGATE_";
    private static final String ENV_DRIVER_PROPERTY_PREFIX = "SANDGATE_DRIVER_PROPERTY_";

    /** The gateway's own settings; every other key of the properties file is a driver property. */
    private static final Set<String> KEYS = GatewayOptions.SETTINGS;

    /** Read by bin/sandgate-gateway, bin/sandgate, the scripts (which export some) and logback, not by the gateway. */
    private static final Set<String> OTHER_TOOLS_VARIABLES = Set.of(
            "SANDGATE_HOME",
            "SANDGATE_TARGET",
            "SANDGATE_CLI_OPTS",
            "SANDGATE_ROOT",
            "SANDGATE_RUN_DIR",
            "SANDGATE_REQUIRE_ENGINES",
            "SANDGATE_SKIP_ENGINES",
            "SANDGATE_LOG_FORMAT");

    public GatewaySettings {
        requireNonNull(listenHost, "listenHost is null");
        requireNonNull(dataDir, "dataDir is null");
        requireNonNull(driverName, "driverName is null");
        driverProperties = Map.copyOf(requireNonNull(driverProperties, "driverProperties is null"));
        requireNonNull(tokenKeyFile, "tokenKeyFile is null");
        requireNonNull(gatewayId, "gatewayId is null");
        requireNonNull(requestRetention, "requestRetention is null");
        requireNonNull(driverTimeout, "driverTimeout is null");
        requireNonNull(storeSynchronous, "storeSynchronous is null");
        requireNonNull(postgres, "postgres is null");
        requireNonNull(faultPoint, "faultPoint is null");
        requireNonNull(readyFile, "readyFile is null");
        requireNonNull(security, "security is null");
        requireNonNull(metricsListen, "metricsListen is null");
        requireNonNull(readinessInterval, "readinessInterval is null");
    }

    /**
     * A PostgreSQL store ({@code --store-url}, {@code --store-user}, {@code --store-password-file}): the password is
     * read from its file when the gateway opens the store, never from a flag, the environment or the URL.
     */
    public record PostgresOptions(String url, String user, Optional<Path> passwordFile, Duration replicaLeaseTtl) {
        /** How long a replica's leases live unless renewed, by default ({@code replica-lease-ttl}). */
        public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(10);

        static final Duration MIN_LEASE_TTL = Duration.ofSeconds(1);
        static final Duration MAX_LEASE_TTL = Duration.ofMinutes(10);

        public PostgresOptions {
            requireNonNull(url, "url is null");
            requireNonNull(user, "user is null");
            requireNonNull(passwordFile, "passwordFile is null");
            requireNonNull(replicaLeaseTtl, "replicaLeaseTtl is null");
        }

        /** With the default lease time to live. */
        public PostgresOptions(String url, String user, Optional<Path> passwordFile) {
            this(url, user, passwordFile, DEFAULT_LEASE_TTL);
        }
    }

    public DriverSettings driverConfig() {
        return new DriverSettings(driverProperties);
    }

    public String listen() {
        return listenHost + ":" + listenPort;
    }

    /** Reads the configuration. Throws {@link ConfigException} naming the bad setting. */
    public static GatewaySettings load(String[] args, Map<String, String> environment) {
        GatewayOptions.Given commandLine = GatewayOptions.parse(args);
        Map<String, String> flags = commandLine.settings();
        Map<String, String> flagDriverProperties = commandLine.driverProperties();
        boolean help = commandLine.help();
        boolean rotate = commandLine.rotateTokenKey();

        Map<String, String> env = new LinkedHashMap<>();
        Map<String, String> envDriverProperties = new TreeMap<>();
        environment.forEach((key, value) -> {
            if (key.startsWith(ENV_DRIVER_PROPERTY_PREFIX) && key.length() > ENV_DRIVER_PROPERTY_PREFIX.length()) {
                envDriverProperties.put(driverPropertyKey(key.substring(ENV_DRIVER_PROPERTY_PREFIX.length())), value);
            } else if (key.startsWith(ENV_PREFIX)) {
                String name = key.substring(ENV_PREFIX.length())
                        .toLowerCase(Locale.ROOT)
                        .replace('_', '-');
                if (name.equals("config") || KEYS.contains(name)) {
                    env.put(name, value);
                }
            }
        });

        Map<String, String> file = new LinkedHashMap<>();
        Map<String, String> fileDriverProperties = new LinkedHashMap<>();
        String configFile = commandLine.config().orElse(env.get("config"));
        if (configFile != null) {
            Properties properties = new Properties();
            try (Reader reader = Files.newBufferedReader(Path.of(configFile), StandardCharsets.UTF_8)) {
                properties.load(reader);
            } catch (IOException e) {
                throw new ConfigException(
                        "cannot read the configuration file " + configFile + ": " + IoReasons.describe(e), e);
            }
            for (String key : new TreeSet<>(properties.stringPropertyNames())) {
                String value = properties.getProperty(key).trim();
                if (KEYS.contains(key)) {
                    file.put(key, value);
                } else if (key.indexOf('.') > 0) {
                    fileDriverProperties.put(key, value);
                } else {
                    String suggestion = key.toLowerCase(Locale.ROOT).replace('_', '-');
                    throw new ConfigException("unknown setting '" + key + "' in " + configFile
                            + (KEYS.contains(suggestion) ? " (did you mean " + suggestion + "?)" : "")
                            + ": neither a gateway setting (see --help) nor a driver setting (DRIVER.KEY, e.g."
                            + " docker.host)");
                }
            }
        }

        Map<String, String> settings = new LinkedHashMap<>(file);
        settings.putAll(env);
        settings.putAll(flags);
        Map<String, String> driverProperties = new TreeMap<>(fileDriverProperties);
        driverProperties.putAll(envDriverProperties);
        driverProperties.putAll(flagDriverProperties);

        String listen = settings.getOrDefault("listen", DEFAULT_LISTEN);
        int colon = listen.lastIndexOf(':');
        if (colon <= 0) {
            throw new ConfigException("listen must be host:port, got '" + listen + "'");
        }
        String host = listen.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(listen.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new ConfigException("listen must be host:port, got '" + listen + "'");
        }
        if (port < 0 || port > 65535) {
            throw new ConfigException("listen port must be 0 to 65535, got " + port);
        }
        Path dataDir = Path.of(settings.getOrDefault("data-dir", defaultDataDir()));
        Optional<String> driver = Optional.ofNullable(settings.get("driver")).filter(s -> !s.isBlank());
        Path tokenKeyFile = Path.of(settings.getOrDefault(
                "token-key-file", dataDir.resolve("token-keys.properties").toString()));
        Optional<String> gatewayId =
                Optional.ofNullable(settings.get("gateway-id")).filter(s -> !s.isBlank());
        gatewayId.ifPresent(id -> {
            try {
                Identifiers.requireDnsLabel("gateway-id", id, Identifiers.MAX_GATEWAY_ID_LENGTH);
            } catch (DriverException e) {
                throw new ConfigException(e.getMessage());
            }
        });
        DriverSettings parse = new DriverSettings(settings);
        Duration retention = duration(parse, "request-retention", Duration.ofHours(24));
        Duration driverTimeout = duration(parse, "driver-timeout", Duration.ofMinutes(2));
        SqliteStore.Synchronous synchronous;
        try {
            synchronous = SqliteStore.Synchronous.valueOf(
                    settings.getOrDefault("store-synchronous", "NORMAL").toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ConfigException("store-synchronous must be NORMAL or FULL");
        }
        Optional<PostgresOptions> postgres = postgres(settings);
        if (postgres.isPresent() && settings.containsKey("store-synchronous")) {
            throw new ConfigException(
                    "store-synchronous applies to the embedded SQLite store only, not with store-url");
        }
        boolean testFaults;
        try {
            testFaults = parse.asBoolean("enable-test-faults", false);
        } catch (DriverException e) {
            throw new ConfigException(e.getMessage());
        }
        Optional<FaultPoint> faultPoint = Optional.ofNullable(settings.get("fault-point"))
                .filter(s -> !s.isBlank())
                .map(name -> FaultPoint.byExternalName(name)
                        .orElseThrow(() -> new ConfigException("fault-point must be one of "
                                + Arrays.stream(FaultPoint.values())
                                        .map(FaultPoint::externalName)
                                        .collect(Collectors.joining(", "))
                                + ", got '" + name + "'")));
        if (faultPoint.isPresent() && !testFaults) {
            throw new ConfigException("refusing fault-point " + faultPoint.get().externalName()
                    + ": test faults are not enabled (start with --enable-test-faults, for tests only)");
        }
        Optional<Path> readyFile =
                Optional.ofNullable(settings.get("ready-file")).map(Path::of);
        return new GatewaySettings(
                host,
                port,
                dataDir,
                driver,
                driverProperties,
                tokenKeyFile,
                gatewayId,
                retention,
                driverTimeout,
                synchronous,
                postgres,
                testFaults,
                faultPoint,
                readyFile,
                help,
                rotate,
                SecuritySettings.from(settings, host),
                metricsListen(settings.get("metrics-listen")),
                duration(parse, "readiness-interval", Duration.ofSeconds(5)));
    }

    /** The PostgreSQL store, if store-url names one; its user and password file only with it. */
    private static Optional<PostgresOptions> postgres(Map<String, String> settings) {
        String url = blankToNull(settings.get("store-url"));
        String user = blankToNull(settings.get("store-user"));
        String passwordFile = blankToNull(settings.get("store-password-file"));
        String leaseTtl = blankToNull(settings.get("replica-lease-ttl"));
        if (url == null) {
            if (user != null || passwordFile != null || leaseTtl != null) {
                throw new ConfigException((user != null
                                ? "store-user"
                                : passwordFile != null ? "store-password-file" : "replica-lease-ttl")
                        + " applies to a PostgreSQL store only: set store-url too");
            }
            return Optional.empty();
        }
        Duration ttl = duration(new DriverSettings(settings), "replica-lease-ttl", PostgresOptions.DEFAULT_LEASE_TTL);
        if (ttl.compareTo(PostgresOptions.MIN_LEASE_TTL) < 0 || ttl.compareTo(PostgresOptions.MAX_LEASE_TTL) > 0) {
            throw new ConfigException("replica-lease-ttl must be 1s to 10m, got " + leaseTtl);
        }
        if (url.toLowerCase(Locale.ROOT).contains("password=")) {
            // Not echoed: the URL holds a secret.
            throw new ConfigException(
                    "store-url must not carry the password: put it in the file that store-password-file names");
        }
        if (!url.startsWith("jdbc:postgresql://") || url.length() == "jdbc:postgresql://".length()) {
            throw new ConfigException("store-url must be jdbc:postgresql://HOST[:PORT]/DATABASE, got '" + url + "'");
        }
        if (user == null) {
            throw new ConfigException("store-url needs store-user, the user the gateway connects as");
        }
        return Optional.of(
                new PostgresOptions(url, user, Optional.ofNullable(passwordFile).map(Path::of), ttl));
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.trim();
    }

    /** The metrics address, HOST:PORT; empty or unset: no metrics. */
    private static Optional<InetSocketAddress> metricsListen(String value) {
        if (value == null || value.isBlank()) {
            return Optional.empty();
        }
        int colon = value.lastIndexOf(':');
        String host = colon > 0 ? value.substring(0, colon) : "";
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        try {
            int port = Integer.parseInt(value.substring(colon + 1));
            if (host.isEmpty() || port < 0 || port > 65535) {
                throw new NumberFormatException();
            }
            return Optional.of(new InetSocketAddress(host, port));
        } catch (NumberFormatException e) {
            throw new ConfigException(
                    "metrics-listen must be host:port with a port of 0 to 65535, got '" + value + "'");
        }
    }

    private static Duration duration(DriverSettings settings, String key, Duration defaultValue) {
        try {
            Duration value = settings.asDuration(key, defaultValue);
            if (value.isNegative() || value.isZero()) {
                throw new ConfigException(key + " must be positive");
            }
            return value;
        } catch (DriverException e) {
            throw new ConfigException(e.getMessage());
        }
    }

    private static String defaultDataDir() {
        return Path.of(System.getProperty("user.home"), ".sandgate", "data").toString();
    }

    /**
     * The {@code SANDGATE_*} variables of {@code environment} that set nothing: neither a gateway setting, nor a driver
     * setting ({@link #ENV_DRIVER_PROPERTY_PREFIX}), nor one read by the launchers and the command-line client. They
     * are ignored; the gateway warns about them, as a typo here would otherwise go unnoticed.
     */
    static List<String> unknownEnvironment(Map<String, String> environment) {
        return environment.keySet().stream()
                .filter(key -> key.startsWith(ENV_PREFIX) && !key.startsWith(ENV_DRIVER_PROPERTY_PREFIX))
                .filter(key -> !OTHER_TOOLS_VARIABLES.contains(key))
                .filter(key -> {
                    String name = key.substring(ENV_PREFIX.length())
                            .toLowerCase(Locale.ROOT)
                            .replace('_', '-');
                    return !name.equals("config") && !KEYS.contains(name);
                })
                .sorted()
                .toList();
    }

    /**
     * The driver property an environment variable's name (after {@link #ENV_DRIVER_PROPERTY_PREFIX}) stands for:
     * lower-cased, {@code __} as {@code -} and {@code _} as {@code .}, since neither may appear in a variable's name
     * ({@code DOCKER_STOP__GRACE__PERIOD} is {@code docker.stop-grace-period}).
     */
    static String driverPropertyKey(String variable) {
        return variable.toLowerCase(Locale.ROOT).replace("__", "-").replace('_', '.');
    }

    /** The text of {@code --help}: every option, in sections. */
    static String usage() {
        return GatewayOptions.usage();
    }
}
