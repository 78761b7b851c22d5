package dev.sandgate.testing.replicas;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.testing.StoreSchema;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.ServiceLoader;
import java.util.concurrent.TimeUnit;

/**
 * Gateway replicas under load, one of them killed (SIGKILL) several times, sometimes the leader, then restarted; then
 * the checks of {@link KillRunChecks}. A run is bounded in time (its settings' duration, plus the time the clients
 * take to finish their last request and the replicas to settle) and in the number of kills.
 *
 * @see KillRunChecks for what a correct gateway must give, and may legitimately repeat, after a kill
 */
public final class ReplicaKillRun {
    /**
     * How to run.
     *
     * @param root a fresh directory for the replicas' data directories, logs, token key file and the driver journal
     * @param classPath the gateway processes' class path: the gateway, the driver {@code delegate}
     * @param mainClass the gateway's main class
     * @param delegate the real driver's name; its provider must also be on this JVM's class path (to list the backend)
     * @param delegateProperties its settings
     * @param gatewayId the replicas' gateway id, stamped on every runtime resource they make
     * @param spec what the clients create
     * @param replicas how many gateway processes
     * @param clients how many client threads
     * @param duration how long the clients go on
     * @param kills how many times a replica is killed, at even intervals; every second kill takes the leader
     */
    public record Settings(
            Path root,
            String classPath,
            String mainClass,
            String delegate,
            Map<String, String> delegateProperties,
            String gatewayId,
            SandboxSpec spec,
            int replicas,
            int clients,
            Duration duration,
            int kills) {}

    /** What a run did, for the test's report. */
    public record Report(
            int requests,
            Map<String, Long> byMethod,
            int kills,
            int leaderKills,
            int unexpectedExits,
            int failovers,
            int retries,
            int replaysDuringRun,
            int duplicates,
            int gets,
            int staleRefusals,
            int watchReopens,
            int driverCalls,
            int interruptedCalls,
            int recoveredIntents,
            int finalSandboxes,
            Duration took) {}

    private ReplicaKillRun() {}

    /** Runs, checks, and returns what happened; fails with every broken guarantee listed. */
    public static Report run(Settings settings) throws Exception {
        long began = System.nanoTime();
        String gatewayId = settings.gatewayId();
        try (StoreSchema store = StoreSchema.create();
                ReplicaCluster cluster = new ReplicaCluster(
                        settings.root(),
                        settings.classPath(),
                        settings.mainClass(),
                        settings.replicas(),
                        gatewayId,
                        store,
                        settings.delegate(),
                        settings.delegateProperties());
                ComputeDriver backend = verifier(settings, gatewayId)) {
            cluster.start();
            Tally tally = new Tally();
            List<WatchRecorder> watches = new ArrayList<>();
            for (int slot = 0; slot < settings.replicas(); slot++) {
                WatchRecorder watch = new WatchRecorder(slot, cluster, tally);
                watch.keepOpen();
                watches.add(watch);
            }
            long stopAt = System.nanoTime() + settings.duration().toNanos();
            List<LifecycleClient> clients = new ArrayList<>();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < settings.clients(); i++) {
                LifecycleClient client =
                        new LifecycleClient(i, cluster, settings.spec(), tally, () -> System.nanoTime() < stopAt);
                clients.add(client);
                threads.add(Thread.ofPlatform().name("kill-client-" + i).start(client));
            }
            int[] killed = killOnSchedule(settings, cluster, watches, stopAt);
            for (Thread thread : threads) {
                while (thread.isAlive()) {
                    thread.join(1000);
                    cluster.restartExited();
                    watches.forEach(WatchRecorder::keepOpen);
                }
            }
            System.out.printf(
                    "replica kill run: %d requests, %d kills (%d of the leader), %d exits, %d failovers, %d retries,"
                            + " %d replayed, %d duplicated, %d stale refused, %.0f s; checking%n",
                    tally.requests.size(),
                    killed[0],
                    killed[1],
                    cluster.unexpectedExits(),
                    tally.failovers.get(),
                    tally.retries.get(),
                    tally.replays.get(),
                    tally.duplicates.get(),
                    tally.staleRefusals.get(),
                    (System.nanoTime() - began) / 1e9);
            KillRunChecks checks = new KillRunChecks(cluster, backend, tally, clients, watches);
            try {
                KillRunChecks.Counts counts = checks.verify();
                return new Report(
                        tally.requests.size(),
                        counts.byMethod(),
                        killed[0],
                        killed[1],
                        cluster.unexpectedExits(),
                        tally.failovers.get(),
                        tally.retries.get(),
                        tally.replays.get(),
                        tally.duplicates.get(),
                        tally.gets.get(),
                        tally.staleRefusals.get(),
                        tally.watchReopens.get(),
                        counts.driverCalls(),
                        counts.interruptedCalls(),
                        counts.recoveredIntents(),
                        counts.finalSandboxes(),
                        Duration.ofNanos(System.nanoTime() - began));
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "\n" + cluster.logTails(), e);
            } finally {
                watches.forEach(WatchRecorder::close);
            }
        }
    }

    /**
     * Kills a replica {@code settings.kills()} times, evenly over the duration: the leader every second time, another
     * replica otherwise; each is restarted after a pause of up to 3 s, while the clients go on.
     */
    private static int[] killOnSchedule(
            Settings settings, ReplicaCluster cluster, List<WatchRecorder> watches, long stopAt) throws Exception {
        Random random = new Random();
        long interval = settings.duration().toNanos() / (settings.kills() + 1);
        int kills = 0;
        int leaderKills = 0;
        for (int k = 1; k <= settings.kills(); k++) {
            long at = stopAt - settings.duration().toNanos() + k * interval;
            while (System.nanoTime() < at) {
                Thread.sleep(200);
                cluster.restartExited();
                watches.forEach(WatchRecorder::keepOpen);
            }
            Optional<Integer> leader = cluster.leader();
            int slot;
            if (k % 2 == 0 && leader.isPresent()) {
                slot = leader.get();
            } else {
                slot = random.nextInt(settings.replicas());
                if (leader.isPresent() && slot == leader.get()) {
                    slot = (slot + 1) % settings.replicas();
                }
            }
            if (cluster.kill(slot)) {
                leaderKills++;
            }
            kills++;
            Thread.sleep(500 + random.nextInt(2500));
            cluster.restart(slot);
            watches.get(slot).keepOpen();
        }
        return new int[] {kills, leaderKills};
    }

    /** A driver over the same backend and gateway id, in this JVM, to list what the backend holds. */
    private static ComputeDriver verifier(Settings settings, String gatewayId) {
        ComputeDriverProvider provider = ServiceLoader.load(ComputeDriverProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p.name().equals(settings.delegate()))
                .findFirst()
                .orElseThrow();
        return provider.create(new DriverSettings(settings.delegateProperties()), DriverContext.of(gatewayId));
    }

    static List<SandboxObservation> runtime(ComputeDriver backend) {
        return backend.list();
    }

    static void pause(long millis) {
        try {
            TimeUnit.MILLISECONDS.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            assertThat(e).as("interrupted").isNull();
        }
    }
}
