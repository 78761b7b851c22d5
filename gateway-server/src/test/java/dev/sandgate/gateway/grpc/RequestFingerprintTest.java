package dev.sandgate.gateway.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.gateway.token.ExecutionTokens;
import dev.sandgate.gateway.token.TokenKeys;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fingerprint recorded with each request_id is compared with a retry's, possibly by a later release of the
 * gateway reading the same store: it must not change with the release.
 */
class RequestFingerprintTest {
    private static final String REQUEST_ID = "0b5e2a7e-4a8f-4d6c-9a51-3f2d1c0b9e87";

    @TempDir
    Path dir;

    ApiMapper mapper;

    @BeforeEach
    void open() {
        mapper = new ApiMapper(new ExecutionTokens(TokenKeys.loadOrCreate(dir.resolve("keys"))), "reference");
    }

    private static CreateSandboxRequest create(String requestId, Map<String, String> labels, String image) {
        var environment = new LinkedHashMap<String, String>();
        environment.put("B", "2");
        environment.put("A", "1");
        return CreateSandboxRequest.newBuilder()
                .setRequestId(requestId)
                .setWorkspace("team-a")
                .setName("agent-1")
                .setSpec(SandboxSpec.newBuilder()
                        .setImage(image)
                        .addCommand("sleep")
                        .addArgs("60")
                        .putAllEnvironment(environment))
                .putAllLabels(labels)
                .build();
    }

    private String fingerprint(CreateSandboxRequest request) {
        return mapper.create(request).meta().fingerprint();
    }

    private static Map<String, String> labels(String... keysAndValues) {
        var labels = new LinkedHashMap<String, String>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            labels.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return labels;
    }

    @Test
    void theFingerprintOfARequestIsTheSameInEveryRelease() {
        String fingerprint = fingerprint(create(REQUEST_ID, labels("tier", "gold", "app", "agent"), "busybox"));

        // Computed by the release that recorded it (the request without its id, deterministically serialized).
        assertThat(fingerprint).isEqualTo("sha256:b46598cf1d59c64ab2e4359d7e6feebccec3761d46eeed8a814d48b9c00d7248");
    }

    @Test
    void theFingerprintIgnoresTheRequestIdAndTheOrderOfMapEntries() {
        String first = fingerprint(create(REQUEST_ID, labels("tier", "gold", "app", "agent"), "busybox"));
        String reordered = fingerprint(
                create("7c1d9a4e-2b3f-4e5a-8c6d-1e2f3a4b5c6d", labels("app", "agent", "tier", "gold"), "busybox"));

        assertThat(reordered).isEqualTo(first);
    }

    @Test
    void anyOtherChangeToTheRequestChangesTheFingerprint() {
        String first = fingerprint(create(REQUEST_ID, labels("tier", "gold"), "busybox"));

        assertThat(fingerprint(create(REQUEST_ID, labels("tier", "silver"), "busybox")))
                .isNotEqualTo(first);
        assertThat(fingerprint(create(REQUEST_ID, labels("tier", "gold"), "debian")))
                .isNotEqualTo(first);
    }
}
