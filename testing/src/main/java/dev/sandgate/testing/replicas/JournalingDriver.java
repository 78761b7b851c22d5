package dev.sandgate.testing.replicas;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StopResult;
import dev.sandgate.spi.WatchSubscription;
import java.util.List;
import java.util.OptionalLong;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * A driver that passes every call to the real one and journals each mutating call (create, start, stop, delete): a
 * line with the call's input before it, and one with its result after it, each on disk before the driver is called or
 * the call returns. The input is what identifies the gateway's intent: the sandbox id and, for create and start, the
 * launch generation and policy digest; for stop and delete, the expected generation.
 */
final class JournalingDriver implements ComputeDriver {
    private final ComputeDriver delegate;
    private final DriverJournal journal;

    JournalingDriver(ComputeDriver delegate, DriverJournal journal) {
        this.delegate = requireNonNull(delegate, "delegate is null");
        this.journal = requireNonNull(journal, "journal is null");
    }

    @Override
    public DriverCapabilities capabilities() {
        return delegate.capabilities();
    }

    @Override
    public void validate(SandboxSpec spec, LaunchInput launch) {
        delegate.validate(spec, launch);
    }

    @Override
    public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        return journaled(
                "create", ref, launchInput(launch), () -> delegate.create(ref, spec, launch), r -> r.created());
    }

    @Override
    public SandboxObservation get(SandboxRef ref) {
        return delegate.get(ref);
    }

    @Override
    public List<SandboxObservation> list() {
        return delegate.list();
    }

    @Override
    public StartResult start(SandboxRef ref, LaunchInput launch) {
        return journaled("start", ref, launchInput(launch), () -> delegate.start(ref, launch), r -> r.launched());
    }

    @Override
    public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
        return journaled(
                "stop",
                ref,
                expected(expectedGeneration),
                () -> delegate.stop(ref, expectedGeneration),
                r -> r.stoppedNow());
    }

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        return journaled(
                "delete",
                ref,
                expected(expectedGeneration),
                () -> delegate.delete(ref, expectedGeneration),
                r -> r.deleted());
    }

    @Override
    public WatchSubscription watch(SandboxWatcher watcher) {
        return delegate.watch(watcher);
    }

    @Override
    public ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
        return delegate.exec(ref, generation, command, listener);
    }

    @Override
    public LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
        return delegate.logs(ref, generation, query, listener);
    }

    @Override
    public void close() {
        try {
            delegate.close();
        } finally {
            journal.close();
        }
    }

    private <T> T journaled(String operation, SandboxRef ref, String input, Supplier<T> call, Predicate<T> effect) {
        long number = journal.begin(operation, ref.id(), input);
        T result;
        try {
            result = call.get();
        } catch (DriverException e) {
            journal.failed(number, e.code().name());
            throw e;
        } catch (RuntimeException | Error e) {
            journal.failed(number, e.getClass().getSimpleName());
            throw e;
        }
        journal.ended(number, effect.test(result));
        return result;
    }

    private static String launchInput(LaunchInput launch) {
        return "g=" + launch.generation() + ",d=" + launch.policy().digest();
    }

    private static String expected(OptionalLong generation) {
        return "e=" + (generation.isPresent() ? Long.toString(generation.getAsLong()) : "-");
    }
}
