package dev.sandgate.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class PolicyFieldTest {
    private static final StaticPolicy UNRESTRICTED =
            new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 0, 0, 0);

    @Test
    void anUnrestrictedPolicyUsesNoField() {
        assertThat(PolicyField.usedBy(UNRESTRICTED, DynamicPolicy.EMPTY)).isEmpty();
    }

    @Test
    void theGatewayDefaultUsesOnlyNetworkNone() {
        assertThat(PolicyField.usedBy(StaticPolicy.DEFAULT, DynamicPolicy.EMPTY))
                .containsExactly(PolicyField.NETWORK_NONE);
    }

    @Test
    void eachRestrictionUsesItsField() {
        assertThat(PolicyField.usedBy(
                        new StaticPolicy(true, NetworkMode.DEFAULT, Set.of(), false, 0, 0, 0), DynamicPolicy.EMPTY))
                .containsExactly(PolicyField.READ_ONLY_ROOT_FILESYSTEM);
        assertThat(PolicyField.usedBy(
                        new StaticPolicy(false, NetworkMode.DEFAULT, Set.of("NET_RAW"), false, 0, 0, 0),
                        DynamicPolicy.EMPTY))
                .containsExactly(PolicyField.DROP_CAPABILITIES);
        assertThat(PolicyField.usedBy(
                        new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), true, 0, 0, 0), DynamicPolicy.EMPTY))
                .containsExactly(PolicyField.NO_NEW_PRIVILEGES);
        assertThat(PolicyField.usedBy(
                        new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 1, 0, 0), DynamicPolicy.EMPTY))
                .containsExactly(PolicyField.MEMORY_LIMIT);
        assertThat(PolicyField.usedBy(
                        new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 0, 1, 0), DynamicPolicy.EMPTY))
                .containsExactly(PolicyField.CPU_LIMIT);
        assertThat(PolicyField.usedBy(
                        new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 0, 0, 1), DynamicPolicy.EMPTY))
                .containsExactly(PolicyField.PIDS_LIMIT);
        assertThat(PolicyField.usedBy(UNRESTRICTED, new DynamicPolicy(List.of("example.org:443"))))
                .containsExactly(PolicyField.NETWORK_ALLOW_LIST);
    }

    @Test
    void capabilitiesRefuseAPolicyUsingAFieldTheDriverCannotEnforceNamingIt() {
        var capabilities = new DriverCapabilities(Set.of(PolicyField.MEMORY_LIMIT), true, true);
        byte[] document = "{}".getBytes(StandardCharsets.UTF_8);
        var policy = new LaunchPolicy(
                1,
                LaunchPolicy.digestOf(document),
                document,
                new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 1, 0, 7),
                DynamicPolicy.EMPTY);

        DriverException refused =
                catchThrowableOfType(DriverException.class, () -> capabilities.requireEnforceable(policy));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.UNSUPPORTED);
        assertThat(refused.getMessage()).contains("PIDS_LIMIT").doesNotContain("MEMORY_LIMIT");
        new DriverCapabilities(Set.of(PolicyField.MEMORY_LIMIT, PolicyField.PIDS_LIMIT), true, true)
                .requireEnforceable(policy);
    }

    @Test
    void staticPolicyChecksCapabilityNamesAndLimitsNamingTheField() {
        for (String capability : List.of("CAP_NET_RAW", "net_raw", "X", "NET RAW")) {
            DriverException refused = catchThrowableOfType(
                    DriverException.class,
                    () -> new StaticPolicy(false, NetworkMode.NONE, Set.of(capability), false, 0, 0, 0));
            assertThat(refused.getMessage()).startsWith("policy.static.drop_capabilities: ");
        }
        assertThat(catchThrowableOfType(
                                DriverException.class,
                                () -> new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, -1, 0, 0))
                        .getMessage())
                .startsWith("policy.static.memory_limit_bytes: ");
        assertThat(catchThrowableOfType(
                                DriverException.class,
                                () -> new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 0, -1, 0))
                        .getMessage())
                .startsWith("policy.static.cpu_limit_millis: ");
        assertThat(catchThrowableOfType(
                                DriverException.class,
                                () -> new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 0, 0, -1))
                        .getMessage())
                .startsWith("policy.static.pids_limit: ");
    }

    @Test
    void allowListEntriesAreBoundedAndWithoutWhiteSpace() {
        for (List<String> entries : List.of(List.of(""), List.of("a b"), List.of("h".repeat(254)))) {
            assertThat(catchThrowableOfType(DriverException.class, () -> new DynamicPolicy(entries))
                            .getMessage())
                    .startsWith("policy.dynamic.network_allow_list: ");
        }
        List<String> tooMany = IntStream.rangeClosed(0, DynamicPolicy.MAX_ALLOW_LIST_ENTRIES)
                .mapToObj(i -> "host" + i)
                .toList();
        assertThat(catchThrowableOfType(DriverException.class, () -> new DynamicPolicy(tooMany)))
                .isNotNull();
    }
}
