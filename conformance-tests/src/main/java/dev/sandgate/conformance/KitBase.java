package dev.sandgate.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.ComputeDriverProvider;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * The bottom of the kit's rule layers: the run's {@link KitSession}, which {@link ComputeDriverConformanceTest} opens
 * before any group and closes after the last, the provider's registration and the leak check that ends every run.
 *
 * <p>The rules live in layers stacked on top of each other ({@link IdentityRules}, {@link LifecycleRules}, {@link
 * GenerationRules}, {@link PolicyRules}, {@link WatchRules}, {@link ExecRules}, {@link LogRules}) because JUnit finds {@code @Nested} groups only through
 * the superclasses of the class it runs; no layer uses another's groups, each only the session and {@link
 * KitAssertions}.
 */
abstract class KitBase {
    /** The run of this test class; set before the first group, by the class a driver author extends. */
    KitSession kit;

    /** Runs after every other group (the highest order), so that the leak check is a test with a name in reports. */
    @Nested
    @Order(Integer.MAX_VALUE)
    @DisplayName("After every other group")
    class AfterEveryOtherGroup {
        @Test
        void required_nothingTheKitCreatedSurvives() {
            kit.assertNothingSurvives();
        }
    }

    @Nested
    @DisplayName("The provider")
    class Provider {
        @Test
        void required_providerIsRegisteredWithServiceLoader() {
            ComputeDriverProvider provider = kit.provider;
            assertThat(provider.name()).as("provider name").matches("[a-z][a-z0-9-]*");
            List<String> registered =
                    ServiceLoader.load(
                                    ComputeDriverProvider.class,
                                    provider.getClass().getClassLoader())
                            .stream()
                            .map(found -> found.get().name())
                            .toList();
            assertThat(registered)
                    .as("names of the providers listed in META-INF/services/%s", ComputeDriverProvider.class.getName())
                    .contains(provider.name());
        }
    }
}
