package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.lifecycle.Lifecycle;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.gateway.testing.WatchClient;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The watch fan-out: one encoding per change for all streams, no thread per stream, a slow stream alone overflows. */
class WatchFanoutTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Small enough that stop/start cycles overflow a stream that reads nothing, large enough for one that reads. */
    private static final int CAPACITY = 32;
    /** Each cycle commits at least two changes: more than CAPACITY in all. */
    private static final int CYCLES = 25;

    @TempDir
    Path root;

    @StartedGateway
    TestGateway gateway;

    ExecutorService executor;

    @BeforeEach
    void start() {
        executor = Executors.newFixedThreadPool(2);
    }

    @AfterEach
    void stop() {
        executor.shutdownNow();
    }

    private Lifecycle lifecycle() {
        return gateway.gateway().lifecycle();
    }

    private ApiMapper mapper() {
        return new ApiMapper(lifecycle().tokens(), lifecycle().driverName());
    }

    private static SandboxFilter everything() {
        return new SandboxFilter(Optional.empty(), Map.of(), Set.of());
    }

    @Test
    @DisplayName(
            "each change is mapped, its token minted and its event serialized once, whatever the number of streams")
    void eachChangeIsEncodedOnceForAllStreams() {
        AtomicInteger encodings = new AtomicInteger();
        ApiMapper mapper = mapper();
        Function<SandboxChange, WatchSandboxesResponse> counting = change -> {
            encodings.incrementAndGet();
            return mapper.watchEvent(change);
        };
        List<FakeOut> outs = new ArrayList<>();
        try (WatchFanout fanout = new WatchFanout(lifecycle().hub(), counting, executor)) {
            for (int i = 0; i < 100; i++) {
                FakeOut out = new FakeOut();
                outs.add(out);
                WatchStream.start(lifecycle(), mapper, everything(), out, fanout);
            }
            await().atMost(WAIT).until(() -> outs.stream().allMatch(FakeOut::synced));

            Sandbox sandbox = gateway.create("team", "a");
            gateway.stub()
                    .stopSandbox(StopSandboxRequest.newBuilder()
                            .setTarget(byId(sandbox.getId()))
                            .build());
            await().atMost(WAIT)
                    .until(() -> outs.stream().allMatch(o -> o.phases().contains("STOPPED")));

            List<Object> first = outs.getFirst().changes();
            assertThat(outs).allSatisfy(out -> assertThat(out.changes()).containsExactlyElementsOf(first));
            assertThat(first).allSatisfy(event -> assertThat(event).isInstanceOf(WatchWire.Encoded.class));
            assertThat(encodings.get()).isEqualTo(first.size());
        }
    }

    @Test
    @DisplayName("a stream whose client reads nothing ends with WATCH_OVERFLOW while the others receive every change")
    void aStreamThatReadsNothingOverflowsAloneAndTheOthersKeepUp() {
        ApiMapper mapper = mapper();
        try (WatchFanout fanout = new WatchFanout(lifecycle().hub(), mapper::watchEvent, executor, CAPACITY)) {
            FakeOut stuck = new FakeOut();
            FakeOut reader = new FakeOut();
            WatchStream.start(lifecycle(), mapper, everything(), stuck, fanout);
            WatchStream.start(lifecycle(), mapper, everything(), reader, fanout);
            await().atMost(WAIT).until(() -> stuck.synced() && reader.synced());
            stuck.ready = false;

            Sandbox sandbox = gateway.create("team", "a");
            for (int i = 0; i < CYCLES; i++) {
                gateway.stub()
                        .stopSandbox(StopSandboxRequest.newBuilder()
                                .setTarget(byId(sandbox.getId()))
                                .build());
                gateway.stub()
                        .startSandbox(StartSandboxRequest.newBuilder()
                                .setTarget(byId(sandbox.getId()))
                                .build());
            }

            await().atMost(WAIT).until(() -> stuck.error != null);
            assertThat(GrpcErrors.read(new StatusRuntimeException(
                                    Status.fromThrowable(stuck.error), Status.trailersFromThrowable(stuck.error)))
                            .reason())
                    .isEqualTo("WATCH_OVERFLOW");
            await().atMost(WAIT).until(() -> reader.generations().contains(1L + CYCLES));
            assertThat(reader.error).isNull();
            assertThat(fanout.streams()).hasSize(1);
        }
    }

    @Test
    @DisplayName("a stream whose client reads nothing is not ended by changes it does not want")
    void aStalledStreamSkipsChangesItDoesNotWant() {
        ApiMapper mapper = mapper();
        try (WatchFanout fanout = new WatchFanout(lifecycle().hub(), mapper::watchEvent, executor, CAPACITY)) {
            FakeOut quiet = new FakeOut();
            FakeOut reader = new FakeOut();
            WatchStream.start(
                    lifecycle(), mapper, new SandboxFilter(Optional.of("quiet"), Map.of(), Set.of()), quiet, fanout);
            WatchStream.start(lifecycle(), mapper, everything(), reader, fanout);
            await().atMost(WAIT).until(() -> quiet.synced() && reader.synced());
            quiet.ready = false;

            Sandbox sandbox = gateway.create("team", "a");
            for (int i = 0; i < CYCLES; i++) {
                gateway.stub()
                        .stopSandbox(StopSandboxRequest.newBuilder()
                                .setTarget(byId(sandbox.getId()))
                                .build());
                gateway.stub()
                        .startSandbox(StartSandboxRequest.newBuilder()
                                .setTarget(byId(sandbox.getId()))
                                .build());
            }
            await().atMost(WAIT).until(() -> reader.generations().contains(1L + CYCLES));
            quiet.ready = true;
            Sandbox other = gateway.create("quiet", "b");

            await().atMost(WAIT).until(() -> !quiet.changes().isEmpty());
            assertThat(quiet.error).isNull();
            assertThat(FakeOut.decode(quiet.changes().getFirst()).getSandbox().getId())
                    .isEqualTo(other.getId());
            assertThat(fanout.streams()).hasSize(2);
        }
    }

    @Test
    @DisplayName("hundreds of watch streams share the gateway's small pool of watch threads")
    void manyStreamsShareAFewThreads() throws Exception {
        try (TestGateway netty = TestGateway.start(root.resolve("netty"), TestGateway.Transport.NETTY)) {
            List<WatchClient> clients = new ArrayList<>();
            try {
                for (int i = 0; i < 300; i++) {
                    clients.add(new WatchClient(netty.asyncStub(), WatchSandboxesRequest.getDefaultInstance()));
                }
                for (WatchClient client : clients) {
                    client.snapshot();
                }
                Sandbox sandbox = netty.create("team", "a");
                for (WatchClient client : clients) {
                    WatchSandboxesResponse added = client.nextMatching(e -> e.getType() == WatchEventType.ADDED);
                    assertThat(added.getSandbox().getId()).isEqualTo(sandbox.getId());
                }
                long watchThreads = Thread.getAllStackTraces().keySet().stream()
                        .filter(t -> t.getName().startsWith("sandgate-watch-"))
                        .count();
                // Two gateways run in this test (each a pool of at most max(2, processors) and one fan-out thread).
                int perGateway = Math.max(2, Runtime.getRuntime().availableProcessors()) + 1;
                assertThat(watchThreads).isLessThanOrEqualTo(2L * perGateway);
            } finally {
                for (WatchClient client : clients) {
                    client.close();
                }
            }
        }
    }

    /** A server stream as the watch sees it: records what it is sent; ready unless a test says otherwise. */
    private static final class FakeOut extends ServerCallStreamObserver<Object> {
        final List<Object> sent = new CopyOnWriteArrayList<>();
        volatile boolean ready = true;
        volatile Throwable error;

        boolean synced() {
            return sent.stream()
                    .anyMatch(e -> e instanceof WatchSandboxesResponse r && r.getType() == WatchEventType.SYNCED);
        }

        /** What came after SYNCED. */
        List<Object> changes() {
            int synced = -1;
            for (int i = 0; i < sent.size(); i++) {
                if (sent.get(i) instanceof WatchSandboxesResponse r && r.getType() == WatchEventType.SYNCED) {
                    synced = i;
                }
            }
            return sent.subList(synced + 1, sent.size());
        }

        List<String> phases() {
            return changes().stream()
                    .map(e -> decode(e).getSandbox().getPhase().name())
                    .toList();
        }

        List<Long> generations() {
            return changes().stream()
                    .map(e -> decode(e).getSandbox().getLaunchInput().getGeneration())
                    .toList();
        }

        static WatchSandboxesResponse decode(Object event) {
            return event instanceof WatchWire.Encoded encoded ? encoded.decode() : (WatchSandboxesResponse) event;
        }

        @Override
        public boolean isReady() {
            return ready;
        }

        @Override
        public void setOnReadyHandler(Runnable handler) {
            // never called back: the tests drive readiness through isReady
        }

        @Override
        public void onNext(Object value) {
            sent.add(value);
        }

        @Override
        public void onError(Throwable t) {
            error = t;
        }

        @Override
        public void onCompleted() {}

        @Override
        public boolean isCancelled() {
            return false;
        }

        @Override
        public void setOnCancelHandler(Runnable handler) {}

        @Override
        public void setCompression(String compression) {}

        @Override
        public void disableAutoInboundFlowControl() {}

        @Override
        public void request(int count) {}

        @Override
        public void setMessageCompression(boolean enable) {}
    }
}
