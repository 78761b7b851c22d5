package dev.sandgate.gateway.server;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.lifecycle.ChangeFollower;
import dev.sandgate.gateway.lifecycle.FaultInjector;
import dev.sandgate.gateway.lifecycle.Lifecycle;
import dev.sandgate.gateway.lifecycle.LifecycleSettings;
import dev.sandgate.gateway.lifecycle.ReplicaCoordination;
import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.metrics.MeteredComputeDriver;
import dev.sandgate.gateway.metrics.MeteredStore;
import dev.sandgate.gateway.metrics.PrometheusMetrics;
import dev.sandgate.gateway.store.PostgresStore;
import dev.sandgate.gateway.store.SqliteStore;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreException;
import dev.sandgate.gateway.token.ExecutionTokens;
import dev.sandgate.gateway.token.OwnerOnly;
import dev.sandgate.gateway.token.TokenKeys;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.MutationHook;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running gateway core: the data directory (locked, so that only one gateway uses it), the store, the token keys,
 * the driver and the lifecycle, recovered and ready to serve. {@link GatewayServer} puts it on the network.
 */
public final class Gateway implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Gateway.class);
    private static final String DATABASE_FILE = "sandgate.db";
    /** Held by the running gateway: a second one on the same data directory refuses to start. */
    static final String LOCK_FILE = "gateway.lock";

    private static final String GATEWAY_ID_KEY = "gateway_id";
    /** The exit status of a replica that lost the leader lease: restarted, it rejoins as a follower. */
    static final int LOST_LEADERSHIP_EXIT = 75;

    private final ReplicaCoordination coordination;
    /** Null on SQLite, where changes are streamed in process. */
    private final ChangeFollower follower;

    private final FileChannel lockChannel;
    private final FileLock lock;
    private final Store store;
    private final ComputeDriver driver;
    private final Lifecycle lifecycle;
    private final String gatewayId;
    private final Operability operability;
    /** Null without a metrics port. */
    private final PrometheusMetrics metrics;

    private Gateway(
            ReplicaCoordination coordination,
            ChangeFollower follower,
            FileChannel lockChannel,
            FileLock lock,
            Store store,
            ComputeDriver driver,
            Lifecycle lifecycle,
            String gatewayId,
            Operability operability,
            PrometheusMetrics metrics) {
        this.coordination = coordination;
        this.follower = follower;
        this.operability = operability;
        this.metrics = metrics;
        this.lockChannel = lockChannel;
        this.lock = lock;
        this.store = store;
        this.driver = driver;
        this.lifecycle = lifecycle;
        this.gatewayId = gatewayId;
    }

    /** Opens the gateway described by {@code config}, selecting its driver through {@link DriverSelector}. */
    public static Gateway open(GatewaySettings config) {
        // Selected (availability and settings checked) before the data directory is touched, so that a start
        // refused for its driver leaves nothing behind.
        DriverSelector.Selection selection =
                DriverSelector.select(config.driverName(), config.driverConfig(), Gateway.class.getClassLoader());
        ComputeDriverProvider provider = selection.provider();
        log.info("driver {} selected: {}", provider.name(), selection.reason());
        selection.skipped().forEach(skipped -> log.info("driver not selected: {}", skipped));
        return open(
                config, Clock.systemUTC(), () -> provider.availability(config.driverConfig()), (gatewayId, clock) -> {
                    try {
                        return new NamedDriver(
                                provider.name(),
                                provider.create(
                                        config.driverConfig(), new DriverContext(gatewayId, clock, MutationHook.NONE)));
                    } catch (DriverException e) {
                        throw new ConfigException(
                                "driver '" + provider.name() + "' cannot start: " + e.getMessage(), e);
                    }
                });
    }

    /** A driver and the name it is known by. */
    public record NamedDriver(String name, ComputeDriver driver) {
        public NamedDriver {
            requireNonNull(name, "name is null");
            requireNonNull(driver, "driver is null");
        }
    }

    /** Makes the driver once the gateway id is known. */
    @FunctionalInterface
    public interface DriverFactory {
        NamedDriver create(String gatewayId, Clock clock);
    }

    /** Opens a gateway with a driver made by {@code drivers} (tests pass their own), its engine taken as available. */
    public static Gateway open(GatewaySettings config, Clock clock, DriverFactory drivers) {
        return open(config, clock, () -> Availability.available("not checked"), drivers);
    }

    /**
     * What operating the gateway needs beyond its API: the metrics observer (a no-op without a metrics port), the check
     * of the driver's engine and how often readiness runs it ({@link EngineReadiness}).
     */
    public record Operability(
            GatewayObserver observer, Supplier<Availability> engineCheck, Duration readinessInterval) {}

    public Operability operability() {
        return operability;
    }

    /** Opens a gateway with a driver made by {@code drivers}, whose engine {@code engineCheck} asks about. */
    public static Gateway open(
            GatewaySettings config, Clock clock, Supplier<Availability> engineCheck, DriverFactory drivers) {
        Path dataDir = config.dataDir().toAbsolutePath();
        FileChannel channel = null;
        FileLock lock = null;
        Store store = null;
        NamedDriver named = null;
        PrometheusMetrics metrics = null;
        ReplicaCoordination coordination = ReplicaCoordination.single();
        ChangeFollower follower = null;
        try {
            createPrivateDirectory(dataDir);
            channel = openLockFile(dataDir.resolve(LOCK_FILE));
            lock = LockHolder.tryLock(channel);
            if (lock == null) {
                throw new ConfigException("another gateway (" + LockHolder.describe(dataDir.resolve(LOCK_FILE))
                        + ") is using the data directory " + dataDir);
            }
            LockHolder.write(channel);
            if (config.postgres().isPresent()) {
                store = openPostgres(config.postgres().get());
                log.info(
                        "store: PostgreSQL at {} as {}",
                        config.postgres().get().url(),
                        config.postgres().get().user());
            } else {
                keepStorePrivate(dataDir);
                store = new SqliteStore(dataDir.resolve(DATABASE_FILE), config.storeSynchronous());
            }
            String gatewayId = gatewayId(store, config.gatewayId());
            if (config.postgres().isPresent()) {
                // Leases live replica-lease-ttl unless renewed (every third of it): how long a dead replica's sandboxes
                // wait before another replica finishes them, and a dead leader's work before another leads.
                coordination = new ReplicaCoordination(
                        store,
                        ReplicaCoordination.newReplicaId(),
                        config.postgres().get().replicaLeaseTtl());
                log.info("replica {} of gateway {}", coordination.replicaId(), gatewayId);
            }
            TokenKeys keys = TokenKeys.loadOrCreate(config.tokenKeyFile());
            named = drivers.create(gatewayId, clock);
            FaultInjector faults = config.faultPoint().map(FaultInjector::armed).orElse(FaultInjector.disabled());
            if (faults.armedPoint().isPresent()) {
                log.warn(
                        "TEST FAULT ARMED: the process halts at {}",
                        faults.armedPoint().get().externalName());
            }
            metrics = config.metricsListen().isEmpty()
                    ? null
                    : PrometheusMetrics.start(config.metricsListen().get(), named.name());
            GatewayObserver observer = metrics == null ? GatewayObserver.NONE : metrics;
            Lifecycle lifecycle = new Lifecycle(
                    metrics == null ? store : new MeteredStore(store, metrics),
                    metrics == null ? named.driver() : new MeteredComputeDriver(named.driver(), metrics),
                    named.name(),
                    new ExecutionTokens(keys),
                    faults,
                    clock,
                    LifecycleSettings.DEFAULTS
                            .withDriverTimeout(config.driverTimeout())
                            .withRequestRetention(config.requestRetention()),
                    coordination);
            lifecycle.observeWith(observer);
            if (metrics != null) {
                metrics.countSandboxes(store);
                log.info(
                        "serving Prometheus metrics on http://{}:{}/metrics",
                        config.metricsListen().get().getHostString(),
                        metrics.port());
            }
            if (store instanceof PostgresStore postgres) {
                // Every replica's changes reach this replica's watchers through the store's change log.
                ReplicaCoordination leading = coordination;
                follower = new ChangeFollower(
                        postgres::openChangeLog,
                        lifecycle.hub(),
                        () -> leading.leaderLease().isPresent(),
                        lifecycle::observer);
            }
            coordination.lead(lifecycle::recover, lifecycle::recoverOrphans, Gateway::leadershipLost);
            log.info("gateway {} opened: driver={} data-dir={}", gatewayId, named.name(), dataDir);
            return new Gateway(
                    coordination,
                    follower,
                    channel,
                    lock,
                    store,
                    named.driver(),
                    lifecycle,
                    gatewayId,
                    new Operability(observer, engineCheck, config.readinessInterval()),
                    metrics);
        } catch (IOException e) {
            closeQuietly(follower);
            coordination.close();
            closeQuietly(metrics);
            closeQuietly(named, store, lock, channel);
            throw new UncheckedIOException(
                    "cannot open the data directory " + dataDir + ": " + IoReasons.describe(e), e);
        } catch (RuntimeException e) {
            closeQuietly(follower);
            coordination.close();
            closeQuietly(metrics);
            closeQuietly(named, store, lock, channel);
            throw e;
        }
    }

    /**
     * Another replica took the leader lease while this one still ran the leader's work (it could not renew in time):
     * this process stops at once, so that two replicas never watch and reconcile together; restarted, it serves as a
     * follower.
     */
    private static void leadershipLost() {
        log.error(
                "this replica lost the leader lease to another replica; exiting with status {} to rejoin as a follower",
                LOST_LEADERSHIP_EXIT);
        Thread.ofPlatform().start(() -> System.exit(LOST_LEADERSHIP_EXIT));
    }

    private static String gatewayId(Store store, Optional<String> configured) {
        return store.write(tx -> {
            Optional<String> stored = tx.meta(GATEWAY_ID_KEY);
            if (configured.isPresent()) {
                if (stored.isPresent() && !stored.get().equals(configured.get())) {
                    throw new ConfigException("gateway-id " + configured.get() + " differs from " + stored.get()
                            + ", the id this data directory was created with; its sandboxes carry that id");
                }
                tx.putMeta(GATEWAY_ID_KEY, configured.get());
                return configured.get();
            }
            if (stored.isPresent()) {
                return stored.get();
            }
            byte[] random = new byte[4];
            ThreadLocalRandom.current().nextBytes(random);
            String generated = "gw-" + HexFormat.of().formatHex(random);
            tx.putMeta(GATEWAY_ID_KEY, generated);
            return generated;
        });
    }

    /** Opens the PostgreSQL store; a failure to connect names the settings that say where and as whom. */
    private static Store openPostgres(GatewaySettings.PostgresOptions options) {
        PostgresStore.Settings settings = postgresSettings(options);
        try {
            return new PostgresStore(settings);
        } catch (StoreException e) {
            if (e.getCause() == null) {
                throw e;
            }
            throw new StoreException(
                    e.getMessage() + " (see store-url, store-user, store-password-file)", e.getCause());
        }
    }

    /** The PostgreSQL store's settings, its password read from the owner-only file that store-password-file names. */
    private static PostgresStore.Settings postgresSettings(GatewaySettings.PostgresOptions options) {
        Optional<String> password = Optional.empty();
        if (options.passwordFile().isPresent()) {
            Path file = options.passwordFile().get();
            if (!Files.isRegularFile(file)) {
                throw new ConfigException("store-password-file " + file + " is not a file");
            }
            try {
                OwnerOnly.require(file, "store password file (store-password-file)");
                String text = Files.readString(file, StandardCharsets.UTF_8).strip();
                if (text.isEmpty()) {
                    throw new ConfigException("store-password-file " + file + " is empty");
                }
                password = Optional.of(text);
            } catch (IllegalStateException e) {
                throw new ConfigException(e.getMessage(), e);
            } catch (IOException e) {
                throw new ConfigException("cannot read store-password-file " + file + ": " + IoReasons.describe(e), e);
            }
        }
        return new PostgresStore.Settings(options.url(), options.user(), password);
    }

    /**
     * Makes the store's files owner-only, whatever the data directory's permissions: they hold every sandbox's spec,
     * environment values included. SQLite creates its log and shared-memory files with the database file's
     * permissions, so a database file created here as owner-only keeps them so too. Files found readable by others
     * are tightened, with a warning; so is a data directory others may enter (the operator may have created it).
     */
    private static void keepStorePrivate(Path dataDir) throws IOException {
        Set<PosixFilePermission> ownerOnly = PosixFilePermissions.fromString("rw-------");
        Path database = dataDir.resolve(DATABASE_FILE);
        try {
            if (!Files.exists(database)) {
                // An empty file is an empty database to SQLite.
                Files.createFile(database, PosixFilePermissions.asFileAttribute(ownerOnly));
            }
            for (String suffix : List.of("", "-wal", "-shm")) {
                Path file = dataDir.resolve(DATABASE_FILE + suffix);
                if (Files.exists(file) && !Files.getPosixFilePermissions(file).equals(ownerOnly)) {
                    log.warn(
                            "{} was {}: made it owner-only (rw-------), as it holds sandboxes' environment values",
                            file,
                            PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
                    Files.setPosixFilePermissions(file, ownerOnly);
                }
            }
            Set<PosixFilePermission> directory = Files.getPosixFilePermissions(dataDir);
            if (directory.stream()
                    .anyMatch(p -> p.name().startsWith("GROUP") || p.name().startsWith("OTHERS"))) {
                log.warn(
                        "the data directory {} is {}: its files are owner-only, but consider chmod 700",
                        dataDir,
                        PosixFilePermissions.toString(directory));
            }
        } catch (UnsupportedOperationException e) {
            // Not a POSIX file system.
        }
    }

    private static FileChannel openLockFile(Path file) throws IOException {
        try {
            return FileChannel.open(
                    file,
                    Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            // Not a POSIX file system.
            return FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        }
    }

    private static void createPrivateDirectory(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            return;
        }
        Files.createDirectories(dir);
        try {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        } catch (UnsupportedOperationException e) {
            // Not a POSIX file system.
        }
    }

    public Lifecycle lifecycle() {
        return lifecycle;
    }

    public String gatewayId() {
        return gatewayId;
    }

    @Override
    public void close() {
        closeQuietly(follower);
        lifecycle.close();
        coordination.close();
        closeQuietly(new NamedDriver(lifecycle.driverName(), driver), store, lock, lockChannel);
        closeQuietly(metrics);
    }

    private static void closeQuietly(ChangeFollower follower) {
        if (follower != null) {
            follower.close();
        }
    }

    private static void closeQuietly(PrometheusMetrics metrics) {
        if (metrics != null) {
            metrics.close();
        }
    }

    private static void closeQuietly(NamedDriver named, Store store, FileLock lock, FileChannel channel) {
        if (named != null) {
            try {
                named.driver().close();
            } catch (RuntimeException e) {
                log.warn("closing driver {} failed", named.name(), e);
            }
        }
        if (store != null) {
            store.close();
        }
        try {
            if (lock != null) {
                lock.release();
            }
            if (channel != null) {
                channel.close();
            }
        } catch (IOException e) {
            log.warn("releasing the data directory lock failed", e);
        }
    }
}
