package dev.sandgate.driver.toolkit;

import static dev.sandgate.driver.toolkit.StartDecisionTest.REF;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Mismatch;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class IdentityTest {
    private static final String OTHER_ID = "11111111-2222-4333-8444-555555555555";

    private static void assertFailedPrecondition(Runnable check, String field) {
        assertThatThrownBy(check::run).isInstanceOfSatisfying(DriverException.class, e -> {
            org.assertj.core.api.Assertions.assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
            org.assertj.core.api.Assertions.assertThat(e.mismatches())
                    .extracting(Mismatch::subject)
                    .contains(field);
        });
    }

    @Test
    void stampsOfTheRefAndGatewayPass() {
        assertThatCode(() -> Identity.requireStamps(
                        REF, "gw", "r", new Identity.Stamps(REF.id(), "gw", REF.workspace(), REF.name())))
                .doesNotThrowAnyException();
    }

    @Test
    void anotherIdAnotherGatewayOrAnotherLocatorIsAFailedPrecondition() {
        assertFailedPrecondition(
                () -> Identity.requireStamps(
                        REF, "gw", "r", new Identity.Stamps(OTHER_ID, "gw", REF.workspace(), REF.name())),
                Mismatch.SANDBOX_ID);
        assertFailedPrecondition(
                () -> Identity.requireStamps(
                        REF, "gw", "r", new Identity.Stamps(REF.id(), null, REF.workspace(), REF.name())),
                Identity.GATEWAY_ID);
        assertFailedPrecondition(
                () -> Identity.requireStamps(REF, "gw", "r", new Identity.Stamps(REF.id(), "gw", "other", REF.name())),
                Mismatch.WORKSPACE);
        assertFailedPrecondition(
                () -> Identity.requireStamps(
                        REF, "gw", "r", new Identity.Stamps(REF.id(), "gw", REF.workspace(), "other")),
                Mismatch.NAME);
    }

    @Test
    void aNameHeldByAnotherIdIsAFailedPreconditionAndAFreeNamePasses() {
        assertFailedPrecondition(() -> Identity.requireNameFree(REF, Optional.of(OTHER_ID)), Mismatch.SANDBOX_ID);
        assertThatCode(() -> Identity.requireNameFree(REF, Optional.empty())).doesNotThrowAnyException();
        assertThatCode(() -> Identity.requireNameFree(REF, Optional.of(REF.id())))
                .doesNotThrowAnyException();
    }

    @Test
    void aReplacedResourceIsAborted() {
        assertThatThrownBy(() -> Identity.requireSameIncarnation(REF, "a", "b"))
                .isInstanceOfSatisfying(
                        DriverException.class,
                        e -> org.assertj.core.api.Assertions.assertThat(e.code())
                                .isEqualTo(DriverErrorCode.ABORTED));
        assertThatCode(() -> Identity.requireSameIncarnation(REF, "a", "a")).doesNotThrowAnyException();
    }

    @Test
    void anotherExpectedGenerationIsAFailedPreconditionAndNoneAlwaysPasses() {
        assertFailedPrecondition(
                () -> Identity.requireExpectedGeneration(REF, OptionalLong.of(2), 3), Mismatch.GENERATION);
        assertThatCode(() -> Identity.requireExpectedGeneration(REF, OptionalLong.of(3), 3))
                .doesNotThrowAnyException();
        assertThatCode(() -> Identity.requireExpectedGeneration(REF, OptionalLong.empty(), 3))
                .doesNotThrowAnyException();
    }
}
