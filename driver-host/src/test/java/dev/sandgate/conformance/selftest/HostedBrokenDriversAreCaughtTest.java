package dev.sandgate.conformance.selftest;

import dev.sandgate.conformance.selftest.broken.BrokenKitHosting;
import dev.sandgate.testing.ProcessTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The kit's self-test over the wire: every broken driver of {@link BrokenDriversAreCaughtTest} runs in a driver host
 * process and is called through the remote driver, and exactly the same kit tests must fail.
 */
@ProcessTest
class HostedBrokenDriversAreCaughtTest extends BrokenDriversAreCaughtTest {
    @BeforeAll
    static void hostTheBrokenDrivers() {
        BrokenKitHosting.start();
    }

    @AfterAll
    static void stopTheLastHost() {
        BrokenKitHosting.stop();
    }
}
