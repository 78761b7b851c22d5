package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxSpec;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SpecCodecTest {
    @Test
    void aSpecRoundTrips() {
        var spec = new SandboxSpec(
                "registry.example/sleeper:1",
                List.of("/bin/sh", "-c"),
                List.of("sleep 3600", "x=y z"),
                Map.of("TOKEN", "line one\nline two = with: separators"),
                Map.of("team", "blue", "example.org/tier", "gold"),
                new ResourceRequests(1024, 250));

        assertThat(SpecCodec.decode(SpecCodec.encode(spec))).isEqualTo(spec);
    }

    @Test
    void aMalformedStoredSpecIsRefusedWithoutEchoingItsValues() {
        Map<String, String> stored = new HashMap<>(SpecCodec.encode(SandboxSpec.ofImage("sleeper")));
        stored.put("env.TOKEN", "s3cr3t");
        stored.put("command.count", "2");

        assertThatThrownBy(() -> SpecCodec.decode(stored))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageNotContaining("s3cr3t");
    }
}
