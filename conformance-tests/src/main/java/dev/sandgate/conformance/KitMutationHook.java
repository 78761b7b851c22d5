package dev.sandgate.conformance;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The {@link MutationHook} the kit hands its drivers: it records every call, and runs an action armed for the next
 * mutation of one sandbox (the kit's way of replacing a resource between a driver's lookup and its mutation).
 */
final class KitMutationHook implements MutationHook {
    /** One call a driver made. */
    record Call(SandboxRef ref, Operation operation, String backendId) {}

    /** An action waiting for the next {@code operation} on one sandbox. */
    static final class Armed {
        private final Operation operation;
        private final Runnable action;
        private final AtomicBoolean fired = new AtomicBoolean();
        private final AtomicReference<Throwable> failure = new AtomicReference<>();

        private Armed(Operation operation, Runnable action) {
            this.operation = operation;
            this.action = action;
        }

        boolean fired() {
            return fired.get();
        }

        /** What the action threw, if anything (the driver's call may have swallowed it). */
        Throwable failure() {
            return failure.get();
        }
    }

    private final List<Call> calls = new CopyOnWriteArrayList<>();
    private final ConcurrentHashMap<String, Armed> armed = new ConcurrentHashMap<>();

    @Override
    public void beforeMutation(SandboxRef ref, Operation operation, String backendId) {
        calls.add(new Call(ref, operation, backendId));
        Armed pending = armed.get(ref.id());
        if (pending != null && pending.operation == operation && armed.remove(ref.id(), pending)) {
            pending.fired.set(true);
            try {
                pending.action.run();
            } catch (RuntimeException | AssertionError e) {
                pending.failure.set(e);
            }
        }
    }

    /** Runs {@code action} once, inside the driver's next {@code operation} call of the hook for {@code sandboxId}. */
    Armed arm(String sandboxId, Operation operation, Runnable action) {
        var pending =
                new Armed(requireNonNull(operation, "operation is null"), requireNonNull(action, "action is null"));
        if (armed.putIfAbsent(sandboxId, pending) != null) {
            throw new IllegalStateException("an action is already armed for " + sandboxId);
        }
        return pending;
    }

    List<Call> calls(String sandboxId, Operation operation) {
        return calls.stream()
                .filter(call -> call.ref().id().equals(sandboxId) && call.operation() == operation)
                .toList();
    }

    void disarmAll() {
        armed.clear();
    }
}
