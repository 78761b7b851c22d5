package dev.sandgate.testing.replicas;

import com.google.protobuf.Message;
import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.testing.GatewayProcess;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * One client: random creates, stops, starts, deletes, reads and stale-token stops of sandboxes that only it changes,
 * each with a request_id, one at a time, each retried with the same request_id until it has a definitive answer (on
 * another replica when its replica dies). Because it is the only writer of its sandboxes it knows what every answer
 * must be; what differs is a violation.
 */
final class LifecycleClient implements Runnable {
    static final String WORKSPACE = "kill";
    /** How long one request may take to get a definitive answer, replicas dying and recovering included. */
    private static final long REQUEST_BUDGET_NANOS = TimeUnit.MINUTES.toNanos(4);

    /** A sandbox as its owner knows it: its generations' tokens (index generation - 1) and whether it runs. */
    static final class Owned {
        final String id;
        final String name;
        final List<String> tokens = new ArrayList<>();
        boolean running = true;
        /** System.nanoTime() when its create was sent. */
        final long createSent;
        /** System.nanoTime() when the delete that succeeded was first sent (0 until it is deleted). */
        volatile long deleteSent;

        Owned(String id, String name, long createSent) {
            this.id = id;
            this.name = name;
            this.createSent = createSent;
        }

        long generation() {
            return tokens.size();
        }
    }

    private final int number;
    private final ReplicaCluster cluster;
    private final SandboxSpec spec;
    private final Tally tally;
    private final BooleanSupplier keepGoing;
    private final Random random;
    private final List<Owned> owned = new ArrayList<>();
    private final List<Owned> deleted = new ArrayList<>();
    private volatile int home;
    private int created;

    LifecycleClient(int number, ReplicaCluster cluster, SandboxSpec spec, Tally tally, BooleanSupplier keepGoing) {
        this.number = number;
        this.cluster = cluster;
        this.spec = spec;
        this.tally = tally;
        this.keepGoing = keepGoing;
        this.random = new Random(number * 7919L + System.nanoTime());
        this.home = number % cluster.size();
    }

    List<Owned> owned() {
        return owned;
    }

    List<Owned> deleted() {
        return deleted;
    }

    @Override
    public void run() {
        try {
            while (keepGoing.getAsBoolean()) {
                step();
            }
        } catch (RuntimeException | InterruptedException e) {
            tally.violation("client " + number + " stopped: " + e);
        }
    }

    private void step() throws InterruptedException {
        if (owned.isEmpty() || (owned.size() < 3 && random.nextDouble() < 0.25)) {
            create();
            return;
        }
        Owned sandbox = owned.get(random.nextInt(owned.size()));
        double x = random.nextDouble();
        if (sandbox.generation() > 1 && x < 0.12) {
            staleStop(sandbox);
        } else if (x < 0.22) {
            delete(sandbox);
        } else if (x < 0.32) {
            get(sandbox);
        } else if (sandbox.running) {
            stop(sandbox);
        } else {
            start(sandbox);
        }
    }

    private void create() throws InterruptedException {
        String name = "c" + number + "-" + ++created;
        long sent = System.nanoTime();
        Answer answer = send(CreateSandboxRequest.newBuilder()
                .setRequestId(newRequestId())
                .setWorkspace(WORKSPACE)
                .setName(name)
                .setSpec(spec)
                .build());
        if (expect(answer, "CREATED", name) && answer.generation() == 1) {
            Owned sandbox = new Owned(answer.sandboxId(), name, sent);
            sandbox.tokens.add(
                    answer.sandbox().orElseThrow().getCurrentExecution().getExecutionToken());
            owned.add(sandbox);
        } else if (answer.ok()) {
            tally.violation("create of " + name + " answered generation " + answer.generation());
        }
    }

    private void stop(Owned sandbox) throws InterruptedException {
        StopSandboxRequest.Builder request =
                StopSandboxRequest.newBuilder().setRequestId(newRequestId()).setTarget(target(sandbox));
        if (random.nextBoolean()) {
            request.setPrecondition(current(sandbox));
        }
        Answer answer = send(request.build());
        if (expect(answer, "STOPPED_NOW", sandbox.name) && generationIs(answer, sandbox, sandbox.generation())) {
            sandbox.running = false;
        }
    }

    private void start(Owned sandbox) throws InterruptedException {
        Answer answer = send(StartSandboxRequest.newBuilder()
                .setRequestId(newRequestId())
                .setTarget(target(sandbox))
                .build());
        if (expect(answer, "LAUNCHED", sandbox.name) && generationIs(answer, sandbox, sandbox.generation() + 1)) {
            sandbox.tokens.add(
                    answer.sandbox().orElseThrow().getCurrentExecution().getExecutionToken());
            sandbox.running = true;
        }
    }

    private void delete(Owned sandbox) throws InterruptedException {
        DeleteSandboxRequest.Builder request =
                DeleteSandboxRequest.newBuilder().setRequestId(newRequestId()).setTarget(target(sandbox));
        if (random.nextBoolean()) {
            request.setPrecondition(current(sandbox));
        }
        long sent = System.nanoTime();
        Answer answer = send(request.build());
        if (expect(answer, "DELETED_NOW", sandbox.name)) {
            sandbox.deleteSent = sent;
            owned.remove(sandbox);
            deleted.add(sandbox);
        }
    }

