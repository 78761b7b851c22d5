package dev.sandgate.driver.toolkit;

import static dev.sandgate.driver.toolkit.StartDecisionTest.REF;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.MutationHook;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SlotLocksTest {
    @TempDir
    Path directory;

    @Test
    void aKeyIsHeldByOneThreadAtATimeAndReentrantWithinIt() throws Exception {
        SlotLocks locks = SlotLocks.of(directory.resolve("locks"));
        var inside = new AtomicInteger();
        var most = new AtomicInteger();
        Runnable worker = () -> {
            for (int i = 0; i < 200; i++) {
                locks.locked(
                        "k",
                        () -> locks.locked("k", () -> {
                            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            inside.decrementAndGet();
                            return null;
                        }));
            }
        };
        Thread a = Thread.ofPlatform().start(worker);
        Thread b = Thread.ofPlatform().start(worker);
        a.join();
        b.join();
        assertThat(most).hasValue(1);
    }

    @Test
    void theSameFileGivesTheSameLocks() {
        assertThat(SlotLocks.of(directory.resolve("locks"))).isSameAs(SlotLocks.of(directory.resolve("x/../locks")));
    }

    @Test
    void theMutationHookIsCalledWithoutTheLockAndRefusedUnderIt() {
        SlotLocks locks = SlotLocks.of(directory.resolve("locks"));
        var calls = new AtomicInteger();
        MutationHook hook = (ref, operation, backendId) -> calls.incrementAndGet();
        locks.beforeMutation(hook, REF, MutationHook.Operation.STOP, "b1");
        assertThat(calls).hasValue(1);
        assertThatThrownBy(() -> locks.locked(REF.id(), () -> {
                    locks.beforeMutation(hook, REF, MutationHook.Operation.STOP, "b1");
                    return null;
                }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("without its lock");
        assertThat(calls).hasValue(1);
    }

    @Test
    void anInterruptedThreadLocksAndKeepsItsInterruptStatus() throws Exception {
        SlotLocks locks = SlotLocks.of(directory.resolve("locks"));
        var done = new CountDownLatch(1);
        var interrupted = new boolean[1];
        Thread.ofPlatform().start(() -> {
            Thread.currentThread().interrupt();
            locks.locked("k", () -> null);
            interrupted[0] = Thread.currentThread().isInterrupted();
            done.countDown();
        });
        assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(interrupted[0]).isTrue();
        assertThat(locks.locked("k", () -> "still usable")).isEqualTo("still usable");
    }
}
