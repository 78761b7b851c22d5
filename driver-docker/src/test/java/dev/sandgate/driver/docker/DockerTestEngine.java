package dev.sandgate.driver.docker;

import dev.sandgate.driver.container.testing.TestEngine;

/** The Docker Engine the tests use: {@code SANDGATE_DOCKER_HOST} (exported by scripts/engines/docker.sh). */
final class DockerTestEngine {
    static final TestEngine ENGINE =
            TestEngine.fromEnvironment("Docker Engine", "SANDGATE_DOCKER_HOST", DockerDriverProvider.DEFAULT_HOST);

    private DockerTestEngine() {}
}
