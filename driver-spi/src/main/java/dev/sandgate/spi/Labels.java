package dev.sandgate.spi;

import java.util.Map;
import java.util.OptionalLong;
import java.util.regex.Pattern;

/**
 * Label syntax (the Kubernetes rules, so that every backend can carry them) and the keys of the labels every driver
 * stamps on what it creates.
 *
 * <p>Managed labels always win over user labels: a driver applies the user's labels first and its own last, so a
 * user label such as {@code sandgate.dev/sandbox-id} can never spoof an identity. The gateway refuses user labels
 * under {@link #RESERVED_PREFIX} at its boundary.
 */
public final class Labels {
    /** Prefix of every label key the gateway and drivers manage. */
    public static final String RESERVED_PREFIX = "sandgate.dev/";

    public static final String MANAGED_BY = RESERVED_PREFIX + "managed-by";
    public static final String MANAGED_BY_VALUE = "sandgate";
    public static final String GATEWAY_ID = RESERVED_PREFIX + "gateway-id";
    public static final String SANDBOX_ID = RESERVED_PREFIX + "sandbox-id";
    public static final String WORKSPACE = RESERVED_PREFIX + "workspace";
    public static final String NAME = RESERVED_PREFIX + "name";
    public static final String GENERATION = RESERVED_PREFIX + "generation";
    /** Too long for a Kubernetes label value; drivers for such backends put it in an annotation. */
    public static final String POLICY_DIGEST = RESERVED_PREFIX + "policy-digest";

    public static final int MAX_USER_LABELS = 64;

    private static final Pattern NAME_PART = Pattern.compile("[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?");
    private static final Pattern PREFIX_PART =
            Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
    private static final Pattern VALUE = Pattern.compile("([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?");

    private Labels() {}

    /** Checks keys and values of user labels; INVALID_ARGUMENT names the offending label. */
    public static void requireValid(String field, Map<String, String> labels) {
        if (labels.size() > MAX_USER_LABELS) {
            throw DriverException.invalidArgument(field, "at most " + MAX_USER_LABELS + " labels are allowed");
        }
        labels.forEach((key, value) -> {
            requireValidKey(field, key);
            if (value == null || value.length() > 63 || !VALUE.matcher(value).matches()) {
                throw DriverException.invalidArgument(
                        field + "[" + key + "]",
                        "value must be at most 63 characters of letters, digits, '-', '_' and '.', starting and"
                                + " ending with a letter or digit");
            }
        });
    }

    private static void requireValidKey(String field, String key) {
        if (key == null || key.isEmpty()) {
            throw DriverException.invalidArgument(field, "label keys must not be empty");
        }
        int slash = key.indexOf('/');
        String prefix = slash < 0 ? null : key.substring(0, slash);
        String name = slash < 0 ? key : key.substring(slash + 1);
        boolean valid = name.length() <= 63
                && NAME_PART.matcher(name).matches()
                && (prefix == null
                        || (prefix.length() <= 253
                                && PREFIX_PART.matcher(prefix).matches()));
        if (!valid) {
            throw DriverException.invalidArgument(
                    field + "[" + key + "]", "is not a valid label key ([prefix/]name, name at most 63 characters)");
        }
    }

    /**
     * The execution generation a {@link #GENERATION} stamp holds: a decimal number of at least 1; empty when the stamp
     * is absent or malformed. For {@code list} and {@code watch}, which skip such a resource: no exception to catch.
     */
    public static OptionalLong parseGeneration(String stamp) {
        if (stamp == null || stamp.isEmpty() || stamp.length() > 19) {
            return OptionalLong.empty();
        }
        for (int i = 0; i < stamp.length(); i++) {
            char c = stamp.charAt(i);
            if (c < '0' || c > '9') {
                return OptionalLong.empty();
            }
        }
        if (stamp.length() == 19 && stamp.compareTo(Long.toString(Long.MAX_VALUE)) > 0) {
            return OptionalLong.empty();
        }
        long generation = Long.parseLong(stamp);
        return generation >= 1 ? OptionalLong.of(generation) : OptionalLong.empty();
    }

    /** Whether {@code key} lies in the reserved namespace that only the gateway and drivers may set. */
    public static boolean isReserved(String key) {
        return key.startsWith(RESERVED_PREFIX);
    }
}
