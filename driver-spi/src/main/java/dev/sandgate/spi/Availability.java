package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

/**
 * Whether a driver can run here, and if not, why. Providers answer this instead of throwing, so that the gateway can
 * list every candidate with its reason when none is available.
 *
 * @param available whether {@link ComputeDriverProvider#create} is expected to succeed
 * @param reason why not (or a short description of what was found); never null
 */
public record Availability(boolean available, String reason) {
    public Availability {
        requireNonNull(reason, "reason is null");
    }

    public static Availability available(String detail) {
        return new Availability(true, detail);
    }

    public static Availability unavailable(String reason) {
        return new Availability(false, reason);
    }
}
