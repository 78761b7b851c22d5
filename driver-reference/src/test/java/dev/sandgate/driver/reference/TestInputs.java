package dev.sandgate.driver.reference;

import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.StaticPolicy;
import java.nio.charset.StandardCharsets;

/** Launch inputs for the module's own tests. */
final class TestInputs {
    private TestInputs() {}

    static LaunchInput launch(long generation) {
        byte[] document = "{\"test\":true}".getBytes(StandardCharsets.UTF_8);
        return new LaunchInput(
                generation,
                new LaunchPolicy(
                        1, LaunchPolicy.digestOf(document), document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));
    }
}
