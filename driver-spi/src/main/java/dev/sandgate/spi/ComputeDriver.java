package dev.sandgate.spi;

import java.util.List;
import java.util.OptionalLong;

/**
 * A compute backend that runs sandboxes: the service a {@link ComputeDriverProvider} creates.
 *
 * <h2>Identity</h2>
 *
 * Every call names the sandbox by a {@link SandboxRef}. <b>The id is authoritative; a name is only a locator.</b> A
 * driver finds the runtime resource by the id stamped on it ({@link Labels#SANDBOX_ID} or its equivalent), then
 * verifies the workspace and name: a mismatch is {@link DriverErrorCode#FAILED_PRECONDITION} before any mutation. A
 * resource found by name whose id differs is FAILED_PRECONDITION as well. An absent id never falls back to a resource
 * with the same name: it is {@link DriverErrorCode#NOT_FOUND} (delete: success, nothing deleted). After resolving, a
 * driver mutates only through an immutable backend identifier (container ID, Kubernetes UID precondition, VM process
 * identity), calling {@link DriverContext#mutationHook()} first, so that a resource replaced between lookup and
 * mutation is never touched.
 *
 * <p>Drivers see only resources stamped with their {@link DriverContext#gatewayId()}. Everything a driver creates
 * carries the stamps of {@link Labels}: managed-by, gateway id, sandbox id, workspace, name, generation, policy
 * digest. Managed stamps always win over user labels.
 *
 * <h2>Execution generations</h2>
 *
 * Only the gateway mints generations: 1 at create, +1 for every start it claims, never reused, even after a failed
 * launch. Drivers stamp the generation of the launch input on the resource and report it in every observation. {@code
 * start(ref, input)} with generation G behaves as follows:
 *
 * <ul>
 *   <li>resource at G and running: success, nothing changes ({@code launched == false});
 *   <li>resource at G and not running: relaunch with the same input;
 *   <li>resource at a lower generation and not running: launch G;
 *   <li>anything else (the input is older than what the resource carries, the resource runs another generation, or
 *       the same generation carries another policy digest): FAILED_PRECONDITION, nothing mutated.
 * </ul>
 *
 * Stop and delete accept an expected generation: a resource of another generation is FAILED_PRECONDITION, not a stop.
 *
 * <h2>State lives in the backend</h2>
 *
 * A fresh driver instance over the same backend and gateway id finds every sandbox. A driver keeps no state that the
 * backend does not also hold, except caches and per-id locks.
 *
 * <h2>Threading</h2>
 *
 * All methods may be called concurrently, for the same or different sandboxes. The gateway serializes lifecycle
 * operations per sandbox, but a driver must stay correct without that (the conformance kit races it). Calls block
 * until the backend has answered.
 */
public interface ComputeDriver extends AutoCloseable {
    /** What this driver can do. Constant for the driver's lifetime. */
    DriverCapabilities capabilities();

    /**
     * Checks, without touching the backend's resources, that this driver can launch {@code spec} with {@code
     * launch}. Throws UNSUPPORTED for a policy field it cannot enforce ({@link
     * DriverCapabilities#requireEnforceable}) and INVALID_ARGUMENT for what it cannot run (an image reference its
     * backend cannot parse, say). {@link #create} and {@link #start} perform the same checks first.
     */
    void validate(SandboxSpec spec, LaunchInput launch);

