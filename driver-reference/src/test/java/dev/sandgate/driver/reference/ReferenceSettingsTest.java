package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.PolicyField;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;

class ReferenceSettingsTest {
    @Test
    void defaultsEnforceEveryFieldButTheAllowListAndUseTheProcessLocalDirectory() {
        ReferenceSettings settings = ReferenceSettings.from(DriverSettings.EMPTY);

        assertThat(settings.directory()).isEmpty();
        assertThat(settings.enforceableFields())
                .isEqualTo(EnumSet.complementOf(EnumSet.of(PolicyField.NETWORK_ALLOW_LIST)));
        assertThat(settings.launchPolicyOnStart()).isTrue();
        assertThat(settings.watchInterval()).isEqualTo(Duration.ofMillis(50));
    }

    @Test
    void aMisspeltSettingIsRefusedInsteadOfIgnored() {
        DriverException refused = catchThrowableOfType(
                DriverException.class,
                () -> ReferenceSettings.from(DriverSettings.EMPTY.with("reference.watch-intervall", "200ms")));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).startsWith("reference.watch-intervall: is not a setting of this driver");
    }

    @Test
    void readsEverySetting() {
        ReferenceSettings settings = ReferenceSettings.from(DriverSettings.EMPTY
                .with("reference.directory", "/var/lib/sandgate-reference")
                .with("reference.enforceable-fields", "memory_limit, network-none ,PIDS_LIMIT")
                .with("reference.launch-policy-on-start", "false")
                .with("reference.watch-interval", "200ms"));

        assertThat(settings.directory()).contains(Path.of("/var/lib/sandgate-reference"));
        assertThat(settings.enforceableFields())
                .containsExactlyInAnyOrder(PolicyField.MEMORY_LIMIT, PolicyField.NETWORK_NONE, PolicyField.PIDS_LIMIT);
        assertThat(settings.launchPolicyOnStart()).isFalse();
        assertThat(settings.watchInterval()).isEqualTo(Duration.ofMillis(200));
    }

    @Test
    void noneEnforcesNoField() {
        assertThat(ReferenceSettings.from(DriverSettings.EMPTY.with("reference.enforceable-fields", "none"))
                        .enforceableFields())
                .isEmpty();
    }

    @Test
    void anUnknownPolicyFieldIsRefusedNamingTheKey() {
        DriverException refused = catchThrowableOfType(
                DriverException.class,
                () -> ReferenceSettings.from(
                        DriverSettings.EMPTY.with("reference.enforceable-fields", "MEMORY_LIMIT,SELINUX")));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage())
                .startsWith("reference.enforceable-fields:")
                .contains("SELINUX");
    }

    @Test
    void aWatchIntervalOfZeroIsRefusedNamingTheKey() {
        DriverException refused = catchThrowableOfType(
                DriverException.class,
                () -> ReferenceSettings.from(DriverSettings.EMPTY.with("reference.watch-interval", "0ms")));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).startsWith("reference.watch-interval:");
    }
}
