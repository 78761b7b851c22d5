package dev.sandgate.gateway.server;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverSettings;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * Picks the compute driver: the one named in the configuration, else the available provider with the highest
 * priority among those with a priority above 0. A driver of priority 0 or lower (the reference driver, which runs
 * nothing) is selected only by name: a gateway without its engine must not fall back to sandboxes that report
 * RUNNING while nothing runs. When none fits, the error lists every candidate with its reason. Drivers are found with
 * {@link ServiceLoader}; the gateway never imports a driver module.
 */
public final class DriverSelector {
    private DriverSelector() {}

    /**
     * The selected provider, why it was selected, and each other candidate with why it was not ({@code "name
     * (priority N): reason"}), for the start-up log.
     */
    public record Selection(ComputeDriverProvider provider, String reason, List<String> skipped) {
        public Selection {
            requireNonNull(provider, "provider is null");
            requireNonNull(reason, "reason is null");
            skipped = List.copyOf(skipped);
        }
    }
    /** A provider and what it said about its availability. */
    public record Candidate(ComputeDriverProvider provider, Availability availability) {
        public Candidate {
            requireNonNull(provider, "provider is null");
            requireNonNull(availability, "availability is null");
        }

        /** Whether the gateway may select it without its name. */
        boolean selectableWithoutName() {
            return provider.priority() > 0;
        }

        /** Why it is not selected when no driver is named. */
        String describe() {
            return label()
                    + (!selectableWithoutName()
                            ? "selected only by name (--driver " + provider.name() + ")"
                            : (availability.available() ? "available" : "unavailable") + " - " + availability.reason());
        }

        String label() {
            return provider.name() + " (priority " + provider.priority() + "): ";
        }
    }

    /** Every installed provider, asked about its availability with {@code config}. */
    public static List<Candidate> candidates(DriverSettings config, ClassLoader loader) {
        List<Candidate> candidates = new ArrayList<>();
        try {
            for (ComputeDriverProvider provider : ServiceLoader.load(ComputeDriverProvider.class, loader)) {
                Availability availability;
                try {
                    availability = provider.availability(config);
                } catch (RuntimeException e) {
                    availability = Availability.unavailable("availability check failed: " + e.getMessage());
                }
                candidates.add(new Candidate(provider, availability));
            }
        } catch (ServiceConfigurationError e) {
            throw new ConfigException("a compute driver on the class path cannot be loaded: " + e.getMessage(), e);
        }
        candidates.sort(Comparator.comparingInt((Candidate c) -> c.provider().priority())
                .reversed()
                .thenComparing(c -> c.provider().name()));
        return candidates;
    }

    @SuppressWarnings("ReferenceEquality") // the chosen candidate is told apart by identity, not by value
    public static Selection select(Optional<String> name, DriverSettings config, ClassLoader loader) {
        List<Candidate> candidates = candidates(config, loader);
        if (candidates.isEmpty()) {
            throw new ConfigException(
                    "no compute driver is installed: put a driver's jar (and its dependencies) on the class path");
        }
        if (name.isPresent()) {
            Candidate chosen = candidates.stream()
                    .filter(c -> c.provider().name().equals(name.get()))
                    .findFirst()
                    .orElseThrow(() -> new ConfigException("driver '" + name.get() + "' is not installed; installed: "
                            + candidates.stream().map(c -> c.provider().name()).collect(Collectors.joining(", "))));
            if (!chosen.availability().available()) {
                throw new ConfigException("driver '" + name.get() + "' is not available: "
                        + chosen.availability().reason());
            }
            return new Selection(
                    chosen.provider(),
                    "named by the driver setting; " + chosen.availability().reason(),
                    candidates.stream()
                            .filter(c -> c != chosen)
                            .map(c -> c.label() + "not named (the driver setting is " + name.get() + ")")
                            .toList());
        }
        Candidate chosen = candidates.stream()
                .filter(c -> c.selectableWithoutName() && c.availability().available())
                .findFirst()
                .orElseThrow(() -> new ConfigException("no compute driver is available; candidates:\n  "
                        + candidates.stream().map(Candidate::describe).collect(Collectors.joining("\n  "))));
        return new Selection(
                chosen.provider(),
                "the available driver with the highest priority; "
                        + chosen.availability().reason(),
                candidates.stream()
                        .filter(c -> c != chosen)
                        .map(Candidate::describe)
                        .toList());
    }
}
