package dev.sandgate.gateway.server;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Help;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.MissingParameterException;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.TypeConversionException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The gateway's command line, declared for picocli: every option, its text in {@code --help}, and the names of the
 * settings, which {@link GatewaySettings} also reads from {@code SANDGATE_*} variables and the {@code --config} file.
 * Picocli only splits the command line here: the values stay strings, so that a setting is checked the same way
 * wherever it came from, and an error names the setting rather than the flag.
 */
@Command(
        name = "sandgate-gateway",
        customSynopsis = "sandgate-gateway [options]",
        description = {
            "",
            "Runs the Sandgate gateway: the sandgate.v1.SandboxService over gRPC (TLS with --tls-cert, else plaintext),"
                    + " with gRPC health checking and server reflection, on the embedded SQLite store (or PostgreSQL:"
                    + " --store-url), with one compute driver. Beyond loopback it needs TLS and an authenticator (see"
                    + " Security below), or --insecure."
        },
        optionListHeading = "%nOptions (each also settable as SANDGATE_<NAME> in the environment, e.g."
                + " SANDGATE_DATA_DIR, and as <name>=value in the --config file; flags win over the environment,"
                + " which wins over the file; a SANDGATE_* variable that names no setting is ignored with a"
                + " warning):%n",
        sortOptions = false,
        usageHelpWidth = 120)
final class GatewayOptions {
    /** Options that are not settings: they have no variable and no key in the configuration file. */
    private static final Set<String> COMMAND_LINE_ONLY =
            Set.of("config", "driver-property", "rotate-token-key", "help", "version");

    /** The names of the settings ({@code listen}, {@code tls-cert}, ...): each option but those above. */
    static final Set<String> SETTINGS = spec().options().stream()
            .map(GatewayOptions::name)
            .filter(name -> !COMMAND_LINE_ONLY.contains(name))
            .collect(Collectors.toUnmodifiableSet());

    @Option(
            names = "--config",
            paramLabel = "FILE",
            description = "properties file with any of the settings below; its other keys are driver properties"
                    + " (e.g. docker.host=unix:///run/docker.sock)")
    String config;

    @Option(
            names = "--listen",
            paramLabel = "HOST:PORT",
            description = "address to serve on (default 127.0.0.1:7443; port 0 picks a free port)")
    String listen;

    @Option(
            names = "--data-dir",
            paramLabel = "DIR",
            description = "SQLite store, token keys and lock file (default ~/.sandgate/data)")
    String dataDir;

    @Option(
            names = "--driver",
            paramLabel = "NAME",
            description = "compute driver to use (default: the available driver with the highest priority above 0;"
                    + " the reference driver only by name; when none is available the error lists every candidate)")
    String driver;

    @Option(
            names = "--driver-property",
            paramLabel = "KEY=VALUE",
            description = "a driver setting, repeatable (e.g. reference.directory=/var/sandboxes); environment:"
                    + " SANDGATE_DRIVER_PROPERTY_<KEY> with '.' written as '_' and '-' as '__'"
                    + " (SANDGATE_DRIVER_PROPERTY_DOCKER_HOST sets docker.host, ..._DOCKER_STOP__GRACE__PERIOD"
                    + " docker.stop-grace-period)")
    List<String> driverProperties = new ArrayList<>();

    @Option(
            names = "--token-key-file",
            paramLabel = "FILE",
            description = "execution-token keys (default DATA_DIR/token-keys.properties; created on first start,"
                    + " owner-only)")
    String tokenKeyFile;

    @Option(
            names = "--gateway-id",
            paramLabel = "ID",
            description = "this gateway's id stamped on runtime resources (default: generated once and kept in the"
                    + " store)")
    String gatewayId;

    @Option(
            names = "--request-retention",
            paramLabel = "DUR",
            description = "how long request_id records are kept (default 24h; e.g. 90m, 2h, PT1H)")
    String requestRetention;

    @Option(
            names = "--driver-timeout",
            paramLabel = "DUR",
            description = "how long one driver call may take before the transition is left pending and retried"
                    + " (default 2m)")
    String driverTimeout;

    @Option(
            names = "--store-synchronous",
            paramLabel = "MODE",
            description = "NORMAL (default: survives a gateway crash; an OS crash may lose the last commits) or FULL"
                    + " (also survives an OS crash; slower)")
    String storeSynchronous;

    @Option(
            names = "--store-url",
            paramLabel = "URL",
            description = "jdbc:postgresql://HOST[:PORT]/DATABASE (without the password): keep the state in"
                    + " PostgreSQL instead of the data directory's SQLite store; gateways on one database are"
                    + " replicas")
    String storeUrl;

    @Option(names = "--store-user", paramLabel = "USER", description = "the PostgreSQL user (with --store-url)")
    String storeUser;

    @Option(
            names = "--store-password-file",
            paramLabel = "FILE",
            description = "its password (with --store-url; owner-only, e.g. chmod 600)")
    String storePasswordFile;

    @Option(
            names = "--replica-lease-ttl",
            paramLabel = "DUR",
            description =
                    "with --store-url: how long a replica's leases live unless renewed (every third of it), so how"
                            + " long a dead replica's sandboxes and leadership wait for another (default 10s; 1s to 10m)")
    String replicaLeaseTtl;