    /**
     * Creates the sandbox's runtime resources and launches generation {@code launch.generation()}.
     *
     * <p>Idempotent: if a resource carrying {@code ref.id()} exists with the same generation and policy digest, it is
     * returned with {@code created == false}; with anything else ALREADY_EXISTS. Returns once the launch is handed to
     * the backend; the sandbox may still be PROVISIONING.
     *
     * <p>A resource of another id that carries {@code ref}'s workspace and name (found by name, or by its stamps where
     * the backend keys resources by id) is FAILED_PRECONDITION with a {@code sandbox_id} {@link Mismatch} ({@link
     * DriverException#sandboxIdMismatch}); that resource is never returned, reused or changed.
     *
     * @throws DriverException INVALID_ARGUMENT, UNSUPPORTED, ALREADY_EXISTS, FAILED_PRECONDITION (the resource of the
     *     id carries another workspace or name; another id holds the workspace and name), UNAVAILABLE,
     *     DEADLINE_EXCEEDED
     */
    CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch);

    /**
     * The sandbox as the backend reports it now.
     *
     * @throws DriverException NOT_FOUND (no resource carries the id; never a same-name fallback), FAILED_PRECONDITION
     *     (the resource's workspace or name differs from {@code ref}), UNAVAILABLE
     */
    SandboxObservation get(SandboxRef ref);

    /** Every sandbox stamped with this gateway's id, in no particular order. */
    List<SandboxObservation> list();

    /**
     * Launches generation {@code launch.generation()} following the Start(G) rules above. The spec is the one given
     * at create; a driver keeps it in the backend.
     *
     * @throws DriverException NOT_FOUND, FAILED_PRECONDITION (identity mismatch, an older input, another generation
     *     running), UNSUPPORTED (a policy field it cannot enforce; a changed policy without {@link
     *     DriverCapabilities#launchPolicyOnStart()}), ABORTED (the resource was replaced between lookup and mutation),
     *     UNAVAILABLE, DEADLINE_EXCEEDED
     */
    StartResult start(SandboxRef ref, LaunchInput launch);

    /**
     * Stops the running execution and waits until the backend reports it stopped; the workspace is kept. Idempotent:
     * stopping a stopped sandbox succeeds with {@code stoppedNow == false}.
     *
     * @param expectedGeneration if present, the resource must carry exactly this generation, else FAILED_PRECONDITION
     *     and nothing is stopped
     * @throws DriverException NOT_FOUND, FAILED_PRECONDITION, ABORTED (the resource was replaced between lookup and
     *     mutation), UNAVAILABLE, DEADLINE_EXCEEDED
     */
    StopResult stop(SandboxRef ref, OptionalLong expectedGeneration);

    /**
     * Removes every resource of the sandbox, its workspace included. Idempotent: when no resource carries the id the
     * answer is {@code deleted == false}, never a same-name fallback. Of concurrent deletes of one sandbox at most
     * one reports {@code deleted == true}.
     *
     * @param expectedGeneration if present and the resource carries another generation, FAILED_PRECONDITION and
     *     nothing is removed
     * @throws DriverException FAILED_PRECONDITION, ABORTED (the resource was replaced between lookup and mutation),
     *     UNAVAILABLE, DEADLINE_EXCEEDED
     */
    DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration);

    /**
     * Subscribes to changes of this gateway's sandboxes: a snapshot of each, then {@link SandboxEvent.Synced}, then
     * changes (see {@link SandboxEvent}). Every snapshot carries the generation stamped on the resource. Returns once
     * the subscription is established.
     */
    WatchSubscription watch(SandboxWatcher watcher);

    /**
     * Runs a command in execution {@code generation} of the sandbox, and only there. The driver resolves {@code ref}
     * by id as for every call, then requires that the resource carries exactly {@code generation} and that this
     * execution runs, and runs the command through the execution's immutable backend identity (container id, pod
     * uid, VM process), so that a newer execution is never reached. Returns once the command is started; its output,
     * then its exit, reach {@code listener}.
     *
     * <p>Optional: a driver without {@link DriverCapabilities#exec()} keeps this default, which is UNSUPPORTED; one
     * that implements it but does not claim it refuses the same way, before it looks the sandbox up.
     *
     * @throws DriverException UNSUPPORTED, INVALID_ARGUMENT (a command the backend refuses: naming {@code command}),
     *     NOT_FOUND, FAILED_PRECONDITION (identity mismatch; the resource carries another generation, with a {@code
     *     generation} {@link Mismatch}; the execution does not run, with a {@code running} mismatch: {@link
     *     DriverException#notRunning}), UNAVAILABLE;
     *     nothing ran
     */
    default ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
        throw new DriverException(DriverErrorCode.UNSUPPORTED, "this driver cannot run commands in a sandbox (exec)");
    }

    /**
     * Reads the output of execution {@code generation} of the sandbox, and only of that execution (running or
     * stopped). The resource must carry exactly {@code generation}: once a start launched a newer execution, a read of
     * an older one is FAILED_PRECONDITION with a {@code generation} {@link Mismatch}, even where the backend keeps the
     * older output. A read of the current execution never delivers another execution's output (a restarted container's
     * log holds every run's output: the driver cuts it to this execution's). Output written by {@link #exec} commands
     * is not part of it. Returns once the read is started; output, then the end, reach {@code listener}. Without {@link
     * LogQuery#follow()} the read ends when the output written so far is delivered; with it, when the execution ends
     * (stopped, replaced or deleted).
     *
     * <p>Optional: a driver without {@link DriverCapabilities#logs()} keeps this default, which is UNSUPPORTED; one
     * that implements it but does not claim it refuses the same way, before it looks the sandbox up.
     *
     * @throws DriverException UNSUPPORTED, NOT_FOUND, FAILED_PRECONDITION (identity mismatch; the resource carries
     *     another generation, with a {@code generation} {@link Mismatch}), UNAVAILABLE
     */
    default LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
        throw new DriverException(DriverErrorCode.UNSUPPORTED, "this driver cannot read a sandbox's output (logs)");
    }

    /** Releases connections and threads. Leaves every sandbox as it is. Idempotent. */
    @Override
    void close();
}
