package dev.sandgate.driver.reference;

import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** A {@link SandboxSpec} as the flat properties of {@code spec.properties}. Environment values are kept as given. */
final class SpecCodec {
    private static final String IMAGE = "image";
    private static final String COMMAND = "command.";
    private static final String ARGS = "args.";
    private static final String ENV = "env.";
    private static final String LABEL = "label.";
    private static final String MEMORY = "resources.memory-bytes";
    private static final String CPU = "resources.milli-cpus";

    private SpecCodec() {}

    static Map<String, String> encode(SandboxSpec spec) {
        var map = new TreeMap<String, String>();
        map.put(IMAGE, spec.image());
        putList(map, COMMAND, spec.command());
        putList(map, ARGS, spec.args());
        spec.environment().forEach((name, value) -> map.put(ENV + name, value));
        spec.labels().forEach((name, value) -> map.put(LABEL + name, value));
        map.put(MEMORY, Long.toString(spec.resources().memoryBytes()));
        map.put(CPU, Long.toString(spec.resources().milliCpus()));
        return map;
    }

    /**
     * @throws IllegalArgumentException if {@code map} is not a spec written by {@link #encode}
     */
    static SandboxSpec decode(Map<String, String> map) {
        String image = map.get(IMAGE);
        if (image == null) {
            throw new IllegalArgumentException("the stored spec has no image");
        }
        var environment = new TreeMap<String, String>();
        var labels = new TreeMap<String, String>();
        map.forEach((key, value) -> {
            if (key.startsWith(ENV)) {
                environment.put(key.substring(ENV.length()), value);
            } else if (key.startsWith(LABEL)) {
                labels.put(key.substring(LABEL.length()), value);
            }
        });
        try {
            return new SandboxSpec(
                    image,
                    getList(map, COMMAND),
                    getList(map, ARGS),
                    environment,
                    labels,
                    new ResourceRequests(
                            Long.parseLong(map.getOrDefault(MEMORY, "0")), Long.parseLong(map.getOrDefault(CPU, "0"))));
        } catch (RuntimeException e) {
            // Never include the map: it holds environment values.
            throw new IllegalArgumentException(
                    "the stored spec is malformed: " + e.getClass().getSimpleName());
        }
    }

    private static void putList(Map<String, String> map, String prefix, List<String> values) {
        map.put(prefix + "count", Integer.toString(values.size()));
        for (int i = 0; i < values.size(); i++) {
            map.put(prefix + i, values.get(i));
        }
    }

    private static List<String> getList(Map<String, String> map, String prefix) {
        int count = Integer.parseInt(map.getOrDefault(prefix + "count", "0"));
        var values = new ArrayList<String>(count);
        for (int i = 0; i < count; i++) {
            String value = map.get(prefix + i);
            if (value == null) {
                throw new IllegalArgumentException("the stored spec lacks " + prefix + i);
            }
            values.add(value);
        }
        return values;
    }
}
