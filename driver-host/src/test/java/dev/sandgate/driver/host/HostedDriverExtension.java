package dev.sandgate.driver.host;

import java.util.function.Supplier;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A driver host process for one test class: started at first use (after the class's temporary directories exist),
 * stopped after the class's own {@code @AfterAll} methods, so that the kit's final cleanup still reaches the driver.
 */
public final class HostedDriverExtension implements AfterAllCallback {
    private final Supplier<HostedDriverProcess> factory;
    private HostedDriverProcess process;

    public HostedDriverExtension(Supplier<HostedDriverProcess> factory) {
        this.factory = factory;
    }

    public synchronized HostedDriverProcess process() {
        if (process == null) {
            process = factory.get().start();
        }
        return process;
    }

    @Override
    public synchronized void afterAll(ExtensionContext context) {
        // Nested classes inherit the extension: only the end of the top-level class stops the host.
        if (context.getRequiredTestClass().isAnnotationPresent(Nested.class)) {
            return;
        }
        if (process != null) {
            process.close();
            process = null;
        }
    }
}
