package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the conformance kit does not cover: settings, the fallback backend, secrets, and files it cannot trust. */
class ReferenceDriverTest {
    @TempDir
    Path directory;

    private final String gatewayId = "unit-" + Long.toHexString(System.nanoTime());

    private ComputeDriver driver() {
        return new ReferenceDriverProvider()
                .create(
                        DriverSettings.EMPTY.with(ReferenceDriverProvider.DIRECTORY, directory.toString()),
                        DriverContext.of(gatewayId));
    }

    private static SandboxRef newRef() {
        return new SandboxRef(Identifiers.newSandboxId(), "unit", "sandbox");
    }

    @Test
    void theProviderIsRegisteredWithServiceLoaderAsReferenceWithLowPriority() {
        assertThat(ServiceLoader.load(ComputeDriverProvider.class).stream().map(ServiceLoader.Provider::get))
                .anySatisfy(provider -> {
                    assertThat(provider).isInstanceOf(ReferenceDriverProvider.class);
                    assertThat(provider.name()).isEqualTo("reference");
                    assertThat(provider.priority()).isZero();
                });
    }

    @Test
    void aDirectoryThatIsAFileMakesTheDriverUnavailableWithTheReason() throws IOException {
        Path file = Files.createFile(directory.resolve("not-a-directory"));

        var availability = new ReferenceDriverProvider()
                .availability(DriverSettings.EMPTY.with(ReferenceDriverProvider.DIRECTORY, file.toString()));

        assertThat(availability.available()).isFalse();
        assertThat(availability.reason()).contains("reference.directory").contains(file.toString());
    }

    @Test
    void withoutADirectoryTwoInstancesOfOneProcessShareTheFallbackBackend() {
        var provider = new ReferenceDriverProvider();
        SandboxRef ref = newRef();
        assertThat(provider.availability(DriverSettings.EMPTY).available()).isTrue();

        try (ComputeDriver first = provider.create(DriverSettings.EMPTY, DriverContext.of(gatewayId));
                ComputeDriver second = provider.create(DriverSettings.EMPTY, DriverContext.of(gatewayId))) {
            first.create(ref, SandboxSpec.ofImage("sleeper"), TestInputs.launch(1));

            assertThat(second.get(ref).state()).isEqualTo(SandboxState.RUNNING);
            assertThat(second.delete(ref, OptionalLong.empty()).deleted()).isTrue();
        }
    }

    @Test
    void environmentValuesStayInTheOwnerOnlySpecFileAndOutOfErrors() throws IOException {
        SandboxRef ref = newRef();
        var spec = new SandboxSpec(
                "sleeper", List.of(), List.of(), Map.of("API_TOKEN", "tok-9f8e7d"), Map.of(), ResourceRequests.NONE);
        try (ComputeDriver driver = driver()) {
            driver.create(ref, spec, TestInputs.launch(1));
            DriverException refused =
                    catchThrowableOfType(DriverException.class, () -> driver.create(ref, spec, TestInputs.launch(2)));

            assertThat(refused.code()).isEqualTo(DriverErrorCode.ALREADY_EXISTS);
            assertThat(refused.getMessage()).doesNotContain("tok-9f8e7d");
        }
        var backend = new DirectoryBackend(directory);
        Path folder = backend.resourceFolder(gatewayId, ref.id());
        assertThat(Files.readString(folder.resolve(DirectoryBackend.SPEC_FILE))).contains("tok-9f8e7d");
        assertThat(Files.readString(folder.resolve(DirectoryBackend.RESOURCE_FILE)))
                .doesNotContain("tok-9f8e7d");
    }

    @Test
    void aResourceWithoutAStoredSpecCannotBeLaunched() throws IOException {
        SandboxRef ref = newRef();
        try (ComputeDriver driver = driver()) {
            driver.create(ref, SandboxSpec.ofImage("sleeper"), TestInputs.launch(1));
            driver.stop(ref, OptionalLong.of(1));
            Files.delete(new DirectoryBackend(directory)
                    .resourceFolder(gatewayId, ref.id())
                    .resolve(DirectoryBackend.SPEC_FILE));

            DriverException refused =
                    catchThrowableOfType(DriverException.class, () -> driver.start(ref, TestInputs.launch(2)));

            assertThat(refused.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
            assertThat(driver.get(ref).state()).isEqualTo(SandboxState.STOPPED);
            assertThat(driver.get(ref).generation()).isEqualTo(1);
        }
    }

    @Test
    void aResourceStoredUnderAnIdItDoesNotCarryIsAFailedPrecondition() {
        SandboxRef ref = newRef();
        var backend = new DirectoryBackend(directory);
        backend.locked(gatewayId, ref.id(), () -> {
            backend.insert(
                    new StoredResource(
                            gatewayId,
                            ref.id(),
                            "planted",
                            StoredResource.State.RUNNING,
                            Map.of(
                                    "sandgate.dev/gateway-id", gatewayId,
                                    "sandgate.dev/sandbox-id", Identifiers.newSandboxId(),
                                    "sandgate.dev/workspace", ref.workspace(),
                                    "sandgate.dev/name", ref.name(),
                                    "sandgate.dev/generation", "1")),
                    Map.of());
            return null;
        });

        try (ComputeDriver driver = driver()) {
            DriverException refused = catchThrowableOfType(DriverException.class, () -> driver.get(ref));

            assertThat(refused.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
            assertThat(refused.mismatches())
                    .extracting(mismatch -> mismatch.subject())
                    .contains("sandbox_id");
            assertThat(driver.list()).as("not listed as a sandbox").isEmpty();
        }
    }

    @Test
    void aClosedDriverIsUnavailable() {
        ComputeDriver driver = driver();
        driver.close();
        driver.close();

        DriverException refused = catchThrowableOfType(DriverException.class, driver::list);

        assertThat(refused.code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
    }
}
