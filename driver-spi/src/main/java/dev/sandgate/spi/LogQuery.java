package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import java.util.Optional;

/**
 * What {@link ComputeDriver#logs} reads.
 *
 * @param follow keep reading until the execution ends; without it, stop at the output written so far
 * @param since only output written at or after this time (as precisely as the backend records it)
 */
public record LogQuery(boolean follow, Optional<Instant> since) {
    public LogQuery {
        requireNonNull(since, "since is null");
    }
}
