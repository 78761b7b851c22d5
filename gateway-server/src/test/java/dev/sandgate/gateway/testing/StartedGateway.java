package dev.sandgate.gateway.testing;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A {@link TestGateway} field that {@link StartedGatewayExtension} fills before each test (before the class's own
 * {@code @BeforeEach} methods) with a gateway over a fresh directory, and closes after it (after the class's
 * {@code @AfterEach} methods): the set-up that most gateway tests shared as copied code.
 *
 * <p>The transport is the test's {@link TestGateway.Transport} field when it has one (the parameter of a
 * {@code @ParameterizedClass} over the transports), else {@link #transport()}.
 */
@Target(ElementType.FIELD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@ExtendWith(StartedGatewayExtension.class)
public @interface StartedGateway {
    TestGateway.Transport transport() default TestGateway.Transport.IN_PROCESS;
}
