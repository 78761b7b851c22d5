package dev.sandgate.conformance.selftest.broken;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
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
import java.util.Optional;
import java.util.OptionalLong;

/** A driver that forwards every call; each broken driver overrides the one rule it breaks. */
class ForwardingComputeDriver implements ComputeDriver {
    protected final ComputeDriver delegate;

    ForwardingComputeDriver(ComputeDriver delegate) {
        this.delegate = requireNonNull(delegate, "delegate is null");
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
        return delegate.create(ref, spec, launch);
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
        return delegate.start(ref, launch);
    }

    @Override
    public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
        return delegate.stop(ref, expectedGeneration);
    }

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        return delegate.delete(ref, expectedGeneration);
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
        delegate.close();
    }

    /** Another sandbox with the same workspace and name as {@code ref} (what a name-based lookup finds). */
    protected Optional<SandboxRef> sameNameOtherId(SandboxRef ref) {
        return delegate.list().stream()
                .map(SandboxObservation::ref)
                .filter(found -> found.workspace().equals(ref.workspace())
                        && found.name().equals(ref.name()))
                .filter(found -> !found.id().equals(ref.id()))
                .findFirst();
    }

    /** Any sandbox with the same workspace and name as {@code ref}, whatever its id. */
    protected Optional<SandboxRef> byName(SandboxRef ref) {
        return delegate.list().stream()
                .map(SandboxObservation::ref)
                .filter(found -> found.workspace().equals(ref.workspace())
                        && found.name().equals(ref.name()))
                .findFirst();
    }
}
