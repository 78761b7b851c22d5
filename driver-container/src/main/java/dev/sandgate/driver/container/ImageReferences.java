package dev.sandgate.driver.container;

import dev.sandgate.spi.DriverException;
import java.util.regex.Pattern;

/** The syntax of container image references ({@code [registry[:port]/]path[:tag][@digest]}), as the engines parse it. */
final class ImageReferences {
    private static final String COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
    private static final String DOMAIN_PART = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
    private static final Pattern DOMAIN =
            Pattern.compile("(?:" + DOMAIN_PART + "(?:\\." + DOMAIN_PART + ")*|\\[[0-9a-fA-F:]+\\])(?::[0-9]+)?");
    private static final Pattern PATH = Pattern.compile(COMPONENT + "(?:/" + COMPONENT + ")*");
    private static final Pattern TAG = Pattern.compile("[\\w][\\w.-]{0,127}");
    private static final Pattern DIGEST =
            Pattern.compile("[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}");

    private ImageReferences() {}

    /** Throws INVALID_ARGUMENT for {@code spec.image} unless {@code image} is a reference the engines accept. */
    static void requireValid(String image) {
        if (!isValid(image)) {
            throw DriverException.invalidArgument(
                    "spec.image",
                    "'" + image + "' is not a container image reference ([registry/]path[:tag][@digest])");
        }
    }

    static boolean isValid(String image) {
        String rest = image;
        int at = rest.indexOf('@');
        if (at >= 0) {
            if (!DIGEST.matcher(rest.substring(at + 1)).matches()) {
                return false;
            }
            rest = rest.substring(0, at);
        }
        int slash = rest.lastIndexOf('/');
        int colon = rest.lastIndexOf(':');
        if (colon > slash) {
            if (!TAG.matcher(rest.substring(colon + 1)).matches()) {
                return false;
            }
            rest = rest.substring(0, colon);
        }
        int firstSlash = rest.indexOf('/');
        if (firstSlash > 0) {
            String first = rest.substring(0, firstSlash);
            boolean isDomain = first.contains(".")
                    || first.contains(":")
                    || first.equals("localhost")
                    || !first.equals(first.toLowerCase(java.util.Locale.ROOT));
            if (isDomain) {
                if (!DOMAIN.matcher(first).matches()) {
                    return false;
                }
                rest = rest.substring(firstSlash + 1);
            }
        }
        return PATH.matcher(rest).matches();
    }
}
