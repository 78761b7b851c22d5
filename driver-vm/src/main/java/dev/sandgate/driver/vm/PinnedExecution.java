package dev.sandgate.driver.vm;

import dev.sandgate.driver.toolkit.ExecutionFacts;
import dev.sandgate.driver.toolkit.ExecutionFacts.Access;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxRef;
import java.util.Optional;

/**
 * The VM's facts for {@link ExecutionFacts}, which pins an exec or a logs read to the execution generation it names,
 * on a record already resolved by id: the record's stamps and generation, and whether that execution runs (its QEMU
 * process alive, its guest ready and its workload not ended). The caller then acts only through the returned {@link
 * ProcessIdentity}, which is one launch of one generation.
 */
final class PinnedExecution {
    private PinnedExecution() {}

    /** FAILED_PRECONDITION (identity, or a {@code generation} mismatch) unless {@code record} is execution G's. */
    static void requireGeneration(SandboxRef ref, long generation, VmRecord record) {
        facts(record, false).require(ref, generation, Access.LOGS);
    }

    /**
     * The QEMU process of running execution {@code generation}.
     *
     * @throws DriverException FAILED_PRECONDITION with a {@code generation} mismatch for another generation, with a
     *     {@code running} mismatch if that execution does not run
     */
    static ProcessIdentity running(SandboxRef ref, long generation, VmRecord record, GuestReport report) {
        Optional<ProcessIdentity> process = record.liveProcess();
        boolean running = record.phase() == VmRecord.Phase.RUNNING
                && process.isPresent()
                && report.readyAt(generation)
                && report.exitStatus().isEmpty()
                && report.failure().isEmpty()
                && !report.stopping();
        facts(record, running).require(ref, generation, Access.EXEC);
        return process.orElseThrow();
    }

    private static ExecutionFacts facts(VmRecord record, boolean running) {
        return new ExecutionFacts(record.workspace(), record.name(), record.generation(), running);
    }
}