    @Option(names = "--ready-file", paramLabel = "FILE", description = "write HOST:PORT to FILE once serving")
    String readyFile;

    @Option(
            names = "--metrics-listen",
            paramLabel = "HOST:PORT",
            description = "serve Prometheus metrics on http://HOST:PORT/metrics (default: off)")
    String metricsListen;

    @Option(
            names = "--readiness-interval",
            paramLabel = "DUR",
            description = "how often the driver's engine is checked; while it is unavailable the health of"
                    + " sandgate.v1.SandboxService is NOT_SERVING (default 5s)")
    String readinessInterval;

    @Option(
            names = "--rotate-token-key",
            description = "make a new current token key, keep the old one as previous, and exit (restart the gateway"
                    + " to use it; tokens of both keys verify)")
    boolean rotateTokenKey;

    @Option(
            names = {"-h", "--help"},
            usageHelp = true,
            description = "print this text and exit")
    boolean help;

    @Option(names = "--version", versionHelp = true, description = "print the version and exit")
    boolean version;

    @Mixin(name = "security")
    Security security = new Security();

    @Mixin(name = "test-switches")
    TestSwitches testSwitches = new TestSwitches();

    /** The security options: {@code SecuritySettings} checks them together. */
    static final class Security {
        static final String HEADING =
                "Security (see docs/operations.md; a gateway beyond loopback needs TLS and an" + " authenticator):";

        @Option(
                names = "--tls-cert",
                paramLabel = "FILE",
                description = "serve TLS with this certificate chain (PEM), with --tls-key; both are reloaded when"
                        + " they change on disk")
        String tlsCert;

        @Option(names = "--tls-key", paramLabel = "FILE", description = "the certificate's PKCS#8 key (PEM)")
        String tlsKey;

        @Option(
                names = "--tls-client-ca",
                paramLabel = "FILE",
                description = "require client certificates signed by this CA (mTLS); the principal is the"
                        + " certificate's URI SAN, else its DNS SAN, else its subject CN")
        String tlsClientCa;

        @Option(
                names = "--tls-client-auth",
                paramLabel = "MODE",
                description = "require (default) or optional: let clients without a certificate authenticate with a"
                        + " bearer token instead")
        String tlsClientAuth;

        @Option(
                names = "--jwt-jwks",
                paramLabel = "FILE|URL",
                description = "accept bearer JWTs signed by a key of this JWKS (file reloaded on change; https URL"
                        + " cached); with --jwt-issuer and --jwt-audience")
        String jwtJwks;

        @Option(names = "--jwt-issuer", paramLabel = "ISS", description = "the exact iss accepted JWTs carry")
        String jwtIssuer;

        @Option(names = "--jwt-audience", paramLabel = "AUD", description = "an aud accepted JWTs carry")
        String jwtAudience;

        @Option(
                names = "--jwt-clock-skew",
                paramLabel = "DUR",
                description = "clock skew allowed on exp/nbf (default 60s, at most 5m)")
        String jwtClockSkew;

        @Option(
                names = "--jwt-algorithms",
                paramLabel = "LIST",
                description = "accepted algorithms (default RS256,ES256; asymmetric only)")
        String jwtAlgorithms;

        @Option(
                names = "--jwt-principal-claim",
                paramLabel = "C",
                description = "the claim naming the principal (default sub)")
        String jwtPrincipalClaim;

        @Option(
                names = "--jwt-groups-claim",
                paramLabel = "C",
                description = "the claim listing its groups (default groups)")
        String jwtGroupsClaim;

        @Option(
                names = "--api-token-file",
                paramLabel = "FILE",
                description = "static API tokens, stored as \"NAME sha256:HEX [GROUPS]\" lines")
        String apiTokenFile;

        @Option(
                names = "--authz-policy",
                paramLabel = "FILE",
                description = "who may do what in which workspace (JSON, reloaded on change)")
        String authzPolicy;

        @Option(
                names = "--security-reload-period",
                paramLabel = "DUR",
                description = "how often the files above are checked for changes (default 10s)")
        String securityReloadPeriod;

        @Option(
                names = "--insecure",
                converter = Switch.class,
                description = "allow listening beyond loopback without TLS or without authentication (warned at every"
                        + " start)")
        boolean insecure;
    }

    /** Switches for the crash tests, refused unless enabled explicitly. */
    static final class TestSwitches {
        static final String HEADING =
                "Test switches (refused unless --enable-test-faults /" + " SANDGATE_ENABLE_TEST_FAULTS=true is given):";

        @Option(
                names = "--enable-test-faults",
                converter = Switch.class,
                description = "allow a fault point to be armed")
        boolean enableTestFaults;

        @Option(
                names = "--fault-point",
                paramLabel = "NAME",
                description = "halt the process (exit status 86) when the lifecycle reaches NAME:"
                        + " create|stop|start|delete . after-intent|after-driver (e.g. stop.after-intent)")
        String faultPoint;
    }

