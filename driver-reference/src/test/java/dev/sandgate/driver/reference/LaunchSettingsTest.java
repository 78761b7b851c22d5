package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.StaticPolicy;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LaunchSettingsTest {
    private static LaunchPolicy policy(StaticPolicy staticPolicy, DynamicPolicy dynamicPolicy) {
        byte[] document = "{}".getBytes(StandardCharsets.UTF_8);
        return new LaunchPolicy(1, LaunchPolicy.digestOf(document), document, staticPolicy, dynamicPolicy);
    }

    @Test
    void everyRestrictionOfAPolicyIsReadBackFromItsSettings() {
        var restrictions =
                new StaticPolicy(true, NetworkMode.DEFAULT, Set.of("NET_RAW", "MKNOD"), true, 1 << 28, 1500, 64);
        var allowList = new DynamicPolicy(List.of("example.org:443", "10.20.0.0/16"));

        Map<String, String> settings = LaunchSettings.of(policy(restrictions, allowList));

        assertThat(LaunchSettings.staticPolicy(settings)).isEqualTo(restrictions);
        assertThat(LaunchSettings.dynamicPolicy(settings)).isEqualTo(allowList);
    }

    @Test
    void noSettingsMeansUnrestricted() {
        assertThat(LaunchSettings.staticPolicy(Map.of()))
                .isEqualTo(new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 0, 0, 0));
        assertThat(LaunchSettings.dynamicPolicy(Map.of())).isEqualTo(DynamicPolicy.EMPTY);
    }
}
