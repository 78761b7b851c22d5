package dev.sandgate.driver.kubernetes;

import static java.nio.charset.StandardCharsets.UTF_8;

import dev.sandgate.spi.SandboxRef;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Where a sandbox lives: its namespace and the name of its Sandbox object, derived from the workspace and name only
 * (never from the id), so that a second sandbox with the same workspace and name collides with the first and is
 * refused instead of silently living beside it.
 *
 * <p>Every name is a DNS label of at most 63 characters, which the Sandbox name must be because the controller names
 * the pod after it. When the readable form is too long it is cut and a hash of the full form keeps it unique.
 */
final class ResourceNames {
    /** The longest Kubernetes name this driver produces (a DNS label). */
    static final int MAX_NAME_LENGTH = 63;

    /** The name of the volume claim template; the controller names the claim {@code workspace-<sandbox name>}. */
    static final String WORKSPACE_VOLUME = "workspace";

    private static final int HASH_LENGTH = 8;

    private ResourceNames() {}

    /**
     * The Sandbox object's name. In a shared namespace: {@code <workspace>-<name>-<hash>}, cut to fit, where the hash
     * covers workspace and name so that {@code a-b/c} and {@code a/b-c} differ. In a namespace per workspace: the
     * sandbox's name itself.
     */
    static String sandboxName(boolean sharedNamespace, SandboxRef ref) {
        if (!sharedNamespace) {
            return ref.name();
        }
        String readable = ref.workspace() + "-" + ref.name();
        return cut(readable, MAX_NAME_LENGTH - HASH_LENGTH - 1) + "-" + hash(ref.workspace() + "/" + ref.name());
    }

    /** The namespace of a workspace in per-workspace mode: {@code <prefix><workspace>}, cut and hashed to fit. */
    static String workspaceNamespace(String prefix, String workspace) {
        String readable = prefix + workspace;
        if (readable.length() <= MAX_NAME_LENGTH) {
            return readable;
        }
        return cut(readable, MAX_NAME_LENGTH - HASH_LENGTH - 1) + "-" + hash(workspace);
    }

    /** The name of the workspace's volume claim, as the Agent Sandbox controller names it. */
    static String workspaceClaimName(String sandboxName) {
        return WORKSPACE_VOLUME + "-" + sandboxName;
    }

    /**
     * The name of the Secret holding the sandbox's environment. It carries the sandbox id, so a Secret left over by
     * a deleted sandbox of the same name (until the garbage collector removes it) never collides with a new one.
     */
    static String environmentSecretName(String sandboxId) {
        return "sandgate-env-" + sandboxId;
    }

    private static String cut(String value, int length) {
        String cut = value.length() <= length ? value : value.substring(0, length);
        while (cut.endsWith("-")) {
            cut = cut.substring(0, cut.length() - 1);
        }
        return cut;
    }

    private static String hash(String value) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(value.getBytes(UTF_8));
            return HexFormat.of().formatHex(digest).substring(0, HASH_LENGTH);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
