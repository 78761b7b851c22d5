package dev.sandgate.driver.container;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StaticPolicy;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ContainerStampsTest {
    private static final SandboxRef REF = new SandboxRef("3f2a9c1e-7b4d-4e8a-9c0f-1234567890ab", "team-a", "agent");
    private static final LaunchInput LAUNCH =
            new LaunchInput(4, LaunchPolicies.of(2, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));

    @Test
    void containersCarryEveryManagedStamp() {
        Map<String, String> labels = ContainerStamps.containerLabels(REF, "gw-1", LAUNCH, Map.of());

        assertThat(labels)
                .containsEntry(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE)
                .containsEntry(Labels.GATEWAY_ID, "gw-1")
                .containsEntry(Labels.SANDBOX_ID, REF.id())
                .containsEntry(Labels.WORKSPACE, "team-a")
                .containsEntry(Labels.NAME, "agent")
                .containsEntry(Labels.GENERATION, "4")
                .containsEntry(Labels.POLICY_DIGEST, LAUNCH.policy().digest());
    }

    @Test
    void userLabelsCannotSpoofOrAddReservedStamps() {
        Map<String, String> spoofing = Map.of(
                Labels.SANDBOX_ID,
                "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b",
                Labels.GENERATION,
                "99",
                Labels.RESERVED_PREFIX + "invented",
                "x",
                "team",
                "blue");

        Map<String, String> labels = ContainerStamps.containerLabels(REF, "gw-1", LAUNCH, spoofing);

        assertThat(labels)
                .containsEntry(Labels.SANDBOX_ID, REF.id())
                .containsEntry(Labels.GENERATION, "4")
                .containsEntry("team", "blue")
                .doesNotContainKey(Labels.RESERVED_PREFIX + "invented");
        assertThat(labels.get(ContainerStamps.USER_LABEL_KEYS)).isEqualTo("team");
    }

    @Test
    void userLabelsReadBackAreThoseTheContainerWasCreatedWithNotTheImages() {
        Map<String, String> onContainer = new HashMap<>(
                ContainerStamps.containerLabels(REF, "gw-1", LAUNCH, Map.of("team", "blue", "tier", "gold")));
        onContainer.put("org.opencontainers.image.title", "from the image");

        assertThat(ContainerStamps.userLabels(onContainer)).isEqualTo(Map.of("team", "blue", "tier", "gold"));
    }

    @Test
    void aContainerWithoutTheKeysStampHasNoUserLabels() {
        assertThat(ContainerStamps.userLabels(Map.of("team", "blue"))).isEmpty();
    }

    @Test
    void volumesCarryTheIdentityStampsOnly() {
        assertThat(ContainerStamps.volumeLabels(REF, "gw-1"))
                .containsOnlyKeys(
                        Labels.MANAGED_BY, Labels.GATEWAY_ID, Labels.SANDBOX_ID, Labels.WORKSPACE, Labels.NAME);
    }

    @Test
    void aMissingOrMalformedGenerationReadsAsAbsent() {
        assertThat(ContainerStamps.generation(Map.of())).isEmpty();
        assertThat(ContainerStamps.generation(Map.of(Labels.GENERATION, "x"))).isEmpty();
        assertThat(ContainerStamps.generation(Map.of(Labels.GENERATION, "0"))).isEmpty();
        assertThat(ContainerStamps.generation(Map.of(Labels.GENERATION, "7"))).hasValue(7);
    }

    @Test
    void malformedIdentityStampsAreAnInternalError() {
        DriverException error = catchThrowableOfType(
                DriverException.class,
                () -> ContainerStamps.ref(Map.of(Labels.SANDBOX_ID, "not-a-uuid"), "container abc"));

        assertThat(error.code()).isEqualTo(DriverErrorCode.INTERNAL);
        assertThat(error.getMessage())
                .startsWith("container abc carries missing or malformed sandgate identity stamps");
    }
}
