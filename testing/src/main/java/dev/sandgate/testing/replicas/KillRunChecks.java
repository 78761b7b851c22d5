package dev.sandgate.testing.replicas;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.testing.GatewayProcess;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * What a correct gateway gives after replicas were killed under load, checked once the clients finished and the
 * surviving replicas settled. Every broken guarantee is listed, then the check fails.
 *
 * <ul>
 *   <li><b>Nothing lost:</b> every replica lists exactly the sandboxes the clients' acknowledged answers leave, each
 *       at the generation and running or stopped as acknowledged (and every read during the run showed that too).
 *   <li><b>No orphan:</b> the backend holds a resource for exactly the stored sandboxes, each at the stored generation,
 *       running exactly when the store says READY.
 *   <li><b>Replays:</b> every request sent again with its request_id answers the same (a success marked replayed),
 *       and GetOperation returns that answer, the two on two replicas, each replica in turn; two copies sent at once to two replicas answered the
 *       same.
 *   <li><b>No generation regression:</b> a start answers the next generation, a read the acknowledged one, a watch
 *       never goes back (see {@link WatchRecorder}).
 *   <li><b>Stale tokens</b> (an older execution's) are refused with STALE_EXECUTION by every replica, during the run
 *       and after.
 *   <li><b>No duplicate driver call per request_id.</b> Each acknowledged request that the gateway carried out with
 *       the driver (a create, a start that launched generation G, a stop of generation G, a delete) owns one driver
 *       intent, and every driver mutation in the journal belongs to exactly one such request. An intent's driver call
 *       is made once. What a correct gateway may repeat, and only with the same recorded input (same generation,
 *       same policy digest, same expected generation): a call whose process died after it began (killed mid-call,
 *       or after the call returned but perhaps before the result was committed: another replica, or the same one
 *       restarted, finishes the transition left pending with its recorded input), and a call that failed with a
 *       transient driver error (the gateway retries those). Never two calls of one intent at once, never again
 *       after one that returned in a process that lived on, never a new generation for an old request. At most one
 *       call of an intent reports that it changed something (a re-run finds the change done: the drivers are
 *       idempotent). The run expects no permanent driver refusal: after one, a new request's call of the same intent
 *       (the same stop of the same generation) is reported as a repeat too.
 * </ul>
 */
final class KillRunChecks {
    /** Counts for the report. */
    record Counts(
            Map<String, Long> byMethod,
            int driverCalls,
            int interruptedCalls,
            int recoveredIntents,
            int finalSandboxes) {}

    private final ReplicaCluster cluster;
    private final ComputeDriver backend;
    private final Tally tally;
    private final List<LifecycleClient> clients;
    private final List<WatchRecorder> watches;
    private final List<String> problems = new ArrayList<>();

    KillRunChecks(
            ReplicaCluster cluster,
            ComputeDriver backend,
            Tally tally,
            List<LifecycleClient> clients,
            List<WatchRecorder> watches) {
        this.cluster = cluster;
        this.backend = backend;
        this.tally = tally;
        this.clients = clients;
        this.watches = watches;
    }

    Counts verify() throws Exception {
        problems.addAll(tally.violations);
        Map<String, Sandbox> stored = settle();
        nothingLost(stored);
        noOrphan(stored);
        replays();
        staleTokens();
        Counts counts = driverCalls();
        watches(stored);
        assertThat(problems)
                .as("broken guarantees (%d requests, journal %s)", tally.requests.size(), cluster.journal())
                .isEmpty();
        return counts;
    }

    /** Waits until no transition is pending on any sandbox (at most 2 min), and returns what replica 0 lists. */
    private Map<String, Sandbox> settle() throws Exception {
        Set<Phase> moving = Set.of(Phase.STARTING, Phase.STOPPING, Phase.DELETING);
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (true) {
            cluster.restartExited();
            Map<String, Sandbox> listed = list(cluster.process(0));
            if (listed.values().stream().noneMatch(s -> moving.contains(s.getPhase()))
                    || System.nanoTime() > deadline) {
                return listed;
            }
            ReplicaKillRun.pause(500);
        }
    }

    private static Map<String, Sandbox> list(GatewayProcess process) {
        return process
                .stub()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setWorkspace(LifecycleClient.WORKSPACE)
                        .setPageSize(1000)
                        .build())
                .getSandboxesList()
                .stream()
                .collect(Collectors.toMap(Sandbox::getId, Function.identity(), (a, b) -> a, TreeMap::new));
    }

    private void nothingLost(Map<String, Sandbox> stored) {
        Map<String, LifecycleClient.Owned> expected = new TreeMap<>();
        clients.forEach(client -> client.owned().forEach(owned -> expected.put(owned.id, owned)));
        for (int slot = 0; slot < cluster.size(); slot++) {
            Map<String, Sandbox> listed = slot == 0 ? stored : list(cluster.process(slot));
            if (!listed.keySet().equals(expected.keySet())) {
                problems.add("replica " + slot + " lists " + listed.keySet() + ", the acknowledged answers leave "
                        + expected.keySet());
            }
        }
        expected.forEach((id, owned) -> {
            Sandbox sandbox = stored.get(id);
            if (sandbox == null) {
                return;
            }
            Phase phase = sandbox.getPhase();
            boolean running = phase == Phase.READY || phase == Phase.PROVISIONING;
            long generation = sandbox.getCurrentExecution().getGeneration();
            if (generation != owned.generation() || running != owned.running) {
                problems.add("sandbox " + owned.name + " is stored at generation " + generation + " " + phase
                        + ", acknowledged: generation " + owned.generation()
                        + (owned.running ? " running" : " stopped"));
            }
        });
    }

    private void noOrphan(Map<String, Sandbox> stored) {
        Map<String, SandboxObservation> runtime = new TreeMap<>();
        for (SandboxObservation observation : ReplicaKillRun.runtime(backend)) {
            if (observation.ref().workspace().equals(LifecycleClient.WORKSPACE)) {
                runtime.put(observation.ref().id(), observation);
            }
        }
        if (!runtime.keySet().equals(stored.keySet())) {
            problems.add("orphans or missing resources: the backend holds " + runtime.keySet() + ", the store "
                    + stored.keySet());
        }
        stored.forEach((id, sandbox) -> {
            SandboxObservation observed = runtime.get(id);
            if (observed == null) {
                return;
            }
            boolean ready = sandbox.getPhase() == Phase.READY || sandbox.getPhase() == Phase.PROVISIONING;
            boolean runs = observed.state() == SandboxState.RUNNING || observed.state() == SandboxState.PROVISIONING;
            if (observed.generation() != sandbox.getCurrentExecution().getGeneration() || ready != runs) {
                problems.add("sandbox " + sandbox.getName() + ": stored generation "
                        + sandbox.getCurrentExecution().getGeneration() + " " + sandbox.getPhase() + ", backend "
                        + observed.generation() + " " + observed.state());
            }
        });
    }

    /** Every request again, and its GetOperation, on two replicas, each replica in turn. */
    private void replays() {
        int next = 0;
        for (SentRequest sent : tally.requests) {
            int slot = next++ % cluster.size();
            Answer again = SentRequest.send(cluster.process(slot).stub(), sent.request());
            if (!again.sameAs(sent.answer()) || (again.ok() && !again.replayed())) {
                problems.add(sent.method() + " " + sent.requestId() + " answered " + sent.answer()
                        + ", sent again to replica " + slot + ": " + again);
            }
            int other = (slot + 1) % cluster.size();
            Operation operation = cluster.process(other)
                    .stub()
                    .getOperation(GetOperationRequest.newBuilder()
                            .setRequestId(sent.requestId())
                            .build());
            if (!operation.getDone() || !Answer.of(operation).sameAs(sent.answer())) {
                problems.add("GetOperation " + sent.requestId() + " on replica " + other + ": done="
                        + operation.getDone() + " " + Answer.of(operation) + ", answered " + sent.answer());
            }
        }
    }

    /** A stop bound to a token of an older execution, or of a deleted sandbox, is refused by every replica. */
    private void staleTokens() {
        List<String> deletedTokens = new ArrayList<>();
        clients.forEach(client -> client.deleted().forEach(d -> deletedTokens.add(d.tokens.getLast())));
        for (LifecycleClient client : clients) {
            for (LifecycleClient.Owned owned : client.owned()) {
                List<String> stale = new ArrayList<>(owned.tokens.subList(0, owned.tokens.size() - 1));
                if (!deletedTokens.isEmpty()) {
                    stale.add(deletedTokens.getFirst());
                }
                for (String token : stale) {
                    for (int slot = 0; slot < cluster.size(); slot++) {
                        Answer answer = SentRequest.send(
                                cluster.process(slot).stub(),
                                StopSandboxRequest.newBuilder()
                                        .setRequestId(UUID.randomUUID().toString())
                                        .setTarget(SandboxTarget.newBuilder().setId(owned.id))
                                        .setPrecondition(ExecutionPrecondition.newBuilder()
                                                .setExpectedExecutionToken(token))
                                        .build());
                        if (answer.code() != Status.Code.FAILED_PRECONDITION
                                || !answer.reason().equals("STALE_EXECUTION")) {
                            problems.add("replica " + slot + " answered a stale-token stop of " + owned.name + " with "
                                    + answer);
                        }
                    }
                }
            }
        }
    }

    private Counts driverCalls() throws Exception {
        DriverJournal.Calls calls = DriverJournal.read(cluster.journal());
        problems.addAll(calls.illegitimateRepeats());
        Map<DriverJournal.Intent, List<DriverJournal.Call>> intents = calls.byIntent();
        Map<DriverJournal.Intent, List<String>> owners = new HashMap<>();
        Map<String, Long> byMethod = new TreeMap<>();
        for (SentRequest sent : tally.requests) {
            byMethod.merge(sent.method() + (sent.answer().ok() ? "" : " refused"), 1L, Long::sum);
            sent.intent()
                    .ifPresent(intent -> owners.computeIfAbsent(intent, key -> new ArrayList<>())
                            .add(sent.requestId()));
        }
        owners.forEach((intent, requestIds) -> {
            if (Set.copyOf(requestIds).size() > 1) {
                problems.add(intent + " is the intent of several requests: " + requestIds);
            }
            if (!intents.containsKey(intent)) {
                problems.add(intent + " (request " + requestIds.getFirst() + ") was acknowledged but never called");
            }
        });
        intents.forEach((intent, list) -> {
            if (!owners.containsKey(intent)) {
                problems.add(intent + ": driver called " + list.size() + " time(s) for no acknowledged request");
            }
            long effects = list.stream().filter(DriverJournal.Call::effect).count();
            if (effects > 1) {
                problems.add(intent + ": " + effects + " driver calls changed something");
            }
        });
        int interrupted = (int) calls.calls().stream().filter(c -> c.end() < 0).count();
        int recovered =
                (int) intents.values().stream().filter(list -> list.size() > 1).count();
        int sandboxes = (int) clients.stream().mapToLong(c -> c.owned().size()).sum();
        return new Counts(byMethod, calls.calls().size(), interrupted, recovered, sandboxes);
    }

    /**
     * Each replica's fresh watch starts with exactly the stored sandboxes at their stored resource versions, and each
     * replica's long-running watch has seen every sandbox's last change, or its removal, whichever replica made it.
     */
    private void watches(Map<String, Sandbox> stored) throws Exception {
        Map<String, Long> versions = new TreeMap<>();
        stored.forEach((id, sandbox) -> versions.put(id, sandbox.getResourceVersion()));
        for (int slot = 0; slot < cluster.size(); slot++) {
            Map<String, Long> snapshot = snapshot(cluster.process(slot));
            if (!snapshot.equals(versions)) {
                problems.add("a new watch on replica " + slot + " starts with " + snapshot + ", the store holds "
                        + versions);
            }
        }
        List<LifecycleClient.Owned> deleted = new ArrayList<>();
        clients.forEach(client -> deleted.addAll(client.deleted()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Map<Integer, Map<String, String>> missing = new LinkedHashMap<>();
        do {
            missing.clear();
            for (int slot = 0; slot < cluster.size(); slot++) {
                WatchRecorder watch = watches.get(slot);
                Map<String, String> behind = new TreeMap<>();
                versions.forEach((id, version) -> {
                    if (watch.seen(id) != version) {
                        behind.put(id, "seen " + watch.seen(id) + ", stored " + version);
                    }
                });
                deleted.forEach(sandbox -> {
                    long seen = watch.seen(sandbox.id);
                    if (seen != -1 && !(seen == 0 && watch.couldNotSee(sandbox.createSent, sandbox.deleteSent))) {
                        behind.put(sandbox.id, "removal not seen (last seen at resource version " + seen + ")");
                    }
                });
                if (!behind.isEmpty()) {
                    missing.put(slot, behind);
                }
            }
            ReplicaKillRun.pause(missing.isEmpty() ? 0 : 500);
        } while (!missing.isEmpty() && System.nanoTime() < deadline);
        missing.forEach((slot, behind) ->
                problems.add("the watch on replica " + slot + " did not see every final change: " + behind));
    }

    private static Map<String, Long> snapshot(GatewayProcess process) throws Exception {
        CompletableFuture<Map<String, Long>> done = new CompletableFuture<>();
        Map<String, Long> seen = new TreeMap<>();
        SandboxServiceGrpc.newStub(process.channel())
                .watchSandboxes(
                        WatchSandboxesRequest.newBuilder()
                                .setWorkspace(LifecycleClient.WORKSPACE)
                                .build(),
                        new ClientResponseObserver<WatchSandboxesRequest, WatchSandboxesResponse>() {
                            private ClientCallStreamObserver<WatchSandboxesRequest> call;

                            @Override
                            public void beforeStart(ClientCallStreamObserver<WatchSandboxesRequest> requestStream) {
                                call = requestStream;
                            }

                            @Override
                            public void onNext(WatchSandboxesResponse event) {
                                if (event.getType() == WatchEventType.SYNCED) {
                                    done.complete(new TreeMap<>(seen));
                                    call.cancel("snapshot read", null);
                                } else if (event.getType() == WatchEventType.SNAPSHOT) {
                                    seen.put(
                                            event.getSandbox().getId(),
                                            event.getSandbox().getResourceVersion());
                                }
                            }

                            @Override
                            public void onError(Throwable t) {
                                done.completeExceptionally(t);
                            }

                            @Override
                            public void onCompleted() {
                                done.completeExceptionally(new IllegalStateException("watch ended before SYNCED"));
                            }
                        });
        return done.get(60, TimeUnit.SECONDS);
    }
}
