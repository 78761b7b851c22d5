package dev.sandgate.testing;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/**
 * Marks a test that starts a JVM or another process (a gateway, a driver host, the Python driver, a system tool),
 * tagged {@code process}: slower than an in-process test and dependent on the machine, so that
 * {@code -DexcludedGroups=engine,process} leaves it out of a quick run.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Tag("process")
public @interface ProcessTest {}
