package dev.sandgate.spi;

/**
 * The answer to {@link ComputeDriver#delete}.
 *
 * @param deleted true if this call removed the sandbox's resources; false if none carried the id
 */
public record DeleteResult(boolean deleted) {}
