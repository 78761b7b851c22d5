package dev.sandgate.driver.docker;

import dev.sandgate.driver.container.EngineDialect;

/** The Docker Engine: the reference behaviour of {@link EngineDialect}, nothing to change. */
final class DockerEngineDialect implements EngineDialect {
    static final DockerEngineDialect INSTANCE = new DockerEngineDialect();

    private DockerEngineDialect() {}

    @Override
    public String engineName() {
        return "Docker Engine";
    }
}
