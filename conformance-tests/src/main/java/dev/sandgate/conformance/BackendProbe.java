package dev.sandgate.conformance;

import dev.sandgate.spi.SandboxRef;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Out-of-band access to a driver's backend, for the conformance kit: it plants, removes and reads runtime resources
 * behind the driver's back. A driver's test implements it with the backend's own client (docker-java, fabric8, the
 * VM state directory), never through the driver under test.
 */
public interface BackendProbe extends AutoCloseable {
    /**
     * Creates a runtime resource for {@code ref} without the driver, stamped exactly as the driver would stamp a
     * sandbox at generation 1 with {@code policyDigest}, under {@code gatewayId}, and running. Used to plant a
     * foreign resource with the same workspace and name as another sandbox, or one owned by another gateway.
     *
     * <p>Name it exactly as the driver would name {@code ref}'s resource (container name, object name, directory):
     * where the driver derives a backend name from the workspace and name, the planted resource must hold that name,
     * or a driver that looks up or mutates by name is never caught.
     *
     * @return the planted resource
     */
    BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest);

    /**
     * Like {@link #plant}, but with its execution stopped, as the driver leaves a sandbox after {@code stop} (the
     * backend reports it not running; a start by the driver could launch it). Used where a stopped resource is what a
     * broken driver would wrongly launch: a replacement planted during a start, a name held by another id.
     *
     * @return the planted resource
     */
    BackendResource plantStopped(SandboxRef ref, String gatewayId, String policyDigest);

    /**
     * The resource carrying {@code sandboxId}, whatever gateway stamped it: one per execution unit (the container, the
     * Sandbox object, the VM), the one whose backend id the driver passes to the {@link
     * dev.sandgate.spi.MutationHook}; more than one only when the driver left several (a leaked older container).
     * Other parts of a sandbox (a volume, a Secret) are not listed here but in {@link #resourcesOfGateway}. Empty when
     * none.
     */
    List<BackendResource> resources(String sandboxId);

    /**
     * Every resource stamped with {@code gatewayId}, every part of every sandbox (volumes, Secrets, ... included): what
     * a test class left behind.
     */
    List<BackendResource> resourcesOfGateway(String gatewayId);

    /** Removes every resource carrying {@code sandboxId} (workspace included) behind the driver's back. */
    void remove(String sandboxId);

    /**
     * Writes {@code marker} into the running sandbox's persistent workspace, as a program in the sandbox would (exec
     * into a container, the guest's console, ...).
     */
    void writeWorkspaceMarker(SandboxRef ref, String marker);

    /** Reads back what {@link #writeWorkspaceMarker} wrote into the running sandbox's workspace; empty if absent. */
    Optional<String> readWorkspaceMarker(SandboxRef ref);

    /**
     * Reads, from the backend's own settings for the resource carrying {@code ref}'s id, the restrictions its current
     * execution runs with: what the engine reports it applies (inspect the container, get the pod and the network
     * policies that select it, read the VM process's arguments), never what the driver says it asked for. The kit
     * compares this with the launch policy for every field the driver claims in {@link
     * dev.sandgate.spi.DriverCapabilities#enforceablePolicyFields()}: each must be in force (limits exactly as
     * asked, capabilities at least those asked dropped).
     *
     * @throws IllegalStateException if no resource carries the id
     */
    AppliedPolicy appliedPolicy(SandboxRef ref);

    /**
     * Reads the environment that the program of the sandbox's current execution is launched with, as the backend
     * holds it (a container's config, the pod's variables with the Secrets they reference, the live environment of a
     * process the VM's guest started as it starts the workload): every variable, those the backend adds itself
     * included. Read what the program gets, not a file your driver wrote: quoting is what goes wrong. Values are
     * secrets: never log them (the kit's own failure messages show only its own test values).
     *
     * @throws IllegalStateException if no resource carries the id
     */
    Map<String, String> launchedEnvironment(SandboxRef ref);

    /** Removes everything the probe itself planted that still exists. */
    @Override
    void close();
}