    /** A stop bound to an older execution: refused, on whichever replica, and the sandbox is left as it is. */
    private void staleStop(Owned sandbox) throws InterruptedException {
        String old = sandbox.tokens.get(random.nextInt(sandbox.tokens.size() - 1));
        Answer answer = send(StopSandboxRequest.newBuilder()
                .setRequestId(newRequestId())
                .setTarget(target(sandbox))
                .setPrecondition(ExecutionPrecondition.newBuilder().setExpectedExecutionToken(old))
                .build());
        if (answer.code() == Status.Code.FAILED_PRECONDITION && answer.reason().equals("STALE_EXECUTION")) {
            tally.staleRefusals.incrementAndGet();
        } else {
            tally.violation("a stop with a stale token of " + sandbox.name + " answered " + answer);
        }
    }

    /** A read on any replica shows the last acknowledged change: its generation, running or stopped. */
    private void get(Owned sandbox) throws InterruptedException {
        int slot = random.nextInt(cluster.size());
        for (int attempt = 0; attempt < cluster.size(); attempt++) {
            GatewayProcess process = cluster.process((slot + attempt) % cluster.size());
            try {
                Sandbox read = process.stub()
                        .getSandbox(GetSandboxRequest.newBuilder()
                                .setTarget(target(sandbox))
                                .build())
                        .getSandbox();
                tally.gets.incrementAndGet();
                long generation = read.getCurrentExecution().getGeneration();
                boolean running = read.getPhase() == Phase.READY || read.getPhase() == Phase.PROVISIONING;
                if (generation != sandbox.generation() || running != sandbox.running) {
                    tally.violation("Get of " + sandbox.name + " shows generation " + generation + " " + read.getPhase()
                            + ", its owner last had generation " + sandbox.generation()
                            + (sandbox.running ? " running" : " stopped") + " acknowledged");
                }
                return;
            } catch (StatusRuntimeException e) {
                if (!Answer.reason(e).isEmpty()) {
                    tally.violation("Get of " + sandbox.name + " failed: " + e.getStatus());
                    return;
                }
                Thread.sleep(100);
            }
        }
    }

    /**
     * Sends {@code request} until it has a definitive answer, and records it. Now and then the first attempt goes to
     * two replicas at once: both must answer the same.
     */
    private Answer send(Message request) throws InterruptedException {
        String requestId = requestId(request);
        Answer answer;
        if (random.nextDouble() < 0.1) {
            tally.duplicates.incrementAndGet();
            int other = (home + 1 + random.nextInt(cluster.size() - 1)) % cluster.size();
            CompletableFuture<Answer> second = CompletableFuture.supplyAsync(
                    () -> untilDefinitive(request, other),
                    copy -> Thread.ofPlatform()
                            .name("kill-client-" + number + "-copy")
                            .start(copy));
            answer = untilDefinitive(request, home);
            Answer duplicate = second.join();
            if (!duplicate.sameAs(answer)) {
                tally.violation(requestId + " sent to two replicas at once: " + answer + " and " + duplicate);
            }
        } else {
            answer = untilDefinitive(request, home);
        }
        if (answer.replayed()) {
            tally.replays.incrementAndGet();
        }
        tally.requests.add(new SentRequest(requestId, request, answer));
        return answer;
    }

    private Answer untilDefinitive(Message request, int firstSlot) {
        long deadline = System.nanoTime() + REQUEST_BUDGET_NANOS;
        int slot = firstSlot;
        while (true) {
            Answer answer = SentRequest.send(cluster.process(slot).stub(), request);
            // Every gateway error names its reason: one without is the connection's (a replica died under it).
            boolean transport = !answer.ok() && answer.reason().isEmpty();
            boolean again = transport
                    || answer.code() == Status.Code.UNAVAILABLE
                    || answer.code() == Status.Code.DEADLINE_EXCEEDED;
            if (!again) {
                return answer;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        requestId(request) + " got no definitive answer within 4 min; last: " + answer);
            }
            if (transport) {
                tally.failovers.incrementAndGet();
                slot = (slot + 1) % cluster.size();
                if (slot != firstSlot) {
                    home = slot;
                }
            } else {
                tally.retries.incrementAndGet();
            }
            try {
                Thread.sleep(transport ? 100 : 300);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
    }

    private boolean expect(Answer answer, String outcome, String name) {
        if (answer.ok() && answer.outcome().equals(outcome)) {
            return true;
        }
        tally.violation("expected " + outcome + " for " + name + ", got " + answer);
        return false;
    }

    private boolean generationIs(Answer answer, Owned sandbox, long expected) {
        if (answer.generation() == expected) {
            return true;
        }
        tally.violation(answer.outcome() + " of " + sandbox.name + " answered generation " + answer.generation()
                + ", expected " + expected);
        return false;
    }

    private static SandboxTarget target(Owned sandbox) {
        return SandboxTarget.newBuilder().setId(sandbox.id).build();
    }

    private static ExecutionPrecondition current(Owned sandbox) {
        return ExecutionPrecondition.newBuilder()
                .setExpectedSandboxId(sandbox.id)
                .setExpectedExecutionToken(sandbox.tokens.getLast())
                .build();
    }

    private static String requestId(Message request) {
        return (String) request.getField(request.getDescriptorForType().findFieldByName("request_id"));
    }

    private static String newRequestId() {
        return UUID.randomUUID().toString();
    }
}
