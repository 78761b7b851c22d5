package dev.sandgate.spi;

import java.util.Locale;
import java.util.UUID;
import java.util.regex.Pattern;

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

    private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
    private static final Pattern UUID_FORM =
            Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

    private Identifiers() {}

    /** Returns {@code value} if it is a canonical lowercase UUID; otherwise INVALID_ARGUMENT naming {@code field}. */
    public static String requireSandboxId(String field, String value) {
        if (value == null || value.isEmpty()) {
            throw DriverException.invalidArgument(field, "is required");
        }
        if (!UUID_FORM.matcher(value).matches()) {
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
        if (!DNS_LABEL.matcher(value).matches()) {
            throw DriverException.invalidArgument(
                    field, "must be lowercase letters, digits and '-', starting and ending with a letter or digit");
        }
        return value;
    }

    /** A fresh sandbox id. Only the gateway (and tests standing in for it) mint ids. */
    public static String newSandboxId() {
        return UUID.randomUUID().toString().toLowerCase(Locale.ROOT);
    }
}
