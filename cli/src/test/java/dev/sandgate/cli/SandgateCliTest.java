package dev.sandgate.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.util.JsonFormat;
import com.google.rpc.BadRequest;
import com.google.rpc.Code;
import com.google.rpc.ErrorInfo;
import com.google.rpc.PreconditionFailure;
import com.google.rpc.RequestInfo;
import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Observation;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.PolicyMode;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.protobuf.StatusProto;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SandgateCliTest {
    private final FakeSandboxService gateway = new FakeSandboxService();
    private final List<String> targetsDialled = new CopyOnWriteArrayList<>();
    private String serverName;
    private Server server;

    @BeforeEach
    void startFakeGateway() throws IOException {
        // A valid --target (HOST:PORT) that names the in-process server.
        serverName = "fake-gateway-" + UUID.randomUUID() + ":7443";
        server = InProcessServerBuilder.forName(serverName)
                .directExecutor()
                .addService(gateway)
                .build()
                .start();
    }

    @AfterEach
    void stopFakeGateway() throws InterruptedException {
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    /** Runs the CLI against the fake gateway (unless the arguments name another --target). */
    private Result sandgate(String... args) {
        List<String> all = new ArrayList<>(List.of("--target", serverName));
        all.addAll(List.of(args));
        return sandgateWithoutTarget(all.toArray(String[]::new));
    }

    private Result sandgateWithoutTarget(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = SandgateCli.run(
                args,
                target -> {
                    targetsDialled.add(target);
                    return InProcessChannelBuilder.forName(target)
                            .directExecutor()
                            .build();
                },
                new PrintWriter(out, true),
                new PrintWriter(err, true));
        return new Result(status, out.toString(), err.toString());
    }

    record Result(int status, String out, String err) {}

    @Nested
    class Create {
        @Test
        void sendsTheSpecLabelsAndPolicy() {
            Result result = sandgate(
                    "create",
                    "-w",
                    "demo",
                    "-n",
                    "hello",
                    "--image",
                    "busybox",
                    "--command",
                    "/bin/sh",
                    "--env",
                    "TOKEN=secret",
                    "--label",
                    "team=a",
                    "--memory",
                    "64Mi",
                    "--milli-cpus",
                    "500",
                    "--policy",
                    "{\"version\":1}",
                    "--policy-mode",
                    "frozen",
                    "--",
                    "-c",
                    "sleep 3600");

            assertThat(result.status()).isZero();
            CreateSandboxRequest request = gateway.lastReceived(CreateSandboxRequest.class);
            assertThat(request.getWorkspace()).isEqualTo("demo");
            assertThat(request.getName()).isEqualTo("hello");
            assertThat(request.getSpec().getImage()).isEqualTo("busybox");
            assertThat(request.getSpec().getCommandList()).containsExactly("/bin/sh");
            assertThat(request.getSpec().getArgsList()).containsExactly("-c", "sleep 3600");
            assertThat(request.getSpec().getEnvironmentMap()).containsExactly(Map.entry("TOKEN", "secret"));
            assertThat(request.getSpec().getResources().getMemoryBytes()).isEqualTo(64L * 1024 * 1024);
            assertThat(request.getSpec().getResources().getMilliCpus()).isEqualTo(500);
            assertThat(request.getLabelsMap()).containsExactly(Map.entry("team", "a"));
            assertThat(request.getPolicy().getDocument()).isEqualTo("{\"version\":1}");
            assertThat(request.getPolicy().getMode()).isEqualTo(PolicyMode.FROZEN);
        }

        @Test
        void readsThePolicyDocumentFromAFile(@TempDir Path directory) throws IOException {
            Path file = Files.writeString(directory.resolve("policy.json"), "{\"version\":1,\"network\":\"none\"}");

            sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox", "--policy-file", file.toString());

            assertThat(gateway.lastReceived(CreateSandboxRequest.class)
                            .getPolicy()
                            .getDocument())
                    .isEqualTo("{\"version\":1,\"network\":\"none\"}");
        }

        @Test
        void leavesThePolicyUnsetWhenNoneIsGiven() {
            sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox");

            assertThat(gateway.lastReceived(CreateSandboxRequest.class).hasPolicy())
                    .isFalse();
        }

        @Test
        void sendsAFreshRequestIdAndPrintsIt() {
            Result result = sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox");

            String requestId = gateway.lastReceived(CreateSandboxRequest.class).getRequestId();
            assertThat(UUID.fromString(requestId).toString()).isEqualTo(requestId);
            assertThat(result.out()).contains("request:", requestId);
        }

        @Test
        void sendsTheGivenRequestId() {
            String requestId = UUID.randomUUID().toString();

            sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox", "--request-id", requestId);

            assertThat(gateway.lastReceived(CreateSandboxRequest.class).getRequestId())
                    .isEqualTo(requestId);
        }

        @Test
        void printsTheCreatedSandboxWithoutEnvironmentValues() {
            Result result = sandgate(
                    "create", "-w", "demo", "-n", "hello", "--image", "busybox", "--env", "TOKEN=s3cr3t-value");

            assertThat(result.out())
                    .contains("workspace:", "demo", "name:", "hello", "phase:", "PROVISIONING", "TOKEN")
                    .doesNotContain("s3cr3t-value");
        }

        @Test
        void printsTheResponseAsProtobufJsonWithJson() throws IOException {
            Result result = sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox", "--json");

            CreateSandboxResponse.Builder parsed = CreateSandboxResponse.newBuilder();
            JsonFormat.parser().merge(result.out(), parsed);
            assertThat(parsed.getSandbox().getName()).isEqualTo("hello");
            assertThat(parsed.getSandbox().getCurrentExecution().getGeneration())
                    .isEqualTo(1);
        }

        @Test
        void printsTheRequestIdOnStderrWithJsonKeepingStdoutJson() throws IOException {
            Result result = sandgate("--json", "create", "-w", "demo", "-n", "hello", "--image", "busybox");

            String requestId = gateway.lastReceived(CreateSandboxRequest.class).getRequestId();
            JsonFormat.parser().merge(result.out(), CreateSandboxResponse.newBuilder());
            assertThat(result.err()).isEqualTo("request id: " + requestId + "\n");
        }

        @Test
        void refusesAPolicyModeOtherThanLiveOrFrozen() {
            for (String mode : List.of("UNRECOGNIZED", "POLICY_MODE_UNSPECIFIED", "thawed")) {
                Result result =
                        sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox", "--policy-mode", mode);

                assertThat(result.status()).as(mode).isEqualTo(2);
                assertThat(result.err())
                        .as(mode)
                        .contains("'--policy-mode': expected one of [LIVE, FROZEN] (case-insensitive) but was '" + mode
                                + "'")
                        .doesNotContain("Exception");
            }
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void refusesARepeatedEnvironmentKeyNamingIt() {
            Result result =
                    sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox", "-e", "A=1", "-e", "A=2");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).startsWith("--env: the key 'A' is given more than once");
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void refusesARepeatedLabelKeyNamingIt() {
            Result result = sandgate(
                    "create", "-w", "demo", "-n", "hello", "--image", "busybox", "-l", "team=a", "--label", "team=b");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).startsWith("--label: the key 'team' is given more than once");
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void splitsEnvironmentVariablesAtTheFirstEqualsSign() {
            sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox", "-e", "EMPTY=", "-e", "URL=a=b");

            assertThat(gateway.lastReceived(CreateSandboxRequest.class)
                            .getSpec()
                            .getEnvironmentMap())
                    .containsExactly(Map.entry("EMPTY", ""), Map.entry("URL", "a=b"));
        }

        @Test
        void aMalformedEnvironmentVariableIsAUsageErrorWordedOnce() {
            Result result = sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox", "-e", "TOKEN");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err())
                    .startsWith("Invalid value for option '--env' (KEY=VALUE): 'TOKEN' is not KEY=VALUE")
                    .doesNotContain("option option");
        }

        @Test
        void helpDescribesTheImageAndLabels() {
            Result result = sandgate("create", "--help");

            assertThat(result.out())
                    .containsPattern("--image=IMAGE\\s+The image to run")
                    .containsPattern("-l, --label=KEY=VALUE\\s+A label");
        }

        @Test
        void reportsWhyThePolicyFileCannotBeRead(@TempDir Path directory) {
            Path absent = directory.resolve("absent.json");

            Result missing = sandgate(
                    "create", "-w", "demo", "-n", "hello", "--image", "busybox", "--policy-file", absent.toString());
            Result folder = sandgate(
                    "create", "-w", "demo", "-n", "hello", "--image", "busybox", "--policy-file", directory.toString());

            assertThat(missing.status()).isEqualTo(2);
            assertThat(missing.err()).isEqualTo("error: cannot read " + absent + ": no such file\n");
            assertThat(folder.err()).isEqualTo("error: cannot read " + directory + ": is a directory\n");
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void requiresAnImage() {
            Result result = sandgate("create", "-w", "demo", "-n", "hello");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).contains("--image");
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void rejectsAMalformedMemorySize() {
            Result result = sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox", "--memory", "lots");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).contains("'lots' is not a size");
            assertThat(gateway.received()).isEmpty();
        }
    }

    @Nested
    class Expiry {
        @Test
        void createSendsTheExpiryPolicy() {
            Result result = sandgate(
                    "create",
                    "-w",
                    "demo",
                    "-n",
                    "hello",
                    "--image",
                    "busybox",
                    "--ttl",
                    "10m",
                    "--idle-timeout",
                    "5m",
                    "--expire-action",
                    "delete");

            assertThat(result.status()).isZero();
            var expiry = gateway.lastReceived(CreateSandboxRequest.class).getExpiry();
            assertThat(expiry.getTtl().getSeconds()).isEqualTo(600);
            assertThat(expiry.getIdleTimeout().getSeconds()).isEqualTo(300);
            assertThat(expiry.getAction()).isEqualTo(dev.sandgate.api.v1.ExpiryAction.EXPIRE_DELETE);
        }

        @Test
        void createWithoutExpiryOptionsSendsNoExpiry() {
            sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox");

            assertThat(gateway.lastReceived(CreateSandboxRequest.class).hasExpiry())
                    .isFalse();
        }

        @Test
        void anExpireActionAloneIsAUsageError() {
            Result result =
                    sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox", "--expire-action", "stop");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).contains("--expire-action needs --ttl or --idle-timeout");
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void renewSendsTheTokenAndARequestId() {
            gateway.add("demo", "hello");

            Result result = sandgate("renew", "-w", "demo", "-n", "hello", "--execution-token", "TOKEN", "--json");

            assertThat(result.status()).isZero();
            var request = gateway.lastReceived(dev.sandgate.api.v1.RenewSandboxLeaseRequest.class);
            assertThat(request.getExecutionToken()).isEqualTo("TOKEN");
            assertThat(request.getTarget().getName()).isEqualTo("hello");
            assertThat(UUID.fromString(request.getRequestId()).toString()).isEqualTo(request.getRequestId());
            assertThat(result.out()).contains("\"sandbox\"");
        }
    }

    @Nested
    class Get {
        @Test
        void findsTheSandboxByWorkspaceAndName() {
            Sandbox sandbox = gateway.add("demo", "hello");

            Result result = sandgate("get", "-w", "demo", "-n", "hello");

            assertThat(result.status()).isZero();
            assertThat(result.out())
                    .contains(sandbox.getId(), sandbox.getCurrentExecution().getExecutionToken());
            assertThat(gateway.lastReceived(GetSandboxRequest.class).getTarget().getId())
                    .isEmpty();
        }

        @Test
        void sendsTheIdAndTheNameWhenBothAreGiven() {
            Sandbox sandbox = gateway.add("demo", "hello");

            sandgate("get", "--id", sandbox.getId(), "-w", "demo", "-n", "hello");

            GetSandboxRequest request = gateway.lastReceived(GetSandboxRequest.class);
            assertThat(request.getTarget().getId()).isEqualTo(sandbox.getId());
            assertThat(request.getTarget().getWorkspace()).isEqualTo("demo");
            assertThat(request.getTarget().getName()).isEqualTo("hello");
        }

        @Test
        void isAUsageErrorWithoutAnIdOrAName() {
            Result result = sandgate("get", "-w", "demo");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).contains("name the sandbox with --id, or with --workspace and --name");
            assertThat(gateway.received()).isEmpty();
        }
    }

    @Nested
    class ListSandboxes {
        @Test
        void printsATableRowPerSandbox() {
            Sandbox first = gateway.add("demo", "one");
            Sandbox second = gateway.add("demo", "two");

            Result result = sandgate("list");

            assertThat(result.out().lines().toList())
                    .hasSize(3)
                    .first()
                    .asString()
                    .contains("WORKSPACE", "NAME", "ID", "PHASE", "GEN");
            assertThat(result.out()).contains(first.getId(), second.getId());
        }

        @Test
        void sendsTheFilters() {
            sandgate("list", "-w", "demo", "--label", "team=a", "--phase", "ready", "--phase", "STOPPED");

            ListSandboxesRequest request = gateway.lastReceived(ListSandboxesRequest.class);
            assertThat(request.getWorkspace()).isEqualTo("demo");
            assertThat(request.getLabelSelectorMap()).containsExactly(Map.entry("team", "a"));
            assertThat(request.getPhasesList()).containsExactly(Phase.READY, Phase.STOPPED);
        }

        @Test
        void showsOnePageAndHowToGetTheNext() {
            gateway.add("demo", "one");
            gateway.add("demo", "two");
            gateway.add("demo", "three");

            Result result = sandgate("list", "--page-size", "2");

            assertThat(result.out()).contains("one", "two").doesNotContain("three", "more:");
            assertThat(result.err()).isEqualTo("more: --page-token 2 (or --all)\n");
        }

        @Test
        void refusesAPhaseNoExistingSandboxHasListingTheValidOnes() {
            for (String phase : List.of("UNRECOGNIZED", "PHASE_UNSPECIFIED", "DELETED", "bogus")) {
                Result result = sandgate("list", "--phase", phase);

                assertThat(result.status()).as(phase).isEqualTo(2);
                assertThat(result.err())
                        .as(phase)
                        .contains("'--phase' (PHASE): expected one of"
                                + " [PROVISIONING, READY, STOPPING, STOPPED, STARTING, DELETING, ERROR]"
                                + " (case-insensitive) but was '" + phase + "'")
                        .doesNotContain("Exception");
            }
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void helpOffersOnlyThePhasesOfExistingSandboxes() {
            Result result = sandgate("list", "--help");

            assertThat(result.out().replaceAll("\\s+", " "))
                    .contains("PROVISIONING, READY, STOPPING, STOPPED, STARTING, DELETING, ERROR")
                    .doesNotContain("UNRECOGNIZED", "PHASE_UNSPECIFIED", "DELETED,");
        }

        @Test
        void refusesARepeatedLabelKey() {
            Result result = sandgate("list", "-l", "team=a", "-l", "team=b");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).startsWith("--label: the key 'team' is given more than once");
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void pageSizeZeroIsTheGatewaysDefaultAsTheHelpSays() {
            gateway.add("demo", "one");

            Result result = sandgate("list", "--page-size", "0");

            assertThat(result.status()).isZero();
            assertThat(gateway.lastReceived(ListSandboxesRequest.class).getPageSize())
                    .isZero();
            assertThat(sandgate("list", "--help").out().replaceAll("\\s+", " "))
                    .contains("1 to 1000; 0 (the default) means the gateway's default, 100");
        }

        @Test
        void followsEveryPageWithAll() {
            gateway.add("demo", "one");
            gateway.add("demo", "two");
            gateway.add("demo", "three");

            Result result = sandgate("list", "--page-size", "2", "--all");

            assertThat(result.out()).contains("one", "two", "three").doesNotContain("more:");
            assertThat(gateway.received()).hasSize(2);
        }
    }

    @Nested
    class Stop {
        @Test
        void isUnconditionalWithoutExpectations() {
            gateway.add("demo", "hello");

            Result result = sandgate("stop", "-w", "demo", "-n", "hello");

            assertThat(result.status()).isZero();
            assertThat(result.out()).contains("STOPPED_NOW");
            assertThat(gateway.lastReceived(StopSandboxRequest.class).hasPrecondition())
                    .isFalse();
        }

        @Test
        void sendsTheExpectedTokenAndId() {
            Sandbox sandbox = gateway.add("demo", "hello");
            String token = sandbox.getCurrentExecution().getExecutionToken();

            sandgate("stop", "-w", "demo", "-n", "hello", "--expect-token", token, "--expect-id", sandbox.getId());

            StopSandboxRequest request = gateway.lastReceived(StopSandboxRequest.class);
            assertThat(request.getPrecondition().getExpectedExecutionToken()).isEqualTo(token);
            assertThat(request.getPrecondition().getExpectedSandboxId()).isEqualTo(sandbox.getId());
        }

        @Test
        void sendsAPreconditionWithOnlyTheExpectedToken() {
            gateway.add("demo", "hello");

            sandgate("stop", "-w", "demo", "-n", "hello", "--expect-token", "t");

            StopSandboxRequest request = gateway.lastReceived(StopSandboxRequest.class);
            assertThat(request.hasPrecondition()).isTrue();
            assertThat(request.getPrecondition().getExpectedSandboxId()).isEmpty();
        }

        @Test
        void aReplayWhoseSandboxIsGoneShowsTheOutcomeAndNoEmptySandbox() {
            Sandbox sandbox = gateway.add("demo", "hello");
            String requestId = UUID.randomUUID().toString();
            sandgate("stop", "--id", sandbox.getId(), "--request-id", requestId);
            sandgate("delete", "--id", sandbox.getId());

            Result result = sandgate("stop", "--id", sandbox.getId(), "--request-id", requestId);

            assertThat(result.status()).isZero();
            assertThat(result.out())
                    .contains("STOPPED_NOW (replayed)", "generation 1", requestId)
                    .contains("no longer exists (sandgate operation get " + requestId)
                    .doesNotContain("PHASE_UNSPECIFIED", "version:");
        }

        @Test
        void showsAStaleExecutionWithItsCodeReasonAndField() {
            gateway.add("demo", "hello");
            gateway.failNextCall(StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                    .setCode(Code.FAILED_PRECONDITION_VALUE)
                    .setMessage("the token names generation 1; the sandbox is at generation 2")
                    .addDetails(Any.pack(ErrorInfo.newBuilder()
                            .setReason("STALE_EXECUTION")
                            .setDomain("sandgate.dev")
                            .build()))
                    .addDetails(Any.pack(BadRequest.newBuilder()
                            .addFieldViolations(BadRequest.FieldViolation.newBuilder()
                                    .setField("precondition.expected_execution_token")
                                    .setDescription("names an older execution"))
                            .build()))
                    .build()));

            Result result = sandgate("stop", "-w", "demo", "-n", "hello", "--expect-token", "old");

            assertThat(result.status()).isEqualTo(1);
            assertThat(result.out()).isEmpty();
            assertThat(result.err())
                    .contains("error: FAILED_PRECONDITION: the token names generation 1")
                    .contains("reason: STALE_EXECUTION (sandgate.dev)")
                    .contains("field: precondition.expected_execution_token: names an older execution");
        }
    }

    @Nested
    class Start {
        @Test
        void printsTheNewGeneration() {
            Sandbox sandbox = gateway.add("demo", "hello");
            sandgate("stop", "--id", sandbox.getId());

            Result result = sandgate("start", "--id", sandbox.getId());

            assertThat(result.status()).isZero();
            assertThat(result.out()).contains("LAUNCHED").containsPattern("generation:\\s+2");
        }

        @Test
        void sendsWaitUntilReady() {
            Sandbox sandbox = gateway.add("demo", "hello");

            sandgate("start", "--id", sandbox.getId(), "--wait");

            assertThat(gateway.lastReceived(StartSandboxRequest.class).getWaitUntilReady())
                    .isTrue();
        }
    }

    @Nested
    class Delete {
        @Test
        void deletesAndPrintsTheId() {
            Sandbox sandbox = gateway.add("demo", "hello");

            Result result = sandgate("delete", "-w", "demo", "-n", "hello");

            assertThat(result.status()).isZero();
            assertThat(result.out()).contains("DELETED_NOW", sandbox.getId());
        }

        @Test
        void succeedsWithNothingDeletedWhenMissingIsOk() {
            Result result = sandgate("delete", "-w", "demo", "-n", "absent", "--missing-ok");

            assertThat(result.status()).isZero();
            assertThat(result.out()).contains("NOTHING_DELETED");
            assertThat(gateway.lastReceived(DeleteSandboxRequest.class).getAllowMissing())
                    .isTrue();
        }

        @Test
        void failsWithNotFoundWhenTheSandboxIsMissing() {
            Result result = sandgate("delete", "-w", "demo", "-n", "absent");

            assertThat(result.status()).isEqualTo(1);
            assertThat(result.err()).startsWith("error: NOT_FOUND");
        }

        @Test
        void sendsTheExpectedToken() {
            Sandbox sandbox = gateway.add("demo", "hello");

            sandgate(
                    "delete",
                    "--id",
                    sandbox.getId(),
                    "--expect-token",
                    sandbox.getCurrentExecution().getExecutionToken());

            assertThat(gateway.lastReceived(DeleteSandboxRequest.class)
                            .getPrecondition()
                            .getExpectedExecutionToken())
                    .isEqualTo(sandbox.getCurrentExecution().getExecutionToken());
        }
    }

    @Nested
    class Watch {
        @Test
        void printsTheSnapshotTheSyncedMarkerAndChanges() {
            Sandbox sandbox = gateway.add("demo", "hello");
            gateway.addChangeAfterSync(WatchSandboxesResponse.newBuilder()
                    .setType(WatchEventType.MODIFIED)
                    .setSandbox(sandbox.toBuilder().setPhase(Phase.STOPPED))
                    .setObservation(Observation.newBuilder().setGeneration(1).setRuntimeState("STOPPED"))
                    .build());

            Result result = sandgate("watch", "-w", "demo");

            assertThat(result.status()).isZero();
            assertThat(result.out().lines().toList())
                    .satisfiesExactly(
                            snapshot -> assertThat(snapshot).contains("SNAPSHOT", "demo/hello", "READY"),
                            synced -> assertThat(synced).contains("SYNCED"),
                            change -> assertThat(change).contains("MODIFIED", "STOPPED", "generation=1"));
            assertThat(gateway.lastReceived(WatchSandboxesRequest.class).getWorkspace())
                    .isEqualTo("demo");
        }

        @Test
        void stopsAtTheSyncedMarkerWithUntilSynced() {
            gateway.add("demo", "hello");
            gateway.addChangeAfterSync(WatchSandboxesResponse.newBuilder()
                    .setType(WatchEventType.REMOVED)
                    .build());

            Result result = sandgate("watch", "--until-synced");

            assertThat(result.out()).contains("SYNCED").doesNotContain("REMOVED");
        }

        @Test
        void endingWithGatewayShuttingDownDoesNotAskWhetherAGatewayListens() {
            gateway.failNextCall(StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                    .setCode(Code.UNAVAILABLE_VALUE)
                    .setMessage("the gateway is shutting down")
                    .addDetails(Any.pack(ErrorInfo.newBuilder()
                            .setReason("GATEWAY_SHUTTING_DOWN")
                            .setDomain("sandgate.dev")
                            .build()))
                    .build()));

            Result result = sandgate("watch");

            assertThat(result.status()).isEqualTo(1);
            assertThat(result.err()).isEqualTo("""
                            error: UNAVAILABLE: the gateway is shutting down
                              reason: GATEWAY_SHUTTING_DOWN (sandgate.dev)
                            """);
        }

        @Test
        void printsOneJsonDocumentPerEventWithJson() throws IOException {
            Sandbox sandbox = gateway.add("demo", "hello");

            Result result = sandgate("watch", "--json");

            List<String> lines = result.out().lines().toList();
            assertThat(lines).hasSize(2);
            WatchSandboxesResponse.Builder first = WatchSandboxesResponse.newBuilder();
            JsonFormat.parser().merge(lines.get(0), first);
            assertThat(first.getObservation().getExecutionToken())
                    .isEqualTo(sandbox.getCurrentExecution().getExecutionToken());
        }
    }

    @Nested
    class Policy {
        @Test
        void getShowsTheRevisionsAndTheDocument() {
            gateway.add("demo", "hello");

            Result result = sandgate("policy", "get", "-w", "demo", "-n", "hello");

            assertThat(result.status()).isZero();
            assertThat(result.out()).contains("mode:", "LIVE", "admitted:", "current launch:", "{\"version\":1}");
        }

        @Test
        void updateSendsTheDocumentFromAFileAndTheExpectedRevision(@TempDir Path directory) throws IOException {
            gateway.add("demo", "hello");
            Path file = Files.writeString(directory.resolve("policy.json"), "{\"version\":1,\"network\":\"none\"}");

            Result result = sandgate(
                    "policy",
                    "update",
                    "-w",
                    "demo",
                    "-n",
                    "hello",
                    "--file",
                    file.toString(),
                    "--expect-revision",
                    "1");

            assertThat(result.status()).isZero();
            assertThat(result.out()).contains("admitted").containsPattern("revision:\\s+2");
            UpdateSandboxPolicyRequest request = gateway.lastReceived(UpdateSandboxPolicyRequest.class);
            assertThat(request.getDocument()).isEqualTo("{\"version\":1,\"network\":\"none\"}");
            assertThat(request.getExpectedRevision()).isEqualTo(1);
        }

        @Test
        void updateTakesTheDocumentOptionsOfCreateToo(@TempDir Path directory) throws IOException {
            gateway.add("demo", "hello");
            Path file = Files.writeString(directory.resolve("policy.json"), "{\"version\":1,\"network\":\"none\"}");

            Result result = sandgate("policy", "update", "-w", "demo", "-n", "hello", "--policy-file", file.toString());

            assertThat(result.status()).isZero();
            assertThat(gateway.lastReceived(UpdateSandboxPolicyRequest.class).getDocument())
                    .isEqualTo("{\"version\":1,\"network\":\"none\"}");
        }

        @Test
        void updateRequiresADocument() {
            Result result = sandgate("policy", "update", "-w", "demo", "-n", "hello");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).contains("--policy", "--file");
        }

        @Test
        void withoutACommandShowsItsUsage() {
            Result result = sandgate("policy");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err())
                    .isEqualTo("a command is required: get or update\nRun 'sandgate policy --help' for its usage.\n");
        }

        @Test
        void updateReportsAnUnreadableFile(@TempDir Path directory) {
            Result result = sandgate(
                    "policy",
                    "update",
                    "-w",
                    "demo",
                    "-n",
                    "hello",
                    "--file",
                    directory.resolve("absent.json").toString());

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).contains("cannot read", "absent.json: no such file");
            assertThat(gateway.received()).isEmpty();
        }
    }

    @Nested
    class Operation {
        @Test
        void getShowsTheRecordedResultOfAnEarlierRequest() {
            Sandbox sandbox = gateway.add("demo", "hello");
            String requestId = UUID.randomUUID().toString();
            sandgate("stop", "--id", sandbox.getId(), "--request-id", requestId);

            Result result = sandgate("operation", "get", requestId);

            assertThat(result.status()).isZero();
            assertThat(result.out()).contains("StopSandbox", sandbox.getId(), "STOPPED_NOW, generation 1");
        }

        @Test
        void aRequestThatFailedBeforeReachingAnExecutionShowsNoGeneration() {
            String requestId = UUID.randomUUID().toString();
            gateway.recordOperation(dev.sandgate.api.v1.Operation.newBuilder()
                    .setRequestId(requestId)
                    .setMethod("StopSandbox")
                    .setDone(true)
                    .setError(com.google.rpc.Status.newBuilder()
                            .setCode(Code.NOT_FOUND_VALUE)
                            .setMessage("no sandbox demo/gone"))
                    .build());

            Result result = sandgate("operation", "get", requestId);

            assertThat(result.status()).isZero();
            assertThat(result.out())
                    .contains("error NOT_FOUND: no sandbox demo/gone")
                    .doesNotContain("generation");
        }
    }

    @Nested
    class Errors {
        @Test
        void showThePreconditionViolationsOfAnIdMismatch() {
            gateway.add("demo", "hello");
            gateway.failNextCall(StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                    .setCode(Code.FAILED_PRECONDITION_VALUE)
                    .setMessage("demo/hello is another sandbox")
                    .addDetails(Any.pack(ErrorInfo.newBuilder()
                            .setReason("SANDBOX_ID_MISMATCH")
                            .setDomain("sandgate.dev")
                            .putMetadata("expected_sandbox_id", "a")
                            .build()))
                    .addDetails(Any.pack(PreconditionFailure.newBuilder()
                            .addViolations(PreconditionFailure.Violation.newBuilder()
                                    .setType("SANDBOX_ID_MISMATCH")
                                    .setSubject("sandboxes/demo/hello")
                                    .setDescription("expected id a, found b"))
                            .build()))
                    .build()));

            Result result = sandgate("stop", "-w", "demo", "-n", "hello", "--expect-id", "a");

            assertThat(result.err())
                    .contains("reason: SANDBOX_ID_MISMATCH")
                    .contains("expected_sandbox_id: a")
                    .contains("precondition: SANDBOX_ID_MISMATCH sandboxes/demo/hello: expected id a, found b");
        }

        @Test
        void nameTheFieldOnceWhenErrorInfoAndBadRequestBothNameIt() {
            gateway.failNextCall(StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                    .setCode(Code.INVALID_ARGUMENT_VALUE)
                    .setMessage("precondition.expected_execution_token: is not an execution token")
                    .addDetails(Any.pack(ErrorInfo.newBuilder()
                            .setReason("INVALID_FIELD")
                            .setDomain("sandgate.dev")
                            .putMetadata("field", "precondition.expected_execution_token")
                            .build()))
                    .addDetails(Any.pack(BadRequest.newBuilder()
                            .addFieldViolations(BadRequest.FieldViolation.newBuilder()
                                    .setField("precondition.expected_execution_token")
                                    .setDescription("precondition.expected_execution_token: is not an execution token"))
                            .build()))
                    .build()));

            Result result =
                    sandgate("stop", "-w", "demo", "-n", "hello", "--expect-token", "bogus", "--request-id", "r-1");

            assertThat(result.err()).isEqualTo("""
                            error: INVALID_ARGUMENT: precondition.expected_execution_token: is not an execution token
                              reason: INVALID_FIELD (sandgate.dev)
                              field: precondition.expected_execution_token: is not an execution token
                              request id: r-1 (not recorded: the gateway did nothing with it)
                            """);
        }

        @Test
        void nameTheFieldOfAnErrorInfoWithoutBadRequest() {
            gateway.failNextCall(StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                    .setCode(Code.INVALID_ARGUMENT_VALUE)
                    .setMessage("too long")
                    .addDetails(Any.pack(ErrorInfo.newBuilder()
                            .setReason("INVALID_FIELD")
                            .putMetadata("field", "spec.image")
                            .build()))
                    .build()));

            Result result = sandgate("create", "-w", "demo", "-n", "hello", "--image", "x");

            assertThat(result.err()).contains("  field: spec.image\n");
        }

        @Test
        void areAGoogleRpcStatusInJsonWithJson() throws IOException {
            gateway.failNextCall(StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                    .setCode(Code.INVALID_ARGUMENT_VALUE)
                    .setMessage("name is not a DNS label")
                    .addDetails(Any.pack(
                            ErrorInfo.newBuilder().setReason("INVALID_ARGUMENT").build()))
                    .build()));

            Result result = sandgate("--json", "get", "-w", "demo", "-n", "Not_A_Label");

            com.google.rpc.Status.Builder status = com.google.rpc.Status.newBuilder();
            JsonFormat.parser().usingTypeRegistry(RpcErrors.DETAIL_TYPES).merge(result.err(), status);
            assertThat(status.getCode()).isEqualTo(Code.INVALID_ARGUMENT_VALUE);
            assertThat(status.getDetails(0).unpack(ErrorInfo.class).getReason()).isEqualTo("INVALID_ARGUMENT");
        }

        @Test
        void ofAMutatingCallShowTheRequestIdToLookTheOutcomeUp() {
            gateway.failNextCall(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded after 0.15s"));

            Result result = sandgate("create", "-w", "demo", "-n", "hello", "--image", "busybox");

            String requestId = gateway.lastReceived(CreateSandboxRequest.class).getRequestId();
            assertThat(result.status()).isEqualTo(1);
            assertThat(result.err()).isEqualTo("""
                            error: DEADLINE_EXCEEDED: deadline exceeded after 0.15s
                              the call took longer than --timeout allows
                              request id: %s (if the gateway received the call, look the outcome up with: \
                            sandgate operation get %s)
                            """.formatted(requestId, requestId));
        }

        @Test
        void ofAMutatingCallCarryTheRequestIdAsRequestInfoWithJson() throws IOException {
            gateway.add("demo", "hello");
            gateway.failNextCall(Status.UNAVAILABLE.withDescription("io exception"));

            Result result = sandgate("--json", "stop", "-w", "demo", "-n", "hello", "--request-id", "r-2");

            com.google.rpc.Status.Builder status = com.google.rpc.Status.newBuilder();
            JsonFormat.parser().usingTypeRegistry(RpcErrors.DETAIL_TYPES).merge(result.err(), status);
            assertThat(status.getCode()).isEqualTo(Code.UNAVAILABLE_VALUE);
            assertThat(status.getDetails(0).unpack(RequestInfo.class).getRequestId())
                    .isEqualTo("r-2");
        }

        @Test
        void ofAnUnresolvableHostAreNotPrecededByTheLogOfGrpc() {
            List<LogRecord> logged = new CopyOnWriteArrayList<>();
            Handler handler = new Handler() {
                @Override
                public void publish(LogRecord record) {
                    logged.add(record);
                }

                @Override
                public void flush() {}

                @Override
                public void close() {}
            };
            Logger root = Logger.getLogger("");
            root.addHandler(handler);
            try {
                StringWriter err = new StringWriter();
                int status = SandgateCli.run(
                        new String[] {"--target", "nowhere.invalid:1", "list"},
                        SandgateCli::plaintextChannel,
                        new PrintWriter(new StringWriter(), true),
                        new PrintWriter(err, true));

                assertThat(status).isEqualTo(1);
                assertThat(err.toString()).startsWith("error: UNAVAILABLE");
                assertThat(logged)
                        .filteredOn(record -> record.getLoggerName().startsWith("io.grpc"))
                        .isEmpty();
            } finally {
                root.removeHandler(handler);
            }
        }

        @Test
        void withoutDetailsStillShowTheCodeAndDescription() {
            gateway.failNextCall(Status.RESOURCE_EXHAUSTED.withDescription("too many watches"));

            Result result = sandgate("watch");

            assertThat(result.status()).isEqualTo(1);
            assertThat(result.err()).isEqualTo("error: RESOURCE_EXHAUSTED: too many watches\n");
        }

        @Test
        void ofAnUnreachableGatewayNameTheTarget() {
            Result result = sandgateWithoutTarget("--target", "nobody-listens-here:7443", "list");

            assertThat(result.status()).isEqualTo(1);
            assertThat(result.err()).startsWith("error: UNAVAILABLE").contains("nobody-listens-here");
        }
    }

    @Nested
    class GlobalOptions {
        @Test
        void targetDefaultsToTheGatewaysDefaultListenAddress() {
            sandgateWithoutTarget("list");

            String environment = System.getenv("SANDGATE_TARGET");
            assertThat(targetsDialled)
                    .containsExactly(
                            environment == null || environment.isBlank() ? SandgateCli.DEFAULT_TARGET : environment);
        }

        @Test
        void targetIsAcceptedAfterTheCommand() {
            gateway.add("demo", "hello");

            Result result = sandgateWithoutTarget("list", "--target", serverName);

            assertThat(result.status()).isZero();
            assertThat(targetsDialled).containsExactly(serverName);
        }

        @Test
        void aMalformedTimeoutIsAUsageError() {
            Result result = sandgate("--timeout", "soon", "list");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).contains("'soon' is not a duration");
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void aTimeoutThatIsNotPositiveIsAUsageErrorSayingSo() {
            for (String timeout : List.of("0s", "-1s", "0ms")) {
                Result result = sandgate("--timeout", timeout, "list");

                assertThat(result.status()).as(timeout).isEqualTo(2);
                assertThat(result.err()).as(timeout).contains("'" + timeout + "': a duration must be positive");
            }
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void aTargetThatIsNotHostAndPortIsAUsageError() {
            for (String target : List.of(
                    "bad target:7443",
                    "bad target",
                    "127.0.0.1:99999",
                    "127.0.0.1:0",
                    "localhost",
                    ":7443",
                    "::1:7443",
                    "[::1]",
                    "host:port",
                    "under_score:7443")) {
                Result result = sandgateWithoutTarget("--target", target, "list");

                assertThat(result.status()).as(target).isEqualTo(2);
                assertThat(result.err())
                        .as(target)
                        .startsWith("'" + target + "' is not a gateway address (--target or SANDGATE_TARGET): ")
                        .doesNotContain("Exception");
            }
            assertThat(targetsDialled).isEmpty();
        }

        @Test
        void aTargetMayBeAHostNameOrAnIpv4OrBracketedIpv6Address() {
            for (String target : List.of("gateway.example.com:7443", "10.0.0.1:1", "[::1]:65535")) {
                sandgateWithoutTarget("--target", target, "list");
            }

            assertThat(targetsDialled).containsExactly("gateway.example.com:7443", "10.0.0.1:1", "[::1]:65535");
        }

        @Test
        void helpWorksWhateverTheTargetIs() {
            Result result = sandgateWithoutTarget("--target", "bad target", "get", "--help");

            assertThat(result.status()).isZero();
            assertThat(result.out()).startsWith("Usage: sandgate get ");
        }

        @Test
        void anEmptyTargetMeansTheDefaultAsAnUnsetOneDoes() {
            sandgateWithoutTarget("--target", "", "list");

            assertThat(targetsDialled).containsExactly(SandgateCli.DEFAULT_TARGET);
        }

        @Test
        void everyCommandHasHelp() {
            for (String command : List.of(
                    "create",
                    "get",
                    "list",
                    "stop",
                    "start",
                    "delete",
                    "watch",
                    "policy",
                    "policy get",
                    "policy update",
                    "operation",
                    "operation get")) {
                for (String help : List.of("--help", "-h")) {
                    List<String> args = new ArrayList<>(List.of(command.split(" ")));
                    args.add(help);

                    Result result = sandgate(args.toArray(String[]::new));

                    assertThat(result.status()).as(command + " " + help).isZero();
                    assertThat(result.out()).as(command + " " + help).startsWith("Usage: sandgate " + command + " ");
                    assertThat(result.err()).as(command + " " + help).isEmpty();
                }
            }
            assertThat(gateway.received()).isEmpty();
        }

        @Test
        void theHelpCommandShowsTheUsageOfACommandOrOfAll() {
            Result create = sandgate("help", "create");
            Result all = sandgate("help");

            assertThat(create.status()).isZero();
            assertThat(create.out()).startsWith("Usage: sandgate create ");
            assertThat(all.status()).isZero();
            assertThat(all.out()).startsWith("Usage: sandgate ").contains("create", "operation");
        }

        @Test
        void aCommandIsRequired() {
            Result result = sandgate();

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).contains("a command is required");
        }

        @Test
        void helpListsEveryCommand() {
            Result result = sandgate("--help");

            assertThat(result.status()).isZero();
            assertThat(result.out())
                    .contains("create", "get", "list", "stop", "start", "delete", "watch", "policy", "operation");
        }
    }

    /** What the client says around an error: hints, pointers and notes (issue 26, operator frictions). */
    @Nested
    class Hints {
        private Status.Code failWith(Status.Code code, String reason) {
            gateway.failNextCall(StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                    .setCode(code.value())
                    .setMessage("refused")
                    .addDetails(Any.pack(ErrorInfo.newBuilder()
                            .setReason(reason)
                            .setDomain("sandgate.dev")
                            .build()))
                    .build()));
            return code;
        }

        @Test
        void aUsageErrorIsTheErrorAndAPointerToHelpNotTheWholeUsage() {
            Result result = sandgate("create", "-w", "demo", "--image", "busybox");

            assertThat(result.status()).isEqualTo(2);
            assertThat(result.err()).doesNotContain("Usage:");
            assertThat(result.err().lines().toList())
                    .containsExactly(
                            "Missing required option: '--name=NAME'", "Run 'sandgate create --help' for its usage.");
        }

        @Test
        void theOperationHintIsGivenOnlyForErrorsTheGatewayRecords() {
            failWith(Status.Code.INVALID_ARGUMENT, "INVALID_FIELD");
            Result invalid = sandgate("create", "-w", "demo", "-n", "x", "--image", "busybox", "--request-id", "r-1");
            failWith(Status.Code.DEADLINE_EXCEEDED, "SANDBOX_BUSY");
            Result busy = sandgate("create", "-w", "demo", "-n", "x", "--image", "busybox", "--request-id", "r-2");
            failWith(Status.Code.NOT_FOUND, "SANDBOX_NOT_FOUND");
            Result notFound = sandgate("stop", "-w", "demo", "-n", "x", "--request-id", "r-3");
            failWith(Status.Code.UNAVAILABLE, "TRANSITION_PENDING");
            Result pending = sandgate("stop", "-w", "demo", "-n", "x", "--request-id", "r-4");

            assertThat(invalid.err())
                    .contains("  request id: r-1 (not recorded: the gateway did nothing with it)\n")
                    .doesNotContain("operation get");
            assertThat(busy.err()).doesNotContain("operation get");
            assertThat(notFound.err()).contains("(look the outcome up with: sandgate operation get r-3)");
            assertThat(pending.err()).contains("(look the outcome up with: sandgate operation get r-4)");
        }

        @Test
        void withJsonAnUnreachableGatewayKeepsTheConnectionHint() throws IOException {
            Result result = sandgateWithoutTarget("--json", "--target", "nobody-listens-here:7443", "list");

            com.google.rpc.Status.Builder status = com.google.rpc.Status.newBuilder();
            JsonFormat.parser().usingTypeRegistry(RpcErrors.DETAIL_TYPES).merge(result.err(), status);
            assertThat(status.getCode()).isEqualTo(Code.UNAVAILABLE_VALUE);
            assertThat(status.getDetailsList())
                    .filteredOn(d -> d.is(com.google.rpc.LocalizedMessage.class))
                    .singleElement()
                    .extracting(d -> unpackMessage(d))
                    .asString()
                    .contains("is a gateway listening on nobody-listens-here:7443?");
        }

        private String unpackMessage(Any detail) {
            try {
                return detail.unpack(com.google.rpc.LocalizedMessage.class).getMessage();
            } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                throw new AssertionError(e);
            }
        }

        @Test
        void memoryAndCpuAreSaidToBeRequestsNotLimits() {
            Result withoutPolicy =
                    sandgate("create", "-w", "demo", "-n", "x", "--image", "busybox", "--memory", "64Mi");
            Result help = sandgate("create", "--help");

            assertThat(withoutPolicy.status()).isZero();
            assertThat(withoutPolicy.err()).contains("note: --memory and --milli-cpus are requests, not limits");
            assertThat(help.out().replaceAll("\\s+", " "))
                    .contains("a request, not a limit")
                    .contains("static.memory_limit_bytes");
        }
    }

    @Nested
    class ExecAndLogs {
        @Test
        void execPrintsTheOutputAndExitsWithTheCommandsExitCode() {
            gateway.add("demo", "hello");

            Result result =
                    sandgate("exec", "-w", "demo", "-n", "hello", "--execution-token", "T", "--", "ls", "-l", "/tmp");

            assertThat(result.status()).isEqualTo(3);
            assertThat(result.out()).isEqualTo("ls -l /tmp\n");
            assertThat(result.err()).isEqualTo("err\n");
            var start = gateway.lastReceived(dev.sandgate.api.v1.ExecSandboxRequest.class)
                    .getStart();
            assertThat(start.getExecutionToken()).isEqualTo("T");
            assertThat(start.getTarget().getName()).isEqualTo("hello");
            assertThat(start.getStdin()).isFalse();
            assertThat(start.getRequestId()).isNotEmpty();
        }

        @Test
        void execWithoutATokenUsesTheCurrentExecution() {
            Sandbox sandbox = gateway.add("demo", "hello");

            sandgate("exec", "-w", "demo", "-n", "hello", "--current", "--", "true");

            assertThat(gateway.lastReceived(dev.sandgate.api.v1.ExecSandboxRequest.class)
                            .getStart()
                            .getExecutionToken())
                    .isEqualTo(sandbox.getCurrentExecution().getExecutionToken());
        }

        @Test
        void logsPrintsBothStreamsAndSendsFollowAndSince() {
            gateway.add("demo", "hello");

            Result result = sandgate(
                    "logs",
                    "-w",
                    "demo",
                    "-n",
                    "hello",
                    "--execution-token",
                    "T",
                    "-f",
                    "--since",
                    "2026-01-02T03:04:05Z");

            assertThat(result.status()).isZero();
            assertThat(result.out()).isEqualTo("out\n");
            assertThat(result.err()).isEqualTo("err\n");
            var request = gateway.lastReceived(dev.sandgate.api.v1.StreamSandboxLogsRequest.class);
            assertThat(request.getFollow()).isTrue();
            assertThat(request.getSince().getSeconds()).isEqualTo(1767323045L);
        }
    }
}
