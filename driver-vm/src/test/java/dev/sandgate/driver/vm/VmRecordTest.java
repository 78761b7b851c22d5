package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.Labels;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class VmRecordTest {
    private static final SandboxRef REF = new SandboxRef("0b7e5f3c-2d8a-4c1e-9f00-1a2b3c4d5e6f", "team", "agent");
    private static final String DIGEST = "sha256:" + "ab".repeat(32);

    @Test
    void aRecordSurvivesEncodingWithItsSpecAndProcess() {
        var spec = new SandboxSpec(
                "default",
                List.of("sh", "-c"),
                List.of("a = b", "ü\nnext"),
                Map.of("TOKEN", "s3cr=t:\\x"),
                Map.of("team", "blue"),
                new ResourceRequests(1 << 20, 250));
        var record = new VmRecord(
                "backend-1",
                VmRecord.stamps(spec.labels(), "gw-1", REF, 7, DIGEST),
                spec,
                3,
                VmRecord.Phase.RUNNING,
                Optional.of(new ProcessIdentity(4242, 99)));

        VmRecord decoded = VmRecord.decode(record.encode());

        assertThat(decoded).isEqualTo(record);
        assertThat(decoded.ref()).isEqualTo(REF);
        assertThat(decoded.generation()).isEqualTo(7);
        assertThat(decoded.userLabels()).containsExactly(Map.entry("team", "blue"));
    }

    @Test
    void managedStampsWinOverUserLabelsThatSpoofThem() {
        Map<String, String> spoofing = Map.of(
                Labels.SANDBOX_ID,
                "11111111-1111-1111-1111-111111111111",
                Labels.GATEWAY_ID,
                "other",
                Labels.GENERATION,
                "99",
                "team",
                "blue");

        Map<String, String> stamps = VmRecord.stamps(spoofing, "gw-1", REF, 1, DIGEST);

        assertThat(stamps)
                .containsEntry(Labels.SANDBOX_ID, REF.id())
                .containsEntry(Labels.GATEWAY_ID, "gw-1")
                .containsEntry(Labels.GENERATION, "1")
                .containsEntry(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE)
                .containsEntry("team", "blue");
    }

    @Test
    void theEncodedRecordHasNoTimestampSoEqualRecordsAreEqualFiles() {
        var record = new VmRecord(
                "backend-1",
                VmRecord.stamps(Map.of(), "gw-1", REF, 1, DIGEST),
                SandboxSpec.ofImage("default"),
                1,
                VmRecord.Phase.STOPPED,
                Optional.empty());

        assertThat(record.encode()).doesNotContain("#").isEqualTo(record.encode());
    }

    @Test
    void aRecordWithoutItsStampsIsRefused() {
        String text = """
                format=1
                backend-id=x
                phase=RUNNING
                policy-revision=1
                spec.image=default
                spec.resources.memory-bytes=0
                spec.resources.milli-cpus=0
                """;

        assertThatThrownBy(() -> VmRecord.decode(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Labels.MANAGED_BY);
    }
}
