package dev.sandgate.gateway.server;

import ch.qos.logback.classic.LoggerContext;
import org.slf4j.ILoggerFactory;
import org.slf4j.LoggerFactory;

/**
 * Stops the logging backend once the gateway has written its last line: its asynchronous appender then writes what it
 * still buffers. The gateway ships with logback; with any other slf4j backend this does nothing.
 */
final class LoggingShutdown {
    private static final String LOGBACK = "ch.qos.logback.classic.LoggerContext";

    private LoggingShutdown() {}

    static void flushAndStop() {
        ILoggerFactory factory = LoggerFactory.getILoggerFactory();
        // Compared by name first, so that no logback class is loaded under another backend.
        if (factory.getClass().getName().equals(LOGBACK)) {
            Logback.stop(factory);
        }
    }

    private static final class Logback {
        static void stop(ILoggerFactory factory) {
            ((LoggerContext) factory).stop();
        }
    }
}
