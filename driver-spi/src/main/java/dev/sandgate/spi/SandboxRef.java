package dev.sandgate.spi;

/**
 * How every driver call names a sandbox.
 *
 * <p><b>The id is authoritative; the workspace and name are only locators.</b> A driver finds the runtime resource by
 * {@code id} and then verifies that it carries this {@code workspace} and {@code name}:
 *
 * <ul>
 *   <li>a resource found for the id whose workspace or name differs is answered with {@link
 *       DriverErrorCode#FAILED_PRECONDITION} before anything is mutated;
 *   <li>a resource found by name (where a backend locates by name) whose id differs is answered with {@link
 *       DriverErrorCode#FAILED_PRECONDITION} before anything is mutated;
 *   <li>when no resource carries the id, the answer is {@link DriverErrorCode#NOT_FOUND} (for delete: success with
 *       nothing deleted). It never falls back to a resource with the same name.
 * </ul>
 *
 * @param id the gateway's stable sandbox id, a canonical lowercase UUID, never reused
 * @param workspace the sandbox's workspace, a DNS label
 * @param name the sandbox's name within its workspace, a DNS label
 */
public record SandboxRef(String id, String workspace, String name) {
    public SandboxRef {
        Identifiers.requireSandboxId("ref.id", id);
        Identifiers.requireDnsLabel("ref.workspace", workspace);
        Identifiers.requireDnsLabel("ref.name", name);
    }

    @Override
    public String toString() {
        return workspace + "/" + name + " (" + id + ")";
    }
}
