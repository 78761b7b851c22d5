package dev.sandgate.gateway.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * Starts a {@link TestGateway} into each {@link StartedGateway} field of the test instance before each test, and
 * closes whatever gateway the field holds after it (a test may replace it) and deletes its directory.
 */
public final class StartedGatewayExtension implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NAMESPACE =
            ExtensionContext.Namespace.create(StartedGatewayExtension.class);

    @Override
    public void beforeEach(ExtensionContext context) throws Exception {
        Object test = context.getRequiredTestInstance();
        for (Field field : fields(test)) {
            Path root = Files.createTempDirectory("sandgate-gateway-");
            context.getStore(NAMESPACE).put(field, root);
            field.set(test, TestGateway.start(root, transport(test, field)));
        }
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        Object test = context.getRequiredTestInstance();
        for (Field field : fields(test)) {
            try {
                if (field.get(test) instanceof TestGateway gateway) {
                    gateway.close();
                }
            } finally {
                Path root = context.getStore(NAMESPACE).remove(field, Path.class);
                if (root != null) {
                    delete(root);
                }
            }
        }
    }

    private static List<Field> fields(Object test) {
        List<Field> fields = AnnotationSupport.findAnnotatedFields(test.getClass(), StartedGateway.class);
        for (Field field : fields) {
            if (field.getType() != TestGateway.class) {
                throw new IllegalStateException("@StartedGateway needs a TestGateway field: " + field);
            }
            field.setAccessible(true);
        }
        return fields;
    }

    private static TestGateway.Transport transport(Object test, Field gateway) throws IllegalAccessException {
        for (Class<?> type = test.getClass(); type != Object.class; type = type.getSuperclass()) {
            for (Field field : type.getDeclaredFields()) {
                if (field.getType() == TestGateway.Transport.class && !Modifier.isStatic(field.getModifiers())) {
                    field.setAccessible(true);
                    if (field.get(test) instanceof TestGateway.Transport transport) {
                        return transport;
                    }
                }
            }
        }
        return gateway.getAnnotation(StartedGateway.class).transport();
    }

    private static void delete(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("could not delete " + root, e);
        }
    }
}
