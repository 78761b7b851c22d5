package dev.sandgate.spi;

import java.util.Map;
import java.util.Optional;

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

    /**
     * The ref of three values read from a backend (stamps, a state file), or empty when any is absent or malformed.
     * For {@code list} and {@code watch}, which skip such a resource: no exception to catch.
     */
    public static Optional<SandboxRef> parse(String id, String workspace, String name) {
        boolean valid = id != null
                && Identifiers.isCanonicalUuid(id)
                && workspace != null
                && workspace.length() <= Identifiers.MAX_LABEL_LENGTH
                && Identifiers.isDnsLabel(workspace)
                && name != null
                && name.length() <= Identifiers.MAX_LABEL_LENGTH
                && Identifiers.isDnsLabel(name);
        return valid ? Optional.of(new SandboxRef(id, workspace, name)) : Optional.empty();
    }

    /**
     * The ref that the stamps {@link Labels#SANDBOX_ID}, {@link Labels#WORKSPACE} and {@link Labels#NAME} in {@code
     * stamps} name; empty when any is absent or malformed.
     */
    public static Optional<SandboxRef> fromStamps(Map<String, String> stamps) {
        return parse(stamps.get(Labels.SANDBOX_ID), stamps.get(Labels.WORKSPACE), stamps.get(Labels.NAME));
    }

    @Override
    public String toString() {
        return workspace + "/" + name + " (" + id + ")";
    }
}
