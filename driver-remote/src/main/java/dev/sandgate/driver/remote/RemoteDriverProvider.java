package dev.sandgate.driver.remote;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.v1.ComputeDriverGrpc;
import dev.sandgate.driver.v1.HandshakeRequest;
import dev.sandgate.driver.v1.HandshakeResponse;
import dev.sandgate.driver.v1.ProtocolVersion;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The {@link java.util.ServiceLoader} entry of a driver in another process, named {@value #NAME}: it speaks {@code
 * sandgate.driver.v1} to a driver host (any Java driver, see the {@code driver-host} module) or to a driver written in
 * another language. Settings: see {@link RemoteSettings} and docs/drivers/remote.md.
 *
 * <p>{@link #create} shakes hands with the remote driver first and refuses, naming both sides, a driver that speaks
 * another protocol version, lacks a feature this side needs, or is not the {@value RemoteSettings#DRIVER} asked for.
 */
public final class RemoteDriverProvider implements ComputeDriverProvider {
    public static final String NAME = "remote";

    /** The protocol this side speaks. */
    public static final ProtocolVersion PROTOCOL_VERSION = ProtocolVersion.PROTOCOL_VERSION_1;

    /** The features a server announces; this side needs every one. */
    public static final String FEATURE_MUTATION_ANNOUNCEMENTS = "mutation-announcements";

    public static final String FEATURE_WATCH = "watch";
    public static final List<String> REQUIRED_FEATURES = List.of(FEATURE_MUTATION_ANNOUNCEMENTS, FEATURE_WATCH);

    /** Below every in-process driver: the gateway uses it when configured to by name. */
    public static final int PRIORITY = -10;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return PRIORITY;
    }

    @Override
    public Availability availability(DriverSettings config) {
        requireNonNull(config, "config is null");
        if (config.get(RemoteSettings.TARGET).isEmpty()) {
            return Availability.unavailable(RemoteSettings.TARGET + " is not set");
        }
        try {
            RemoteSettings settings = RemoteSettings.from(config);
            ManagedChannel channel = Channels.open(settings);
            try {
                HandshakeResponse answer = handshake(settings, channel, "availability-check");
                String driver = "remote driver '" + answer.getDriverName() + "' at " + settings.target();
                return answer.getAvailable()
                        ? Availability.available(driver + ": " + answer.getAvailabilityReason())
                        : Availability.unavailable(driver + ": " + answer.getAvailabilityReason());
            } finally {
                channel.shutdownNow();
            }
        } catch (DriverException e) {
            return Availability.unavailable(e.getMessage());
        }
    }

    @Override
    public ComputeDriver create(DriverSettings config, DriverContext context) {
        requireNonNull(config, "config is null");
        requireNonNull(context, "context is null");
        RemoteSettings settings = RemoteSettings.from(config);
        ManagedChannel channel = Channels.open(settings);
        try {
            HandshakeResponse answer = handshake(settings, channel, context.gatewayId());
            if (!answer.getAvailable()) {
                throw new DriverException(
                        DriverErrorCode.UNAVAILABLE,
                        "remote driver '" + answer.getDriverName() + "' at " + settings.target() + " is not available: "
                                + answer.getAvailabilityReason());
            }
            DriverCapabilities capabilities = DriverWire.capabilities(answer.getCapabilities());
            return new RemoteDriver(settings, channel, context, capabilities);
        } catch (RuntimeException e) {
            channel.shutdownNow();
            throw e;
        }
    }

    /** Exchanges versions and features; a mismatch is INVALID_ARGUMENT naming the target and both sides. */
    static HandshakeResponse handshake(RemoteSettings settings, ManagedChannel channel, String gatewayId) {
        HandshakeResponse answer;
        try {
            answer = ComputeDriverGrpc.newBlockingStub(channel)
                    .withWaitForReady()
                    .withDeadlineAfter(settings.connectTimeout().toMillis(), TimeUnit.MILLISECONDS)
                    .handshake(HandshakeRequest.newBuilder()
                            .setProtocolVersion(PROTOCOL_VERSION)
                            .addAllRequiredFeatures(REQUIRED_FEATURES)
                            .setGatewayId(gatewayId)
                            .build());
        } catch (StatusRuntimeException e) {
            throw ConnectFailures.describe(settings, channel, e);
        }
        if (answer.getProtocolVersion() != PROTOCOL_VERSION) {
            throw DriverException.invalidArgument(
                    RemoteSettings.TARGET,
                    "the driver at " + settings.target() + " speaks sandgate.driver.v1 protocol version "
                            + answer.getProtocolVersionValue() + ", this gateway speaks " + PROTOCOL_VERSION.getNumber()
                            + ": upgrade the older side");
        }
        List<String> missing = new ArrayList<>(REQUIRED_FEATURES);
        missing.removeAll(answer.getFeaturesList());
        if (!missing.isEmpty()) {
            throw DriverException.invalidArgument(
                    RemoteSettings.TARGET,
                    "the driver at " + settings.target() + " lacks the features " + missing + " (it has "
                            + answer.getFeaturesList() + ")");
        }
        settings.expectedDriver().ifPresent(expected -> {
            if (!expected.equals(answer.getDriverName())) {
                throw DriverException.invalidArgument(
                        RemoteSettings.DRIVER,
                        "the driver at " + settings.target() + " is '" + answer.getDriverName() + "', not '" + expected
                                + "'");
            }
        });
        return answer;
    }
}
