package dev.sandgate.driver.toolkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class GuardedMutationsTest {
    private static final String GATEWAY = "gw-1";
    private static final SandboxRef REF = SandboxRef.parse("11111111-1111-4111-8111-111111111111", "ws", "box")
            .orElseThrow();

    record Rec(
            String id,
            String gateway,
            String workspace,
            String name,
            String backendId,
            long generation,
            boolean running) {}

    /** Records in a map; the hook may replace the record, as the kit's probe does. */
    static final class Fake implements GuardedMutations.Records<Rec> {
        final Map<String, Rec> records = new ConcurrentHashMap<>();
        final ReentrantLock lock = new ReentrantLock();
        final List<String> hooks = new ArrayList<>();
        Runnable onHook = () -> {};

        @Override
        public Optional<Rec> read(String sandboxId) {
            return Optional.ofNullable(records.get(sandboxId));
        }

        @Override
        public <T> T locked(String sandboxId, Supplier<T> body) {
            lock.lock();
            try {
                return body.get();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public Identity.Stamps stamps(Rec r) {
            return new Identity.Stamps(r.id(), r.gateway(), r.workspace(), r.name());
        }

        @Override
        public String backendId(Rec r) {
            return r.backendId();
        }

        @Override
        public long generation(Rec r) {
            return r.generation();
        }

        @Override
        public void beforeMutation(SandboxRef ref, MutationHook.Operation operation, Rec record) {
            assertThat(lock.isHeldByCurrentThread())
                    .as("the hook runs without the lock")
                    .isFalse();
            hooks.add(operation + " " + record.backendId());
            onHook.run();
        }
    }

    private final Fake fake = new Fake();
    private final GuardedMutations<Rec> guard = new GuardedMutations<>(GATEWAY, "the record of sandbox", fake);

    private Rec running(String backendId, long generation) {
        return new Rec(REF.id(), GATEWAY, "ws", "box", backendId, generation, true);
    }

    private String stop(OptionalLong expected) {
        return guard.stop(REF, expected, Rec::running, r -> "unchanged", r -> "stopped " + r.backendId());
    }

    @Test
    void aStopCallsTheHookWithTheResolvedBackendIdThenMutatesThatIncarnation() {
        fake.records.put(REF.id(), running("b1", 3));

        assertThat(stop(OptionalLong.of(3))).isEqualTo("stopped b1");
        assertThat(fake.hooks).containsExactly("STOP b1");
    }

    @Test
    void anIncarnationReplacedAtTheHookIsAbortedAndNotTouched() {
        fake.records.put(REF.id(), running("b1", 3));
        fake.onHook = () -> fake.records.put(REF.id(), running("b2", 3));

        assertThatThrownBy(() -> stop(OptionalLong.empty()))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.ABORTED));
    }

    @Test
    void anotherExpectedGenerationIsRefusedBeforeTheHook() {
        fake.records.put(REF.id(), running("b1", 3));

        assertThatThrownBy(() -> stop(OptionalLong.of(2)))
                .isInstanceOfSatisfying(
                        DriverException.class,
                        e -> assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION));
        assertThat(fake.hooks).isEmpty();
    }

    @Test
    void aRecordAtAnotherLocatorIsRefusedBeforeTheHook() {
        fake.records.put(REF.id(), new Rec(REF.id(), GATEWAY, "ws", "other", "b1", 1, true));

        assertThatThrownBy(() -> stop(OptionalLong.empty()))
                .isInstanceOfSatisfying(
                        DriverException.class,
                        e -> assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION));
        assertThat(fake.hooks).isEmpty();
    }

    @Test
    void aStoppedSandboxIsAnsweredWithoutTheHook() {
        fake.records.put(REF.id(), new Rec(REF.id(), GATEWAY, "ws", "box", "b1", 1, false));

        assertThat(stop(OptionalLong.empty())).isEqualTo("unchanged");
        assertThat(fake.hooks).isEmpty();
    }

    @Test
    void noRecordIsNotFoundForAStopAndAbsentForADelete() {
        assertThatThrownBy(() -> stop(OptionalLong.empty()))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.NOT_FOUND));
        assertThat(guard.delete(REF, OptionalLong.empty(), () -> "absent", r -> "removed"))
                .isEqualTo("absent");
    }

    @Test
    void aRecordRemovedAtTheHookMakesTheDeleteAbsent() {
        fake.records.put(REF.id(), running("b1", 1));
        fake.onHook = () -> fake.records.remove(REF.id());

        assertThat(guard.delete(REF, OptionalLong.empty(), () -> "absent", r -> "removed"))
                .isEqualTo("absent");
        assertThat(fake.hooks).containsExactly("DELETE b1");
    }

    @Test
    void aStartDecidesAgainUnderTheLockOnTheSameIncarnation() {
        fake.records.put(REF.id(), new Rec(REF.id(), GATEWAY, "ws", "box", "b1", 1, false));
        List<String> prepared = new ArrayList<>();
        // the hook starts it behind the driver's back: the second decision finds nothing to launch
        fake.onHook = () -> fake.records.put(REF.id(), running("b1", 1));

        String answer = guard.start(
                REF, r -> !r.running(), r -> "unchanged", r -> prepared.add(r.backendId()), r -> "launched");

        assertThat(answer).isEqualTo("unchanged");
        assertThat(prepared).containsExactly("b1");
        assertThat(fake.hooks).containsExactly("START b1");
    }
}
