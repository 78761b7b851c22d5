package dev.sandgate.driver.podman;

import dev.sandgate.driver.container.testing.TestEngine;

/** The Podman API the tests use: {@code SANDGATE_PODMAN_HOST} (exported by scripts/engines/podman.sh). */
final class PodmanTestEngine {
    static final TestEngine ENGINE =
            TestEngine.fromEnvironment("Podman", "SANDGATE_PODMAN_HOST", PodmanDriverProvider.DEFAULT_HOST);

    private PodmanTestEngine() {}
}
