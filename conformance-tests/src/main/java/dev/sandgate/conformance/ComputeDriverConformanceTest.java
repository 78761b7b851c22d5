package dev.sandgate.conformance;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.ClassOrderer;
import org.junit.jupiter.api.TestClassOrder;
import org.junit.jupiter.api.TestInstance;

/**
 * The conformance kit every compute driver passes, ours and third parties'. A driver's test extends this class and
 * answers five hooks (and may override {@link #readinessTimeout()} and {@link #printingSpec}); every scenario is
 * inherited. About fifteen lines:
 *
 * <pre>{@code
 * class MyDriverConformanceTest extends ComputeDriverConformanceTest {
 *     protected ComputeDriverProvider provider() { return new MyDriverProvider(); }
 *     protected DriverSettings config() { return DriverSettings.EMPTY.with("my.endpoint", "unix:///run/my.sock"); }
 *     protected BackendProbe probe() { return new MyBackendProbe(); }
 *     protected SandboxSpec runningSpec() { return SandboxSpec.ofImage("localhost/sleeper:1"); }
 *     protected SandboxSpec permanentlyRefusedSpec() { return SandboxSpec.ofImage("127.0.0.1:1/absent:1"); }
 * }
 * }</pre>
 *
 * <h2>How a run goes</h2>
 *
 * <ul>
 *   <li>The hooks are called once per test class. The kit first asks {@link ComputeDriverProvider#availability}: a
 *       driver that is not available skips the class with the reason, or fails it when the system property {@code
 *       sandgate.requireEngines} is {@code true} (CI sets it).
 *   <li>Each class uses a fresh gateway id ({@code kit-} and 8 hex digits) and creates its driver through {@code
 *       provider().create(config(), context)} with a {@link dev.sandgate.spi.MutationHook} the kit controls. Foreign
 *       resources of "another gateway" are planted under {@code <gateway id>-foreign}.
 *   <li>Each test deletes, through the driver, what it created. The last test ({@code
 *       required_nothingTheKitCreatedSurvives}, ordered after every other group) asserts that no resource stamped
 *       with the class's gateway id survives ({@link BackendProbe#resourcesOfGateway}) and removes leftovers through
 *       the probe; after the class the kit prints how many launches the run took (creates and starts that launched) so
 *       that authors of slow backends can budget: the whole kit takes about 80 launches plus about 15 planted
 *       resources (about 8 of the launches are the exec and logs rules', 1 for a driver that claims neither).
 *   <li>Tests are named for the rule they check and its strength ({@code required_...}, in the spirit of the Reactive
 *       Streams TCK). Capabilities a driver lacks are checked too: a "no" must be a clean {@link
 *       DriverErrorCode#UNSUPPORTED}. No test is skipped.
 * </ul>
 *
 * <h2>What the kit expects of a driver beyond the SPI's Javadoc</h2>
 *
 * <ul>
 *   <li>The {@link dev.sandgate.spi.MutationHook} is called with {@code STOP}, {@code START} or {@code DELETE} before
 *       the driver mutates a resolved resource, with the same backend id that {@link BackendProbe} reports as {@link
 *       BackendResource#backendId()}; after the hook returns, the driver mutates that backend id only, and a resource
 *       replaced meanwhile (same id or same name, new backend id) is left alone and the call fails (any {@link
 *       DriverException}; a delete may instead answer {@code deleted == false} when nothing carries the id).
 *   <li>{@code stop} returns once the backend reports the execution stopped; {@code delete} returns once the backend
 *       removed the resources (the kit allows {@link #readinessTimeout()} for the probe to see them gone).
 *   <li>A driver that claims {@link dev.sandgate.spi.DriverCapabilities#exec()} runs the kit's portable commands in
 *       {@link #runningSpec()}'s image: argv {@code echo WORDS...}, {@code cat}, {@code touch PATH}, {@code test -e
 *       PATH}, {@code sleep N}, and {@code sh -c SCRIPT} of such commands separated by {@code ;} (with {@code echo ...
 *       >&2}, {@code exit N}, {@code exec sleep N} and {@code $NAME} from the environment), paths under a writable
 *       {@code /tmp}: what busybox provides. A driver that claims {@link dev.sandgate.spi.DriverCapabilities#logs()}
 *       runs {@link #printingSpec} and reads its output back.
 * </ul>
 *
 * <h2>Where the rules are</h2>
 *
 * <p>The groups of tests live in the rule layers this class inherits, in the spirit of a connector test kit: {@code
 * IdentityRules}, {@code LifecycleRules}, {@code GenerationRules}, {@code PolicyRules}, {@code WatchRules}, {@code
 * ExecRules} and {@code LogRules}, over {@code KitBase}. They share {@code KitAssertions} and the run's {@code KitSession}; this class answers them with the
 * hooks below and opens and closes the run.
 *
 * <p>Subclasses may add their own tests; {@link #gatewayId()} and {@link #launchCount()} are available to them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestClassOrder(ClassOrderer.OrderAnnotation.class)
public abstract class ComputeDriverConformanceTest extends LogRules {
    /** The provider under test, as ServiceLoader would find it. */
    protected abstract ComputeDriverProvider provider();

    /** The settings to create the driver with (the same for every driver instance of the class). */
    protected abstract DriverSettings config();

    /** Out-of-band access to the backend the driver uses. Called once per test class and closed after it. */
    protected abstract BackendProbe probe();

    /**
     * A spec whose execution keeps running until it is stopped (a container whose process sleeps, a VM image). Its
     * workspace must be writable through {@link BackendProbe#writeWorkspaceMarker}. Where the driver claims exec, its
     * image provides the kit's portable commands (see above).
     */
    protected abstract SandboxSpec runningSpec();

    /**
     * A spec that passes {@link ComputeDriver#validate} syntax but that the backend will refuse for good when the
     * driver tries to launch it: an image the backend does not have and cannot get (for an engine, a reference on a
     * loopback registry nothing listens on, such as {@code 127.0.0.1:1/absent:1}), an object the API server rejects.
     * The driver must report that refusal as permanent ({@link DriverErrorCode#isTransient()} false) or as a FAILED
     * sandbox, within {@link #readinessTimeout()}: never as a transient failure, and never by retrying forever.
     */
    protected abstract SandboxSpec permanentlyRefusedSpec();

    /**
     * A spec whose execution writes {@code stdoutLine} and a newline to its standard output, then {@code stderrLine}
     * and a newline to its standard error, then keeps running until it is stopped: the output the logs rules read back.
     * Asked for only when the driver claims {@link dev.sandgate.spi.DriverCapabilities#logs()}; the kit passes lines
     * of lower-case letters, digits and dashes. By default {@link #runningSpec()} with the command {@code sh -c SCRIPT}
     * (no args), the script being {@code echo OUT}, {@code echo ERR >&2} and {@code exec sleep 3600} separated by
     * semicolons; override it where the image's entry point must stay, or where there is no {@code sh}.
     */
    protected SandboxSpec printingSpec(String stdoutLine, String stderrLine) {
        SandboxSpec running = runningSpec();
        return new SandboxSpec(
                running.image(),
                List.of("sh", "-c", "echo " + stdoutLine + "; echo " + stderrLine + " >&2; exec sleep 3600"),
                List.of(),
                running.environment(),
                running.labels(),
                running.resources());
    }

    /** How long a launched sandbox may take to be reported RUNNING (and a deleted one to vanish from the probe). */
    protected Duration readinessTimeout() {
        return Duration.ofSeconds(60);
    }

    /** The gateway id of this class's run. */
    protected final String gatewayId() {
        return kit.gatewayId;
    }

    /** Creates and starts of this class's run that launched an execution, so far. */
    protected final int launchCount() {
        return kit.launches();
    }

    @BeforeAll
    final void startConformanceKit() {
        kit = KitSession.start(
                getClass().getName(),
                provider(),
                config(),
                this::probe,
                runningSpec(),
                this::permanentlyRefusedSpec,
                this::printingSpec,
                readinessTimeout());
    }

    @AfterEach
    final void cleanUpConformanceTest() {
        if (kit != null) {
            kit.cleanUpTest();
        }
    }

    @AfterAll
    final void finishConformanceKit() {
        if (kit != null) {
            kit.finish();
        }
    }
}
