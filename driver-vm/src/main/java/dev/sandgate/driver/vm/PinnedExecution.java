package dev.sandgate.driver.vm;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxRef;
import java.util.Optional;

/**
 * The checks that pin an exec or a logs read to the execution generation it names, on a record already resolved by
 * id and verified against the ref's workspace and name: the record must carry exactly that generation, and for exec
 * that execution must run (its QEMU process alive, its guest ready and its workload not ended). The caller then acts
 * only through the returned {@link ProcessIdentity}, which is one launch of one generation.
 */
final class PinnedExecution {
    private PinnedExecution() {}

    /** FAILED_PRECONDITION with a {@code generation} mismatch unless {@code record} carries {@code generation}. */
    static void requireGeneration(SandboxRef ref, long generation, VmRecord record) {
        if (record.generation() != generation) {
            throw DriverException.generationMismatch(ref, generation, record.generation());
        }
    }

    /**
     * The QEMU process of running execution {@code generation}.
     *
     * @throws DriverException FAILED_PRECONDITION with a {@code generation} mismatch for another generation, with a
     *     {@code running} mismatch if that execution does not run
     */
    static ProcessIdentity running(SandboxRef ref, long generation, VmRecord record, GuestReport report) {
        requireGeneration(ref, generation, record);
        Optional<ProcessIdentity> process = record.liveProcess();
        boolean running = record.phase() == VmRecord.Phase.RUNNING
                && process.isPresent()
                && report.readyAt(generation)
                && report.exitStatus().isEmpty()
                && report.failure().isEmpty()
                && !report.stopping();
        if (!running) {
            throw DriverException.notRunning(ref, generation);
        }
        return process.get();
    }
}
