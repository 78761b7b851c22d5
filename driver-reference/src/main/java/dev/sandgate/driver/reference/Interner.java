package dev.sandgate.driver.reference;

import java.util.HashMap;
import java.util.Map;

/**
 * One instance of each equal value, for what many sandboxes share (a workspace, a policy digest, a set of labels):
 * kept per sandbox over a million sandboxes, the copies read from each record would fill the heap. Values beyond a
 * bound are returned as given, so that values that are all different cost no more than without it. Not thread-safe.
 */
final class Interner {
    private static final int MAX_VALUES = 10_000;
    private final Map<Object, Object> values = new HashMap<>();

    /** The instance kept for {@code value}'s equals, or {@code value} itself. */
    @SuppressWarnings("unchecked")
    <T> T intern(T value) {
        if (value == null) {
            return null;
        }
        Object kept = values.get(value);
        if (kept != null) {
            return (T) kept;
        }
        if (values.size() < MAX_VALUES) {
            values.put(value, value);
        }
        return value;
    }
}
