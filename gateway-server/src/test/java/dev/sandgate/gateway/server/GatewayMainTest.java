package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.sandgate.gateway.testing.FakeDriverProvider;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.testing.GatewayProcess;
import dev.sandgate.testing.ProcessTest;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** What an operator sees from {@code sandgate-gateway} when a start goes wrong, and around its edges. */
@ProcessTest
class GatewayMainTest {
    @TempDir
    Path dir;

    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();
    final ListAppender<ILoggingEvent> logged = new ListAppender<>();
    final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);

    @BeforeEach
    void captureLogging() {
        logged.start();
        root.addAppender(logged);
    }

    @AfterEach
    void stopCapturing() {
        root.detachAppender(logged);
    }

    private int run(Map<String, String> environment, String... args) {
        return GatewayMain.run(
                args,
                environment,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private List<String> withFakeDriver(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of(
                "--driver", "fake", "--driver-property", FakeDriverProvider.DIRECTORY + "=" + dir.resolve("backend")));
        return all;
    }

    private String errText() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    @DisplayName("--version prints the version and exits 0")
    void version() {
        int status = run(Map.of(), "--version");

        assertThat(status).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).startsWith("sandgate-gateway ");
    }

    @Test
    @DisplayName("the gateway's messages begin with sandgate-gateway:, not the client's name")
    void messagesNameTheGateway() {
        int status = run(Map.of(), "--listen", "nowhere");

        assertThat(status).isEqualTo(2);
        assertThat(errText()).startsWith("sandgate-gateway: listen must be host:port");
    }

    @Test
    @DisplayName("a data directory that cannot be created is one line on stderr, with no stack trace anywhere")
    void badDataDirectoryIsOneLine() throws Exception {
        Path file = Files.writeString(dir.resolve("a-file"), "x");

        int status = run(
                Map.of(),
                withFakeDriver(
                                "--listen",
                                "127.0.0.1:0",
                                "--data-dir",
                                file.resolve("data").toString())
                        .toArray(String[]::new));

        assertThat(status).isEqualTo(1);
        assertThat(errText().lines().toList())
                .singleElement()
                .asString()
                .startsWith("sandgate-gateway: the gateway could not start: cannot open the data directory "
                        + file.resolve("data"));
        assertThat(logged.list).noneMatch(event -> event.getThrowableProxy() != null);
    }

    @Test
    @DisplayName("a busy port is refused before the store is opened, naming the address without a stray slash")
    void busyPortBeforeTheStore() throws Exception {
        Path data = dir.resolve("data");
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int status = run(
                    Map.of(),
                    withFakeDriver("--listen", "127.0.0.1:" + taken.getLocalPort(), "--data-dir", data.toString())
                            .toArray(String[]::new));

            assertThat(status).isEqualTo(1);
            assertThat(errText())
                    .startsWith("sandgate-gateway: cannot listen on 127.0.0.1:" + taken.getLocalPort() + ": ")
                    .contains("in use")
                    .doesNotContain("/127.0.0.1");
            assertThat(data).as("the store was not opened").doesNotExist();
        }
    }

    @Test
    @DisplayName("a second gateway on the same data directory is refused, naming the holder's pid and host")
    void secondGatewayNamesTheHolder() {
        try (TestGateway first = TestGateway.start(dir.resolve("first"), TestGateway.Transport.IN_PROCESS)) {
            int status = run(
                    Map.of(),
                    withFakeDriver(
                                    "--listen",
                                    "127.0.0.1:0",
                                    "--data-dir",
                                    dir.resolve("first/data").toString())
                            .toArray(String[]::new));

            assertThat(status).isEqualTo(2);
            assertThat(errText())
                    .contains("another gateway (pid " + ProcessHandle.current().pid() + " on host ")
                    .contains("is using the data directory");
        }
    }

    @Test
    @DisplayName("SANDGATE_* variables that name no setting are reported by name; settings and tools' ones are not")
    void unknownEnvironmentIsWarned() {
        int status = run(
                Map.of(
                        "SANDGATE_DATADIR", "/srv",
                        "SANDGATE_DOCKER_HOST", "unix:///x",
                        "SANDGATE_DATA_DIR", "/srv",
                        "SANDGATE_HOME", "/opt/sandgate",
                        "SANDGATE_DRIVER_PROPERTY_DOCKER_HOST", "unix:///x"),
                "--help");

        assertThat(status).isZero();
        assertThat(errText())
                .startsWith("sandgate-gateway: warning: ignoring SANDGATE_DATADIR, SANDGATE_DOCKER_HOST: ")
                .doesNotContain("SANDGATE_DATA_DIR,")
                .doesNotContain("SANDGATE_HOME");
    }

    @Test
    @DisplayName("the ready file is removed when the gateway stops")
    void readyFileRemovedAtShutdown() throws Exception {
        Path work = dir.resolve("process");
        GatewayProcess process = GatewayProcess.start(
                work,
                "gateway",
                System.getProperty("java.class.path"),
                GatewayMain.class.getName(),
                withFakeDriver("--data-dir", dir.resolve("data").toString()));
        Path ready = work.resolve("gateway.ready");
        assertThat(ready).exists();

        process.close();

        assertThat(ready).doesNotExist();
    }
}
