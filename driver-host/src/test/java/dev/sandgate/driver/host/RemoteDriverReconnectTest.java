package dev.sandgate.driver.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import dev.sandgate.conformance.reference.ReferenceBackendProbe;
import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StaticPolicy;
import dev.sandgate.testing.ProcessTest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A driver process that dies in the middle of a call, and comes back. */
@ProcessTest
class RemoteDriverReconnectTest {
    @TempDir
    Path directory;

    private HostedDriverProcess host;

    @AfterEach
    void stopHost() {
        if (host != null) {
            host.close();
        }
    }

    private HostedDriverProcess newHost() {
        return HostedDriverProcess.of(
                        List.of("--driver", ReferenceDriverProvider.NAME),
                        Map.of(
                                ReferenceDriverProvider.DIRECTORY,
                                directory.resolve("backend").toString()),
                        directory.resolve("driver.sock"),
                        directory.resolve("host.log"))
                .start();
    }

    private static LaunchInput launch() {
        byte[] document = "{\"revision\":1}".getBytes(StandardCharsets.UTF_8);
        return new LaunchInput(
                1,
                new LaunchPolicy(
                        1, LaunchPolicy.digestOf(document), document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));
    }

    /** Calls until the driver answers (the channel reconnects), within 30 s. */
    private static <T> T awaitAnswer(Callable<T> call) {
        return await("an answer once the channel reconnected")
                .atMost(Duration.ofSeconds(30))
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(50))
                .ignoreExceptionsMatching(
                        e -> e instanceof DriverException refused && refused.code() == DriverErrorCode.UNAVAILABLE)
                .until(call, Objects::nonNull);
    }

    @Test
    void aDriverProcessDyingMidCallIsUnavailableAndTheSameDriverWorksOnceItIsBack() {
        host = newHost();
        var current = new AtomicReference<HostedDriverProcess>(host);
        // The kit's way into the middle of a call: the hook runs after the driver's lookup and before its mutation.
        MutationHook killTheHost = (ref, operation, backendId) -> current.get().kill();
        var context = new DriverContext("reconnect-test", Clock.systemUTC(), killTheHost);
        SandboxRef ref = new SandboxRef(Identifiers.newSandboxId(), "team", "agent");
        try (ComputeDriver driver = new RemoteDriverProvider().create(host.remoteConfig(), context)) {
            driver.create(ref, SandboxSpec.ofImage("reference/sleeper"), launch());

            DriverException failure =
                    catchThrowableOfType(DriverException.class, () -> driver.stop(ref, OptionalLong.of(1)));
            assertThat(failure.code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
            assertThat(host.isAlive()).isFalse();
            try (var probe = new ReferenceBackendProbe(directory.resolve("backend"))) {
                assertThat(probe.resources(ref.id()))
                        .as("the driver died before it mutated")
                        .singleElement()
                        .satisfies(resource -> assertThat(resource.running()).isTrue());
            }

            host = newHost();
            current.set(null);
            assertThat(awaitAnswer(() -> driver.get(ref)).state()).isEqualTo(SandboxState.RUNNING);
            current.set(host);
            DriverException again =
                    catchThrowableOfType(DriverException.class, () -> driver.stop(ref, OptionalLong.of(1)));
            assertThat(again.code()).isEqualTo(DriverErrorCode.UNAVAILABLE);

            host = newHost();
            current.set(null);
        }
        MutationHook none = MutationHook.NONE;
        try (ComputeDriver driver = new RemoteDriverProvider()
                .create(host.remoteConfig(), new DriverContext("reconnect-test", Clock.systemUTC(), none))) {
            assertThat(driver.stop(ref, OptionalLong.of(1)).stoppedNow()).isTrue();
            assertThat(driver.delete(ref, OptionalLong.empty()).deleted()).isTrue();
        }
    }
}
