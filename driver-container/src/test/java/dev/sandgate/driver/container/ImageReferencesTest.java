package dev.sandgate.driver.container;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ImageReferencesTest {
    @ParameterizedTest
    @ValueSource(
            strings = {
                "busybox",
                "busybox:1.36",
                "library/busybox",
                "docker.io/library/busybox:latest",
                "localhost/sandgate-test:busybox",
                "localhost:5000/team/agent:v1.2",
                "127.0.0.1:1/sandgate/absent:1",
                "ghcr.io/org/repo/sub-path_x:tag",
                "registry.example.org/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "busybox:1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            })
    void referencesTheEnginesAcceptAreValid(String image) {
        assertThat(ImageReferences.isValid(image)).isTrue();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "Busybox",
                "busybox:",
                "Not//An:Image",
                "/busybox",
                "busybox/",
                "busy box",
                "busybox:-tag",
                "busybox@sha256:short",
                "registry.example.org:port/x"
            })
    void otherReferencesAreInvalid(String image) {
        assertThat(ImageReferences.isValid(image)).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"Busybox", "Not//An:Image"})
    void anInvalidReferenceIsRefusedNamingTheField(String image) {
        DriverException refused =
                catchThrowableOfType(DriverException.class, () -> ImageReferences.requireValid(image));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).startsWith("spec.image:").contains(image);
    }
}
