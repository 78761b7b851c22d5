package dev.sandgate.driver.toolkit;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * The order of checks around every mutation, for a driver that keeps one record per sandbox id under a per-id lock
 * (the reference driver's directory, the VM driver's state directories). Written once so that no driver gets it
 * subtly wrong:
 *
 * <ol>
 *   <li>read the record by the sandbox id (never by name) and verify its stamps against the ref;
 *   <li>check the expected generation, then decide whether anything is to be done, answering without the hook if not;
 *   <li>call the mutation hook with the record's backend id, <em>without</em> the lock (a hook may act on the sandbox);
 *   <li>under the lock, read again: the record must be the same incarnation (same backend id) that was resolved,
 *       else {@code ABORTED} and nothing is touched; check the generation and decide again; then mutate.
 * </ol>
 *
 * @param <R> the driver's record of a sandbox
 */
public final class GuardedMutations<R> {
    /** How the driver reads, locks and describes its records. */
    public interface Records<R> {
        /** The record stored under {@code sandboxId} for this gateway, if any. */
        Optional<R> read(String sandboxId);

        /** Runs {@code body} holding the sandbox's lock. */
        <T> T locked(String sandboxId, Supplier<T> body);

        /** The identity stamps the record carries. */
        Identity.Stamps stamps(R record);

        /** The record's immutable backend id (what the hook is told, and what tells incarnations apart). */
        String backendId(R record);

        /** The execution generation the record carries. */
        long generation(R record);

        /** Calls the mutation hook for {@code record} (without the lock: this class never holds it here). */
        void beforeMutation(SandboxRef ref, MutationHook.Operation operation, R record);
    }

    private final String gatewayId;
    private final String description;
    private final Records<R> records;

    /**
     * @param description what a record is, for messages: "the state directory of sandbox" is followed by the id
     */
    public GuardedMutations(String gatewayId, String description, Records<R> records) {
        this.gatewayId = requireNonNull(gatewayId, "gatewayId is null");
        this.description = requireNonNull(description, "description is null");
        this.records = requireNonNull(records, "records is null");
    }

    /** The record carrying {@code ref.id()}, verified; {@code NOT_FOUND} or {@code FAILED_PRECONDITION} otherwise. */
    public R resolve(SandboxRef ref) {
        return verified(ref, records.read(ref.id()).orElseThrow(() -> DriverException.notFound(ref)));
    }

    /** Checks that {@code record}, stored under {@code ref.id()}, is that sandbox, of this gateway, at that locator. */
    public R verified(SandboxRef ref, R record) {
        Identity.requireStamps(ref, gatewayId, description + " " + ref.id(), records.stamps(record));
        return record;
    }

    /**
     * Start: {@code launches} decides on the resolved record (throwing what the Start(G) rules refuse); if nothing is
     * to be launched, {@code unchanged} answers. Else {@code prepare} checks what the launch needs before anything is
     * announced, the hook is called, and under the lock the same decision is taken again on the same incarnation
     * before {@code launch} runs.
     */
    public <T> T start(
            SandboxRef ref,
            Predicate<R> launches,
            Function<R, T> unchanged,
            Consumer<R> prepare,
            Function<R, T> launch) {
        R resolved = resolve(ref);
        if (!launches.test(resolved)) {
            return unchanged.apply(resolved);
        }
        prepare.accept(resolved);
        records.beforeMutation(ref, MutationHook.Operation.START, resolved);
        return records.locked(ref.id(), () -> {
            R current = sameIncarnation(ref, resolved);
            return launches.test(current) ? launch.apply(current) : unchanged.apply(current);
        });
    }

    /**
     * Stop: the expected generation is checked before and again under the lock; a record that is not {@code running}
     * is answered by {@code unchanged} (stopping a stopped sandbox succeeds without stopping).
     */
    public <T> T stop(
            SandboxRef ref,
            OptionalLong expectedGeneration,
            Predicate<R> running,
            Function<R, T> unchanged,
            Function<R, T> stop) {
        R resolved = resolve(ref);
        requireExpectedGeneration(ref, resolved, expectedGeneration);
        if (!running.test(resolved)) {
            return unchanged.apply(resolved);
        }
        records.beforeMutation(ref, MutationHook.Operation.STOP, resolved);
        return records.locked(ref.id(), () -> {
            R current = sameIncarnation(ref, resolved);
            requireExpectedGeneration(ref, current, expectedGeneration);
            return running.test(current) ? stop.apply(current) : unchanged.apply(current);
        });
    }

    /**
     * Delete: nothing carrying the id (before, or again under the lock) is answered by {@code absent}, never by a
     * look-up of the name; otherwise the same checks as a stop, then {@code remove}.
     */
    public <T> T delete(SandboxRef ref, OptionalLong expectedGeneration, Supplier<T> absent, Function<R, T> remove) {
        Optional<R> found = records.read(ref.id());
        if (found.isEmpty()) {
            return absent.get();
        }
        R resolved = verified(ref, found.get());
        requireExpectedGeneration(ref, resolved, expectedGeneration);
        records.beforeMutation(ref, MutationHook.Operation.DELETE, resolved);
        return records.locked(ref.id(), () -> {
            Optional<R> now = records.read(ref.id());
            if (now.isEmpty()) {
                return absent.get(); // removed meanwhile: nothing carries the id any more
            }
            R current = requireSameIncarnation(ref, resolved, now.get());
            requireExpectedGeneration(ref, current, expectedGeneration);
            return remove.apply(current);
        });
    }

    private R sameIncarnation(SandboxRef ref, R resolved) {
        R now = records.read(ref.id()).orElseThrow(() -> DriverException.notFound(ref));
        return requireSameIncarnation(ref, resolved, now);
    }

    private R requireSameIncarnation(SandboxRef ref, R resolved, R now) {
        Identity.requireSameIncarnation(ref, records.backendId(resolved), records.backendId(now));
        return verified(ref, now);
    }

    private void requireExpectedGeneration(SandboxRef ref, R record, OptionalLong expected) {
        Identity.requireExpectedGeneration(ref, expected, records.generation(record));
    }
}
