package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.driver.kubernetes.fakecluster.FakeKubelet;
import dev.sandgate.driver.kubernetes.fakecluster.MockCluster;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StreamKind;
import io.fabric8.kubernetes.api.model.Pod;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Exec and logs of execution G against a pod that is replaced under the same name (deleted and created again with a
 * new UID) while the stream is being opened: every execution's pod has the same name, and {@code pods/exec} and {@code
 * pods/log} address a pod by name, so the driver pins the pod by UID and reads it again once the stream is open. The
 * fake kubelet records which pod each command ran in and whose log it served.
 */
class ReplacedPodPinningTest {
    private static final String NAMESPACE = "pinning-test";
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static MockCluster cluster;

    private final String gatewayId = "pinning-" + Identifiers.newSandboxId().substring(0, 8);
    private final Callbacks callbacks = new Callbacks();
    private KubernetesDriver driver;
    private SandboxRef ref;
    private String podName;
    private String podUid;

    @BeforeAll
    static void startCluster() {
        cluster = MockCluster.start(List.of("v1beta1"), "v1beta1");
    }

    @AfterAll
    static void stopCluster() {
        cluster.close();
    }

    /** A sandbox at generation 1 whose pod runs and has written its first line. */
    @BeforeEach
    void runningSandbox() {
        DriverSettings config = DriverSettings.EMPTY
                .with(KubernetesSettings.MASTER_URL, cluster.masterUrl())
                .with(KubernetesSettings.NAMESPACE, NAMESPACE)
                .with(KubernetesSettings.OPERATION_TIMEOUT, "30s");
        driver = (KubernetesDriver) new KubernetesDriverProvider()
                .create(config, new DriverContext(gatewayId, Clock.systemUTC(), MutationHook.NONE));
        ref = new SandboxRef(Identifiers.newSandboxId(), "team", "pinned");
        var spec = new SandboxSpec(
                "registry.example/sleeper:1",
                List.of("sh", "-c", "echo started; sleep infinity"),
                List.of(),
                Map.of(),
                Map.of(),
                ResourceRequests.NONE);
        driver.create(
                ref,
                spec,
                new LaunchInput(1, LaunchPolicies.of(1, LaunchPolicies.unrestricted(), DynamicPolicy.EMPTY)));
        await("the pod of generation 1 running")
                .atMost(TIMEOUT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> driver.get(ref).state() == SandboxState.RUNNING
                        && pod().map(pod -> pod.getStatus() != null
                                        && "Running".equals(pod.getStatus().getPhase()))
                                .orElse(false));
        Pod pod = pod().orElseThrow();
        podName = pod.getMetadata().getName();
        podUid = pod.getMetadata().getUid();
    }

    @AfterEach
    void deleteSandbox() {
        if (driver != null) {
            driver.delete(ref, OptionalLong.empty());
            driver.close();
        }
    }

    private Optional<Pod> pod() {
        return cluster
                .admin()
                .pods()
                .inNamespace(NAMESPACE)
                .withLabel(Labels.SANDBOX_ID, ref.id())
                .list()
                .getItems()
                .stream()
                .findFirst();
    }

    private String replacementUid() {
        String uid = pod().orElseThrow().getMetadata().getUid();
        assertThat(uid).as("the pod was replaced under the same name").isNotEqualTo(podUid);
        assertThat(pod().orElseThrow().getMetadata().getName()).isEqualTo(podName);
        return uid;
    }

    private static void assertRefusedAsReplaced(DriverException refusal, String replacementUid) {
        assertThat(refusal).as("the call is refused").isNotNull();
        assertThat(refusal.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
        assertThat(refusal.mismatches())
                .contains(new Mismatch(Mismatch.RUNNING, "true", "false"))
                .anySatisfy(mismatch -> assertThat(mismatch.actual()).isEqualTo(replacementUid));
    }

    /** Records every callback of an exec or a logs read. */
    private static final class Callbacks implements ExecListener, LogListener {
        final List<String> received = new CopyOnWriteArrayList<>();

        @Override
        public void output(StreamKind stream, byte[] data) {
            received.add(stream + " " + new String(data, StandardCharsets.UTF_8));
        }

        @Override
        public void exited(int exitCode) {
            received.add("exited " + exitCode);
        }

        @Override
        public void completed() {
            received.add("completed");
        }

        @Override
        public void failed(DriverException error) {
            received.add("failed " + error.code());
        }
    }

    @Test
    void anExecOfGenerationGWhosePodIsReplacedUnderTheSameNameIsRefusedAndNeverRunsInTheReplacement() {
        cluster.dispatcher().replacePodAfterNextStream(NAMESPACE, podName);

        DriverException refusal = catchThrowableOfType(
                DriverException.class, () -> driver.exec(ref, 1, ExecCommand.of("echo", "reached"), callbacks));

        String replacement = replacementUid();
        assertRefusedAsReplaced(refusal, replacement);
        assertThat(cluster.commandsRun())
                .as("nothing ran in the replacement pod")
                .noneMatch(ran -> ran.podUid().equals(replacement));
        assertThat(cluster.commandsRun()).extracting(FakeKubelet.Ran::podUid).containsOnly(podUid);
        assertThat(callbacks.received).as("no callback of a refused exec").isEmpty();
    }

    @Test
    void anExecOfGenerationGWhosePodIsReplacedByTheNextExecutionsBeforeTheRequestReachesTheKubeletNeverRunsThere() {
        cluster.dispatcher().replacePodBeforeNextExec(NAMESPACE, podName, Map.of(Labels.GENERATION, "2"));

        DriverException refusal = catchThrowableOfType(
                DriverException.class, () -> driver.exec(ref, 1, ExecCommand.of("touch", "/reached"), callbacks));

        String replacement = replacementUid();
        assertThat(refusal).as("the call is refused").isNotNull();
        assertThat(refusal.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
        assertThat(cluster.commandsRun())
                .as("the exec reached the replacement pod")
                .extracting(FakeKubelet.Ran::podUid)
                .contains(replacement);
        assertThat(cluster.filesIn(replacement))
                .as("the guard in the replacement pod did not run the command")
                .doesNotContain("/reached");
        assertThat(callbacks.received).as("no callback of a refused exec").isEmpty();
    }

    @Test
    void aLogsReadOfGenerationGWhosePodIsReplacedUnderTheSameNameIsRefusedAndDeliversNothing() {
        cluster.dispatcher().replacePodAfterNextStream(NAMESPACE, podName);

        DriverException refusal = catchThrowableOfType(
                DriverException.class, () -> driver.logs(ref, 1, new LogQuery(false, Optional.empty()), callbacks));

        String replacement = replacementUid();
        assertRefusedAsReplaced(refusal, replacement);
        assertThat(cluster.logsServed())
                .as("no log of the replacement pod was read")
                .doesNotContain(replacement);
        assertThat(callbacks.received).as("no output of a refused read").isEmpty();
    }
}
