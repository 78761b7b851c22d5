package dev.sandgate.spi;

import java.util.Locale;
import java.util.UUID;

/**
 * The syntax of sandbox identifiers, shared by the SPI records, the gateway and every driver.
 *
 * <ul>
 *   <li>A sandbox id is a UUID in canonical lowercase form, assigned by the gateway and never reused.
 *   <li>A workspace and a name are DNS labels (RFC 1123): 1 to 63 characters of {@code a-z}, {@code 0-9} and {@code
 *       -}, starting and ending with a letter or digit.
 *   <li>A gateway id is a DNS label of at most 40 characters, so that drivers can embed it in backend names.
 * </ul>
 */
public final class Identifiers {
    public static final int MAX_LABEL_LENGTH = 63;
    public static final int MAX_GATEWAY_ID_LENGTH = 40;

    /** Length of a UUID in canonical form. */
    private static final int UUID_LENGTH = 36;

    private Identifiers() {}

    /** Returns {@code value} if it is a canonical lowercase UUID; otherwise INVALID_ARGUMENT naming {@code field}. */
    public static String requireSandboxId(String field, String value) {
        if (value == null || value.isEmpty()) {
            throw DriverException.invalidArgument(field, "is required");
        }
        if (!isCanonicalUuid(value)) {
            throw DriverException.invalidArgument(field, "must be a UUID in canonical lowercase form");
        }
        return value;
    }

    /** Returns {@code value} if it is a DNS label; otherwise INVALID_ARGUMENT naming {@code field}. */
    public static String requireDnsLabel(String field, String value) {
        return requireDnsLabel(field, value, MAX_LABEL_LENGTH);
    }

    /** Returns {@code value} if it is a DNS label of at most {@code maxLength}; otherwise INVALID_ARGUMENT. */
    public static String requireDnsLabel(String field, String value, int maxLength) {
        if (value == null || value.isEmpty()) {
            throw DriverException.invalidArgument(field, "is required");
        }
        if (value.length() > maxLength) {
            throw DriverException.invalidArgument(field, "must be at most " + maxLength + " characters");
        }
        if (!isDnsLabel(value)) {
            throw DriverException.invalidArgument(
                    field, "must be lowercase letters, digits and '-', starting and ending with a letter or digit");
        }
        return value;
    }

    /**
     * Whether {@code value} is 8-4-4-4-12 lowercase hexadecimal digits. Checked by hand, not by a regular expression:
     * every call names its sandbox, and a matcher costs an allocation and a backtracking walk each time.
     */
    static boolean isCanonicalUuid(String value) {
        if (value.length() != UUID_LENGTH) {
            return false;
        }
        for (int i = 0; i < UUID_LENGTH; i++) {
            char c = value.charAt(i);
            boolean dash = i == 8 || i == 13 || i == 18 || i == 23;
            if (dash ? c != '-' : !isLowerHex(c)) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code value} is a non-empty run of a-z, 0-9 and '-' that starts and ends with a letter or digit. */
    static boolean isDnsLabel(String value) {
        int last = value.length() - 1;
        if (last < 0) {
            return false;
        }
        for (int i = 0; i <= last; i++) {
            char c = value.charAt(i);
            boolean letterOrDigit = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
            if (!letterOrDigit && (c != '-' || i == 0 || i == last)) {
                return false;
            }
        }
        return true;
    }

    private static boolean isLowerHex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    }

    /** A fresh sandbox id. Only the gateway (and tests standing in for it) mint ids. */
    public static String newSandboxId() {
        return UUID.randomUUID().toString().toLowerCase(Locale.ROOT);
    }
}
