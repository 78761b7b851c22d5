package dev.sandgate.distribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import ch.qos.logback.core.joran.spi.JoranException;
import ch.qos.logback.core.status.Status;
import ch.qos.logback.core.status.StatusUtil;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The assembled conf/logback.xml, the gateway's logging: lines reach standard output within moments without anything
 * stopping, and none is dropped, even when the output stalls for longer than the buffer holds lines.
 */
class LoggingConfigurationTest {
    /** The ring buffer's size in conf/logback.xml. */
    private static final int BUFFERED_LINES = 8192;

    private final Output output = new Output();
    private PrintStream standardOut;
    private LoggerContext context;

    @BeforeEach
    void captureStandardOutput() throws JoranException {
        standardOut = System.out;
        System.setOut(new PrintStream(output, true, StandardCharsets.UTF_8));
        context = new LoggerContext();
        context.setMDCAdapter(new LogbackMDCAdapter()); // what logback's service provider gives the default context
        var configurator = new JoranConfigurator();
        configurator.setContext(context);
        configurator.doConfigure(Distribution.home().resolve("conf/logback.xml").toFile());
    }

    @AfterEach
    void restoreStandardOutput() {
        output.release();
        context.stop();
        System.setOut(standardOut);
    }

    @Test
    void theConfigurationLoadsWithoutAWarning() {
        assertThat(new StatusUtil(context).getHighestLevel(0))
                .as("highest status level (%s)", context.getStatusManager().getCopyOfStatusList())
                .isLessThan(Status.WARN);
    }

    @Test
    void aLineReachesStandardOutputWithinASecondWhileTheGatewayRuns() throws InterruptedException {
        String marker = "visible-" + UUID.randomUUID();

        context.getLogger("dev.sandgate.gateway.lifecycle.Lifecycle").info("transition {}", marker);

        await().atMost(Duration.ofSeconds(1))
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(5))
                .untilAsserted(() -> assertThat(output.text()).contains(marker));
    }

    @Test
    void noLineIsDroppedWhenTheOutputStallsLongerThanTheBufferLasts() throws InterruptedException {
        output.stall();
        int threads = 4;
        int linesPerThread = BUFFERED_LINES; // four times what the buffer holds
        Logger logger = context.getLogger("dev.sandgate.gateway.lifecycle.Lifecycle");
        var done = new CountDownLatch(threads);
        var failures = new AtomicInteger();
        List<Thread> writers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int writer = t;
            writers.add(Thread.ofPlatform().start(() -> {
                try {
                    for (int i = 0; i < linesPerThread; i++) {
                        logger.info("line writer={} seq={}", writer, i);
                    }
                } catch (RuntimeException e) {
                    failures.incrementAndGet();
                } finally {
                    done.countDown();
                }
            }));
        }

        assertThat(done.await(500, TimeUnit.MILLISECONDS))
                .as("the writers wait for room while the output stalls, instead of dropping lines")
                .isFalse();
        output.release();
        assertThat(done.await(60, TimeUnit.SECONDS))
                .as("the writers finish once the output moves")
                .isTrue();
        for (Thread writer : writers) {
            writer.join();
        }
        context.stop(); // writes what is buffered, as the shutdown hook does

        assertThat(failures).hasValue(0);
        int[] next = new int[threads];
        for (String line : output.text().split("\n", -1)) {
            int at = line.indexOf("line writer=");
            if (at < 0) {
                continue;
            }
            String[] fields = line.substring(at + "line writer=".length()).split(" seq=", -1);
            int writer = Integer.parseInt(fields[0]);
            assertThat(Integer.parseInt(fields[1].strip()))
                    .as("writer %d's next line", writer)
                    .isEqualTo(next[writer]);
            next[writer]++;
        }
        assertThat(next).as("lines written per writer").containsOnly(linesPerThread);
        assertThat(Arrays.stream(next).sum()).isEqualTo(threads * linesPerThread);
    }

    /** Standard output for the test: collects what is written, and can hold every write until released. */
    private static final class Output extends OutputStream {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private volatile CountDownLatch stalled = new CountDownLatch(0);

        void stall() {
            stalled = new CountDownLatch(1);
        }

        void release() {
            stalled.countDown();
        }

        String text() {
            synchronized (bytes) {
                return bytes.toString(StandardCharsets.UTF_8);
            }
        }

        @Override
        public void write(int b) {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) {
            try {
                stalled.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            synchronized (bytes) {
                bytes.write(b, off, len);
            }
        }
    }
}
