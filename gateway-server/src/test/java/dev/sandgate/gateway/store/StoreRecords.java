package dev.sandgate.gateway.store;

import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.spi.Identifiers;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Records for store tests. */
final class StoreRecords {
    private StoreRecords() {}

    /** A READY sandbox named {@code name} in workspace "team", with a fresh id. */
    static SandboxRecord sandbox(String name) {
        Instant now = Instant.parse("2026-01-01T00:00:00Z");
        String digest = PolicyDocument.DEFAULT.digest();
        return new SandboxRecord(
                Identifiers.newSandboxId(),
                "team",
                name,
                SandboxPhase.READY,
                1,
                now,
                1,
                digest,
                1,
                "RUNNING",
                "",
                PolicyMode.LIVE,
                1,
                digest,
                new StoredSpec("img", List.of("sh"), List.of(), Map.of("K", "v"), 0, 0),
                Map.of("app", "x"),
                List.of(),
                Optional.empty(),
                0,
                now,
                now);
    }
}