    /**
     * A switch's value after "=" ({@code --insecure=false}): true, yes or 1, or false, no or 0, as in the environment
     * and the configuration file.
     */
    static final class Switch implements ITypeConverter<Boolean> {
        @Override
        public Boolean convert(String value) {
            return switch (value.strip().toLowerCase(Locale.ROOT)) {
                case "true", "yes", "1" -> true;
                case "false", "no", "0" -> false;
                default -> throw new TypeConversionException("must be true or false, got '" + value + "'");
            };
        }
    }

    /**
     * What the command line says.
     *
     * @param settings the settings it gives, by name ({@code listen}, {@code insecure}, ...); a switch is "true" or
     *     "false"
     * @param driverProperties the {@code --driver-property} values, in order
     * @param config the {@code --config} file
     * @param help whether {@code --help} is given
     * @param rotateTokenKey whether {@code --rotate-token-key} is given
     */
    record Given(
            Map<String, String> settings,
            Map<String, String> driverProperties,
            Optional<String> config,
            boolean help,
            boolean rotateTokenKey) {}

    /** Splits the command line. Throws {@link ConfigException} naming the option that is unknown or lacks a value. */
    static Given parse(String[] args) {
        GatewayOptions options = new GatewayOptions();
        ParseResult result;
        try {
            result = new CommandLine(options)
                    // As before picocli: the last of a repeated option wins, a value may begin with "--", "@FILE"
                    // is a value, not a file of arguments, and "-hx" is not "-h -x".
                    .setOverwrittenOptionsAllowed(true)
                    .setPosixClusteredShortOptionsAllowed(false)
                    .setAllowOptionsAsOptionParameters(true)
                    .setExpandAtFiles(false)
                    .parseArgs(args);
        } catch (UnmatchedArgumentException e) {
            String first = e.getUnmatched().getFirst();
            String name = first.split("=", 2)[0];
            if (!first.startsWith("--")
                    || e.getCommandLine().getCommandSpec().optionsMap().containsKey(name)) {
                // A known option here came after "--", the end of the options.
                throw new ConfigException("unexpected argument '" + first + "' (see --help)");
            }
            // Without picocli's suggestions: they go by spelling alone (--verbose: "did you mean --version?").
            throw new ConfigException("unknown option " + name + " (see --help)");
        } catch (MissingParameterException e) {
            throw new ConfigException(((OptionSpec) e.getMissing().getFirst()).longestName() + " needs a value", e);
        } catch (ParameterException e) {
            if (e.getCause() instanceof TypeConversionException invalid
                    && e.getArgSpec() instanceof OptionSpec option) {
                throw new ConfigException(name(option) + ": " + invalid.getMessage(), e);
            }
            throw new ConfigException(e.getMessage() + " (see --help)", e);
        }
        Map<String, String> settings = new LinkedHashMap<>();
        for (OptionSpec option : result.matchedOptions()) {
            if (SETTINGS.contains(name(option))) {
                Object value = option.getValue();
                settings.put(name(option), String.valueOf(value));
            }
        }
        Map<String, String> driverProperties = new LinkedHashMap<>();
        for (String property : options.driverProperties) {
            int eq = property.indexOf('=');
            if (eq <= 0) {
                throw new ConfigException("--driver-property takes key=value, got '" + property + "'");
            }
            driverProperties.put(property.substring(0, eq), property.substring(eq + 1));
        }
        return new Given(
                settings, driverProperties, Optional.ofNullable(options.config), options.help, options.rotateTokenKey);
    }

    /**
     * The text of {@code --help}: picocli's, with the security options and the test switches in sections of their
     * own, and "--name VALUE" as the options are written in the documentation (a value may also follow "=").
     */
    static String usage() {
        CommandLine line =
                new CommandLine(new GatewayOptions()).setSeparator(" ").setUsageHelpLongOptionsMaxWidth(28);
        line.getHelpSectionMap()
                .put(CommandLine.Model.UsageMessageSpec.SECTION_KEY_OPTION_LIST, GatewayOptions::sections);
        return line.getUsageMessage(Help.Ansi.OFF);
    }

    private static String sections(Help help) {
        CommandSpec spec = help.commandSpec();
        CommandSpec security = spec.mixins().get("security");
        CommandSpec testSwitches = spec.mixins().get("test-switches");
        Set<String> elsewhere = new HashSet<>();
        security.options().forEach(option -> elsewhere.add(option.longestName()));
        testSwitches.options().forEach(option -> elsewhere.add(option.longestName()));
        return help.optionListExcludingGroups(spec.options().stream()
                        .filter(option -> !elsewhere.contains(option.longestName()))
                        .toList())
                + System.lineSeparator()
                + Security.HEADING
                + System.lineSeparator()
                + help.optionListExcludingGroups(security.options())
                + System.lineSeparator()
                + TestSwitches.HEADING
                + System.lineSeparator()
                + help.optionListExcludingGroups(testSwitches.options());
    }

    private static CommandSpec spec() {
        return CommandSpec.forAnnotatedObject(new GatewayOptions());
    }

    /** The option's name without its dashes: the name of its setting. */
    private static String name(OptionSpec option) {
        return option.longestName().substring(2);
    }
}
