package dev.sandgate.testing;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/**
 * Marks a test that needs a real engine (dockerd, Podman, QEMU, PostgreSQL, Prometheus), tagged {@code engine}, so
 * that {@code -DexcludedGroups=engine,process} leaves it out of a quick in-process run.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Tag("engine")
public @interface EngineTest {}
