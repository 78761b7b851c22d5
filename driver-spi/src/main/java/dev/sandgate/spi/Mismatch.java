package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

/**
 * Machine-readable detail of a failed precondition: which attribute was checked, what the request expected and what
 * the runtime resource actually carries.
 *
 * @param subject the attribute, e.g. {@code sandbox_id}, {@code name}, {@code workspace}, {@code generation},
 *     {@code policy_digest}, {@code running}
 * @param expected the value the request expected
 * @param actual the value found on the runtime resource
 */
public record Mismatch(String subject, String expected, String actual) {
    public static final String SANDBOX_ID = "sandbox_id";
    public static final String WORKSPACE = "workspace";
    public static final String NAME = "name";
    public static final String GENERATION = "generation";
    public static final String POLICY_DIGEST = "policy_digest";
    /** Whether the execution runs: an exec needs a running one (expected {@code true}, actual {@code false}). */
    public static final String RUNNING = "running";

    public Mismatch {
        requireNonNull(subject, "subject is null");
        requireNonNull(expected, "expected is null");
        requireNonNull(actual, "actual is null");
    }
}
