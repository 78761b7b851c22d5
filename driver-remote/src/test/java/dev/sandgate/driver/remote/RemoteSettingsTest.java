package dev.sandgate.driver.remote;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class RemoteSettingsTest {
    @Test
    void aUnixTargetNeedsNoTls() {
        RemoteSettings settings =
                RemoteSettings.from(DriverSettings.EMPTY.with(RemoteSettings.TARGET, "unix:///run/sandgate/d.sock"));

        assertThat(settings.target()).isEqualTo(new RemoteSettings.Endpoint.Unix(Path.of("/run/sandgate/d.sock")));
        assertThat(settings.tls()).isEmpty();
    }

    @Test
    void aTcpTargetWithoutMutualTlsIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> RemoteSettings.from(DriverSettings.EMPTY.with(RemoteSettings.TARGET, "10.0.0.1:7000")))
                .isInstanceOf(DriverException.class)
                .hasMessageStartingWith(RemoteSettings.TLS_CERTIFICATE + ": a TCP target needs mutual TLS");
    }

    @Test
    void aRelativeSocketPathIsRefused() {
        assertThatThrownBy(() -> RemoteSettings.from(DriverSettings.EMPTY.with(RemoteSettings.TARGET, "unix:d.sock")))
                .hasMessageStartingWith(RemoteSettings.TARGET + ":");
    }

    @Test
    void aMisspeltSettingIsRefused() {
        assertThatThrownBy(() -> RemoteSettings.from(DriverSettings.EMPTY
                        .with(RemoteSettings.TARGET, "unix:///d.sock")
                        .with("remote.call-timout", "5s")))
                .hasMessageStartingWith("remote.call-timout: is not a setting of this driver");
    }
}
