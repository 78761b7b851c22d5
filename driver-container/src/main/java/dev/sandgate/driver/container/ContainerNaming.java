package dev.sandgate.driver.container;

import dev.sandgate.spi.SandboxRef;

/**
 * Names of what the container drivers create. Names are only for people reading {@code docker ps}: the drivers find
 * everything by label, never by name.
 *
 * <ul>
 *   <li>Container: {@code sandgate-<workspace>-<name>-<first 8 characters of the id>-g<generation>}, workspace cut to
 *       12 and name to 20 characters, so that names stay within 63 characters; a relaunch of the same generation
 *       appends {@code -<attempt>}.
 *   <li>Workspace volume: {@code sandgate-<id>-workspace}, mounted at {@value #WORKSPACE_PATH}.
 * </ul>
 */
public final class ContainerNaming {
    /** Where the sandbox's persistent workspace volume is mounted in every container. */
    public static final String WORKSPACE_PATH = "/workspace";

    static final String PREFIX = "sandgate-";
    private static final int WORKSPACE_CHARS = 12;
    private static final int NAME_CHARS = 20;
    private static final int ID_CHARS = 8;

    private ContainerNaming() {}

    /**
     * The container name of {@code ref}'s execution {@code generation}; {@code attempt} 1 for the first container of
     * that generation, 2 and up for relaunches while an older container of the same generation still exists.
     */
    public static String containerName(SandboxRef ref, long generation, int attempt) {
        if (generation < 1) {
            throw new IllegalArgumentException("generation must be at least 1");
        }
        if (attempt < 1) {
            throw new IllegalArgumentException("attempt must be at least 1");
        }
        String base = PREFIX
                + cut(ref.workspace(), WORKSPACE_CHARS)
                + "-"
                + cut(ref.name(), NAME_CHARS)
                + "-"
                + ref.id().substring(0, ID_CHARS)
                + "-g"
                + generation;
        return attempt == 1 ? base : base + "-" + attempt;
    }

    /** The name of the workspace volume of sandbox {@code sandboxId}. */
    public static String volumeName(String sandboxId) {
        return PREFIX + sandboxId + "-workspace";
    }

    private static String cut(String label, int max) {
        String cut = label.length() <= max ? label : label.substring(0, max);
        while (cut.endsWith("-")) {
            cut = cut.substring(0, cut.length() - 1);
        }
        return cut;
    }
}
