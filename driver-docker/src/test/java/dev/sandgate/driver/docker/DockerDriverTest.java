package dev.sandgate.driver.docker;

import dev.sandgate.driver.container.ContainerEngineProvider;
import dev.sandgate.driver.container.testing.ContainerEngineDriverTest;
import dev.sandgate.driver.container.testing.TestEngine;

/** The container driver's engine tests against a real Docker Engine. */
class DockerDriverTest extends ContainerEngineDriverTest {
    @Override
    protected TestEngine engine() {
        return DockerTestEngine.ENGINE;
    }

    @Override
    protected ContainerEngineProvider provider() {
        return new DockerDriverProvider();
    }

    @Override
    protected String inspectedDefaultNetworkMode() {
        return "default";
    }
}
