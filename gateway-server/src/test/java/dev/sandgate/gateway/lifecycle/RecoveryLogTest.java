package dev.sandgate.gateway.lifecycle;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** What start-up recovery logs. */
class RecoveryLogTest {
    @TempDir
    Path root;

    private final Logger lifecycleLog = (Logger) LoggerFactory.getLogger(Lifecycle.class);
    private final ListAppender<ILoggingEvent> captured = new ListAppender<>();
    private Level levelBefore;

    @BeforeEach
    void capture() {
        levelBefore = lifecycleLog.getLevel();
        lifecycleLog.setLevel(Level.INFO);
        captured.start();
        lifecycleLog.addAppender(captured);
    }

    @AfterEach
    void release() {
        lifecycleLog.detachAppender(captured);
        lifecycleLog.setLevel(levelBefore);
    }

    @Test
    @DisplayName("a delete completed by recovery is logged as done, with no warning that recovery did not complete")
    void recoveredDeleteLogsNoFalseAlarm() {
        TestGateway gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS);
        try {
            Sandbox sandbox = gateway.create("team", "agent");
            gateway.driver()
                    .failEach(FakeDriver.Method.DELETE, new DriverException(DriverErrorCode.UNAVAILABLE, "down"));
            failure(() -> gateway.stub()
                    .deleteSandbox(DeleteSandboxRequest.newBuilder()
                            .setTarget(byId(sandbox.getId()))
                            .build()));
            captured.list.clear();

            gateway.restart();

            List<String> lines = captured.list.stream()
                    .map(event -> event.getLevel() + " " + event.getFormattedMessage())
                    .toList();
            assertThat(lines)
                    .anyMatch(line -> line.startsWith("INFO transition sandbox=" + sandbox.getId() + " op=delete")
                            && line.contains("outcome=DELETED_NOW"));
            assertThat(lines).noneMatch(line -> line.startsWith("WARN") && line.contains(sandbox.getId()));
        } finally {
            gateway.close();
        }
    }
}
