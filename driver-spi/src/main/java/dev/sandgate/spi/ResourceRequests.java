package dev.sandgate.spi;

/**
 * Resources a sandbox asks for at scheduling time. Limits that are enforced belong to the launch policy ({@link
 * StaticPolicy}); requests only inform placement.
 *
 * @param memoryBytes requested memory in bytes; 0 means no request
 * @param milliCpus requested CPU in thousandths of a core; 0 means no request
 */
public record ResourceRequests(long memoryBytes, long milliCpus) {
    public static final ResourceRequests NONE = new ResourceRequests(0, 0);

    public ResourceRequests {
        if (memoryBytes < 0) {
            throw DriverException.invalidArgument("resources.memory_bytes", "must not be negative");
        }
        if (milliCpus < 0) {
            throw DriverException.invalidArgument("resources.milli_cpus", "must not be negative");
        }
    }
}
